"""What an LLM agent is shown: a stable prefix (role, contract, problem, strategy skill; cacheable for the whole
campaign) and a turn (working kernel, memory, leaderboard, feedback, draft request), plus the reflection
prompt that turns a decision into a conclusion for memory. Held-out workloads never reach these texts: the
context carries visible workloads only, and the feedback and the decision given here are built from visible
results (arcengine.engine.agent.visible_decision)."""

from __future__ import annotations

from dataclasses import dataclass

from arcengine.domain.conclusions import REFLECTION_LIMIT, SUMMARY_LIMIT
from arcengine.domain.events import CandidateDecided, MemoryRecorded
from arcengine.domain.figures import times
from arcengine.providers.base import AgentContext, Proposal

SIBLING_SOURCES = 2  # siblings' best kernels shown in full (the rest by speedup only)

REPLY_FORM = """\
Reply in exactly this form:
Strategy: <one line: the optimisation you applied>
Rationale: <at most three sentences: why it should be faster on this device>
```python
<the complete new kernel file>
```"""
# What the file must define, by the problem's entry point (KernelBench problems keep KernelBench's own contract).
ENTRY_RULES = {
    "run": "The file replaces the working kernel entirely: it must define `run(...)` with the reference's signature "
           "and return what the reference returns (same shape, dtype and device), correct on every shape, not only "
           "the ones listed.",
    "ModelNew": "The file replaces the working kernel entirely: it must define `class ModelNew(torch.nn.Module)` "
                "taking the reference Model's constructor arguments, whose forward takes Model.forward's inputs and "
                "returns what it returns (same shape, dtype and device), correct on every shape, not only the ones "
                "listed. KernelBench's usual route is custom CUDA compiled with load_inline.",
}
# A problem that declares destination passing (FlashInfer-Bench's convention) is called the other way round.
DESTINATION_RULE = ("The file replaces the working kernel entirely: it must define `run(*inputs, *outputs)` taking the "
                    "reference's inputs and then one preallocated tensor per output (the reference's shapes and "
                    "dtypes, contiguous, filled with garbage), write every element of each output in place, and "
                    "return None; correct on every shape, not only the ones listed.")
ROUTES = """\
Routes: PyTorch and Triton (torch.compile too); C++/CUDA through torch.utils.cpp_extension.load_inline, built at
import before your turn on the GPU, cached by its sources and flags, at most 100 s (a build that fails comes back as
the guard's reason, with the compiler's first error lines); CUDA C++ through cuda.core (NVRTC); cuBLASLt through
nvmath-python where it is installed; cuDNN through PyTorch. Native code is judged like the rest: its outputs on
fresh inputs, its inputs unchanged, and no process or thread it starts may outlive a call. Forbidden (the guard
rejects them): other native escapes and processes (ctypes, cffi, subprocess, os.system), threads (and
torch.jit.fork, torch.futures, CUDA host functions: callbacks on a library's thread), dynamic code
(exec/eval/compile, __import__/importlib, getattr/setattr with a computed name, vars/globals), frames and dunders
such as __dict__, sys.modules, torch._C, torch.library but for custom_op/triton_op in your own namespace, dispatch
modes and __torch_function__, cupti and NVML, environment writes, patching torch or the harness, torch.fx, a
computed torch.compile backend, writing files outside your own folders (HOME, TMPDIR), reading other processes'
/proc files, any TCP socket, standard-library modules but the common ones (math, functools, itertools, dataclasses,
typing, enum, os.path, json, re, logging, ...: no inspect, traceback, importlib, threading, queue, site), packages
but those kernels are written with (torch, triton, numpy, cuda-python, nvmath, cupy, numba, einops, FlashInfer,
...), torch._dynamo beyond config/reset/mark_dynamic/disable, falling back to the reference. Work on other streams
is allowed and timed: every stream counts. Expose the knobs worth tuning as module constants listed in
`TUNABLES = {"NAME": [values...]}`. Send one python block and nothing after it."""


def contract(entry: str = "run", destination_passing: bool = False) -> str:
    """The reply's form and the rules a candidate file must follow, for a problem whose modules define ``entry``
    (and, with ``destination_passing``, write into the outputs they are passed)."""
    rule = DESTINATION_RULE if destination_passing else ENTRY_RULES.get(entry, ENTRY_RULES["run"])
    return f"{REPLY_FORM}\n{rule}\n{ROUTES}"


