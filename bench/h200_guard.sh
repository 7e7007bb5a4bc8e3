#!/usr/bin/env bash
# Issue 24's GPU figures on the code as it stands: the whole adversarial catalogue, the guard's fidelity, and its
# cost per candidate in a campaign (files named by the card: bench/gpu_tag.sh). Run on the GPU machine from the
# repository root, with cupti-python installed (pip install 'arcengine[cuda]'); writes under ${OUT:-bench/out}.
# Where the tree has no .git, set ARCENGINE_COMMIT.
#   bash bench/h200_guard.sh [all|catalogue|fidelity|cost]    (one step per call fits a 10-minute slot)
set -uo pipefail
OUT=${OUT:-bench/out}
STEP=${1:-all}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the bench scripts import arcengine from this tree
mkdir -p "$OUT"
source bench/gpu_tag.sh
if ! python3 -c "import cupti.cupti" 2>/dev/null; then
  echo "cupti-python is not importable: the guard would time with events, not CUPTI's records" >&2
  exit 1
fi
if [[ $STEP == all || $STEP == catalogue ]]; then
  python3 bench/adversarial.py "$OUT/guard-adversarial-$GPU.json" --device cuda --jobs "${JOBS:-8}" \
    --order-from bench/results/guard-adversarial-h200.json | tail -n 12
fi
if [[ $STEP == all || $STEP == fidelity ]]; then
  python3 bench/fidelity.py rmsnorm "$OUT/guard-fidelity-$GPU.json" --repeats "${REPEATS:-10}" --device cuda
fi
if [[ $STEP == all || $STEP == cost ]]; then
  python3 -m arcengine.cli eval rmsnorm problems/rmsnorm/seed.py --device cuda --json > "$OUT/eval-rmsnorm-seed.json"
  # The run folder stays outside $OUT (its candidates and agents are many small files the device tool will not
  # bring back); the event log and the database are copied out. A time limit stops the campaign cleanly, so a
  # slow guard still gives its figures over the candidates it decided.
  RUNS=$(mktemp -d)
  python3 -m arcengine.cli run rmsnorm --agents 4 --budget "${BUDGET:-24}" --device cuda --plateau 1000 \
    --time-limit "${TIME_LIMIT:-420}" --out "$RUNS" --json > "$OUT/cost-rmsnorm-summary.json" \
    2> "$OUT/cost-rmsnorm-lines.txt"
  tail -n 3 "$OUT/cost-rmsnorm-lines.txt"
  python3 bench/guard_cost.py "$OUT/guard-cost-$GPU.json" "$RUNS"/*
  for run in "$RUNS"/*; do
    mkdir -p "$OUT/runs/${run##*/}" && cp "$run/events.jsonl" "$run/campaign.db" "$OUT/runs/${run##*/}/"
  done
fi
