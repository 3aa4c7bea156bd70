#!/usr/bin/env bash
# One short run on a machine with NVIDIA GPUs: the gpu-marked tests, envdoctor itself (plain, --load-pcie, bench
# when that command exists), and the open questions of issue 13 that only hardware can settle. Prints one table
# and keeps every raw output under $OUT (or ./gpu-check-<UTC date>-<gpu>) so the results can become fixtures.
# With no NVIDIA GPU it runs in a dry mode: it says so, lists the steps, and exits 0.
#
#   PYTHON=.venv/bin/python TORCH_PY=/opt/venv/bin/python scripts/gpu_check.sh
#
# PYTHON runs envdoctor and pytest (default: python3); TORCH_PY is the interpreter with a CUDA torch that
# envdoctor judges and that makes the loads (default: $PYTHON). STEP_TIMEOUT bounds each step (default 300 s).
# The script only reads: it never changes MIG, persistence, clocks or power settings.
#
# Adding a step: write `step_NAME() { ...; row "NAME" "result" "detail"; }` and add NAME to STEPS (or call
# add_step NAME from a sourced extension); raw output goes to "$OUT/NAME.*".

set -u

PYTHON="${PYTHON:-python3}"
TORCH_PY="${TORCH_PY:-$PYTHON}"
STEP_TIMEOUT="${STEP_TIMEOUT:-300}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"

STEPS=(pytest_gpu envdoctor envdoctor_load_pcie envdoctor_bench payload_pid nvlink_mig cutdown_links
       init_without_gpus smi_exit_lost h2d_trains_link nvml_call_time)
ROWS=()

add_step() { STEPS+=("$1"); }

row() {  # row NAME RESULT DETAIL: one line of the final table
    ROWS+=("$1|$2|$3")
    printf '%s|%s|%s\n' "$1" "$2" "$3" >>"$OUT/table.psv"
}

run_py() {  # run_py NAME PYTHON [ARGS...] <<'EOF': a Python step; records its row from the last line it printed
    local name="$1" py="$2"
    shift 2
    timeout "$STEP_TIMEOUT" "$py" - "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    local rc=$?
    if [ "$rc" = 0 ]; then
        row "$name" "ok" "$(tail -n 1 "$OUT/$name.out" | cut -c1-160)"
    else
        row "$name" "exit $rc" "$(tail -n 1 "$OUT/$name.err" | cut -c1-160)"
    fi
}

gpu_name() {
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr -c 'A-Za-z0-9\n' '-' \
        | tr -s '-' | sed 's/^-//; s/-$//'
}

has_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 || return 1
    [ -n "$(nvidia-smi -L 2>/dev/null | grep -E '^GPU [0-9]+:')" ]
}

# --------------------------------------------------------------------------- envdoctor and its tests

step_pytest_gpu() {
    (cd "$REPO" && timeout "$STEP_TIMEOUT" "$PYTHON" -m pytest -q -m gpu -p no:cacheprovider \
        >"$OUT/pytest_gpu.out" 2>&1)
    local rc=$?
    row pytest_gpu "exit $rc" "$(tail -n 1 "$OUT/pytest_gpu.out")"
}

step_envdoctor() {
    (cd "$REPO" && timeout "$STEP_TIMEOUT" "$PYTHON" -m envdoctor check --python "$TORCH_PY" --no-redact \
        --format json -o "$OUT/envdoctor.json" 2>"$OUT/envdoctor.err")
    local rc=$?
    (cd "$REPO" && timeout "$STEP_TIMEOUT" "$PYTHON" -m envdoctor check --python "$TORCH_PY" -v \
        >"$OUT/envdoctor.txt" 2>&1)
    (cd "$REPO" && timeout "$STEP_TIMEOUT" "$PYTHON" -m envdoctor collect --python "$TORCH_PY" --no-redact \
        -o "$OUT/facts.json" 2>>"$OUT/envdoctor.err")
    row envdoctor "exit $rc" "$("$PYTHON" - "$OUT/envdoctor.json" <<'EOF' 2>/dev/null || echo 'no JSON report'
import json, sys
r = json.load(open(sys.argv[1]))
f = r.get("findings", [])
print(f"{sum(x['severity'] == 'error' for x in f)} error(s), {sum(x['severity'] == 'warning' for x in f)} "
      f"warning(s): " + ", ".join(x["code"] for x in f if x["severity"] != "info")[:160])
EOF
)"
}

