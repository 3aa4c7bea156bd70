# Sourced by scripts/gpu_check.sh: the bench + peers stage (issue 10), envdoctor's figures beside mamf-finder's
# method, nvbandwidth and nccl-tests, written under $OUT/bench-peers/.
step_bench_peers() {
    (cd "$REPO" && PYTHON="$PYTHON" ENVDOCTOR="$PYTHON -m envdoctor" ENVDOCTOR_TEST_CUDA_VENV="$TORCH_PY" \
        timeout "$STEP_TIMEOUT" bash scripts/gpu_bench_peers.sh "$OUT/bench-peers" >"$OUT/bench_peers.out" 2>&1)
    row bench_peers "exit $?" "raw: bench-peers/ (bench-peers.md is the table for docs/measurements.md)"
}
add_step bench_peers 40 "envdoctor bench beside its peers (mamf-finder method, nvbandwidth, nccl-tests)"
