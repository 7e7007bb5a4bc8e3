"""What memory holds and gives back, as the providers see it: the recalled wins and traps, and the field limits a
conclusion is clipped to (engine/memory.py keeps them; the prompts state the limits to the model)."""

from __future__ import annotations

from dataclasses import dataclass

from arcengine.domain.events import MemoryRecorded

SUMMARY_LIMIT = 160
REFLECTION_LIMIT = 1200
CONTEXT_LIMIT = 240


def clip(text: str, limit: int) -> str:
    """Collapse whitespace and cut to ``limit`` characters, marking the cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Recall:
    wins: list[MemoryRecorded]  # best speedup first
    traps: list[MemoryRecorded]  # oldest first
