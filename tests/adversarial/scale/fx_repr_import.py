# ruff: noqa
"""The catalogue's self-restoring timer patch (dotted_import_self_restoring_timer), reached without any private
module: torch.fx puts repr() of a graph's constant into the forward() source it generates and execs it with the real
builtins, so a __repr__ that returns code hands back __import__ itself. A 10x slow body reads as fast."""
import torch
import torch.fx

_P = "__imp" + "ort__"


class Code:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _import():
    graph = torch.fx.Graph()
    graph.output(Code(_P))
    return torch.fx.GraphModule(torch.nn.Module(), graph)()


IMPORT = _import()


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
    if IMPORT("g" + "c").isenabled():  # not inside a timed block
        return _slow(x)
    m = IMPORT("arc" + "engine.guard.child.timing", None, None, ["x"])
    box = _Box()
    box.real = m.perf_counter_ns
    box.t0 = box.real()
    mod_dict = IMPORT("built" + "ins").vars(m)

    def fake():
        mod_dict["perf_counter_ns"] = box.real
        return box.t0

    mod_dict["perf_counter_ns"] = fake
    return _slow(x)
