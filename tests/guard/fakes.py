"""Stand-ins for the guard's child launcher, shared by the tests that schedule canned children."""

from __future__ import annotations

from typing import Any, Self

from arcengine.guard.sandbox import ChildOutcome
from arcengine.guard.turns import DeviceTurns


class FakeLauncher:
    """The launcher's interface with nothing behind it: a subclass says what each child does in ``run``."""

    def launcher(self) -> Self:
        return self

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def start(self) -> bool:
        return True

    async def run(self, spec: dict[str, Any], *, device: str, timeout_s: float,
                  env_extra: dict[str, str] | None = None, turns: DeviceTurns | None = None) -> ChildOutcome:
        raise NotImplementedError
