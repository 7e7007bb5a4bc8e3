"""``report --html``: one self-contained page, checked by parsing it (html.parser) against the run it reports.

Two runs: a real campaign of three agents (the real engine, bus and log, with the stand-in guard and a provider
whose kernels carry markup in a comment), and the hand-written log of test_report.py's kind, whose best kernel
has per-workload results with baselines.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import anyio
import pytest

from arcengine.domain.events import (
    SEED_AGENT,
    AgentStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    Event,
)
from arcengine.engine.campaign import Campaign
from arcengine.engine.config import CampaignConfig
from arcengine.engine.testing import StubGuard, SyntheticProvider
from arcengine.providers.base import AgentContext, Proposal
from arcengine.recording.eventlog import read_events
from arcengine.tools.report import formatting as fmt
from arcengine.tools.report import write_html
from arcengine.tools.report.details import run_details, source_diff
from arcengine.tools.report.model import fold, load_events
from tests.test_report import BEST_WORKLOADS, GPU, decided, started, write_log

MARKUP = '# </script><script>alert(1)</script> <b>not bold</b> & <!-- not a comment --> "quoted"'


# ---------------------------------------------------------------- a page, parsed into a tree

VOID = {"meta", "link", "br", "hr", "img", "input", "source", "wbr", "col", "area", "base", "embed", "track"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find_all(self, tag: str, cls: str | None = None) -> list[Node]:
        return [n for n in self.walk() if n.tag == tag and (cls is None or cls in n.attrs.get("class", "").split())]

    def find(self, tag: str, cls: str | None = None) -> Node:
        (found,) = self.find_all(tag, cls)
        return found


class TreeBuilder(HTMLParser):
    """html.parser's events as a tree; an end tag that closes nothing open is recorded, not ignored."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.open: list[Node] = [self.root]
        self.stray_end_tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {name: value or "" for name, value in attrs})
        self.open[-1].children.append(node)
        if tag not in VOID:
            self.open.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open[-1].children.append(Node(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if tag not in [n.tag for n in self.open]:
            self.stray_end_tags.append(tag)
            return
        while self.open.pop().tag != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)


def parse(page: str) -> TreeBuilder:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    return builder


def rows(table: Node) -> list[list[str]]:
    """The body rows of a table, each as its cells' text."""
    return [[cell.text().strip() for cell in row.find_all("td")] for row in table.find("tbody").find_all("tr")]


def pre_text(pre: Node) -> str:
    """What a <pre> shows: its text without the newline the HTML parser keeps after <pre>."""
    text = pre.text()
    return text[1:] if text.startswith("\n") else text


# ---------------------------------------------------------------- the runs


class MarkupProvider(SyntheticProvider):
    """The synthetic provider, each kernel headed by a comment full of markup a page must show as text."""

    async def propose(self, context: AgentContext) -> Proposal:
        proposal = await super().propose(context)
        source = f"{MARKUP}\n{proposal.source}"
        return replace(proposal, source=source, response=source)


@pytest.fixture(scope="module")
def campaign_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real three-agent campaign on rmsnorm: KEEPs, ACCEPTs and REVERTs from the stand-in guard."""
    config = CampaignConfig(problem="rmsnorm", agents=3, budget=18, plateau=None, out=tmp_path_factory.mktemp("runs"))
    campaign = Campaign(config, provider=MarkupProvider(), guard_factory=lambda c: StubGuard(c.problem, c.bus))
    return Path(anyio.run(campaign.run).run_dir)


@pytest.fixture(scope="module")
def campaign_page(campaign_run: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_html([campaign_run], tmp_path_factory.mktemp("html") / "page.html").read_text(encoding="utf-8")


SEED_SOURCE = "import torch\n\n\ndef run(x):\n    return x * 2 + 1\n"
OVER_BASELINE = (1.2 * 0.75) ** 0.5  # the geometric mean over BEST_WORKLOADS's two visible workloads
BEST_SOURCE = f"import torch\n\n\ndef run(x):\n    {MARKUP}\n    return x * 2.0 + 1.0\n"


def proposed(position: int, agent: str, source: str, parent: str | None = None) -> CandidateProposed:
    return CandidateProposed(candidate_id=f"c{position:04d}", agent_id=agent, position=position, parent_id=parent,
                             strategy="seed" if agent == SEED_AGENT else "tiling", rationale="because", source=source)


def workloads_log(stopped: bool = True) -> list[Event]:
    """A seed and one agent: its KEEP (with per-workload results) over the seed, then a REJECT."""
    events: list[Event] = [
        started("workloads"),
        proposed(0, SEED_AGENT, SEED_SOURCE), decided(0, SEED_AGENT, "KEEP", 1.0),
        AgentStarted(agent_id="a1", strategy="tiling", provider="offline", seed_id="c0000"),
        proposed(1, "a1", BEST_SOURCE, "c0000"),
        decided(1, "a1", "KEEP", 2.0, BEST_WORKLOADS).model_copy(update={"speedup_over_baseline": OVER_BASELINE}),
        proposed(2, "a1", "import ctypes\n", "c0001"), decided(2, "a1", "REJECT", None),
    ]
    if stopped:
        events.append(CampaignStopped(reason="plateau", candidates=2, best_candidate_id="c0001", best_speedup=2.0))
    return events


@pytest.fixture
def workloads_page(tmp_path: Path) -> str:
    run = write_log(tmp_path / "workloads", workloads_log())
    return write_html([run], tmp_path / "page.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the page stands alone


def test_the_page_fetches_nothing(campaign_page: str) -> None:
    tree = parse(campaign_page)
    assert not tree.stray_end_tags
    tags = list(tree.root.walk())
    assert {n.tag for n in tags} & {"script", "link", "iframe", "object", "embed", "img", "base"} == set()
    references = [(n.tag, name, value) for n in tags for name, value in n.attrs.items()
                  if name in ("src", "href", "xlink:href", "srcset", "action", "data", "poster")]
    assert references, "the SVG's marks refer to its own definitions"
    assert [r for r in references if not r[2].startswith("#")] == []
    styles = " ".join(n.text() for n in tree.root.find_all("style"))
    assert "@import" not in styles and "url(" not in styles.replace("url(#", "")
    assert all("url(" not in value.replace("url(#", "") for n in tags for value in n.attrs.values())
    assert len(tree.root.find("figure").find_all("svg")) == 1  # the plot is on the page itself


def test_every_id_is_unique_with_two_plots_on_one_page(campaign_run: Path, tmp_path: Path) -> None:
    other = write_log(tmp_path / "workloads", workloads_log())
    tree = parse(write_html([campaign_run, other], tmp_path / "two.html").read_text(encoding="utf-8"))
    ids = [n.attrs["id"] for n in tree.root.walk() if "id" in n.attrs]
    assert len(tree.root.find_all("svg")) == 2
    assert len(ids) == len(set(ids))
    targets = {value[1:] for n in tree.root.walk() for name, value in n.attrs.items() if name.endswith("href")}
    assert targets <= set(ids)  # every internal reference (the nav's and the SVGs') lands
    sections = {n.attrs["id"]: n for n in tree.root.find_all("section")}
    assert list(sections) == ["run-1", "run-2", "comparison"]
    assert "No test: one needs two configurations with two or more runs each" in sections["comparison"].text()


# ---------------------------------------------------------------- what it shows


def test_leaderboard_rows_are_the_runs_leaderboard(campaign_run: Path, campaign_page: str) -> None:
    board = fold(load_events(campaign_run)).leaderboard
    assert len(board) == 4 and {r.agent_id for r in board} == {"a1", "a2", "a3", SEED_AGENT}
    expected = [[str(rank), r.agent_id, r.strategy, r.candidate_id or "–", fmt.x(r.speedup), fmt.x(r.over_baseline),
                 fmt.x(r.over_seed)] for rank, r in enumerate(board, start=1)]
    assert rows(parse(campaign_page).root.find("table", "leaderboard")) == expected


def test_kept_sources_are_shown_as_text(campaign_run: Path, campaign_page: str) -> None:
    events = list(read_events(campaign_run / "events.jsonl"))
    sources = {e.candidate_id: e.source for e in events if isinstance(e, CandidateProposed)}
    kept = [e.candidate_id for e in events if isinstance(e, CandidateDecided) and e.decision == "KEEP"]
    assert len(kept) >= 4
    tree = parse(campaign_page)
    shown = {n.attrs["id"].removeprefix("run-1-"): pre_text(n.find("pre", "source"))
             for n in tree.root.find_all("details", "kernel")}
    assert set(shown) == set(kept)
    for candidate_id, text in shown.items():
        assert text == sources[candidate_id].rstrip("\n") + "\n"
    assert sum(MARKUP in text for text in shown.values()) == len(kept) - 1  # all but the shipped seed
    assert "</script>" not in campaign_page and "<b>" not in campaign_page  # escaped, not markup
    assert "&lt;/script&gt;&lt;script&gt;" in campaign_page


def test_each_diff_is_against_the_kernel_it_was_kept_over(campaign_run: Path, campaign_page: str) -> None:
    events = list(read_events(campaign_run / "events.jsonl"))
    sources = {e.candidate_id: e.source for e in events if isinstance(e, CandidateProposed)}
    incumbent = {e.agent_id: e.seed_id for e in events if isinstance(e, AgentStarted)}
    expected: dict[str, str | None] = {}
    for e in events:  # an agent's decisions come in its own order: each KEEP replaces its incumbent
        if isinstance(e, CandidateDecided) and e.decision == "KEEP":
            expected[e.candidate_id] = incumbent.get(e.agent_id)
            incumbent[e.agent_id] = e.candidate_id
    details = run_details(campaign_run)
    assert {k.candidate_id: k.previous_id for k in details.kept} == expected
    assert sum(k.previous_id is not None and k.previous_id != "c0000" for k in details.kept) >= 1

    tree = parse(campaign_page)
    for node in tree.root.find_all("details", "kernel"):
        candidate_id = node.attrs["id"].removeprefix("run-1-")
        previous = expected[candidate_id]
        if previous is None:  # the seed
            assert node.find_all("pre", "diff") == []
            continue
        diff = source_diff(sources[previous], sources[candidate_id], previous, candidate_id)
        assert pre_text(node.find("pre", "diff")) == "".join(f"{line}\n" for line in diff)
        assert any(line.startswith("+SPEED") for line in diff)


def test_the_workload_table_has_both_ratios(workloads_page: str) -> None:
    tree = parse(workloads_page)
    assert rows(tree.root.find("table", "workloads")) == [
        ["M=1, N=4096", "", "yes", "5.00", "compile", "6.00", "1.200x", "yes", "10.00", "2.000x", "0.800"],
        ["M=64, N=4096", "", "yes", "4.00", "rms_norm", "3.00", "0.750x", "no", "8.00", "2.000x", "0.900"],
        ["M=7, N=300", "yes (held out)", "yes", "3.00", "compile", "3.30", "1.100x", "yes", "9.00", "3.000x", "0.950"],
    ]
    headline = " ".join(tree.root.find("div", "headline").text().split())
    assert f"2.000x the reference, {OVER_BASELINE:.3f}x the baseline (1/2 shapes faster than baseline)" in headline
    assert "2.000x the seed" in headline


def test_the_header_says_what_ran_where_and_when(workloads_page: str) -> None:
    tree = parse(workloads_page)
    facts = tree.root.find("dl", "facts")
    terms = [" ".join(n.text().split()) for n in facts.find_all("dt")]
    values = dict(zip(terms, (" ".join(n.text().split()) for n in facts.find_all("dd")), strict=True))
    assert values["problem"] == "scale (elementwise)"
    assert values["device"] == GPU
    assert values["provider"].startswith("offline (model offline)")
    assert values["budget"].startswith("8 candidates, 2 decided")
    assert values["state"] == "stopped: plateau"
    first = datetime.fromtimestamp(1_800_000_000.0, tz=UTC)  # write_log's first timestamp
    assert values["started"] == first.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert values["last event"].endswith("(8 s after the start)")  # 9 events, a second apart


def test_a_run_without_a_stop_is_said_to_be_live_or_interrupted(tmp_path: Path) -> None:
    run = write_log(tmp_path / "live", workloads_log(stopped=False))
    tree = parse(write_html([run], tmp_path / "live.html").read_text(encoding="utf-8"))
    state = dict(zip((n.text() for n in tree.root.find_all("dt")), (n.text() for n in tree.root.find_all("dd")),
                     strict=True))["state"]
    assert state.startswith("no stop logged")


def test_the_plot_names_every_decision_that_happened(workloads_page: str) -> None:
    svg = parse(workloads_page).root.find("svg")
    labels = {" ".join(t.text().split()) for t in svg.find_all("text")}
    assert {"KEEP", "REJECT", "best so far", "new campaign best"} <= labels
    assert not {"ACCEPT", "REVERT"} & labels  # none happened: no legend entry for them


def test_report_html_on_the_command_line(tmp_path: Path) -> None:
    run = write_log(tmp_path / "workloads", workloads_log())
    page = tmp_path / "out" / "report.html"
    result = subprocess.run([sys.executable, "-m", "arcengine.cli", "report", str(run), "--html", str(page)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert f"html: {page}" in result.stdout.splitlines()
    assert rows(parse(page.read_text(encoding="utf-8")).root.find("table", "leaderboard"))[0][:4] == [
        "1", "a1", "tiling", "c0001"]


def test_a_run_where_nothing_passed_still_has_a_page(tmp_path: Path) -> None:
    run = write_log(tmp_path / "failed", [
        started("failed"),
        proposed(0, SEED_AGENT, SEED_SOURCE), decided(0, SEED_AGENT, "REVERT", None),
        CampaignStopped(reason="the seed failed", candidates=0, best_candidate_id=None, best_speedup=None),
    ])
    tree = parse(write_html([run], tmp_path / "failed.html").read_text(encoding="utf-8"))
    assert "No best kernel" in tree.root.find("div", "headline").text()
    assert tree.root.find_all("table", "leaderboard") == []  # no agent started, no seed passed
    assert tree.root.find_all("details", "kernel") == []
    assert len(tree.root.find_all("svg")) == 1
