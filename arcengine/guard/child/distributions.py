"""Input distributions for the correctness gate, so a kernel is checked on more than well-behaved normals.

The generic ones reshape every floating-point input the reference made (normal draws) with the same
generator; any other name is the reference's own (``make_inputs(..., distribution=NAME)``), for what the op
makes special (rows of equal values for softmax, for example).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch

GENERIC = ("normal", "uniform", "heavy_tailed", "large", "small")


def _uniform(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    draw = torch.rand(t.shape, generator=generator, device=t.device, dtype=torch.float32)
    return (draw * 2 - 1).to(t.dtype)


def _heavy_tailed(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    # Student-t with 2 degrees of freedom: a normal over the root of an exponential; rare huge values.
    u = torch.rand(t.shape, generator=generator, device=t.device, dtype=torch.float32).clamp_min(1e-6)
    heavy = t.float() / torch.sqrt(-torch.log(u))
    limit = torch.finfo(t.dtype).max / 4
    return heavy.clamp(-limit, limit).to(t.dtype)


TRANSFORMS: dict[str, Callable[[torch.Tensor, torch.Generator], torch.Tensor]] = {
    "uniform": _uniform,
    "heavy_tailed": _heavy_tailed,
    "large": lambda t, _: (t.float() * 1000).to(t.dtype),
    "small": lambda t, _: (t.float() * 1e-3).to(t.dtype),
}


def accepts_distribution(make_inputs: Callable[..., object]) -> bool:
    try:
        return "distribution" in inspect.signature(make_inputs).parameters
    except (TypeError, ValueError):
        return False


def make_inputs(
    make: Callable[..., object], axes: dict[str, object], generator: torch.Generator, device: torch.device,
    distribution: str,
) -> tuple[object, ...]:
    """Inputs for one correctness case in the named distribution."""
    if distribution in GENERIC:
        inputs = make(axes, generator, device)
        inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
        return tuple(_reshape(x, distribution, generator) for x in inputs) if distribution != "normal" else inputs
    if not accepts_distribution(make):
        raise ValueError(f"distribution {distribution!r} needs make_inputs(..., distribution=...) in the reference")
    inputs = make(axes, generator, device, distribution=distribution)
    return tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)


def _reshape(x: object, distribution: str, generator: torch.Generator) -> object:
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.element_size() >= 2:
        return TRANSFORMS[distribution](x, generator)
    return x  # integers, indices and 8-bit floats keep their meaning


def assign(seeds: Sequence[int], distributions: Sequence[str]) -> list[tuple[int, str]]:
    """Each seed with a distribution, round robin, so every distribution is drawn at least once per workload."""
    count = max(len(seeds), len(distributions))
    return [(seeds[i % len(seeds)] + (i // len(seeds)) * 7919, distributions[i % len(distributions)])
            for i in range(count)]
