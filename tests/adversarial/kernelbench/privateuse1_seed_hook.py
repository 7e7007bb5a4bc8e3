# ruff: noqa
"""Red team round 16: a 'device module' registered with torch, whose manual_seed_all every torch.manual_seed calls
(the KernelBench input maker seeds with it), inside the harness's making of a call's inputs, before the clock. It
draws the call's inputs again from the seed with a generator of its own and computes the answer there; forward
returns it, found by torch.initial_seed(). PASS at 125x (softmax of a matmul) before input making ran under a
watch for the module's own code."""
import torch
import torch.nn as nn

_state = {"model": None, "shapes": None, "answers": {}}


class _Backend:
    def _is_in_bad_fork(self):
        return False

    def manual_seed_all(self, seed):
        model, shapes = _state["model"], _state["shapes"]
        if model is None or shapes is None:
            return
        g = torch.Generator().manual_seed(seed)
        xs = [torch.randn(s, generator=g) for s in shapes]
        _state["answers"][seed] = model.work(*xs)

    def device_count(self):
        return 0


torch._register_device_module("privateuseone", _Backend())


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        _state["model"] = self

    def work(self, a, b):
        return a + b

    def forward(self, *inputs):
        if _state["shapes"] is None:
            _state["shapes"] = [tuple(t.shape) for t in inputs]
        hit = _state["answers"].pop(torch.initial_seed(), None)
        _state["answers"].clear()
        return hit if hit is not None else self.work(*inputs)
