# ruff: noqa
"""b01 on rmsnorm: the slow per-row loop (the control, ../redteam5/b06_rmsnorm_slow_control.py, 0.39x) runs in a
shadow of `detach` on the returned plain tensor, which the harness calls after the clock."""
import torch


def _slow(x, w, out):
    for i in range(x.shape[0]):
        row = x[i].float()
        normed = row * torch.rsqrt(row.pow(2).mean() + 1e-6)
        out[i] = normed.to(x.dtype) * w


def run(x, w):
    out = torch.empty_like(x)

    def detach():
        _slow(x, w, out)
        del out.detach
        return out.detach()

    out.detach = detach
    return out
