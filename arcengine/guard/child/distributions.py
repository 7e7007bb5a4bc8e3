"""Input distributions for the correctness gate, so a kernel is checked on more than well-behaved normals.

The generic ones reshape every floating-point input the reference made (normal draws) with the same
generator; any other name is the reference's own (``make_inputs(..., distribution=NAME)``), for what the op
makes special (rows of equal values for softmax, for example). ``needles`` leaves the draw as it is but for a few
elements at drawn places, made large: a kernel that answers from a sample of its input, or from the draw's known
statistics, misses them, and finding them first means reading every element.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence

import torch

GENERIC = ("normal", "uniform", "heavy_tailed", "large", "small", "needles", "needles_in_range")
NEEDLES = 32  # elements made large per tensor: few enough to hide from a sample, enough to move a mean of millions
NEEDLE_RMS = 16.0  # a needle's magnitude (the largest; each is 0.75 to 1 of it), in its tensor's root-mean-squares ...
NEEDLE_EXP_SHARE = 0.25  # ... and at most this share of log(the dtype's largest value): exp() of it stays finite
NEEDLED_NUMEL = 1024  # smaller tensors are read whole by any kernel: none are planted there
# needles_in_range: an input inside [0, 1] or [-1, 1] keeps that range, as the reshaped draw does, for a reference
# that refuses values outside it: binary cross entropy does, on a GPU with a device-side assert that leaves the
# judge's process unusable. Its needles sit this near the range's end nearer to their element (the log of one, say,
# is large). Plain needles are large there too: KernelBench's cross entropy draws its logits in [0, 1), and an
# answer from a sample of each row passed needles kept inside that range (the CPU catalogue at 95cec3b).
NEEDLE_EDGE = 2.0**-10
FEW_VALUES = 8  # a tensor of this many distinct values or fewer (labels, masks) keeps its meaning: no needles


def _uniform(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    draw = torch.rand(t.shape, generator=generator, device=t.device, dtype=torch.float32)
    return (draw * 2 - 1).to(t.dtype)


def _heavy_tailed(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    # Student-t with 2 degrees of freedom: a normal over the root of an exponential; rare huge values.
    u = torch.rand(t.shape, generator=generator, device=t.device, dtype=torch.float32).clamp_min(1e-6)
    heavy = t.float() / torch.sqrt(-torch.log(u))
    limit = torch.finfo(t.dtype).max / 4
    return heavy.clamp(-limit, limit).to(t.dtype)


def _needles(t: torch.Tensor, generator: torch.Generator, keep_range: bool = False) -> torch.Tensor:
    """``t`` with NEEDLES elements, at places drawn from ``generator``, set to large values of their own sign, in
    place (the draw is fresh; a copy of gigabytes would not fit beside it). Zeros stay zero, a symmetric matrix
    stays symmetric, probability rows are normalised again (so stay inside [0, 1]); with ``keep_range`` another
    tensor inside [0, 1] or [-1, 1] gets its needles near the ends of that range (NEEDLE_EDGE). Tensors of few
    values, small or strided ones are left."""
    if t.numel() < NEEDLED_NUMEL or not t.is_contiguous():
        return t
    flat = t.view(-1)
    if _few_valued(flat, generator):
        return t
    rms = torch.linalg.vector_norm(flat, dtype=torch.float32).item() / t.numel() ** 0.5
    magnitude = min(NEEDLE_RMS * rms, NEEDLE_EXP_SHARE * math.log(torch.finfo(t.dtype).max))
    places = torch.randint(t.numel(), (NEEDLES,), generator=generator, device=generator.device).to(t.device)
    # Each needle its own value, in [0.75, 1] of the magnitude: two equal needles in one row would be a tie no
    # draw of KernelBench's makes, where an honest argmax may answer either index (the honest hunt of session 20).
    scales = 1 - 0.25 * torch.rand(NEEDLES, generator=generator, device=generator.device).to(t.device)
    kept = flat[places] != 0
    places, scales = places[kept], scales[kept]
    if magnitude == 0 or places.numel() == 0:
        return t
    symmetric = t.dim() >= 2 and t.shape[-1] == t.shape[-2] and torch.equal(t, t.mT)
    lowest, highest = (bound.item() for bound in flat.aminmax())  # no temporary the size of the input
    probabilities = lowest >= 0 and _probability_rows(t)
    picked = flat[places].float()
    if keep_range and lowest >= -1 and highest <= 1 and not probabilities:  # rows normalised again stay in range
        floor, edge = (0.0 if lowest >= 0 else -1.0), NEEDLE_EDGE * scales
        values = torch.where(picked < (floor + 1) / 2, floor + edge, 1 - edge).to(t.dtype)
    else:
        values = (picked.sign() * magnitude * scales).to(t.dtype)
    with torch.no_grad():  # an input that requires grad is a leaf, which autograd lets no one write in place
        flat[places] = values
        if symmetric:
            flat[_mirrored(places, t.shape[-1])] = values
        if probabilities:
            t.div_(t.sum(-1, keepdim=True))
    return t


def _few_valued(flat: torch.Tensor, generator: torch.Generator) -> bool:
    """Whether a sample of 4096 elements, at drawn places (a stride could fall on one column), has few values."""
    places = torch.randint(flat.numel(), (4096,), generator=generator, device=generator.device).to(flat.device)
    return torch.unique(flat[places]).numel() <= FEW_VALUES


def _mirrored(places: torch.Tensor, n: int) -> torch.Tensor:
    """The flat index of (.., j, i) for each flat index of (.., i, j) in a tensor whose last two dims are n x n."""
    matrix, inside = places // (n * n), places % (n * n)
    return matrix * n * n + (inside % n) * n + inside // n


def _probability_rows(t: torch.Tensor) -> bool:
    """Whether every row along the last dimension of ``t`` (no negative value) sums to one."""
    return t.shape[-1] > 1 and bool((t.sum(-1, dtype=torch.float32) - 1).abs().max() <= 1e-3)


TRANSFORMS: dict[str, Callable[[torch.Tensor, torch.Generator], torch.Tensor]] = {
    "uniform": _uniform,
    "heavy_tailed": _heavy_tailed,
    "large": lambda t, _: (t.float() * 1000).to(t.dtype),
    "small": lambda t, _: (t.float() * 1e-3).to(t.dtype),
    "needles": _needles,
    "needles_in_range": functools.partial(_needles, keep_range=True),
}


def is_needles(distribution: str) -> bool:
    return distribution in ("needles", "needles_in_range")


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


def timed(seed: int, needles: str) -> str:
    """The distribution of a timed call's inputs: where the workload allows ``needles`` (its needles distribution,
    or ""), half the calls carry them (by the seed's lowest bit; no role sees its seeds), so a kernel that answers
    from a sample while it is timed fails the audit of such a call as it would the correctness check."""
    return needles if needles and seed & 1 else "normal"


def assign(seeds: Sequence[int], distributions: Sequence[str]) -> list[tuple[int, str]]:
    """Each seed with a distribution, round robin, so every distribution is drawn at least once per workload."""
    count = max(len(seeds), len(distributions))
    return [(seeds[i % len(seeds)] + (i // len(seeds)) * 7919, distributions[i % len(distributions)])
            for i in range(count)]
