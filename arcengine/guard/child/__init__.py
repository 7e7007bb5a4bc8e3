"""The code that runs in a guard child and its workers: the judge (judge.py), the role workers, correctness,
timing, the zygote that forks children. It imports the standard library, torch, numpy and cupti-python only,
never the rest of arcengine (tests/test_layers.py checks it), so a GPU machine's own Python can run it."""

JUDGE = __name__ + ".judge"  # what a guard child runs: python -m arcengine.guard.child.judge SPEC.json
PROFILING = "ARCENGINE_PROFILING_CHILD"  # "1" in a child that only profiles its device: it starts no worker
