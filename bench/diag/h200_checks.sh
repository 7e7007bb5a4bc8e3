#!/usr/bin/env bash
# Diagnostic (H200, repository root, OUT set): the checks that come before the catalogue on a changed guard, run
# side by side (each writes OUT/check-NAME.txt): the GPU description through cuda.bindings (NVML, driver), the
# native entries that missed last time, destination passing and KernelBench's --precision on a GPU, the library
# routes' probe, and the native signal diagnosis. Remove once their findings are folded into tests and docs.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-bench/out}
mkdir -p "$OUT"
TMP=$(mktemp -d)

python3 -c "
import json, torch
from arcengine.guard.child.ceilings import device_info
print(json.dumps(device_info(torch.device('cuda')), indent=1, default=str))" > "$OUT/check-device.txt" 2>&1 &

timeout 400 python3 bench/adversarial.py "$OUT/check-native.json" --device cuda --jobs 8 --only scale/native_cuda_malloc_leak \
  scale/native_thread_gpu_idle scale/native_sigstop_siblings scale/native_throttle_siblings scale/native_read_judge_memory \
  scale/native_inplace_input scale/native_pthread_left_running > "$OUT/check-native.txt" 2>&1 &

(
  cp -r tests/fixtures/scale "$TMP/dps" && sed -i '1i destination_passing = true' "$TMP/dps/problem.toml"
  printf 'def run(x, out):\n    out.copy_(x * 2 + 1)\n' > "$TMP/dps_writes.py"
  printf 'def run(x, out):\n    return x * 2 + 1\n' > "$TMP/dps_returns.py"
  for c in dps_writes dps_returns; do
    echo "== $c"; python3 -m arcengine.cli eval "$TMP/dps" "$TMP/$c.py" --device cuda --no-baseline 2>&1 | tail -n 6
  done
  printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n        return torch.add(a, b)\n' \
    > "$TMP/model_new_torch_add.py"
  for p in fp32 bf16 fp16; do
    echo "== kernelbench --precision $p"
    python3 -m arcengine.cli eval tests/fixtures/kernelbench/1_Add.py "$TMP/model_new_torch_add.py" --device cuda \
      --precision $p 2>&1 | tail -n 8
  done
) > "$OUT/check-formats.txt" 2>&1 &

timeout 300 python3 bench/diag/library_routes.py > "$OUT/check-library-routes.txt" 2>&1 &
timeout 400 bash bench/diag/native_signals.sh > "$OUT/check-signals.txt" 2>&1 &
wait
tail -n 5 "$OUT"/check-*.txt
