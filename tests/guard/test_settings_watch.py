"""torch.compile's settings checked at run time in an untrusted worker (guard/child/settings_watch.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from arcengine.guard.child.settings_watch import refused_setting


@pytest.mark.parametrize(("key", "value", "default", "refused"), [
    ("cpp_wrapper", True, False, "sets cpp_wrapper"),
    ("cpp_wrapper", False, False, None),
    ("aot_inductor.output_path", "x", "", "sets aot_inductor.output_path"),
    ("cpp.march", "native -wrapper /bin/sh", None, "to the string 'native -wrapper /bin/sh'"),
    ("cpp.cxx", (None, "/tmp/cc"), (None, "g++"), "to the string '/tmp/cc'"),
    ("cpp.cxx", (None, "g++"), (None, "g++"), None),  # a patch putting back what it found
    ("max_autotune_gemm_backends", "ATEN,TRITON", "ATEN", None),
    ("max_autotune_gemm_backends", "ATEN; rm", "ATEN", "only"),
    ("coordinate_descent_tuning", True, False, None),
    ("post_grad_custom_post_pass", print, None, "to a callable"),  # handed the graphs (a forced stance's options)
    ("post_grad_custom_pre_pass", None, None, None),
])
def test_a_setting_is_refused_by_its_key_and_the_strings_in_its_value(key: str, value: object, default: object,
                                                                         refused: str | None) -> None:
    why = refused_setting(key, value, default)
    assert (why is None) if refused is None else (why is not None and refused in why)


def test_a_str_subclass_that_calls_itself_the_default_is_refused() -> None:
    class Liar(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    assert refused_setting("cpp.march", Liar("native -wrapper x"), None) is not None
    assert refused_setting("cpp.cxx", (None, Liar("x")), (None, "g++")) is not None


def test_every_spelling_that_reaches_a_configuration_is_checked_and_honest_compiles_pass() -> None:
    # In a process of its own: the check wraps torch's configuration class for good, as in a worker.
    script = textwrap.dedent("""
        import functools, torch
        from arcengine.guard.child import opens, settings_watch
        settings_watch.install()
        f = lambda x: torch.relu(x) * 2
        torch.compile(f)(torch.randn(8))
        torch.compile(f, options={"max_autotune_gemm_backends": "ATEN"})(torch.randn(8))
        assert opens.refusal() is None, opens.refusal()
        key = "cpp_" + "wrapper"
        for attempt in (lambda: functools.partial(torch.compile, options={key: True})(f)(torch.randn(4)),
                        lambda: torch._inductor.config.patch(**{"cpp.march": "native -wrapper x"}).__enter__(),
                        lambda: setattr(torch._inductor.config.cpp, "ma" + "rch", "x"),
                        lambda: torch._inductor.config.load_config({key: True})):
            try:
                attempt()
            except Exception:
                pass
        print(torch._inductor.config.cpp_wrapper, torch._inductor.config.cpp.march, opens.refusal())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    wrapper, march, refusal = done.stdout.split()[0], done.stdout.split()[1], done.stdout
    assert (wrapper, march) == ("False", "None") and "sets cpp_wrapper" in refusal



def test_a_backend_of_the_candidates_own_is_refused_by_every_route_and_a_compile_pool_is_kept_serial() -> None:
    # A backend is handed dynamo's graphs (torch.fx turns their constants into code): refused wherever it comes
    # from, an alias of a module's compile, functools.partial, a stance (red team round 15); torch's own pass.
    # Copied set-ups ask for a pool of compile threads, whose threads would outlive the call (threads.py fails
    # that): the guard keeps Inductor compiling in the calling thread.
    script = textwrap.dedent("""
        import functools, threading, torch
        from arcengine.guard.child import opens, settings_watch
        settings_watch.install()
        torch._inductor.config.compile_threads = 4
        x = torch.randn(4)
        before = threading.active_count()
        for backend in ("inductor", "eager", "aot_eager"):
            torch.compile(lambda y: y * 2 + 1, backend=backend)(x)
        torch.compile(lambda y: y * 2 + 1, mode="max-autotune-no-cudagraphs")(x)
        assert opens.refusal() is None, opens.refusal()
        print(torch._inductor.config.compile_threads, threading.active_count() - before)
        def own(gm, example_inputs):
            print("RAN")
            return gm.forward
        class M(torch.nn.Module):
            def forward(self, y):
                return y * 3
        def alias():
            m = M()
            compile_ = m.compile
            compile_(backend=own)
            m(x)
        routes = {"alias": alias,
                  "partial": lambda: functools.partial(torch.compile, backend=own)(lambda y: y * 4)(x),
                  "stance": lambda: (torch.compiler.set_stance("default", force_backend=own),
                                     torch.compile(lambda y: y * 5)(x))}
        for name, route in routes.items():
            try:
                route()
                print(name, "ran")
            except PermissionError:
                print(name, "refused")
            torch.compiler.set_stance("default")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "0", "alias", "refused", "partial", "refused", "stance", "refused"], done.stdout
