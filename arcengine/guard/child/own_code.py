"""Stretches of a worker's own work in which none of its untrusted module's Python may run.

Making a call's inputs runs torch's and the problem's Python (``torch.manual_seed``, ``get_inputs``, a device
context), and any hook the module registered on the way: red team round 16's module registered a device module
with torch (``torch._register_device_module``), whose ``manual_seed_all`` every ``torch.manual_seed`` calls; it drew
the call's inputs again from the seed and computed the answer there, before the clock (PASS at 125x). Rounds 5
and 12 found other routes into the same stretch. Rather than close each route, the stretch runs under a profile
hook that notes any call of a function whose code lies in the module's own files (its read-only copy and its home,
where torch.compile writes the code it generates; the gate refuses code made from strings, so no function can say
it lies elsewhere), and the call fails. Only the standard library is imported, as for the child.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import FrameType

from arcengine.guard.child import opens


class OwnCodeRan(Exception):
    """The module's code ran in a stretch of the harness's own work; the message is the reason."""


class Absent:
    """Where a module's code lies (path prefixes), and stretches in which none of it may run."""

    def __init__(self, places: tuple[str, ...]) -> None:
        self.places = places

    @contextlib.contextmanager
    def during(self, what: str) -> Iterator[None]:
        """Run the body with the module's calls noted; OwnCodeRan after it if one was (the body's own error wins)."""
        found: list[str] = []
        places = self.places

        def note(frame: FrameType, event: str, arg: object) -> None:
            if event == "call" and not found and frame.f_code.co_filename.startswith(places):
                found.append(f"{frame.f_code.co_name}, line {frame.f_lineno}")

        previous = sys.getprofile()
        opens.set_profile(note)
        try:
            yield
        finally:
            opens.set_profile(previous)
        if found:
            raise OwnCodeRan(f"the module's code ran ({found[0]}) while the harness made {what}, before the clock")
