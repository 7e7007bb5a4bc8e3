# ruff: noqa
"""A Triton kernel spinning on a flag that is never set: the GPU never finishes, the host blocks in the next
synchronise, and only killing the process (group) frees the device. The guard must say 'timed out' and the next
candidate must get a working GPU. GPU only."""

import torch
import triton
import triton.language as tl


@triton.jit
def _spin(flag_ptr):
    # A volatile load and a store in the body, so the compiler can neither hoist the load nor drop the loop.
    spins = 0
    flag = tl.load(flag_ptr, volatile=True)
    while flag == 0:
        spins += 1
        tl.store(flag_ptr + 1, spins)
        flag = tl.load(flag_ptr, volatile=True)


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    flag = torch.zeros(2, dtype=torch.int32, device=x.device)
    _spin[(1,)](flag)
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight
