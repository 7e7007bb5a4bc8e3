"""Problems with several seeds: loading them, ``problems check`` judging each, and campaigns that judge every
seed before the agents start, take the best that passes as the incumbent and spread the offline tuner's agents
over the passing seeds that declare TUNABLES (the real guard on the CPU, unless a test says otherwise)."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arcengine.console import HeadlessDisplay
from arcengine.domain.events import (
    SEED_AGENT,
    AgentStarted,
    CampaignStarted,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    parse_event,
)
from arcengine.domain.problem import ProblemError, load_problem
from arcengine.domain.run import RunState
from arcengine.domain.skills import load_skills
from arcengine.engine.campaign import Campaign
from arcengine.engine.history import load_history
from arcengine.engine.seeds import Seed, assign_strategies, seed_candidate_id, starting_seeds
from arcengine.engine.testing import StubGuard, SyntheticProvider
from arcengine.guard.gate import check_source
from arcengine.providers.base import AgentContext
from arcengine.providers.scripted import ScriptedProvider
from arcengine.recording.eventlog import read_events
from arcengine.tools.replay import replay_run
from arcengine.tools.report import summarise_run
from tests.conftest import FIXTURES, SCALE, scale_source

SEEDS = FIXTURES / "scale_seeds"  # seed.py (CHUNK, SPARE: slow) and seed_split.py (SPLIT: faster)
SPLIT_SOURCE = (SEEDS / "seed_split.py").read_text(encoding="utf-8")
CHUNK_SOURCE = (SEEDS / "seed.py").read_text(encoding="utf-8")


def arcengine(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arcengine.cli", *args], capture_output=True, text=True,
                          check=False)


def events_of(run_dir: Path) -> list[Event]:
    return list(read_events(run_dir / "events.jsonl"))


def copy_with(tmp_path: Path, seeds_line: str | None = None, broken: str | None = None) -> Path:
    """A copy of the two-seed fixture, its ``seeds`` line replaced, or one seed file made wrong."""
    folder = tmp_path / "scale_seeds"
    shutil.copytree(SEEDS, folder)
    if seeds_line is not None:
        toml = folder / "problem.toml"
        toml.write_text(re.sub(r"^seeds = .*$", seeds_line, toml.read_text(), flags=re.MULTILINE))
    if broken is not None:
        path = folder / broken
        path.write_text(path.read_text().replace("* 2 + 1", "* 3 + 1"))  # wrong on every element
    return folder


# -- loading ------------------------------------------------------------------------------------------------

def test_a_problem_with_two_seeds_loads_both() -> None:
    problem = load_problem(SEEDS)
    assert problem.seed_files == ("seed.py", "seed_split.py")
    assert problem.seed_paths == [SEEDS.resolve() / "seed.py", SEEDS.resolve() / "seed_split.py"]
    assert problem.seed_path == problem.seed_paths[0]  # the first seed, where single-seed code looks


def test_without_seeds_the_problem_has_its_one_seed_py() -> None:
    problem = load_problem(SCALE)
    assert problem.seed_files == ("seed.py",) and problem.seed_paths == [problem.seed_path]
    assert problem.seed_path == SCALE.resolve() / "seed.py"


def test_seeds_may_name_files_in_a_subfolder_in_any_order(tmp_path: Path) -> None:
    folder = copy_with(tmp_path, 'seeds = ["native/seed_split.py", "seed.py"]')
    (folder / "native").mkdir()
    (folder / "seed_split.py").rename(folder / "native" / "seed_split.py")
    assert load_problem(folder).seed_paths == [folder / "native" / "seed_split.py", folder / "seed.py"]


def test_imported_problems_keep_one_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_formats import KB_PROBLEM

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kernelbench = tmp_path / "19_Linear_ReLU.py"
    kernelbench.write_text(KB_PROBLEM)
    problem = load_problem(kernelbench)
    assert problem.seed_files == ("seed.py",) and problem.seed_path.is_file()


def test_cpu_seeds_name_the_seeds_that_run_on_the_cpu(tmp_path: Path) -> None:
    # A CUDA C++ seed (NVRTC, cuBLASLt) cannot run on the CPU: cpu_seeds leaves it out there.
    folder = copy_with(tmp_path, 'seeds = ["seed.py", "seed_split.py"]\ncpu_seeds = ["seed.py"]')
    problem = load_problem(folder)
    assert problem.seed_files_for("cpu") == ("seed.py",)
    assert problem.seed_files_for("cuda") == ("seed.py", "seed_split.py")
    assert load_problem(SEEDS).seed_files_for("cpu") == ("seed.py", "seed_split.py")  # default: every seed
    for number, line in enumerate(('cpu_seeds = ["seed_other.py"]', "cpu_seeds = []", 'cpu_seeds = "seed.py"')):
        with pytest.raises(ProblemError, match="cpu_seeds must list some of the seeds"):
            load_problem(copy_with(tmp_path / str(number), f'seeds = ["seed.py"]\n{line}'))


BAD_SEEDS = [
    ("seeds = []", "seeds is empty"),
    ('seeds = ["seed.py", "seed_native.py"]', "seed file 'seed_native.py' is missing"),
    ('seeds = "seed.py"', "seeds must be a list of file names"),
    ('seeds = ["seed.py", 3]', "seeds must be a list of file names"),
    ('seeds = ["seed.py", ""]', "seeds must be a list of file names"),
    ('seeds = ["../scale/seed.py"]', "must be a path inside the problem folder"),
    ('seeds = ["seed.py", "./seed.py"]', "'./seed.py' is named twice"),
]


@pytest.mark.parametrize(("line", "needle"), BAD_SEEDS)
def test_bad_seeds_are_a_problem_error_naming_the_problem(tmp_path: Path, line: str, needle: str) -> None:
    folder = copy_with(tmp_path, line)
    with pytest.raises(ProblemError, match=re.escape(needle)) as raised:
        load_problem(folder)
    assert "problem 'scale_seeds'" in str(raised.value) and "problem.toml" in str(raised.value)


@pytest.mark.parametrize(("line", "needle"), BAD_SEEDS[:3])
def test_bad_seeds_are_one_clear_line(tmp_path: Path, line: str, needle: str) -> None:
    result = arcengine("problems", "check", str(copy_with(tmp_path, line)), "--device", "cpu")
    assert result.returncode == 2
    (error,) = result.stderr.strip().splitlines()
    assert error.startswith("arcengine: error: problem 'scale_seeds'") and needle in error, error


def test_every_declared_seed_of_the_shipped_problems_and_fixtures_passes_the_gate() -> None:
    root = Path(__file__).resolve().parents[1]
    folders = [p.parent for p in sorted(root.glob("problems/*/problem.toml"))] + [
        p.parent for p in sorted(root.glob("tests/fixtures/*/problem.toml"))]
    seeds = [path for folder in folders for path in load_problem(folder).seed_paths]
    assert SEEDS.resolve() / "seed_split.py" in seeds
    for seed in seeds:
        result = check_source(seed.read_text(encoding="utf-8"))
        assert result.ok, (seed, result.reason)


# -- problems check -----------------------------------------------------------------------------------------

def test_problems_check_judges_every_seed() -> None:
    result = arcengine("problems", "check", str(SEEDS), "--device", "cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("scale_seeds: seed seed.py: ok on cpu: correct on 3 workloads")
    assert lines[1].startswith("scale_seeds: seed seed_split.py: ok on cpu: correct on 3 workloads")
    assert lines[2] == "scale_seeds: ok on cpu: reference runs, all 2 seeds correct"


def test_problems_check_fails_naming_a_broken_second_seed(tmp_path: Path) -> None:
    result = arcengine("problems", "check", str(copy_with(tmp_path, broken="seed_split.py")), "--device", "cpu")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("scale_seeds: seed seed.py: ok on cpu")
    assert lines[1].startswith("scale_seeds: seed seed_split.py: FAIL on cpu: ")
    assert lines[-1] == "scale_seeds: FAIL on cpu: 1 of 2 seeds fail the guard: seed_split.py"


# -- where agents start (pure) ------------------------------------------------------------------------------

def _decided(candidate_id: str, decision: str, speedup: float | None) -> CandidateDecided:
    return CandidateDecided(candidate_id=candidate_id, agent_id=SEED_AGENT, decision=decision,  # type: ignore[arg-type]
                            reason="r", correct=decision == "KEEP", speedup=speedup)


NO_TUNABLES = scale_source("return x * 2 + 1")
SEED_SET = [Seed("c0000", "seed.py", CHUNK_SOURCE, _decided("c0000", "KEEP", 1.0)),
            Seed("c0000-2", "seed_split.py", SPLIT_SOURCE, _decided("c0000-2", "KEEP", 3.0)),
            Seed("c0000-3", "seed_plain.py", NO_TUNABLES, _decided("c0000-3", "KEEP", 5.0)),
            Seed("c0000-4", "seed_wrong.py", SPLIT_SOURCE, _decided("c0000-4", "REVERT", None))]


def test_seed_candidate_ids_come_before_the_agents_candidates() -> None:
    ids = [seed_candidate_id(index) for index in range(3)]
    assert ids == ["c0000", "c0000-2", "c0000-3"]
    assert sorted([*ids, "c0001"]) == [*ids, "c0001"]


def test_the_tuners_agents_are_spread_over_passing_seeds_with_tunables() -> None:
    incumbent = SEED_SET[2]  # the fastest, but with no TUNABLES: the tuner has nothing to search there
    starts = starting_seeds(SEED_SET, incumbent, 5, "offline")
    assert [s.candidate_id for s in starts] == ["c0000", "c0000-2", "c0000", "c0000-2", "c0000"]


def test_other_providers_and_seeds_without_tunables_start_from_the_incumbent() -> None:
    incumbent = SEED_SET[2]
    assert {s.candidate_id for s in starting_seeds(SEED_SET, incumbent, 4, "anthropic")} == {"c0000-3"}
    assert {s.candidate_id for s in starting_seeds(SEED_SET[2:3], incumbent, 3, "offline")} == {"c0000-3"}


def test_strategies_go_round_robin_among_the_agents_of_each_seed() -> None:
    skills = [load_skills()[name] for name in ("memory", "reduction", "compute")]
    stages = CHUNK_SOURCE.replace('"SPARE"', '"NUM_STAGES"').replace("SPARE = 0", "NUM_STAGES = 0")  # memory
    warps = SPLIT_SOURCE.replace("SPLIT", "NUM_WARPS")  # reduction and compute act on it
    chosen = assign_strategies(skills, [stages, warps, stages, warps, warps], "offline")
    assert [s.name for s in chosen] == ["memory", "reduction", "memory", "compute", "reduction"]
    single = assign_strategies(skills, [stages] * 4, "scripted")  # one kernel, no filter: as one seed always did
    assert [s.name for s in single] == ["memory", "reduction", "compute", "memory"]


def test_the_fold_takes_the_fastest_passing_seed_as_the_seed() -> None:
    state = RunState()
    for index, file in enumerate(["seed.py", "b.py", "c.py"]):
        state.apply(CandidateProposed(seq=index + 1, candidate_id=seed_candidate_id(index), agent_id=SEED_AGENT,
                                      position=0, parent_id=None, strategy="seed", rationale="", source="",
                                      seed_file=file))
    assert state.seed_candidate_id == "c0000"  # before any seed is decided: the first
    for seq, (candidate_id, decision, speedup) in enumerate([("c0000", "REVERT", None), ("c0000-3", "KEEP", 1.5),
                                                             ("c0000-2", "KEEP", 2.0)], start=10):
        state.apply(_decided(candidate_id, decision, speedup).model_copy(update={"seq": seq}))
    assert (state.seed_candidate_id, state.seed_speedup) == ("c0000-2", 2.0)
    assert state.best is not None and state.best.candidate_id == "c0000-2"
    assert [(r.file, r.decision) for r in state.seeds.values()] == [("seed.py", "REVERT"), ("b.py", "KEEP"),
                                                                    ("c.py", "KEEP")]
    assert [r.agent_id for r in state.leaderboard] == ["seed"]  # one row: the incumbent


def test_a_log_from_before_several_seeds_reads_as_its_one_seed(tmp_path: Path) -> None:
    """Old lines carry neither seed_file nor seed_id: the seed is c0000 and every agent started from it."""
    lines = [
        CampaignStarted(seq=1, ts=1.0, campaign_id="x", problem="scale", problem_dir=str(SCALE),
                        kernel_type="elementwise", config={"agents": 1, "budget": 2}, device="cpu"),
        CandidateProposed(seq=2, ts=1.0, candidate_id="c0000", agent_id=SEED_AGENT, position=0, parent_id=None,
                          strategy="seed", rationale="the problem's seed", source=CHUNK_SOURCE),
        _decided("c0000", "KEEP", 0.5).model_copy(update={"seq": 3, "ts": 2.0}),
        AgentStarted(seq=4, ts=2.0, agent_id="a1", strategy="memory", provider="offline"),
    ]
    texts = [json.loads(event.model_dump_json()) for event in lines]
    for text in texts:
        text.pop("seed_file", None)
        text.pop("seed_id", None)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(text) + "\n" for text in texts))
    assert parse_event(json.dumps(texts[1])).seed_file is None  # type: ignore[union-attr]
    history = load_history(tmp_path)
    agent = history.agents["a1"]
    assert agent.seed_id == "c0000" and agent.state.best_id == "c0000"
    assert agent.state.best_source == CHUNK_SOURCE and agent.state.best_speedup == 0.5


async def test_the_lines_name_every_seed_but_seed_py() -> None:
    stream = io.StringIO()
    display = HeadlessDisplay(stream)
    for seq, (candidate_id, file) in enumerate([("c0000", "seed.py"), ("c0000-2", "seed_split.py")], start=1):
        await display.on_event(CandidateProposed(seq=seq, candidate_id=candidate_id, agent_id=SEED_AGENT, position=0,
                                                 parent_id=None, strategy="seed", rationale="", source="",
                                                 seed_file=file))
    await display.on_event(_decided("c0000-2", "KEEP", 2.0).model_copy(update={"seq": 3}))
    await display.on_event(_decided("c0000", "REVERT", None).model_copy(update={"seq": 4}))
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[seed seed_split.py] KEEP ") and lines[1].startswith("[seed] REVERT ")


async def test_on_the_cpu_the_lines_show_the_gain_over_the_seed_and_say_why_once() -> None:
    # Interpreted Triton against native PyTorch: "0.000x ref" on every line says nothing about the search.
    stream = io.StringIO()
    display = HeadlessDisplay(stream)
    for seq in (1, 2):  # profiled again on a resume: said once all the same
        await display.on_event(DeviceProfiled(seq=seq, device={"name": "AMD EPYC", "kind": "cpu"},
                                              bandwidth_bytes_per_s=4e9, flops_per_s=1e10))
    await display.on_event(CandidateProposed(seq=3, candidate_id="c0000", agent_id=SEED_AGENT, position=0,
                                             parent_id=None, strategy="seed", rationale="", source=""))
    await display.on_event(_decided("c0000", "KEEP", 0.0004).model_copy(update={"seq": 4}))
    await display.on_event(CandidateProposed(seq=5, candidate_id="c0001", agent_id="a1", position=1,
                                             parent_id="c0000", strategy="compute", rationale="offline tuner",
                                             source=""))
    await display.on_event(_decided("c0001", "KEEP", 0.0006).model_copy(update={"seq": 6, "agent_id": "a1"}))
    lines = stream.getvalue().splitlines()
    assert sum("the lines show the gain over the seed" in line for line in lines) == 1
    assert lines[-2].startswith("[seed] KEEP    1.000x seed") and " 1.500x seed " in lines[-1]


# -- campaigns ----------------------------------------------------------------------------------------------

def _seed_phase(events: list[Event]) -> tuple[list[CandidateProposed], list[CandidateDecided], int]:
    """The seeds' proposals and decisions, and the seq of the first agent's start."""
    proposed = [e for e in events if isinstance(e, CandidateProposed) and e.agent_id == SEED_AGENT]
    decided = [e for e in events if isinstance(e, CandidateDecided) and e.agent_id == SEED_AGENT]
    first_start = min(e.seq for e in events if isinstance(e, AgentStarted))
    return proposed, decided, first_start


async def test_a_campaign_judges_every_seed_first_and_spreads_the_tuner_over_them(campaign_config,
                                                                                   tmp_path: Path) -> None:
    config = campaign_config(problem=str(SEEDS), agents=3, budget=3, plateau=None)
    summary = await Campaign(config).run()
    run_dir = Path(summary.run_dir)
    events = events_of(run_dir)

    proposed, decided, first_start = _seed_phase(events)
    assert [(e.candidate_id, e.seed_file) for e in proposed] == [("c0000", "seed.py"), ("c0000-2", "seed_split.py")]
    assert sorted(e.candidate_id for e in decided) == ["c0000", "c0000-2"]
    assert all(e.decision == "KEEP" for e in decided) and max(e.seq for e in decided) < first_start
    speedups = {e.candidate_id: e.speedup for e in decided}
    assert speedups["c0000-2"] > speedups["c0000"]  # a few parts beat 128 slices of 16 by far

    started = {e.agent_id: e.seed_id for e in events if isinstance(e, AgentStarted)}
    assert started == {"a1": "c0000", "a2": "c0000-2", "a3": "c0000"}  # agent i from seed i mod 2
    first = {}
    for event in events:
        if isinstance(event, CandidateProposed) and event.agent_id != SEED_AGENT:
            first.setdefault(event.agent_id, event)
    assert {agent: e.parent_id for agent, e in first.items()} == started
    assert "SPLIT = " in first["a2"].source and "CHUNK = " not in first["a2"].source  # seed_split's TUNABLES
    assert "CHUNK = " in first["a1"].source and "CHUNK = " in first["a3"].source

    assert summary.seed_speedup == speedups["c0000-2"]  # the incumbent's
    assert [(s.file, s.candidate, s.decision, s.incumbent) for s in summary.seeds] == [
        ("seed.py", "c0000", "KEEP", False), ("seed_split.py", "c0000-2", "KEEP", True)]
    assert (run_dir / "candidates" / "c0000-2.py").read_text() == SPLIT_SOURCE
    assert summary.best is not None and summary.best.speedup >= speedups["c0000-2"]
    reported = summarise_run(run_dir)  # two seeds at position 0 in the trajectory
    assert reported.seed_speedup == speedups["c0000-2"] and reported.trajectory[0][0] == 0

    replayed = await replay_run(run_dir, tmp_path / "replays")  # the spread comes out the same from the log
    assert replayed.divergence is None
    assert {e.agent_id: e.seed_id for e in events_of(Path(replayed.summary.run_dir))
            if isinstance(e, AgentStarted)} == started
    # Seeds are judged side by side (on several GPUs they may finish in either order): a log whose second seed was
    # decided first replays too, each seed answered by its own recorded decision.
    swapped = swap_seed_decisions(run_dir, tmp_path / "swapped" / run_dir.name)
    again = await replay_run(swapped, tmp_path / "replays-swapped")
    assert again.divergence is None and again.summary.seed_speedup == summary.seed_speedup


def swap_seed_decisions(run_dir: Path, into: Path) -> Path:
    shutil.copytree(run_dir, into)
    lines = (into / "events.jsonl").read_text().splitlines()
    found = [n for n, line in enumerate(lines)
             if json.loads(line)["type"] == "candidate_decided" and json.loads(line)["agent_id"] == SEED_AGENT]
    first, second = (json.loads(lines[n]) for n in found)
    first["seq"], second["seq"] = second["seq"], first["seq"]
    lines[found[0]], lines[found[1]] = json.dumps(second), json.dumps(first)
    (into / "events.jsonl").write_text("\n".join(lines) + "\n")
    return into


async def test_llm_agents_start_from_the_incumbent(campaign_config) -> None:
    seen: list[tuple[str, str]] = []

    def script(context: AgentContext) -> str:
        seen.append((context.agent_id, context.working_source))
        return scale_source("return x * 2 + 1")

    config = campaign_config(problem=str(SEEDS), agents=2, budget=2, plateau=None, model="scripted")
    summary = await Campaign(config, provider=ScriptedProvider(script)).run()
    events = events_of(Path(summary.run_dir))
    assert {e.agent_id: e.seed_id for e in events if isinstance(e, AgentStarted)} == {"a1": "c0000-2",
                                                                                      "a2": "c0000-2"}
    assert sorted(seen) == [("a1", SPLIT_SOURCE), ("a2", SPLIT_SOURCE)]
    assert {e.parent_id for e in events if isinstance(e, CandidateProposed) and e.agent_id != SEED_AGENT} == {
        "c0000-2"}


async def test_a_failing_second_seed_is_reported_and_left_out(campaign_config, tmp_path: Path) -> None:
    problem = copy_with(tmp_path, broken="seed_split.py")
    summary = await Campaign(campaign_config(problem=str(problem), agents=2, budget=2, plateau=None)).run()
    events = events_of(Path(summary.run_dir))
    _, decided, first_start = _seed_phase(events)
    assert {e.candidate_id: e.decision for e in decided} == {"c0000": "KEEP", "c0000-2": "REVERT"}
    assert max(e.seq for e in decided) < first_start
    assert {e.agent_id: e.seed_id for e in events if isinstance(e, AgentStarted)} == {"a1": "c0000", "a2": "c0000"}
    assert [(s.candidate, s.decision, s.incumbent) for s in summary.seeds] == [("c0000", "KEEP", True),
                                                                               ("c0000-2", "REVERT", False)]


async def test_no_passing_seed_stops_the_campaign_naming_each(campaign_config, tmp_path: Path) -> None:
    problem = copy_with(tmp_path, broken="seed_split.py")
    (problem / "seed.py").write_text((problem / "seed.py").read_text().replace("* 2 + 1", "* 3 + 1"))
    summary = await Campaign(campaign_config(problem=str(problem), agents=2, budget=2)).run()
    assert re.fullmatch(r"no seed passes the guard \(seed\.py: incorrect: .*; seed_split\.py: incorrect: .*\)",
                        summary.stop_reason or ""), summary.stop_reason
    assert summary.candidates == 0 and summary.best is None and not summary.agents
    assert [(s.candidate, s.decision) for s in summary.seeds] == [("c0000", "REVERT"), ("c0000-2", "REVERT")]


# -- resume, with stand-ins for the guard and the provider ---------------------------------------------------

def _stub(campaign: Campaign) -> StubGuard:
    return StubGuard(campaign.problem, campaign.bus)


def _cut(run_dir: Path, into: Path, keep: int) -> Path:
    """A copy of the run folder whose log holds only its first ``keep`` events (the crash came then)."""
    shutil.copytree(run_dir, into)
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    (into / "events.jsonl").write_text("".join(lines[:keep]))
    for name in ("campaign.db", "campaign.db-wal", "campaign.db-shm"):  # rebuilt from the cut log
        (into / name).unlink(missing_ok=True)
    return into


@pytest.mark.parametrize("cut_after", ["first seed decided", "seeds decided", "first agent started"])
async def test_resume_judges_only_the_seeds_left_and_keeps_each_agents_seed(campaign_config, tmp_path: Path,
                                                                          cut_after: str) -> None:
    config = campaign_config(problem=str(SEEDS), agents=3, budget=6, plateau=None)
    summary = await Campaign(config, provider=SyntheticProvider(), guard_factory=_stub).run()
    events = events_of(Path(summary.run_dir))
    _, decided, first_start = _seed_phase(events)
    keep = {"first seed decided": decided[0].seq, "seeds decided": decided[-1].seq,
            "first agent started": first_start}[cut_after]
    cut = _cut(Path(summary.run_dir), tmp_path / "cut" / Path(summary.run_dir).name, keep)

    resumed = await Campaign.resume(cut, provider=SyntheticProvider(), guard_factory=_stub).run()
    after = events_of(cut)
    seeds_decided = [e.candidate_id for e in after if isinstance(e, CandidateDecided) and e.agent_id == SEED_AGENT]
    assert sorted(seeds_decided) == ["c0000", "c0000-2"]  # each seed decided once, before or after the crash
    assert len([e for e in after if isinstance(e, CandidateProposed) and e.agent_id == SEED_AGENT]) == 2
    starts = {e.agent_id: e.seed_id for e in after if isinstance(e, AgentStarted)}
    assert starts == {"a1": "c0000", "a2": "c0000-2", "a3": "c0000"}
    assert resumed.candidates == 6
