"""Reading an LLM's reply: the kernel file from its fenced python block, its strategy and rationale lines, and a
reflection's summary and conclusion. A reply without usable code is a ProviderError: the candidate position is
spent on a REJECT with that reason, and the agent is told."""

from __future__ import annotations

import re
from dataclasses import dataclass

from arcengine.providers.base import ProviderError

_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_RUN = re.compile(r"^(?:async\s+)?def\s+run\s*\(|^run\s*=", re.MULTILINE)


@dataclass(frozen=True)
class ParsedReply:
    source: str
    strategy: str
    rationale: str


def parse_reply(text: str, default_strategy: str) -> ParsedReply:
    """The last fenced block that defines ``run`` is the file; one that does not is no candidate."""
    blocks = [block.strip("\n") + "\n" for block in _FENCE.findall(text)]
    if not blocks:
        raise ProviderError("the reply has no fenced python block with the kernel file")
    files = [block for block in blocks if _RUN.search(block)]
    if not files:
        raise ProviderError("the reply's python block does not define run(...)")
    before_code = text[: text.find("```")]
    return ParsedReply(source=files[-1], strategy=_field(before_code, "Strategy") or default_strategy,
                       rationale=_field(before_code, "Rationale") or before_code.strip()[:300] or "no rationale")


def parse_reflection(text: str) -> tuple[str, str]:
    """(summary, reflection); a reply that ignores the form still yields its first line and its text."""
    summary = _field(text, "Summary")
    reflection = _field(text, "Reflection", rest=True)
    if summary and reflection:
        return summary, reflection
    stripped = text.strip()
    first_line = stripped.splitlines()[0] if stripped else "no conclusion given"
    return summary or first_line, reflection or stripped or first_line


def _field(text: str, name: str, rest: bool = False) -> str:
    """The text after ``Name:`` (markdown emphasis allowed): its line, or with ``rest`` everything after it."""
    pattern = rf"^[ \t>*_#-]*{name}[*_]*\s*:[*_]*[ \t]*(.*)$"
    match = re.search(pattern, text, re.MULTILINE | re.IGNORECASE | (re.DOTALL if rest else 0))
    return match.group(1).strip() if match else ""
