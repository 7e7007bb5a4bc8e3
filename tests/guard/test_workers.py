"""Several GPUs: choosing them, pinning children to them, and one worker per GPU draining the one queue."""

from __future__ import annotations

import contextlib
import functools
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from arcengine.domain.events import CandidateDecided
from arcengine.domain.problem import load_problem
from arcengine.guard.decision import Thresholds
from arcengine.guard.gpus import GpuSelectionError, pinned_environment, select_gpus
from arcengine.guard.sandbox import ChildOutcome
from arcengine.guard.service import GuardError, GuardService, Slot
from arcengine.guard.turns import DeviceTurns
from arcengine.recording.bus import Bus
from tests.guard.fakes import FakeLauncher

FAKE_PROFILE = {"device": {"name": "Fake GPU", "kind": "cuda"}, "flops_per_s": 1e14, "bandwidth_bytes_per_s": 1e12}


@pytest.mark.parametrize(("spec", "count", "chosen"), [
    ("all", 1, [0]), ("all", 4, [0, 1, 2, 3]), ("2", 4, [0, 1]), ("1", 2, [0]),
    ("0,1", 2, [0, 1]), ("3,1", 4, [3, 1]), ("1,", 2, [1]),
])
def test_gpus_are_chosen_by_count_or_index(spec: str, count: int, chosen: list[int]) -> None:
    assert select_gpus(spec, count) == chosen


@pytest.mark.parametrize(("spec", "count", "message"), [
    ("3", 2, "only 2 GPUs visible"), ("0,2", 2, "no GPU 2 (GPUs 0 to 1 are visible)"),
    ("0,0", 2, "listed twice"), ("0", 2, "expected all, a count"), ("two", 2, "expected all, a count"),
    ("all", 0, "no GPU is visible"),
])
def test_an_impossible_choice_of_gpus_says_why(spec: str, count: int, message: str) -> None:
    with pytest.raises(GpuSelectionError, match=re.escape(message)):
        select_gpus(spec, count)