step_envdoctor_load_pcie() {
    (cd "$REPO" && timeout "$STEP_TIMEOUT" "$PYTHON" -m envdoctor collect --python "$TORCH_PY" --no-redact \
        --load-pcie -o "$OUT/facts-load-pcie.json" 2>"$OUT/envdoctor_load_pcie.err")
    local rc=$?
    row envdoctor_load_pcie "exit $rc" "$("$PYTHON" - "$OUT/facts-load-pcie.json" <<'EOF' 2>/dev/null || echo 'no facts'
import json, sys
f = json.load(open(sys.argv[1]))
run = [p for p in f.get("probes", []) if p.get("name") == "pcie_load"]
print((run[0].get("status") + ": " + (run[0].get("reason") or ""))[:160] if run else "no pcie_load probe")
EOF
)"
}

step_envdoctor_bench() {
    # an unknown command is a usage error (exit 2), so `bench --help` answers 0 only where bench exists
    if ! (cd "$REPO" && "$PYTHON" -m envdoctor bench --help >/dev/null 2>&1); then
        row envdoctor_bench "skipped" "no 'envdoctor bench' command in this version"
        return
    fi
    (cd "$REPO" && timeout "$STEP_TIMEOUT" "$PYTHON" -m envdoctor bench --python "$TORCH_PY" --format json \
        -o "$OUT/bench.json" >"$OUT/envdoctor_bench.out" 2>&1)
    row envdoctor_bench "exit $?" "raw: bench.json"
}

# --------------------------------------------------------------------------- the open questions (issue 13)

step_payload_pid() {
    # Does a process holding a CUDA context (as envdoctor's payload does) appear among NVML's compute
    # processes, and under which PID (namespaces can translate it)?
    run_py payload_pid "$PYTHON" "$TORCH_PY" <<'EOF'
import json, subprocess, sys, time
import pynvml
child = subprocess.Popen([sys.argv[1], "-c", "import torch,time; torch.zeros(1, device='cuda'); "
                          "print('ready', flush=True); time.sleep(20)"], stdout=subprocess.PIPE, text=True)
ready = child.stdout.readline().strip() == "ready"
pynvml.nvmlInit()
seen = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    try:
        seen += [(i, p.pid) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
    except pynvml.NVMLError as e:
        seen.append((i, f"error {e}"))
child.kill()
print(json.dumps({"child_pid": child.pid, "ready": ready, "listed": seen,
                  "child_listed": any(p == child.pid for _, p in seen)}))
EOF
}

step_nvlink_mig() {
    # What NVML reports for NVLink on GPUs in MIG mode (observed only: MIG is never switched here)
    run_py nvlink_mig "$PYTHON" <<'EOF'
import json
import pynvml
pynvml.nvmlInit()
out = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    try:
        mig = pynvml.nvmlDeviceGetMigMode(h)[0]
    except pynvml.NVMLError as e:
        mig = str(e)
    states = {}
    for link in range(max(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18), 18)):
        try:
            states[link] = pynvml.nvmlDeviceGetNvLinkState(h, link)
        except pynvml.NVMLError as e:
            states[link] = str(e)
    out.append({"gpu": i, "mig": mig, "nvlink": states})
print(json.dumps(out))
mig_on = [g["gpu"] for g in out if g["mig"] == 1]
print("MIG on: GPUs " + ",".join(map(str, mig_on)) if mig_on else "no GPU in MIG mode here: not settled")
EOF
}

step_cutdown_links() {
    # Which link indices answer on this SKU (cut-down parts may skip indices), per GPU
    run_py cutdown_links "$PYTHON" <<'EOF'
import json
import pynvml
pynvml.nvmlInit()
res = {}
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    name = pynvml.nvmlDeviceGetName(h)
    answered, errors = [], {}
    for link in range(max(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18), 18)):
        try:
            pynvml.nvmlDeviceGetNvLinkState(h, link)
            answered.append(link)
        except pynvml.NVMLError as e:
            errors[link] = str(e)
    res[i] = {"name": name, "answered": answered, "errors": errors}
print(json.dumps(res))
print("; ".join(f"GPU {i} {v['name']}: links {v['answered'][:1]}..{v['answered'][-1:]} ({len(v['answered'])})"
                for i, v in res.items()))
EOF
}

step_init_without_gpus() {
    # nvmlInit with a driver but no GPU: only observable where the driver has no GPU bound
    run_py init_without_gpus "$PYTHON" <<'EOF'
import pynvml
pynvml.nvmlInit()
n = pynvml.nvmlDeviceGetCount()
print(f"nvmlInit ok, {n} GPU(s)" + ("" if n == 0 else ": GPUs bound, so 'driver without GPUs' is not settled here"))
EOF
}

