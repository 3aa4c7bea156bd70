# Sourced by scripts/gpu_check.sh: the bench stage (issues 10, 22): envdoctor's quick suite beside mamf-finder's
# method and nvbandwidth-style copies in the same run, written under the work folder's bench-peers/ (archived in
# $OUT/gpu-check.tgz; envdoctor-quick.json is the bench report). Inside the 6-minute run it gets $BUDGET seconds, too few for the
# --thorough comparison (scripts/gpu_bench_peers.sh alone, ~5 minutes, runs that too).
step_bench_peers() {
    (cd "$REPO" && PYTHON="$PYTHON" ENVDOCTOR_TEST_CUDA_VENV="$TORCH_PY" BUDGET_S="$((BUDGET - 10))" \
        timeout "$BUDGET" bash scripts/gpu_bench_peers.sh "$WORK/bench-peers" 0 >"$WORK/bench_peers.out" 2>&1)
    row bench_peers "exit $?" "raw: bench-peers/ (peers.md is the table for docs/measurements.md)"
}
add_step bench_peers 55 "envdoctor bench (quick) beside mamf-finder's method and nvbandwidth-style copies"
