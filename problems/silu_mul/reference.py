"""SiLU-and-mul (SwiGLU activation) reference: out = silu(gate) * up, computed in float32, rounded to bfloat16.

Input: x [T, 2 * D] bfloat16, the fused gate_up projection output, gate in columns [0, D) and up in
columns [D, 2 * D) (`gate, up = x.chunk(2, dim=-1)`, as in vLLM's silu_and_mul). Output: [T, D] bfloat16,
silu(gate.float()) * up.float() (silu(g) = g * sigmoid(g)) in float32, rounded to nearest even bfloat16.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def make_inputs(axes: dict[str, int], generator: torch.Generator, device: str) -> tuple[torch.Tensor, ...]:
    t, d = int(axes["T"]), int(axes["D"])
    x = torch.randn(t, 2 * d, generator=generator, device=device, dtype=torch.float32)
    return (x.to(torch.bfloat16),)


def run(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.chunk(2, dim=-1)
    return (F.silu(gate.float()) * up.float()).to(x.dtype)