step_smi_exit_lost() {
    # nvidia-smi's exit code and XML when a GPU is lost: recorded as it is today (a lost GPU cannot be made)
    timeout 60 nvidia-smi -q -x >"$OUT/nvidia-smi-q.xml" 2>"$OUT/smi_exit_lost.err"
    local rc=$?
    local lost
    lost=$(grep -c -i -E 'GPU is lost|Unknown Error' "$OUT/nvidia-smi-q.xml" 2>/dev/null)
    nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
    row smi_exit_lost "exit $rc" "lost-GPU markers in the XML: ${lost:-0}$([ "${lost:-0}" = 0 ] && echo ' (no lost GPU: not settled)')"
}

step_h2d_trains_link() {
    # Does a host-to-device copy train each link to its top generation? From the --load-pcie facts
    "$PYTHON" - "$OUT/facts-load-pcie.json" >"$OUT/h2d_trains_link.out" 2>&1 <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))
parts = []
for g in f["driver"]["gpus"]:
    parts.append(f"GPU {g['index']}: idle Gen{g.get('pcie_gen_current')} load Gen{g.get('pcie_gen_under_load')} "
                 f"max Gen{g.get('pcie_gen_max')}")
print("; ".join(parts) or "no GPU in the facts")
EOF
    row h2d_trains_link "exit $?" "$(tail -n 1 "$OUT/h2d_trains_link.out" | cut -c1-160)"
}

step_nvml_call_time() {
    # Time per NVML call per GPU, with the persistence mode as it is (reported, never changed)
    run_py nvml_call_time "$PYTHON" <<'EOF'
import json, time
import pynvml
t0 = time.perf_counter()
pynvml.nvmlInit()
init_s = time.perf_counter() - t0
calls = {"name": pynvml.nvmlDeviceGetName, "memory": pynvml.nvmlDeviceGetMemoryInfo,
         "power": pynvml.nvmlDeviceGetPowerUsage, "clocks_event": pynvml.nvmlDeviceGetCurrentClocksEventReasons,
         "processes": pynvml.nvmlDeviceGetComputeRunningProcesses, "remap": pynvml.nvmlDeviceGetRemappedRows,
         "nvlink0": lambda h: pynvml.nvmlDeviceGetNvLinkState(h, 0)}
out = {"init_s": round(init_s, 4), "gpus": {}}
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    try:
        pm = pynvml.nvmlDeviceGetPersistenceMode(h)
    except pynvml.NVMLError as e:
        pm = str(e)
    times = {}
    for name, fn in calls.items():
        t = time.perf_counter()
        try:
            fn(h)
        except pynvml.NVMLError:
            pass
        times[name] = round((time.perf_counter() - t) * 1e3, 3)
    out["gpus"][i] = {"persistence_mode": pm, "ms": times}
print(json.dumps(out))
worst = max((ms, i, n) for i, g in out["gpus"].items() for n, ms in g["ms"].items())
pm = sorted({str(g["persistence_mode"]) for g in out["gpus"].values()})
print(f"init {out['init_s']} s; slowest call {worst[2]} on GPU {worst[1]}: {worst[0]} ms; persistence {','.join(pm)}")
EOF
}

# --------------------------------------------------------------------------- main

print_table() {
    printf '\n%-22s %-10s %s\n' "step" "result" "detail"
    printf '%-22s %-10s %s\n' "----" "------" "------"
    local r
    for r in "${ROWS[@]}"; do
        IFS='|' read -r name result detail <<<"$r"
        printf '%-22s %-10s %s\n' "$name" "$result" "$detail"
    done
}

main() {
    for ext in "$HERE"/gpu_check.d/*.sh; do  # steps other issues add (bench, peers) live beside this script
        # shellcheck source=/dev/null
        [ -f "$ext" ] && . "$ext"
    done
    if ! has_gpu; then
        echo "gpu_check: no NVIDIA GPU here (nvidia-smi missing or lists no GPU): dry mode, nothing was run."
        echo "gpu_check: on a GPU machine it would run: ${STEPS[*]}"
        exit 0
    fi
    OUT="${OUT:-./gpu-check-$(date -u +%Y%m%d-%H%M%S)-$(gpu_name)}"
    mkdir -p "$OUT" || { echo "gpu_check: cannot create $OUT" >&2; exit 2; }
    : >"$OUT/table.psv"
    {
        date -u +%Y-%m-%dT%H:%M:%SZ
        nvidia-smi -L
        "$PYTHON" -c "import pynvml, importlib.metadata as m; print('nvidia-ml-py', m.version('nvidia-ml-py'))"
        "$TORCH_PY" -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
    } >"$OUT/machine.txt" 2>&1
    local s
    for s in "${STEPS[@]}"; do
        echo "gpu_check: $s ..." >&2
        "step_$s"
    done
    print_table | tee "$OUT/table.txt"
    echo "gpu_check: raw outputs in $OUT"
}

main "$@"
