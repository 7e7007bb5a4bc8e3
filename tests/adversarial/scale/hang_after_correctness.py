# ruff: noqa
"""Right through the correctness checks, then a call that never returns (a spin on the host). With no wall-clock
limit of its own in the catalogue, it is judged at the call's own limit (100x the reference, at least 10 s),
not at the child's 600 s."""

import time

_CALLS = [0]


def run(x):
    _CALLS[0] += 1
    if _CALLS[0] > 20:  # past the correctness calls (3 CPU workloads x 6): in timing
        while True:
            time.sleep(0.5)
    return x * 2 + 1
