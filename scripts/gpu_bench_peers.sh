#!/usr/bin/env bash
# The bench + peers stage for an NVIDIA machine, under 5 minutes on one GPU (a short rental): envdoctor's
# thorough and quick runs beside mamf-finder's procedure and nvbandwidth-style copies in plain torch loops
# (and nvbandwidth / nccl-tests when on PATH), one table and one archive. scripts/gpu_check.sh calls it:
#   ENVDOCTOR_TEST_CUDA_VENV=/path/to/cuda-venv [BUDGET_S=290] [ENVDOCTOR_JSON=bench.json] \
#       scripts/gpu_bench_peers.sh [OUT_DIR] [GPU_INDEX]
# Without an NVIDIA GPU it says why and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ENVDOCTOR_TEST_CUDA_VENV:?set ENVDOCTOR_TEST_CUDA_VENV to a venv with a CUDA build of torch}"
PY="$VENV"; [ -d "$VENV" ] && PY="$VENV/bin/python"
OUT="${1:-gpu-bench-peers}"
PYTHON="${PYTHON:-python3}"
BUDGET_S="${BUDGET_S:-290}"
# ENVDOCTOR_JSON: a bench report already made (scripts/gpu_check.sh's bench step): envdoctor is not run again
timeout "$((${BUDGET_S%.*} + 10))" "$PYTHON" scripts/gpu_bench_peers.py --python "$PY" --out "$OUT" --gpu "${2:-0}" \
    --budget "$BUDGET_S" ${ENVDOCTOR_JSON:+--envdoctor-json "$ENVDOCTOR_JSON"}
