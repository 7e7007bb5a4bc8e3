"""torch.Tensor made immutable in untrusted workers (arcengine.guard.child.frozen): in a fresh process, since the
flag cannot be taken back."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_frozen_tensor_class_refuses_shadowing_and_still_computes() -> None:
    script = textwrap.dedent("""
        import torch
        from arcengine.guard.child import frozen
        print(frozen.freeze_tensor())
        def shadow(cls, name):  # the class as a parameter: no static reading follows it
            setattr(cls, name, lambda self: self)
        for name in ("detach", "clone", "brand_new"):
            try:
                shadow(torch.Tensor, name)
                print("set", name)
            except TypeError:
                print("refused", name)
        class Own(torch.Tensor):  # subclasses stay the module's own
            pass
        Own.extra = 1
        x = torch.arange(4.0)
        print(float(x.detach().clone().sum()), float(torch.compile(lambda t: t * 2 + 1)(x).sum()))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "refused", "detach", "refused", "clone", "refused", "brand_new", "6.0",
                                   "16.0"]


def test_the_harness_classes_and_modules_refuse_assignment() -> None:
    script = textwrap.dedent("""
        from arcengine.guard.child import frozen, timing, worker
        modules = worker._harness_modules()
        print(frozen.freeze_classes(modules) > 10)
        frozen.seal_modules(modules)
        for owner in (timing.CuptiTimer, worker.Worker, timing):  # a harness module's function too
            try:
                owner.time = None
                print("set")
            except TypeError:
                print("refused")
        print(callable(timing.block_spans))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "refused", "refused", "refused", "True"]
