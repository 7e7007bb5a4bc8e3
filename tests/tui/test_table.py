"""tui/table.py: the main screen's one-line-per-row table."""

from __future__ import annotations

from arcengine_tui.table import RowTable
from rich.text import Text
from textual.app import App, ComposeResult


class OneTable(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.table = RowTable(("name", "score"), id="t")
        self.messages: list[tuple[str, int, str]] = []

    def compose(self) -> ComposeResult:
        yield self.table

    def on_row_table_row_highlighted(self, event: RowTable.RowHighlighted) -> None:
        self.messages.append(("highlighted", event.cursor_row, event.row_key))

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        self.messages.append(("selected", event.cursor_row, event.row_key))


def line(table: RowTable, y: int) -> str:
    return "".join(segment.text for segment in table.render_line(y)).rstrip()


async def test_rows_are_drawn_under_the_header_at_the_widest_cell_and_right_justified_where_asked() -> None:
    app = OneTable()
    async with app.run_test(size=(40, 10)) as pilot:
        table = app.table
        table.add_row(Text("a"), Text("7", justify="right"), key="a")
        table.add_row(Text("a longer name"), Text("12", justify="right"), key="b")
        await pilot.pause()
        assert line(table, 0) == " name           score"
        assert line(table, 1) == " a                  7"
        assert line(table, 2) == " a longer name     12"
        table.update_row("a", Text("a"), Text("1234567", justify="right"))  # the column widens for it
        await pilot.pause()
        assert line(table, 1) == " a              1234567"
        assert table.row_count == 2 and "b" in table and table.get_row_at(1)[0].plain == "a longer name"
        table.clear()  # widths start again from the labels
        table.add_row(Text("x"), Text("1", justify="right"), key="x")
        await pilot.pause()
        assert line(table, 0) == " name  score" and line(table, 1) == " x         1"


async def test_keys_and_clicks_move_the_cursor_and_choose_a_row() -> None:
    app = OneTable()
    async with app.run_test(size=(40, 6)) as pilot:
        table = app.table
        for i in range(20):
            table.add_row(Text(f"row {i}"), Text(str(i)), key=f"k{i}")
        table.focus()
        await pilot.pause()
        await pilot.press("down", "down", "enter")
        assert table.cursor_row == 2 and table.cursor_key == "k2"
        assert app.messages[-1] == ("selected", 2, "k2")
        assert ("highlighted", 1, "k1") in app.messages
        await pilot.press("end")  # the last row, scrolled into the lines under the header
        assert table.cursor_row == 19
        await pilot.pause()
        shown = [line(table, y) for y in range(1, table.size.height)]
        assert shown[-1].startswith(" row 19")
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0 and line(table, 1).startswith(" row 0")
        await pilot.click("#t", offset=(3, 3))  # a click on another row moves the cursor there
        assert table.cursor_row == 2
        await pilot.click("#t", offset=(3, 3))  # a click on the cursor's row chooses it
        assert app.messages[-1] == ("selected", 2, "k2")


async def test_a_cursor_moved_before_the_first_layout_is_scrolled_into_view_once_there_is_one() -> None:
    class FilledOnMount(OneTable):
        def on_mount(self) -> None:  # before the first layout: the table has no height yet
            for i in range(20):
                self.table.add_row(Text(f"row {i}"), Text(str(i)), key=f"k{i}")
            self.table.move_cursor(row=19)

    app = FilledOnMount()
    async with app.run_test(size=(40, 6)) as pilot:
        await pilot.pause()
        table = app.table
        assert table.cursor_row == 19
        assert line(table, table.size.height - 1).startswith(" row 19")
