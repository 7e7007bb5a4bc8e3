#!/usr/bin/env bash
# The campaign figures: a 4-agent offline campaign per problem, then its best and its seed judged by the guard
# (bench/campaign_figures.py): over the baseline, the reference and the seed, per workload. Run on the GPU machine
# from the repository root; writes under ${OUT:-bench/out}.
set -uo pipefail
OUT=${OUT:-bench/out}
BUDGET=${BUDGET:-60}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the bench scripts import arcengine from this tree
for problem in ${PROBLEMS:-rmsnorm softmax gemm_residual}; do
  command="arcengine run $problem --agents 4 --budget $BUDGET --device cuda --plateau 1000 ${TIME_LIMIT:+--time-limit $TIME_LIMIT}"
  python3 -m arcengine.cli ${command#arcengine } --out "$OUT/runs" --json > "$OUT/$problem-summary.json" \
    2> "$OUT/$problem-lines.txt"
  tail -n 3 "$OUT/$problem-lines.txt"
  python3 bench/campaign_figures.py "$OUT/$problem-summary.json" "$OUT/campaign-$problem-h200.json" "$command"
  rm -rf "$OUT"/runs/*/kernel-cache
done
