"""Held-out workloads never reach an agent's provider. Every shipped problem goes through the real agent path
(guard decision -> feedback -> reflection -> memory -> next prompt) with decisions that concern a held-out
workload, and no text an LLM would be sent names a value that only held-out workloads use."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from arcengine.domain.events import CandidateDecided, WorkloadResult
from arcengine.domain.problem import Problem, Workload, load_problem, shipped_problem_names
from arcengine.domain.skills import Skill
from arcengine.engine.agent import Agent, AgentState, feedback, visible_decision
from arcengine.engine.campaign import Campaign
from arcengine.engine.memory import Memory
from arcengine.guard.contract import ChildResult
from arcengine.guard.decision import Ceilings, Thresholds, Verdict, floor_us, judge
from arcengine.guard.service import decision
from arcengine.providers.base import AgentContext, Proposal, Reflection
from arcengine.providers.offline import OfflineProvider
from arcengine.providers.prompt import propose_prompt, reflect_prompt

# A number as text shows it: a digit run not glued to a name ("float32", "H200" and "fp8" are not numbers).
NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+")
# Shipped skills are the same for every problem, so their numbers ("12 us", "32 blocks") say nothing about one
# problem's held-out shapes: a stand-in without numbers keeps such coincidences out of the check.
SKILL = Skill(name="scheduling", description="launch configuration", kind="strategy", eligible=("*",),
              tunables=(), body="Tune the launch configuration.", path=Path("scheduling.md"))
SEED = "import torch\n\n\ndef run(*inputs):\n    return inputs[0]\n"
VISIBLE_US, REFERENCE_US = 1.0, 3.0  # shown as "1.0 us vs reference 3.0 us (3.00x, SOL 0.75)"
HELD_OUT_US = 4242.42  # a held-out workload's time: it must never be shown
CASES = [(name, device) for name in shipped_problem_names() for device in ("cuda", "cpu")
         if device == "cuda" or not load_problem(name).cpu_unsupported]


def held_out_only(workloads: list[Workload]) -> set[int]:
    visible = {v for w in workloads if not w.held_out for v in w.axes.values()}
    return {v for w in workloads if w.held_out for v in w.axes.values()} - visible


def leaks(text: str, workloads: list[Workload]) -> list[str]:
    """What in ``text`` gives a held-out workload away."""
    hidden = held_out_only(workloads)
    numbers = {int(n) for n in NUMBER.findall(text)}
    # A lone digit is everywhere in prose ("step 3", "N(0, 3^2)"), so one is looked for where a shape is
    # written ("T=3"); a longer value is looked for as any number at all.
    found = [str(v) for v in sorted(hidden) if v >= 10 and v in numbers]
    names = "|".join(sorted({re.escape(k) for w in workloads for k in w.axes}))
    found += [m.group() for v in sorted(hidden) for m in re.finditer(rf"\b(?:{names})\s*=\s*{v}(?!\d)", text)]
    found += [w.label() for w in workloads if w.held_out and w.label() in text]
    found += [marker for marker in ("<held-out>", "impossible time", "roofline floor", "max abs err",
                                    f"{HELD_OUT_US:.1f}", f"{HELD_OUT_US:.2f}") if marker in text]
    return found


class Recorder:
    """Reflects as the offline tuner does, and keeps the reflection prompt an LLM provider would send."""

    name = "recorder"

    def __init__(self) -> None:
        self.offline = OfflineProvider()
        self.sent: list[str] = []

    async def propose(self, context: AgentContext) -> Proposal:
        raise AssertionError("the test submits its own candidates")

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        prompt = reflect_prompt(context, proposal, decided)
        self.sent.append(f"{prompt.system}\n{prompt.user}")
        return await self.offline.reflect(context, proposal, decided)


class FakeCampaign:
    """An agent's host: the campaign's own context, judge and memory code over a guard that answers each submission
    with the next prepared decision."""

    context = Campaign.context
    judge = Campaign.judge
    remember = Campaign.remember

    def __init__(self, problem: Problem, device: str, directory: Path) -> None:
        self.problem, self.directory = problem, directory
        self.decisions: list[CandidateDecided] = []
        self.guard = SimpleNamespace(workloads=problem.workloads_for(device), device=device, submit=self._submit)
        self.config = SimpleNamespace(r_draft=10, leaderboard=False)
        self.memory = Memory()
        self.bus = SimpleNamespace(publish=self._publish, publish_all=self._publish)
        self.files = SimpleNamespace(put=lambda path, source: None)
        self.held_out_values: set[int] = Campaign.held_out_values.func(self)  # type: ignore[arg-type]

    async def _submit(self, *, candidate_id: str, **_: Any) -> CandidateDecided:
        return self.decisions.pop(0).model_copy(update={"candidate_id": candidate_id})

    async def _publish(self, event: Any) -> Any:
        return event

    async def publish(self, events: list[Any]) -> None:
        pass

    def put_file(self, path: Path, source: str) -> None:
        pass

    def leaderboard(self, exclude: str | None = None) -> list[Any]:
        return []

    def write_candidate(self, candidate_id: str, source: str) -> tuple[Path, anyio.Event]:
        return self.candidate_path(candidate_id), anyio.Event()

    def candidate_path(self, candidate_id: str) -> Path:
        return self.directory / f"{candidate_id}.py"

    async def after_decision(self, agent: Agent, decided: CandidateDecided) -> None:
        pass


def _ceilings(problem: Problem, workloads: list[Workload]) -> Ceilings:
    """Ceilings that put every roofline floor at or under 0.1 us, so the visible figures are the same strings
    for every problem (a floor above the time would change the speedup shown)."""
    return Ceilings(flops_per_s=max(problem.flops(w) for w in workloads) / 1e-7 or 1.0,
                    bytes_per_s=max(problem.bytes(w) for w in workloads) / 1e-7)


def _entry(w: Workload, time_us: float, **extra: Any) -> dict[str, Any]:
    return {"index": w.index, "correct": True, "time_us": time_us, "ref_time_us": 2 * time_us
            if w.held_out else REFERENCE_US, "paired_ratios": [0.5, 0.5], **extra}


def decisions_on_held_out(problem: Problem, workloads: list[Workload]) -> list[CandidateDecided]:
    """Each way the guard can decide about a held-out workload, with its shape and figures in the reason."""
    ceilings = _ceilings(problem, workloads)
    held = [w for w in workloads if w.held_out]
    hidden = held_out_only(workloads)
    target = next(w for w in held if set(w.axes.values()) & hidden)  # a held-out shape with a held-out value
    sizes = ", ".join(str(v) for v in target.axes.values())
    thresholds = Thresholds(margin=0.02, near_band=0.05)
    visible = [_entry(w, VISIBLE_US) for w in workloads if not w.held_out]

    def judged(result: dict[str, Any]) -> CandidateDecided:
        return decision("c0000", "a1", judge(ChildResult.model_validate(result), problem, workloads, thresholds,
                                             ceilings, has_incumbent=True))

    failure = f"max abs err 9.9e+01 at element ({sizes}) (output shape ({sizes}))"
    incorrect = judged({  # as the child reports a failure: the label of the workload, its seed and the error
        "correct": False, "failure_held_out": True,
        "failure": f"held-out workload {target.index} ({target.label()}) seed 2 (normal inputs): {failure}",
        "workloads": visible + [_entry(w, HELD_OUT_US) for w in held if w is not target]
        + [{"index": target.index, "correct": False, "failure": failure}]})
    floor = floor_us(problem, target, ceilings)
    impossible = judged({"correct": True, "workloads": visible + [
        _entry(w, floor / 4 if w is target else HELD_OUT_US) for w in held]})
    slower = judged({"correct": True, "workloads": visible + [_entry(w, HELD_OUT_US) for w in held]})
    crashed = decision("c0000", "a1", Verdict("REVERT", f"child killed by SIGSEGV: bad size {max(hidden)}", False))
    harness = decision("c0000", "a1", Verdict(  # the reference itself failed, on a held-out shape
        "REVERT", f"harness failed: reference failed on held-out workload {target.index} ({target.label()}) seed 0: "
                  f"RuntimeError: shape ({sizes}) is invalid", False))
    assert "impossible time" in impossible.reason and slower.reason.startswith("slower")
    return [incorrect, impossible, slower, crashed, harness]


@pytest.mark.parametrize(("name", "device"), CASES)
async def test_no_prompt_names_a_held_out_value(name: str, device: str, tmp_path: Path) -> None:
    problem = load_problem(name)
    campaign = FakeCampaign(problem, device, tmp_path)
    workloads = campaign.guard.workloads
    assert held_out_only(workloads), f"{name} on {device}: no held-out shape has a value of its own"
    provider = Recorder()
    agent = Agent("a1", SKILL, provider, tmp_path / "a1", AgentState.from_seed(SEED, 1.0))
    campaign.decisions = decisions_on_held_out(problem, workloads)
    texts: dict[str, str] = {}
    found: list[str] = []
    for n in range(len(campaign.decisions)):
        candidate_id = f"c{n + 1:04d}"
        proposal = Proposal(source=SEED, strategy=SKILL.name, rationale="wider blocks", request="", response="")
        await agent._conclude(campaign, campaign.context(agent), candidate_id, proposal)
        feedback = agent.state.last_feedback or ""
        assert feedback.startswith(f"Your last candidate {candidate_id}")
        reason = feedback.splitlines()[0].replace(candidate_id, "")
        if n != 2 and re.search(r"\d", reason):  # all but "slower" concern a held-out workload: no number
            found.append(f"feedback on {candidate_id} has numbers: {reason}")
        prompt = propose_prompt(campaign.context(agent))  # the feedback and the memory the reflection left
        texts[f"prompt after {candidate_id}"] = f"{prompt.system}\n{prompt.user}"
    texts |= {f"reflection prompt {i}": text for i, text in enumerate(provider.sent)}
    recall = campaign.memory.recall(problem.kernel_type, agent.id)
    assert len(recall.traps) == len(provider.sent) == 5  # every REVERT left a conclusion in memory
    found += [f"{where}: {', '.join(leaks(text, workloads))}" for where, text in texts.items()
              if leaks(text, workloads)]
    assert not found, f"{name} on {device} gives held-out shapes away:\n" + "\n".join(found)


async def test_visible_figures_are_shown_as_measured(tmp_path: Path) -> None:
    """A visible time that happens to equal a held-out value is shown as it is: masking it ("<held-out>.4 us")
    would tell the agent that the number is a held-out size."""
    problem = load_problem("silu_mul")
    campaign = FakeCampaign(problem, "cuda", tmp_path)
    workloads = campaign.guard.workloads
    hidden = max(held_out_only(workloads))
    first = next(w for w in workloads if not w.held_out)
    result = {"correct": True, "workloads": [
        _entry(w, hidden + 0.4 if w is first else VISIBLE_US) for w in workloads]}
    campaign.decisions = [decision("c0000", "a1", judge(ChildResult.model_validate(result), problem, workloads,
                                                        Thresholds(0.02, 0.05), None,
                                                        has_incumbent=True))]
    agent = Agent("a1", SKILL, Recorder(), tmp_path / "a1", AgentState.from_seed(SEED, 1.0))
    proposal = Proposal(source=SEED, strategy=SKILL.name, rationale="wider blocks", request="", response="")
    await agent._conclude(campaign, campaign.context(agent), "c0001", proposal)
    feedback = agent.state.last_feedback or ""
    assert f"{first.label()}: {hidden + 0.4:.1f} us" in feedback and "<held-out>" not in feedback


def test_a_pass_whose_reason_mentions_a_held_out_workload_keeps_only_its_visible_figure() -> None:
    """A KEEP is not told it failed; of a reason that also describes a held-out workload (its time under the
    floor, say) only the paired gain, measured on visible workloads, is kept."""
    decided = CandidateDecided(candidate_id="c0001", agent_id="a1", decision="KEEP", correct=True, vs_incumbent=1.05,
                               reason="1.050x the incumbent; suspicious (a held-out workload: 0.01 us under the "
                                      "0.05 us roofline floor), confirmed by a fresh child")
    shown = visible_decision(decided, set())
    assert shown.reason == "correct on every workload: 1.050x the incumbent (held-out workload details withheld)"


def test_agents_hear_the_visible_gain_over_the_baseline_and_nothing_held_out() -> None:
    workloads = [WorkloadResult(index=0, axes={"M": 8}, held_out=False, correct=True, time_us=10.0, ref_time_us=30.0,
                                speedup=3.0, baseline_route="compile", baseline_time_us=12.0,
                                speedup_over_baseline=1.2),
                 WorkloadResult(index=1, axes={"M": 999}, held_out=True, correct=True, time_us=5.0, ref_time_us=9.0,
                                speedup=1.8, baseline_route="compile", baseline_time_us=4.0,
                                speedup_over_baseline=0.8)]
    decided = CandidateDecided(candidate_id="c0001", agent_id="a1", decision="ACCEPT", correct=True, reason="near",
                               workloads=workloads, speedup_over_baseline=1.2, held_out_speedup_over_baseline=0.8)
    shown = visible_decision(decided, {999})
    assert shown.held_out_speedup_over_baseline is None and [w.index for w in shown.workloads] == [0]
    proposal = Proposal(source=SEED, strategy=SKILL.name, rationale="wider blocks", request="", response="")
    text = feedback("c0001", proposal, shown)
    assert "baseline compile 12.0 us (1.20x)" in text and "999" not in text and "0.80" not in text
