"""A table drawn one line per row, for the main screen's agents, leaderboard and decisions.

Textual's DataTable renders every visible cell through Rich again after any change, and measures every new cell:
in a 64-agent campaign, where each row changes between two redraws, that made a redraw take 150 to 250 ms of the
loop the agents run on. Here a row is one ``Text`` padded to the column widths and turned into one strip, kept until
the row, the widths or the cursor change. Only what the screens need: a header, a row cursor with keys and clicks,
zebra stripes, and the messages the app listens to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

CELL_GAP = 2  # spaces between two columns


class RowTable(ScrollView, can_focus=True):
    """Rows of cells under a header; each row has a key, and the cursor is on one row."""

    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        & > .row-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .row-table--even { background: $surface-lighten-1 50%; }
        &:dark > .row-table--even { background: $surface-darken-1 40%; }
        & > .row-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .row-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"row-table--header", "row-table--even", "row-table--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "cursor_to(0)", show=False),
        Binding("end", "cursor_to(-1)", show=False),
        Binding("enter", "select", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, always_update=False, init=False)

    class RowHighlighted(Message):
        """The cursor moved to a row."""

        def __init__(self, table: RowTable, cursor_row: int, row_key: str) -> None:
            super().__init__()
            self.table, self.cursor_row, self.row_key = table, cursor_row, row_key

        @property
        def control(self) -> RowTable:
            return self.table

    class RowSelected(RowHighlighted):
        """Enter (or a click on the cursor's row) chose a row."""

    def __init__(self, columns: Sequence[str], *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns = tuple(columns)
        self._keys: list[str] = []  # row keys, in display order
        self._cells: dict[str, list[Text]] = {}
        self._widths = self._label_widths()
        self._strips: dict[str, Strip] = {}  # each row's line, drawn at the current widths and cursor
        self._size_stale = False
        self._scroll_deferred = False

    # -- the rows ------------------------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._cells

    def get_row_at(self, index: int) -> list[Text]:
        return list(self._cells[self._keys[index]])

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self.cursor_row] if self._keys else None

    def add_row(self, *cells: Text, key: str) -> None:
        if key in self._cells:
            raise ValueError(f"a row with key {key!r} exists")
        self._keys.append(key)
        self._cells[key] = list(cells)
        self._fit(cells)
        self._resized()

    def update_row(self, key: str, *cells: Text) -> None:
        """New cells for a row (a whole row at once: each refresh marks the widget dirty, and a 64-agent table
        changed cell by cell asked for 400 of them per redraw)."""
        self._cells[key] = list(cells)
        self._strips.pop(key, None)
        self._fit(cells)
        self.refresh()

    def clear(self) -> None:
        """No rows; the columns' widths start again from their labels."""
        self._keys.clear()
        self._cells.clear()
        self._strips.clear()
        self._widths = self._label_widths()
        self.cursor_row = 0
        self.scroll_to(0, 0, animate=False, immediate=True)  # deferred, it would undo a scroll to the new rows
        self._resized()

    def _label_widths(self) -> list[int]:
        return [cell_len(label) for label in self.columns]

    def _fit(self, cells: Sequence[Text]) -> None:
        """Widen columns to hold ``cells`` (they never narrow while rows are kept: the layout stays still)."""
        widths = [max(width, cell.cell_len) for width, cell in zip(self._widths, cells, strict=True)]
        if widths != self._widths:
            self._widths = widths
            self._strips.clear()

    def _resized(self) -> None:
        """The size changes once the caller is done: a feed rebuilt row by row would otherwise ask for a layout of
        the whole screen at each row, and a screen's layout renders every widget on it."""
        if not self._size_stale:
            self._size_stale = True
            self.call_later(self._fit_size)
        self.refresh()

    def _fit_size(self) -> None:
        if self._size_stale:
            self._size_stale = False
            width = sum(self._widths) + CELL_GAP * (len(self._widths) - 1) + 2
            self.virtual_size = Size(width, len(self._keys) + 1)

    # -- the cursor ----------------------------------------------------------------------------------------------

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        if self._keys:
            self.cursor_row = max(0, min(row, len(self._keys) - 1))
            if scroll:
                self._fit_size()  # rows added just now can be scrolled to
                self._scroll_to_cursor(animate)

    def watch_cursor_row(self, old: int, new: int) -> None:
        for index in (old, new):
            if 0 <= index < len(self._keys):
                self._strips.pop(self._keys[index], None)
        self.refresh()
        if self._keys:
            self.post_message(self.RowHighlighted(self, new, self._keys[new]))

    def _scroll_to_cursor(self, animate: bool = False) -> None:
        """Scroll the cursor's row into the lines below the header (which shows rows ``top`` on)."""
        if not self.size.height:  # not laid out yet (rows drawn before the first layout): after it, once
            if not self._scroll_deferred:
                self._scroll_deferred = True
                self.call_after_refresh(self._scroll_after_layout, animate)
            return
        top, rows_shown = self.scroll_offset.y, max(1, self.size.height - 1)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=animate, immediate=not animate)
        elif self.cursor_row >= top + rows_shown:
            self.scroll_to(y=self.cursor_row - rows_shown + 1, animate=animate, immediate=not animate)

    def _scroll_after_layout(self, animate: bool) -> None:
        self._scroll_deferred = False
        if self.size.height:
            self._scroll_to_cursor(animate)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(row=self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(row=self.cursor_row + direction * max(1, self.size.height - 1))

    def action_cursor_to(self, row: int) -> None:
        self.move_cursor(row=row if row >= 0 else len(self._keys) - 1)

    def action_select(self) -> None:
        if self._keys:
            self.post_message(self.RowSelected(self, self.cursor_row, self._keys[self.cursor_row]))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:  # on the border or the header
            return
        row = offset.y + self.scroll_offset.y - 1
        if 0 <= row < len(self._keys):
            if row == self.cursor_row:
                self.action_select()
            else:
                self.move_cursor(row=row, scroll=False)

    # -- drawing -------------------------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("row-table--header")
            line = self._line([Text(label) for label in self.columns], style)
        else:
            index = scroll_y + y - 1
            if index >= len(self._keys):
                return Strip.blank(width, self.rich_style)
            key, style = self._keys[index], self._row_style(index)
            line = self._strips.get(key)
            if line is None:
                line = self._strips[key] = self._line(self._cells[key], style)
        return line.crop_extend(scroll_x, scroll_x + width, style)

    def _row_style(self, index: int) -> Style:
        style = self.rich_style
        if index % 2 == 0:  # rows 0, 2, ... as DataTable stripes them
            style += self.get_component_rich_style("row-table--even")
        if index == self.cursor_row:
            style += self.get_component_rich_style("row-table--cursor")
        return style

    def _line(self, cells: Sequence[Text], style: Style) -> Strip:
        line = Text(" ", end="")
        for column, (cell, width) in enumerate(zip(cells, self._widths, strict=True)):
            if column:
                line.append(" " * CELL_GAP)
            padding = " " * (width - cell.cell_len)
            if cell.justify == "right":
                line.append(padding)
                line.append_text(cell)
            else:
                line.append_text(cell)
                line.append(padding)
        line.append(" ")
        segments = [Segment(text, style + segment_style if segment_style else style)
                    for text, segment_style, _ in line.render(self.app.console)]
        return Strip(segments)
