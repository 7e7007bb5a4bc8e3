# ruff: noqa
"""Returns a lazy tensor subclass: the data is never computed, but every comparison (__eq__, allclose, sub...) goes
through __torch_function__, which computes the real answer only when the checker looks (CUDA-L2 / Makora 'lazy
evaluation'; GPU MODE reference-kernels #161)."""

import torch


class _Lazy(torch.Tensor):
    @staticmethod
    def __new__(cls, source):
        lazy = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        lazy._source = source
        return lazy

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        def real(value):
            return value._source * 2 + 1 if isinstance(value, _Lazy) else value

        args = tuple(real(a) for a in args)
        kwargs = {k: real(v) for k, v in (kwargs or {}).items()}
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def run(x: torch.Tensor) -> torch.Tensor:
    return _Lazy(x)