@dataclass(frozen=True)
class Prompt:
    system: str  # stable for the agent's whole campaign: vendors cache it
    user: str


def propose_prompt(context: AgentContext) -> Prompt:
    return Prompt(system=_stable_prefix(context), user=_turn(context))


def _stable_prefix(context: AgentContext) -> str:
    workloads = "\n".join(f"- {w.label()} ({w.dtype})" for w in context.visible_workloads)
    return f"""\
You are agent {context.agent_id}, one of several GPU kernel engineers searching in parallel for a faster
implementation of one operation. Every candidate you send is checked and timed by a strict guard (fresh
process, many seeds and input distributions, hidden shapes, interleaved timing against your incumbent); only
its decision counts. Your strategy is "{context.strategy.name}": {context.strategy.description}

{contract(context.entry, context.destination_passing)}

# Problem: {context.problem_name} ({context.kernel_type}) on {context.device}
{context.problem_description}

Reference implementation (the semantics to match; `make_inputs` shows the inputs):
```python
{context.reference_source.rstrip()}
```

Shapes you are timed on (others, unseen, are checked for correctness too):
{workloads}

# Strategy skill: {context.strategy.name}
{context.strategy.body.strip()}
"""


def _turn(context: AgentContext) -> str:
    parts = [f"""\
# Your working kernel (your best so far: {_speedup(context.best_speedup)} over the reference)
```python
{context.working_source.rstrip()}
```"""]
    if context.recall.wins or context.recall.traps:
        parts.append("# Memory (validated conclusions for this kernel type)\n" + _recall(context))
    if context.leaderboard:
        parts.append("# Leaderboard (the other agents)\n" + _leaderboard(context))
    if context.feedback:
        parts.append("# The guard on your last candidate\n" + context.feedback)
    if context.drafting:
        parts.append(f"# Draft request\nYou have gone {context.plateau} candidates without a KEEP. Stop tuning: "
                     "draft a structurally different kernel (another decomposition, tiling or algorithm) "
                     "under your strategy, even if its first version is slower.")
    else:
        parts.append("# Your move\nPropose the next candidate: one focused change that the guard can judge.")
    return "\n\n".join(parts)


def _recall(context: AgentContext) -> str:
    lines = [_memory_line("WIN", e) for e in context.recall.wins]
    lines += [_memory_line("TRAP", e) for e in context.recall.traps]
    return "\n".join(lines)


def _memory_line(kind: str, entry: MemoryRecorded) -> str:
    return f"- {kind} [{entry.strategy}, {_speedup(entry.speedup)}] {entry.summary}: {entry.reflection}"


def _leaderboard(context: AgentContext) -> str:
    entries = sorted(context.leaderboard or [], key=lambda e: e.speedup or 0.0, reverse=True)
    lines = [f"- {e.agent_id} ({e.strategy}): {_speedup(e.speedup)} with {e.candidate_id}" for e in entries]
    for entry in entries[:SIBLING_SOURCES]:
        lines.append(f"\n{entry.agent_id}'s best ({entry.candidate_id}):\n```python\n{entry.source.rstrip()}\n```")
    return "\n".join(lines)


def _speedup(value: float | None) -> str:
    return times(value) if value else "no measured speedup"


def reflect_prompt(context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Prompt:
    """Ask for the conclusion memory keeps: why it worked (KEEP) or why it failed (REVERT); ``context`` carries
    the guard's feedback on this candidate, and ``decided`` is the agent's visible view of the decision."""
    outcome = "beat the incumbent and was kept" if decided.decision == "KEEP" else "was reverted"
    return Prompt(system=_stable_prefix(context), user=f"""\
Your candidate (strategy: {proposal.strategy}; rationale: {proposal.rationale}) {outcome}.
{context.feedback or decided.reason}

Write the conclusion the team's memory keeps: what to do, or what to avoid, on this kind of kernel, and why,
backed by the numbers above. Conclusions only, no narrative. Reply in exactly this form:
Summary: <one line, at most {SUMMARY_LIMIT} characters>
Reflection: <at most {REFLECTION_LIMIT} characters>""")
