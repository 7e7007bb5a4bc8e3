# Sourced by the GPU scripts: GPU, the card's short name for result files (h100, h200; another card's name, lower
# case): the device tool may hand either card for the same kind, and a file says in its name which one it measured.
GPU=${GPU:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 \
  | grep -o -i -E 'H[0-9]+|A[0-9]+|L[0-9]+S?|B[0-9]+' | head -n 1 | tr '[:upper:]' '[:lower:]')}
GPU=${GPU:-gpu}
