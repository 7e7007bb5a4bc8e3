#!/usr/bin/env bash
# Diagnostic (run on the H200 from the repository root): why four native catalogue entries died by SIGSEGV there at
# 8f7bafa where the CPU names SIGSYS, their own error or a modified input. Remove once the cause is known.
export PYTHONPATH=$PWD
for name in native_read_judge_memory; do
  echo "== $name standalone (cuda, no guard)"
  timeout 120 python3 -X faulthandler -c "
import torch, sys
torch.cuda.init()
sys.path.insert(0, 'tests/adversarial/scale')
import $name as m
try:
    print(m.run(torch.ones(4, device='cuda'))[:2])
except Exception as e:
    print('raised', type(e).__name__, str(e)[:300])
" 2>&1 | tail -15; echo "rc=$?"
done
echo "== seccomp kill with CUDA loaded"
python3 - <<'PY'
import os, signal, torch
from arcengine.guard.child import confine
import importlib
for cuda in (False, True, "cupti"):
    pid = os.fork()
    if pid == 0:
        if cuda:
            torch.ones(1, device="cuda")
        if cuda == "cupti":
            importlib.import_module("cupti.cupti")
        confine.drop_capabilities()
        print("shield", confine.shield([os.getppid()]), flush=True)
        os.kill(os.getppid(), 0)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(cuda, "signal", os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
          "exit", os.WEXITSTATUS(status) if os.WIFEXITED(status) else None, flush=True)
PY
echo "== eval --debug read_judge_memory"
timeout 150 python3 -m arcengine.cli eval tests/fixtures/scale tests/adversarial/scale/native_read_judge_memory.py --device cuda --debug 2>&1 | tail -30
echo "== eval --debug sigstop (stderr of the child)"
timeout 150 python3 -m arcengine.cli eval tests/fixtures/scale tests/adversarial/scale/native_sigstop_siblings.py --device cuda --debug 2>&1 | tail -30
