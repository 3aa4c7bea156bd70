# Sourced by scripts/gpu_check.sh: the bench stage (issues 10, 22, 39): envdoctor's figures beside mamf-finder's
# method and nvbandwidth-style copies in the same interpreter, written under the work folder's bench-peers/
# (archived in $OUT/gpu-check.tgz; peers.md, the table, is also copied to $OUT). The envdoctor side is the bench
# step's own JSON ($WORK/bench.json): the quick suite is not run a second time (it did not fit the step's budget,
# and the table lost its envdoctor column); with no bench step, gpu_bench_peers.py runs the quick suite itself.
# Too short for the --thorough comparison (scripts/gpu_bench_peers.sh alone, ~5 minutes, runs that too).
step_bench_peers() {
    local ours=""
    [ -s "$WORK/bench.json" ] && ours="$WORK/bench.json"
    (cd "$REPO" && PYTHON="$PYTHON" ENVDOCTOR_TEST_CUDA_VENV="$TORCH_PY" BUDGET_S="$(($(left) - 5))" \
        ENVDOCTOR_JSON="$ours" timeout "$(left)" bash scripts/gpu_bench_peers.sh "$WORK/bench-peers" 0 \
        >"$WORK/bench_peers.out" 2>&1)
    local rc=$?
    [ -f "$WORK/bench-peers/peers.md" ] && cp "$WORK/bench-peers/peers.md" "$WORK/peers.md"
    row bench_peers "exit $rc" "$(grep -c '^| [a-z]' "$WORK/bench-peers/peers.md" 2>/dev/null || echo 0) rows in peers.md, envdoctor side: ${ours:+the JSON of the bench step}${ours:-its own quick run}"
}
add_step bench_peers 45 "envdoctor's bench figures beside mamf-finder's method and nvbandwidth-style copies" 25