def test_a_child_is_pinned_through_the_users_own_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert pinned_environment(1) == {"CUDA_VISIBLE_DEVICES": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, GPU-5d3c")  # the engine's GPU 1 is the machine's GPU-5d3c
    assert pinned_environment(0) == {"CUDA_VISIBLE_DEVICES": "2"}
    assert pinned_environment(1) == {"CUDA_VISIBLE_DEVICES": "GPU-5d3c"}


def _guard(slots: list[Slot], device: str = "cuda", devices: FakeDevices | None = None) -> GuardService:
    guard = GuardService(load_problem("rmsnorm"), Bus(None), Thresholds(0.02, 0.05), seeds=1, timeout_s=120.0,
                         launcher=devices.launcher if devices else None)
    guard.device, guard.slots = device, slots
    return guard


class FakeDevices(FakeLauncher):
    """Launchers whose children prepare at once, then (in their turn, when pipelined) start on the device and
    end when the test says, recording where each ran."""

    def __init__(self) -> None:
        self.prepared: list[str] = []  # candidate file stems, as their children were launched
        self.started: list[tuple[str, str]] = []  # (CUDA_VISIBLE_DEVICES, stem), as they took the device
        self.running: dict[str, anyio.Event] = {}
        self.changed = anyio.Event()

    async def run(self, spec: dict[str, Any], *, device: str, timeout_s: float,
                  env_extra: dict[str, str] | None = None, turns: DeviceTurns | None = None) -> ChildOutcome:
        stem = Path(spec["candidate"]).stem
        self.prepared.append(stem)
        self.changed.set()
        async with turns.turn(anyio.Event().wait) if turns else contextlib.nullcontext():
            self.started.append(((env_extra or {})["CUDA_VISIBLE_DEVICES"], stem))
            self.running[stem] = done = anyio.Event()
            self.changed.set()
            await done.wait()
            del self.running[stem]
        return ChildOutcome(result=None, returncode=1, timed_out=False, seconds=1.0, stderr_tail="")

    async def wait_prepared(self, count: int) -> None:
        while len(self.prepared) < count:
            self.changed = anyio.Event()
            await self.changed.wait()

    async def wait_started(self, count: int) -> None:
        while len(self.started) < count:
            self.changed = anyio.Event()
            await self.changed.wait()

    def finish(self, stem: str) -> None:
        self.running[stem].set()


async def test_every_gpu_works_while_candidates_wait_and_agents_take_turns(tmp_path: Path) -> None:
    devices = FakeDevices()
    guard = _guard([Slot(0, FAKE_PROFILE), Slot(1, FAKE_PROFILE)], devices=devices)
    decided: dict[str, CandidateDecided] = {}
    submissions = [(agent, n) for n in range(3) for agent in ("a1", "a2", "a3")]  # 9 candidates

    async def submit(agent: str, n: int) -> None:
        stem = f"{agent}-{n}"
        decided[stem] = await guard.submit(candidate_id=stem, agent_id=agent, source="def run(x):\n    return x\n",
                                           candidate_path=tmp_path / f"{stem}.py", incumbent_path=tmp_path / "inc.py")

    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        # Every agent queues all its candidates before any GPU finishes: the worst case for fairness.
        for agent in ("a3", "a1", "a2"):
            for n in range(3):
                group.start_soon(submit, agent, n)
        await devices.wait_started(2)
        for finished in range(len(submissions) - 2):
            # Both GPUs are busy whenever candidates wait.
            assert sorted(gpu for gpu, stem in devices.started if stem in devices.running) == ["0", "1"]
            gpu, stem = next((g, s) for g, s in devices.started if s in devices.running)
            devices.finish(stem)
            await devices.wait_started(3 + finished)
            assert devices.started[-1][0] == gpu  # the GPU that came free took the next candidate
        for _, stem in list(devices.started):
            if stem in devices.running:
                devices.finish(stem)
        while len(decided) < len(submissions):
            await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    # Each agent's n-th candidate runs before any agent's (n+1)-th: no agent waits behind another's backlog.
    rounds = [int(stem.rsplit("-", 1)[1]) for _, stem in devices.started]
    assert rounds == sorted(rounds)
    assert {gpu for gpu, _ in devices.started} == {"0", "1"}
    for stem, event in decided.items():  # the record says which GPU measured what
        assert str(event.gpu) == next(gpu for gpu, s in devices.started if s == stem)


async def test_asking_for_gpus_on_the_cpu_is_refused() -> None:
    guard = _guard([], device="cpu")
    with pytest.raises(GuardError, match="--gpus 0,1 needs GPUs, and the guard runs on the CPU"):
        await guard.profile("cpu", "0,1")
    assert [event.gpu for event in await guard.profile("cpu", "all")] == [None]  # the default changes nothing
    assert [slot.gpu for slot in guard.slots] == [None]


@pytest.mark.heavy
async def test_two_workers_judge_real_children_each_pinned_to_its_device(tmp_path: Path) -> None:
    """Two CPU "devices" stand in for two GPUs: real children, one worker per device, one queue."""
    guard = _guard([], device="cpu")
    (profiled,) = await guard.profile("cpu")
    cpu = {"device": profiled.device, "flops_per_s": profiled.flops_per_s,
           "bandwidth_bytes_per_s": profiled.bandwidth_bytes_per_s}
    guard.slots = [Slot(0, cpu), Slot(1, cpu)]
    seed = guard.problem.seed_path.read_text()
    broken = seed.replace("def run(", "def _unused(") + "\ndef run(x, w):\n    return x * 0\n"
    files = {name: tmp_path / f"{name}.py" for name in ("seed", "same", "broken")}
    for name, source in (("seed", seed), ("same", seed), ("broken", broken)):
        files[name].write_text(source)
    decided: dict[str, CandidateDecided] = {}

    async def submit(name: str, incumbent: Path | None) -> None:
        decided[name] = await guard.submit(candidate_id=name, agent_id=f"a-{name}", source=files[name].read_text(),
                                           candidate_path=files[name], incumbent_path=incumbent)

    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        await submit("seed", None)
        async with anyio.create_task_group() as both:
            both.start_soon(submit, "same", files["seed"])
            both.start_soon(submit, "broken", files["seed"])
        group.cancel_scope.cancel()
    assert decided["seed"].decision == "KEEP" and decided["seed"].speedup
    assert decided["same"].correct and decided["same"].decision in ("ACCEPT", "REVERT", "KEEP")
    assert decided["broken"].decision == "REVERT" and not decided["broken"].correct
    # The two candidates waited together, so each worker took one.
    assert {decided["same"].gpu, decided["broken"].gpu} == {0, 1}


async def test_a_worker_starts_a_candidate_only_once_its_file_is_written(tmp_path: Path) -> None:
    """The file is written while the candidate waits in the queue; the child must not load it before."""
    devices = FakeDevices()
    guard = _guard([Slot(0, FAKE_PROFILE)], devices=devices)
    written = anyio.Event()
    decided: list[CandidateDecided] = []

    async def submit() -> None:
        decided.append(await guard.submit(candidate_id="c1", agent_id="a1", source="def run(x):\n    return x\n",
                                          candidate_path=tmp_path / "c1.py", incumbent_path=tmp_path / "inc.py",
                                          written=written))

    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        group.start_soon(submit)
        await anyio.wait_all_tasks_blocked()
        assert devices.started == []  # queued, its file not yet on disk
        written.set()
        await devices.wait_started(1)
        devices.finish("c1")
        while not decided:
            await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert decided[0].candidate_id == "c1" and decided[0].gpu == 0


async def test_pipelined_the_next_child_prepares_while_one_holds_the_gpu(tmp_path: Path) -> None:
    devices = FakeDevices()
    guard = _guard([Slot(0, FAKE_PROFILE)], devices=devices)
    guard.pipeline = True
    decided: list[str] = []

    async def submit(stem: str) -> None:
        event = await guard.submit(candidate_id=stem, agent_id=f"agent-{stem}", source="def run(x):\n    return x\n",
                                   candidate_path=tmp_path / f"{stem}.py", incumbent_path=tmp_path / "inc.py")
        decided.append(event.candidate_id)

    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        for stem in ("c1", "c2", "c3"):
            group.start_soon(submit, stem)
        await devices.wait_prepared(2)
        await anyio.wait_all_tasks_blocked()
        assert devices.prepared == ["c1", "c2"]  # two in flight: one on the GPU, one preparing
        assert [stem for _, stem in devices.started] == ["c1"] and list(devices.running) == ["c1"]
        devices.finish("c1")
        await devices.wait_prepared(3)
        await anyio.wait_all_tasks_blocked()
        assert [stem for _, stem in devices.started] == ["c1", "c2"]  # the prepared one took the GPU at once
        assert list(devices.running) == ["c2"]  # and only it: never two children on one GPU
        devices.finish("c2")
        await devices.wait_started(3)
        devices.finish("c3")
        while len(decided) < 3:
            await anyio.sleep(0.01)
        group.cancel_scope.cancel()


async def test_without_the_pipeline_one_child_at_a_time(tmp_path: Path) -> None:
    devices = FakeDevices()
    guard = _guard([Slot(0, FAKE_PROFILE)], devices=devices)  # the default
    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        for stem in ("c1", "c2"):
            group.start_soon(functools.partial(
                guard.submit, candidate_id=stem, agent_id=stem, source="def run(x):\n    return x\n",
                candidate_path=tmp_path / f"{stem}.py", incumbent_path=tmp_path / "inc.py"))
        await devices.wait_prepared(1)
        await anyio.wait_all_tasks_blocked()
        assert devices.prepared == ["c1"]
        group.cancel_scope.cancel()


class HeldLog:
    """An event log whose writes wait until the test releases them, recording what was written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.release = anyio.Event()
        self.written: list[str] = []

    async def append_text(self, text: str) -> None:
        await self.release.wait()
        self.written += [json.loads(line)["candidate_id"] for line in text.splitlines()]


async def test_the_worker_goes_on_while_a_decision_is_logged_and_no_agent_holds_it_before(tmp_path: Path) -> None:
    """The device never waits on the log, and a decision reaches its agent only once it is in the log."""
    log = HeldLog(tmp_path / "events.jsonl")
    devices = FakeDevices()
    guard = _guard([Slot(0, FAKE_PROFILE)], devices=devices)
    guard.bus = Bus(log)  # type: ignore[arg-type]
    held: dict[str, list[str]] = {}  # by candidate: what the log held when its agent got the decision

    async def submit(stem: str) -> None:
        await guard.submit(candidate_id=stem, agent_id=f"agent-{stem}", source="def run(x):\n    return x\n",
                           candidate_path=tmp_path / f"{stem}.py", incumbent_path=tmp_path / "inc.py")
        held[stem] = list(log.written)

    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        for stem in ("c1", "c2"):
            group.start_soon(submit, stem)
        await devices.wait_started(1)
        devices.finish("c1")
        with anyio.move_on_after(10):
            await devices.wait_started(2)
        took_the_next_while_logging = len(devices.started) == 2
        await anyio.wait_all_tasks_blocked()
        held_before_the_log_was_written = dict(held)
        log.release.set()  # before any assertion: a commit once started is shielded and would never end
        await devices.wait_started(2)
        devices.finish("c2")
        while len(held) < 2:
            await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert took_the_next_while_logging
    assert held_before_the_log_was_written == {}
    assert "c1" in held["c1"] and "c2" in held["c2"]
