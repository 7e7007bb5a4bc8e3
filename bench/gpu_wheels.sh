#!/usr/bin/env bash
# Wheels for a GPU machine that cannot reach a package index (the figures under bench/results were made on such):
# what arcengine needs beyond an image with PyTorch, Triton and the CUDA bindings, and the `cuda` extra (CUPTI's
# records, nvmath's cuBLASLt plans). Downloaded here for that machine's Python and CUDA, installed there.
#   bash bench/gpu_wheels.sh DIR [PYTHON_VERSION=3.12] [CUDA_MAJOR=13]
# There, into the interpreter itself (the guard's children get only arcengine on PYTHONPATH, so CUPTI installed
# anywhere else is not found and the guard times with events):
#   python3 -m pip install --no-index --no-deps DIR/*.whl
# The LLM providers' SDKs are left out: the offline provider needs neither.
set -euo pipefail
DIR=${1:?usage: bench/gpu_wheels.sh DIR [PYTHON_VERSION] [CUDA_MAJOR]}
PY=${2:-3.12}
CUDA=${3:-13}
platforms=()
for n in 17 24 27 28 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
  "${platforms[@]}" --platform manylinux2014_x86_64 -d "$DIR" \
  structlog textual platformdirs linkify-it-py mdit-py-plugins uc-micro-py python-frontmatter tomli-w \
  pydantic pydantic-core annotated-types typing-inspection 'typing-extensions>=4.14' \
  "cupti-python==$CUDA.0.*" pyelftools nvmath-python
ls "$DIR"
