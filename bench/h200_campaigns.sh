#!/usr/bin/env bash
# The campaign figures: a 4-agent offline campaign per problem, then its best and its seed judged by the guard
# (bench/campaign_figures.py): over the baseline, the reference and the seed, per workload. Run on the GPU machine
# from the repository root; writes under ${OUT:-bench/out}. Each campaign's best and seed are kept in
# OUT/PROBLEM-kernels; with FIGURES=0 the figures are left for a later call (a campaign that fills a 10-minute
# slot): python3 bench/campaign_figures.py SUMMARY OUT COMMAND --kernels DIR.
set -uo pipefail
OUT=${OUT:-bench/out}
BUDGET=${BUDGET:-60}
mkdir -p "$OUT"
source bench/gpu_tag.sh
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the bench scripts import arcengine from this tree
for problem in ${PROBLEMS:-rmsnorm softmax gemm_residual}; do
  command="arcengine run $problem --agents 4 --budget $BUDGET --device cuda --plateau 1000 ${TIME_LIMIT:+--time-limit $TIME_LIMIT}"
  python3 -m arcengine.cli ${command#arcengine } --out "$OUT/runs" --json > "$OUT/$problem-summary.json" \
    2> "$OUT/$problem-lines.txt"
  tail -n 3 "$OUT/$problem-lines.txt"
  run_dir=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['run_dir'])" "$OUT/$problem-summary.json")
  mkdir -p "$OUT/$problem-kernels"
  cp "$run_dir/best.py" "$run_dir"/candidates/c0000*.py "$OUT/$problem-kernels/"  # every seed
  if [[ ${FIGURES:-1} != 0 ]]; then
    python3 bench/campaign_figures.py "$OUT/$problem-summary.json" "$OUT/campaign-$problem-$GPU.json" "$command"
  fi
  rm -rf "$OUT"/runs/*/kernel-cache
done
