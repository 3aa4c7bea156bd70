#!/usr/bin/env bash
# The bench + peers stage for an NVIDIA machine: gpu-marked bench tests, `envdoctor bench`, and the peers
# (mamf-finder's method with torch, nvbandwidth, nccl-tests) in one table. scripts/gpu_check.sh (issue 13)
# calls this; it also runs on its own:
#   ENVDOCTOR_TEST_CUDA_VENV=/path/to/cuda-venv scripts/gpu_bench_peers.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ENVDOCTOR_TEST_CUDA_VENV:?set ENVDOCTOR_TEST_CUDA_VENV to a venv with a CUDA build of torch}"
PY="$VENV"; [ -d "$VENV" ] && PY="$VENV/bin/python"
OUT="${1:-gpu-bench-out}"
mkdir -p "$OUT"
PYTHON="${PYTHON:-python3}"
ENVDOCTOR="${ENVDOCTOR:-$PYTHON -m envdoctor}"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_bench_peers: no NVIDIA GPU here (nvidia-smi -L failed): nothing to measure" >&2
  exit 0
fi
nvidia-smi -L | tee "$OUT/gpus.txt"
"$PYTHON" -m pytest -q -m gpu tests/unit/bench/test_bench.py | tee "$OUT/pytest-gpu-bench.txt" || true
timeout 300 $ENVDOCTOR bench --python "$PY" --format json -o "$OUT/bench-quick.json" || true
timeout 300 $ENVDOCTOR bench --python "$PY" -o "$OUT/bench-quick.txt" || true
timeout 300 $ENVDOCTOR bench --python "$PY" --sustain 30 sustained --format json -o "$OUT/bench-sustain.json" || true
timeout 300 "$PYTHON" scripts/gpu_bench_peers.py --python "$PY" --out "$OUT/bench-peers.md" || true
echo "gpu_bench_peers: results in $OUT/ (copy bench-peers.md into docs/measurements.md with the date and GPU)"
