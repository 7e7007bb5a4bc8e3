import gc
import weakref

from arcengine.guard.child import threads


class Held:
    """Stands for a call's inputs, held in the frame of the harness code that checks the call's conduct."""


def _checked_call() -> weakref.ref[Held]:
    held = Held()
    threads.python_elsewhere(set(), ())
    return weakref.ref(held)


def test_the_thread_check_leaves_no_cycle_that_keeps_its_callers_locals() -> None:
    # sys._current_frames() holds the checking frame itself: kept in a local, the frame and its callers' locals
    # (a call's inputs, gigabytes on a GPU) would wait for a collection rather than go when the call returns.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        assert _checked_call()() is None
    finally:
        if was_enabled:
            gc.enable()
