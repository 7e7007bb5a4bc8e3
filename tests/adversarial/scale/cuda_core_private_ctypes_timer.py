# ruff: noqa
"""ctypes reached as an attribute of a Cython module of cuda.core (cuda.core.graph._graph_node binds `ct`): the
gate reads module re-exports from .py sources only, so `ct` is a plain value. ctypes.pythonapi imports the
worker's timing module by name and hands its globals' dict; the clock is swapped for one reading in each timed
call (the red team round 5 timer, by another route to the interpreter)."""
import cuda.core.graph
import torch


def _api(ct):
    obj = ct.py_object
    imp = ct.PYFUNCTYPE(obj, ct.c_char_p)(("PyImport_ImportModule", ct.pythonapi))
    mdict = ct.PYFUNCTYPE(obj, obj)(("PyModule_GetDict", ct.pythonapi))
    return imp, mdict


_IMP, _DICT = _api(cuda.core.graph._host_callback.ct)


def _slow(x):
    out = torch.empty_like(x)
    for s in range(0, x.numel(), 16):
        out[s:s + 16] = x[s:s + 16] * 2 + 1
    return out


def run(x):
    g2 = _IMP(b"g" + b"c")
    if not g2.isenabled():  # inside a timed block (the worker disables collection there)
        g = _DICT(_IMP(b"arc" + b"engine.guard.child.timing"))
        real = g["perf_counter_ns"]
        t_in = real()

        def fake():
            g["perf_counter_ns"] = real
            return t_in

        g["perf_counter_ns"] = fake
    return _slow(x)
