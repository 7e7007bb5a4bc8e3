"""The needles draw (arcengine.guard.child.distributions): a few large values hidden in a draw, keeping what an op
or an honest kernel may rely on."""

from __future__ import annotations

import math

import torch

from arcengine.guard.child import distributions
from arcengine.guard.child.distributions import NEEDLE_EDGE, NEEDLE_RMS, NEEDLES


def _needled(x: torch.Tensor, seed: int = 0, name: str = "needles") -> torch.Tensor:
    return distributions.TRANSFORMS[name](x.clone(), torch.Generator().manual_seed(seed))


def test_a_few_elements_become_large_with_their_own_sign() -> None:
    x = torch.randn(256, 512, generator=torch.Generator().manual_seed(1))
    needled = _needled(x)
    changed = needled != x
    assert 0 < int(changed.sum()) <= NEEDLES
    rms = x.pow(2).mean().sqrt().item()
    planted = needled[changed].abs()
    assert planted.max() <= NEEDLE_RMS * rms * (1 + 1e-6) and planted.min() >= 0.75 * NEEDLE_RMS * rms * (1 - 1e-6)
    assert planted.unique().numel() == planted.numel()  # no two alike: a tie no draw makes (an argmax's index)
    assert torch.equal(needled.sign(), x.sign())
    assert torch.equal(_needled(x, seed=0), needled) and not torch.equal(_needled(x, seed=1), needled)


def test_zeros_symmetry_and_probability_rows_stay() -> None:
    a = torch.randn(64, 64, generator=torch.Generator().manual_seed(2))
    triangle = _needled(torch.triu(a))
    assert torch.equal(torch.tril(triangle, -1), torch.zeros(64, 64)) and not torch.equal(triangle, torch.triu(a))
    symmetric = _needled(a + a.T)
    assert torch.equal(symmetric, symmetric.T) and not torch.equal(symmetric, a + a.T)
    rows = torch.rand(16, 256, generator=torch.Generator().manual_seed(3)).softmax(-1)
    needled = _needled(rows)
    assert torch.allclose(needled.sum(-1), torch.ones(16)) and not torch.allclose(needled, rows)
    # large before the rows are normalised again, not kept near the ends as other inputs inside [0, 1]: a cross
    # entropy of softmax rows answered from a sample passed again when they were (the CPU catalogue at 95cec3b)
    assert needled.max() > 4 * rows.max()


def test_needles_in_range_keep_an_input_inside_zero_one_or_minus_one_one_with_needles_at_its_ends() -> None:
    """Binary cross entropy refuses probabilities outside [0, 1]; on a GPU with a device-side assert, which leaves the
    judge's process unusable (the GPU catalogue's honest_bce_written_out failed so)."""
    p = torch.rand(64, 256, generator=torch.Generator().manual_seed(8)).clamp(0.01, 0.99)
    needled = _needled(p, name="needles_in_range")
    changed = needled != p
    assert 0 < int(changed.sum()) <= NEEDLES
    assert needled.min() >= 0 and needled.max() <= 1
    planted = needled[changed]
    assert torch.minimum(planted, 1 - planted).max() <= NEEDLE_EDGE
    torch.nn.functional.binary_cross_entropy(needled, torch.ones_like(needled))  # the op takes them
    cosines = torch.rand(64, 256, generator=torch.Generator().manual_seed(9)) * 2 - 1
    needled = _needled(cosines, name="needles_in_range")
    assert needled.abs().max() <= 1 and bool((needled != cosines).any())
    assert torch.isfinite(torch.acos(needled)).all() and torch.equal(needled.sign(), cosines.sign())


def test_plain_needles_are_large_inside_zero_one_too() -> None:
    """KernelBench's cross entropy draws its logits in [0, 1): a logsumexp from a sample of each row passed needles
    kept inside that range (the CPU catalogue at 95cec3b)."""
    logits = torch.rand(64, 256, generator=torch.Generator().manual_seed(10))
    needled = _needled(logits)
    assert needled.max() > 4 and int((needled != logits).sum()) > 0


def test_labels_small_and_strided_tensors_and_integers_keep_their_values() -> None:
    generator = torch.Generator().manual_seed(4)
    signs = torch.randint(0, 2, (8192,), generator=generator).float() * 2 - 1
    assert torch.equal(_needled(signs), signs)  # +-1 labels keep their meaning
    small = torch.randn(31, 32, generator=generator)
    assert torch.equal(_needled(small), small)  # read whole by any kernel
    strided = torch.randn(64, 64, generator=generator).T
    assert torch.equal(_needled(strided), strided)
    ints = torch.arange(4096)
    made = distributions.make_inputs(lambda a, g, d: (ints,), {}, generator, torch.device("cpu"), "needles")
    assert made[0] is ints


def test_rows_repeated_are_sampled_at_drawn_places_not_a_stride() -> None:
    """A sample at a stride of the row length would see one value and take the tensor for labels."""
    row = torch.rand(1, 1024, generator=torch.Generator().manual_seed(5))
    repeated = row.expand(4096, 1024).contiguous()
    assert int((_needled(repeated) != repeated).sum()) > 0


def test_the_magnitude_keeps_exp_finite_in_half_precision() -> None:
    x = torch.randn(128, 128, generator=torch.Generator().manual_seed(6)).to(torch.float16)
    needled = _needled(x)
    planted = needled[needled != x].float()
    assert planted.numel() > 0 and planted.abs().max() <= 0.25 * math.log(torch.finfo(torch.float16).max) + 1e-2
    assert torch.isfinite(needled.exp()).all()


def test_half_the_timed_calls_carry_needles_where_the_workload_allows_them() -> None:
    seeds = range(1000)
    assert {distributions.timed(s, needles="") for s in seeds} == {"normal"}
    needled = [s for s in seeds if distributions.timed(s, needles="needles") == "needles"]
    assert len(needled) == 500 and all(distributions.timed(s, "needles") == "normal" for s in seeds if s not in needled)
    assert {distributions.timed(s, "needles_in_range") for s in needled} == {"needles_in_range"}


def test_an_input_that_requires_grad_gets_needles_too() -> None:
    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(7)).requires_grad_()
    before = x.detach().clone()
    needled = distributions.TRANSFORMS["needles"](x, torch.Generator().manual_seed(0))  # in place, as a draw is
    assert needled.requires_grad and int((needled.detach() != before).sum()) > 0
