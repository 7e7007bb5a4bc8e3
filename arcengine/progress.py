"""What a command is doing while it works for minutes without a result (``eval``, ``problems check``): on a
terminal, a rich spinner with the step and the time it has taken, cleared at the end; elsewhere (a pipe, a CI log)
a plain line per step. Always on stderr, so ``--json`` keeps stdout to its one document."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn


class Progress:
    def __init__(self, stream: TextIO | None = None, label: str = "arcengine") -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.live = self.stream.isatty()
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Progress:
        if self.live:
            self._bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                     console=Console(file=self.stream), transient=True)
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def step(self, text: str) -> None:
        """A new step (each step's clock starts at zero: it says how long this one has taken)."""
        if self._bar is None:
            print(f"{self.label}: {text} ...", file=self.stream, flush=True)
            return
        if self._task is not None:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(f"{self.label}: {text}", total=None)
