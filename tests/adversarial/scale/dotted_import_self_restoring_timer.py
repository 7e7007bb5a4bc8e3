# ruff: noqa
"""r02 with a deliberately slow honest body (the seed's 16-element chunks, ~10x slower than the reference): the
one-shot perf_counter_ns patch in the worker's timing module (reached by a computed string through
torch._utils._import_dotted_name) makes the timer's end read the time run() was entered, and restores itself, so
the seal sees nothing. A slow kernel reported faster than the reference."""
import torch
from torch import _utils as tu


def _mod(*parts):
    return tu._import_dotted_name("".join(parts))


class _Box:
    pass


def _set(obj, f):
    obj.perf_counter_ns = f


def _slow(x):
    out = torch.empty_like(x)
    for s in range(0, x.numel(), 16):
        out[s:s + 16] = x[s:s + 16] * 2 + 1
    return out


def run(x):
    try:
        if not _mod("g", "c").isenabled():  # inside a timed block
            m = _mod("arc", "engine.guard.child.", "timing")
            real = m.perf_counter_ns
            box = _Box()
            box.t0 = real()

            def fake():
                _set(m, real)
                return box.t0

            _set(m, fake)
    except Exception:
        pass
    return _slow(x)
