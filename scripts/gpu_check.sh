#!/usr/bin/env bash
# One short run (at most 5 minutes, whatever the GPU count) on the first machine with NVIDIA GPUs we get, often a rental
# billed by the minute (or a lent machine whose $OUT comes back only when it holds few files): collect once with
# --load-pcie and judge that snapshot, run envdoctor's own bench and the gpu-marked tests, and answer the
# questions only hardware can settle. Raw output is written to a work folder outside $OUT; $OUT receives at most
# the OUT_FILES: one archive of everything ($OUT/gpu-check.tgz), the summary ($OUT/summary.txt, also printed)
# and the few files read first (table, facts, reports). With no NVIDIA GPU it says so, prints the plan, exits 0.
# It works from any directory; the exit status is 1 when a step failed.
#
#   scripts/gpu_check.sh [--dry-run]
#   PYTHON=.venv/bin/python TORCH_PY=/opt/venv/bin/python scripts/gpu_check.sh
#   SKIP_STEPS="bench bench_peers" scripts/gpu_check.sh      # leave steps out (names as in --dry-run)
#
# PYTHON runs envdoctor and pytest (default: the first of $PYTHON, $VIRTUAL_ENV's python, the repository's
# .venv, python3 that imports envdoctor; the setup step installs envdoctor's test extra, pytest, when missing).
# TORCH_PY is the interpreter with a CUDA torch that envdoctor judges and that makes the loads (default: the
# first interpreter found whose torch is a CUDA build, else the setup step installs PyPI's torch, the CUDA
# wheel on Linux, into a venv in the work folder when the network allows it). Each step runs under its own time
# budget (STEP_TABLE; --dry-run prints it with the total, what a lent run brings back and the files $OUT will
# hold). A step's budget is its expected time with a margin (BUDGET_MARGIN, at least): the expected times are
# estimates from what each step runs (the quick suite's own budgets, the gpu tests it selects), not yet a
# measurement; the summary prints each step's seconds beside its expectation, so the first lent run checks them.
# A finding is a result, not a failure: `envdoctor check` / `envdoctor bench` exit 1 when they report an error
# finding, and the step is ok. The script only reads: it never changes MIG, persistence, clocks or power settings.
#
# Adding a step: write `step_NAME() { ...; row "NAME" "result" "detail"; }` and add one line
# `NAME EXPECTED_S BUDGET_S description` to STEP_TABLE (or call `add_step NAME BUDGET_S "description" EXPECTED_S`
# from a file in scripts/gpu_check.d/); raw output goes to "$WORK/NAME.*"; $BUDGET is the step's budget in seconds
# and `left` the seconds it has left (give each command of a step `timeout "$(left)"`).

set -u

SKIP_STEPS="${SKIP_STEPS:-}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
TOTAL_BUDGET_S=300  # the whole run, on any number of GPUs (the bench step splits its budget across them)
BUDGET_MARGIN=1.3   # every step's budget is at least its expected time x this
# everything $OUT will hold (a lent machine returns at most 8 files): the archive, the summary, what is read first
OUT_FILES="gpu-check.tgz summary.txt table.psv facts.json envdoctor.json bench.json peers.md nvml.json"
# the gpu-marked test that runs the whole quick suite again: the bench step runs it once, and checks the same
PYTEST_DESELECT="tests/unit/bench/test_bench.py::test_gpu_bench_quick_suite_structure"
BENCH_STARTUP_S=20  # the bench step's share that does not grow with the GPUs: torch import, CUDA, the disk kernels
BENCH_MIN_PER_GPU_S=6  # below this a GPU's kernels are too short to judge: fewer GPUs are benched instead
FAILED=0
WORK=""
PYTHON="${PYTHON:-}"
TORCH_PY="${TORCH_PY:-}"

# Expected seconds, from what each step runs (estimates until a lent run's summary measures them):
#   setup 8: two imports and a torch probe (a torch install does not fit any budget here: set TORCH_PY);
#   collect 22: torch import and CUDA start in the payload plus a 2 s PCIe load; payload_pid 8: the inspect
#   payload's own run; bench 40: the quick suite's budgets (envdoctor bench --list: about 24 s per GPU, split
#   across the GPUs by --budget) plus BENCH_STARTUP_S; pytest_gpu 55: the gpu tests without the quick-suite
#   rerun (a full collect, a 5 s sustained run, a collect without torch), which took the step to 70-110 s
#   with it; bench_peers (gpu_check.d) 25: mamf-finder's procedure on six shapes and the copies, two torch
#   start-ups, on the bench step's own JSON.
# name            expected_s  budget_s  what it answers
STEP_TABLE="
setup                8   15  PYTHON with envdoctor and pytest, TORCH_PY with a CUDA torch (found, else installed)
machine              4    8  versions: driver, nvidia-ml-py, torch, the GPUs
smi_timings          4   10  how long nvidia-smi -q -x and nvidia-smi topo -m take
collect             22   35  envdoctor collect --load-pcie: the one snapshot (facts.json)
judge                3    8  envdoctor check --facts facts.json: the report on that snapshot (an error finding is a result)
payload_pid          8   15  does the inspect payload's own PID show among NVML compute processes (polled every 50 ms)
nvml_facts           4   10  NVLink/fabric/virtualization facts, ValidateInforom cost per GPU, deprecated NVML symbols
nvml_successors      2    6  which NVML 13 successors and deprecated calls answer on this driver (nvml.json)
pcie_under_load      1    3  PCIe gen/width under load against the maximum (from the snapshot)
bench               40   60  envdoctor bench (the quick suite, its budget split across the GPUs) in TORCH_PY
pytest_gpu          55   80  pytest -m gpu (less the quick-suite rerun), its payloads in TORCH_PY
"
STEPS=()
BUDGETS=()
EXPECTED=()
DESCS=()
ROWS=()
BUDGET=60
STEP_END=0

add_step() {  # add_step NAME [BUDGET_S] [DESCRIPTION] [EXPECTED_S]: no expectation given: the budget / the margin
    STEPS+=("$1")
    BUDGETS+=("${2:-40}")
    DESCS+=("${3:-step from scripts/gpu_check.d}")
    EXPECTED+=("${4:-$(awk -v b="${2:-40}" -v m="$BUDGET_MARGIN" 'BEGIN { printf "%d", b / m }')}")
}

while read -r name expected budget desc; do
    [ -n "$name" ] && add_step "$name" "$budget" "$desc" "$expected"
done <<<"$STEP_TABLE"

left() {  # the seconds the running step has left (at least 1): each command of a step gets `timeout "$(left)"`
    local s=$((STEP_END - SECONDS))
    if [ "$s" -ge 1 ]; then echo "$s"; else echo 1; fi
}

gpu_count() {  # the GPUs nvidia-smi lists (1 when it lists none or is absent)
    local n
    n=$(nvidia-smi -L 2>/dev/null | grep -cE '^GPU [0-9]+:')
    if [ "${n:-0}" -ge 1 ] 2>/dev/null; then echo "$n"; else echo 1; fi
}

skipped() { case " $SKIP_STEPS " in *" $1 "*) return 0;; esac; return 1; }

row() {  # row NAME RESULT DETAIL: one line of the final table; a result but ok / exit 0 / skipped fails the run
    ROWS+=("$1|$2|$3")
    printf '%s|%s|%s\n' "$1" "$2" "$3" >>"$WORK/table.psv"
    case "$2" in ok|"exit 0"|skipped*) ;; *) FAILED=1;; esac
}

run_py() {  # run_py NAME PYTHON [ARGS...] <<'EOF': a Python step; records its row from the last line it printed
    local name="$1" py="$2"
    shift 2
    (cd "$REPO" && timeout "$(left)" "$py" - "$@" >"$WORK/$name.out" 2>"$WORK/$name.err")
    local rc=$?
    if [ "$rc" = 0 ]; then
        row "$name" "ok" "$(tail -n 1 "$WORK/$name.out" | cut -c1-160)"
    else
        row "$name" "exit $rc" "$(tail -n 1 "$WORK/$name.err" | cut -c1-160)"
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

print_plan() {  # the steps, their expected times and budgets, what a lent run brings back and what $OUT will
    # hold; fails when the total is over TOTAL_BUDGET_S or a budget is under its expected time x BUDGET_MARGIN
    local i total=0 expected=0 short=""
    printf '%-18s %8s %8s  %s\n' "step" "expected" "budget" "what it answers"
    for i in "${!STEPS[@]}"; do
        if skipped "${STEPS[$i]}"; then
            printf '%-18s %8s %8s  %s\n' "${STEPS[$i]}" "-" "skipped" "${DESCS[$i]}"
            continue
        fi
        total=$((total + BUDGETS[i]))
        expected=$((expected + EXPECTED[i]))
        awk -v b="${BUDGETS[$i]}" -v e="${EXPECTED[$i]}" -v m="$BUDGET_MARGIN" 'BEGIN { exit !(b >= e * m) }' \
            || short="$short ${STEPS[$i]}"
        printf '%-18s %7ss %7ss  %s\n' "${STEPS[$i]}" "${EXPECTED[$i]}" "${BUDGETS[$i]}" "${DESCS[$i]}"
    done
    printf 'total budget: %ss (%dm%02ds), limit %ss; expected %ss\n' "$total" $((total / 60)) $((total % 60)) \
        "$TOTAL_BUDGET_S" "$expected"
    [ -n "$short" ] && printf 'budget under expected x %s:%s\n' "$BUDGET_MARGIN" "$short"
    if ! skipped bench; then
        local b
        b=$(for i in "${!STEPS[@]}"; do [ "${STEPS[$i]}" = bench ] && echo "${BUDGETS[$i]}"; done)
        local one eight
        one=$(bench_split_s "$b" 1)
        eight=$(bench_split_s "$b" 8)
        printf 'bench split (its --budget applies per GPU): 1 GPU at --budget %s; 8 GPUs: %s of them at --budget %s\n' \
            "${one% *}" "${eight#* }" "${eight% *}"
    fi
    printf 'a lent run brings back (summary.txt, and the files below):\n'
    skipped pytest_gpu || printf '  GPU tests: the pytest -m gpu summary line (passed/failed/skipped), less %s\n' \
        "${PYTEST_DESELECT##*::}"
    skipped bench || printf '  envdoctor bench: its quick-suite figures and findings on every GPU (bench.json)\n'
    skipped bench_peers || printf '  %s\n' "envdoctor against its peers: the bench step's own figures beside mamf-finder's procedure and nvbandwidth-style copies run in the same interpreter, with ratios (peers.md)"
    skipped nvml_successors || printf '  %s\n' "NVML successor answers: per GPU, which NVML 13 successor and deprecated call or field answers, and with what (nvml.json)"
    printf '  %s\n' "each step's seconds beside its expected time (summary.txt)"
    printf 'output files: %s\n' "$OUT_FILES"
    [ "$total" -le "$TOTAL_BUDGET_S" ] && [ -z "$short" ]
}

# --------------------------------------------------------------------------- interpreters

imports() {  # imports PY MODULE...: PY runs and imports every MODULE
    [ -n "$1" ] && "$1" -c "import sys; [__import__(m) for m in sys.argv[1:]]" "${@:2}" >/dev/null 2>&1
}

has_cuda_torch() {  # has_cuda_torch PY: PY imports a CUDA build of torch
    [ -n "$1" ] && "$1" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)" >/dev/null 2>&1
}

find_python() {  # the interpreter that runs envdoctor: the first candidate that imports it
    local c
    for c in "${PYTHON:-}" "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}" "$REPO/.venv/bin/python" python3; do
        [ -n "$c" ] && imports "$c" envdoctor && { echo "$c"; return 0; }
    done
    echo "${PYTHON:-python3}"
}

find_torch_py() {  # TORCH_PY given, else the first interpreter with a CUDA build of torch
    local c
    [ -n "${TORCH_PY:-}" ] && { echo "$TORCH_PY"; return 0; }
    for c in "$PYTHON" "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}" "${CONDA_PREFIX:+$CONDA_PREFIX/bin/python}" \
             "$REPO"/.venv*/bin/python /opt/conda/bin/python /usr/local/bin/python3 /usr/bin/python3 python3; do
        has_cuda_torch "$c" && { echo "$c"; return 0; }
    done
    return 1
}

# --------------------------------------------------------------------------- setup

step_setup() {
    local notes="" found
    if ! imports "$PYTHON" envdoctor pytest; then  # envdoctor's test extra: pytest and what the tests import
        timeout "$(left)" "$PYTHON" -m pip install -q --disable-pip-version-check -e "$REPO[test]" \
            >"$WORK/setup.pip.out" 2>&1 || notes="pip install -e .[test] failed (setup.pip.out); "
    fi
    if ! imports "$PYTHON" envdoctor pytest; then
        row setup "failed" "${notes}$PYTHON cannot import envdoctor and pytest"
        return
    fi
    if found="$(find_torch_py)"; then
        TORCH_PY="$(command -v "$found" || echo "$found")"  # a path: the GPU tests take ENVDOCTOR_TEST_CUDA_VENV
        row setup "ok" "PYTHON=$PYTHON TORCH_PY=$TORCH_PY"
        return
    fi
    # none found: PyPI's torch (the CUDA build on Linux) into a venv in the work folder
    "$PYTHON" -m venv "$WORK/torch-venv" >>"$WORK/setup.pip.out" 2>&1 \
        && timeout "$(left)" "$WORK/torch-venv/bin/python" -m pip install -q \
            --disable-pip-version-check torch >>"$WORK/setup.pip.out" 2>&1
    if has_cuda_torch "$WORK/torch-venv/bin/python"; then
        TORCH_PY="$WORK/torch-venv/bin/python"
        row setup "ok" "PYTHON=$PYTHON TORCH_PY=$TORCH_PY (torch installed)"
    else
        TORCH_PY="$PYTHON"
        row setup "failed" "no interpreter with a CUDA torch, and installing one failed in $BUDGET s (setup.pip.out): set TORCH_PY"
    fi
}

# --------------------------------------------------------------------------- the snapshot and its report

step_machine() {
    {
        date -u +%Y-%m-%dT%H:%M:%SZ
        timeout "$(left)" nvidia-smi -L
        timeout "$(left)" nvidia-smi --query-gpu=driver_version,name,pci.bus_id --format=csv,noheader
        timeout "$(left)" "$PYTHON" -c \
            "import pynvml, importlib.metadata as m; print('nvidia-ml-py', m.version('nvidia-ml-py'))"
        timeout "$(left)" "$TORCH_PY" -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
    } >"$WORK/machine.txt" 2>&1
    row machine "ok" "$(grep -E '^nvidia-ml-py|^torch' "$WORK/machine.txt" | tr '\n' ' ' | cut -c1-160)"
}

step_smi_timings() {
    local t0 t1 t2 rc1 rc2
    t0=$(date +%s.%N)
    timeout "$(($(left) * 2 / 3 + 1))" nvidia-smi -q -x >"$WORK/nvidia-smi-q.xml" 2>"$WORK/smi_timings.err"
    rc1=$?
    t1=$(date +%s.%N)
    timeout "$(left)" nvidia-smi topo -m >"$WORK/nvidia-smi-topo.txt" 2>>"$WORK/smi_timings.err"
    rc2=$?
    t2=$(date +%s.%N)
    timeout "$(left)" nvidia-smi >"$WORK/nvidia-smi.txt" 2>&1
    row smi_timings "ok" "$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v r1="$rc1" -v r2="$rc2" \
        'BEGIN { printf "-q -x %.2f s (exit %s), topo -m %.2f s (exit %s)", b - a, r1, c - b, r2 }')"
}

step_collect() {
    (cd "$REPO" && timeout "$(left)" "$PYTHON" -m envdoctor collect --python "$TORCH_PY" --no-redact \
        --load-pcie -o "$WORK/facts.json" 2>"$WORK/collect.err")
    row collect "exit $?" "$(tail -n 1 "$WORK/collect.err" | cut -c1-160)"
}

step_judge() {
    # exit 1 is envdoctor reporting an error finding: the step did its job (the findings are the result)
    (cd "$REPO" && timeout "$(($(left) / 2 + 1))" "$PYTHON" -m envdoctor check --facts "$WORK/facts.json" \
        --no-redact --format json -o "$WORK/envdoctor.json" 2>"$WORK/judge.err")
    local rc=$?
    (cd "$REPO" && timeout "$(left)" "$PYTHON" -m envdoctor check --facts "$WORK/facts.json" -v \
        >"$WORK/envdoctor.txt" 2>&1)
    local detail
    detail="$("$PYTHON" - "$WORK/envdoctor.json" <<'EOF' 2>/dev/null || echo 'no JSON report'
import json, sys
r = json.load(open(sys.argv[1]))
f = r.get("findings", [])
print(f"{sum(x['severity'] == 'error' for x in f)} error(s), {sum(x['severity'] == 'warning' for x in f)} "
      f"warning(s): " + ", ".join(x["code"] for x in f if x["severity"] != "info")[:160])
EOF
)"
    case "$rc" in
        0|1) row judge "ok" "exit $rc: $detail";;
        *) row judge "exit $rc" "$detail";;
    esac
}

step_pcie_under_load() {
    timeout "$(left)" "$PYTHON" - "$WORK/facts.json" >"$WORK/pcie_under_load.out" 2>&1 <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))
parts = []
for g in f["driver"]["gpus"]:
    parts.append(f"GPU {g['index']}: idle Gen{g.get('pcie_gen_current')}x{g.get('pcie_width_current')} load "
                 f"Gen{g.get('pcie_gen_under_load')}x{g.get('pcie_width_under_load')} "
                 f"max Gen{g.get('pcie_gen_max')}x{g.get('pcie_width_max')}")
print("; ".join(parts) or "no GPU in the facts")
EOF
    row pcie_under_load "exit $?" "$(tail -n 1 "$WORK/pcie_under_load.out" | cut -c1-160)"
}

step_pytest_gpu() {
    # the GPU tests run their payloads in the torch interpreter (tests/conftest.py: cuda_venv); the one that runs
    # the whole quick suite again is left out: the bench step ran it, and checks the same structure in its JSON
    (cd "$REPO" && ENVDOCTOR_TEST_CUDA_VENV="$TORCH_PY" timeout "$(left)" "$PYTHON" -m pytest -q -m gpu \
        -p no:cacheprovider --deselect "$PYTEST_DESELECT" >"$WORK/pytest_gpu.out" 2>&1)
    local rc=$?
    row pytest_gpu "exit $rc" "$(grep -E '(passed|failed|skipped|error|deselected|no tests ran)' \
        "$WORK/pytest_gpu.out" | tail -n 1 | cut -c1-160)"
}

bench_split_s() {  # bench_split_s BUDGET GPUS -> "PER_GPU_S BENCHED_GPUS": envdoctor bench --budget applies per
    # GPU, so the step's budget less the start-up and a 2 s warm-up per GPU is split across the GPUs, never more than
    # the quick suite's own sum; where that leaves a GPU under BENCH_MIN_PER_GPU_S, the first GPUs that fit are benched
    local quick
    quick=$(cd "$REPO" && "${PYTHON:-python3}" -c "from envdoctor.bench.suite import plan
print(round(sum(i.budget_s for i in plan([], 'cuda')), 1))" 2>/dev/null || echo 24)
    awk -v b="$1" -v n="$2" -v s="$BENCH_STARTUP_S" -v q="$quick" -v lo="$BENCH_MIN_PER_GPU_S" 'BEGIN {
        k = n; x = (b - s - 2 * k) / k
        while (x < lo && k > 1) { k--; x = (b - s - 2 * k) / k }
        if (x > q) x = q; if (x < 1) x = 1
        printf "%.1f %d", x, k }'
}

step_bench() {
    # envdoctor's own quick suite judged against compat_data/bench.json: exit 1 is a finding, not a failed step
    local n split per k visible=""
    n=$(gpu_count)
    split=$(bench_split_s "$BUDGET" "$n")
    per="${split% *}"
    k="${split#* }"
    # fewer GPUs than the machine has: the first k in CUDA's order (CUDA_VISIBLE_DEVICES), said in the row
    [ "$k" -lt "$n" ] && visible="$(seq -s, 0 $((k - 1)))"
    echo "$n GPU(s), $k benched: envdoctor bench --budget $per (per GPU)" >"$WORK/bench.plan"
    # shellcheck disable=SC2086  # one word, or none: an empty CUDA_VISIBLE_DEVICES would hide every GPU
    (cd "$REPO" && env ${visible:+CUDA_VISIBLE_DEVICES=$visible} timeout "$(left)" "$PYTHON" -m envdoctor \
        bench --python "$TORCH_PY" --no-redact --budget "$per" --format json -o "$WORK/bench.json" \
        >"$WORK/bench.out" 2>&1)
    local rc=$?
    case "$rc" in
        0|1) row bench "ok" "exit $rc, $k of $n GPU(s) at --budget $per: $("$PYTHON" - "$WORK/bench.json" <<'PY' 2>/dev/null || echo 'no JSON report'
import json, sys
r = json.load(open(sys.argv[1]))
res = r["facts"]["bench"]["results"]
mm = [x for x in res if x["name"] == "matmul_bf16" and str(x.get("device")).startswith("cuda")]
ok = bool(mm) and all(x["status"] == "ok" and (x.get("params") or {}).get("timer") == "cuda events" for x in mm)
f = [x for x in r.get("findings", []) if x["code"].startswith("bench.")]
print(f"{sum(x['status'] == 'ok' for x in res)}/{len(res)} ran, bf16 on every GPU by CUDA events: {ok}; "
      f"{sum(x['severity'] == 'error' for x in f)} bench error(s), {sum(x['severity'] == 'warning' for x in f)} "
      "warning(s): " + ", ".join(x["code"] for x in f if x["severity"] != "info")[:110])
PY
)";;
        *) row bench "exit $rc" "$(tail -n 1 "$WORK/bench.out" | cut -c1-160)";;
    esac
}

# --------------------------------------------------------------------------- questions only hardware settles

step_payload_pid() {
    # Does envdoctor's real inspect payload (it holds a CUDA context) show among NVML's compute processes, and
    # under which PID (a container's PID namespace translates it)? NVML polled every 50 ms while it runs.
    run_py payload_pid "$PYTHON" "$TORCH_PY" "$REPO/envdoctor/_payload" "$((BUDGET - 3))" <<'EOF'
import json, os, subprocess, sys, time
import pynvml
pynvml.nvmlInit()
handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
limit = max(2.0, float(sys.argv[3]))
child = subprocess.Popen([sys.argv[1], sys.argv[2], "--task", "inspect", "--deadline-s", str(int(limit))],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seen, polls, t0 = {}, 0, time.monotonic()
while child.poll() is None and time.monotonic() - t0 < limit:
    for i, h in enumerate(handles):
        try:
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                seen.setdefault(p.pid, set()).add(i)
        except pynvml.NVMLError as e:
            seen.setdefault(f"error {e}", set()).add(i)
    polls += 1
    time.sleep(0.05)
child.kill()
ns = os.readlink("/proc/self/ns/pid")
print(json.dumps({"payload_pid": child.pid, "polls": polls, "seconds": round(time.monotonic() - t0, 2),
                  "pid_namespace": ns, "listed": {str(k): sorted(v) for k, v in seen.items()}}))
print(f"payload pid {child.pid} listed: {child.pid in seen}; other pids: "
      f"{sorted(str(k) for k in seen if k != child.pid)[:5]}; {polls} polls; pid ns {ns}")
EOF
}

step_nvml_facts() {
    # NVLink, fabric and virtualization as envdoctor reads them; ValidateInforom cost per GPU; which deprecated
    # NVML symbols this driver still exports; the binding's version; time per NVML call
    run_py nvml_facts "$PYTHON" <<'EOF'
import ctypes, importlib.metadata as md, json, time
import pynvml
from envdoctor.probes.nvml import probe_nvml
d = probe_nvml()
lib = ctypes.CDLL("libnvidia-ml.so.1")
deprecated = ["nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetSupportedClocksThrottleReasons",
              "nvmlDeviceGetGpuFabricInfo", "nvmlDeviceGetComputeRunningProcesses_v2",
              "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses_v2",
              "nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex",
              "nvmlDeviceGetNvLinkRemotePciInfo", "nvmlSystemGetCudaDriverVersion"]
symbols = {s: hasattr(lib, s) for s in deprecated}
pynvml.nvmlInit()
gpus = []
for g in d.gpus:
    h = pynvml.nvmlDeviceGetHandleByIndex(g.index)
    t = time.perf_counter()
    try:
        pynvml.nvmlDeviceValidateInforom(h)
        inforom = "valid"
    except pynvml.NVMLError as e:
        inforom = str(e)
    inforom_ms = round((time.perf_counter() - t) * 1e3, 1)
    times = {}
    for name, fn in {"memory": pynvml.nvmlDeviceGetMemoryInfo, "power": pynvml.nvmlDeviceGetPowerUsage,
                     "processes": pynvml.nvmlDeviceGetComputeRunningProcesses,
                     "nvlink0": lambda x: pynvml.nvmlDeviceGetNvLinkState(x, 0)}.items():
        t = time.perf_counter()
        try:
            fn(h)
        except pynvml.NVMLError:
            pass
        times[name] = round((time.perf_counter() - t) * 1e3, 3)
    links = g.nvlinks or []
    gpus.append({"index": g.index, "name": g.name, "nvlinks": len(links), "active": sum(1 for k in links if k.active),
                 "fabric": [g.fabric_state, g.fabric_status], "virtualization": g.virtualization_mode,
                 "inforom": inforom, "inforom_ms": inforom_ms, "ms": times, "notes": g.notes})
print(json.dumps({"nvidia_ml_py": md.version("nvidia-ml-py"), "driver": d.version, "nvswitches": d.nvswitch_count,
                  "symbols": symbols, "gpus": gpus}))
print(f"nvidia-ml-py {md.version('nvidia-ml-py')}; " + "; ".join(
    f"GPU {x['index']}: NVLink {x['active']}/{x['nvlinks']}, fabric {x['fabric'][0]}, virt {x['virtualization']}, "
    f"inforom {x['inforom_ms']} ms" for x in gpus)[:120]
    + f"; deprecated missing: {[s for s, ok in symbols.items() if not ok]}")
EOF
}

step_nvml_successors() {
    # Which NVML 13 successors and the calls they deprecate answer on this driver, per GPU (nvml.h API 13:
    # DEPRECATED(13.0) on the application-clock getters, nvmlDeviceGetTemperature, the ClocksThrottleReasons
    # getters, nvmlDeviceGetViolationStatus, nvmlDeviceGetPowerState; field successors: SW_THERM_SLOWDOWN 269 for
    # PERF_POLICY_THERMAL 75, GET_GPU_RECOVERY_ACTION 230 for RESET_STATUS 226 / DRAIN_AND_RESET_STATUS 227)
    run_py nvml_successors "$PYTHON" "$WORK/nvml.json" <<'EOF'
import json, sys
import pynvml as n
n.nvmlInit()
def answer(fn, *args):
    f = getattr(n, fn, None)
    if f is None:
        return "not in this binding"
    try:
        v = f(*args)
    except n.NVMLError as e:
        return "error: " + str(e)
    except Exception as e:  # a binding whose signature differs
        return f"{type(e).__name__}: {e}"[:120]
    return "ok: " + str(getattr(v, "temperature", v))[:60]
FIELDS = {"CLOCKS_EVENT_REASON_SW_POWER_CAP/PERF_POLICY_POWER": 74, "PERF_POLICY_THERMAL": 75,
          "CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN": 269, "CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN": 270,
          "CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN": 271, "GET_GPU_RECOVERY_ACTION": 230, "RESET_STATUS": 226,
          "DRAIN_AND_RESET_STATUS": 227}
gpus = []
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    calls = {
        "nvmlDeviceGetCurrentClocksEventReasons": answer("nvmlDeviceGetCurrentClocksEventReasons", h),
        "nvmlDeviceGetCurrentClocksThrottleReasons (deprecated)": answer("nvmlDeviceGetCurrentClocksThrottleReasons", h),
        "nvmlDeviceGetSupportedClocksEventReasons": answer("nvmlDeviceGetSupportedClocksEventReasons", h),
        "nvmlDeviceGetTemperatureV": answer("nvmlDeviceGetTemperatureV", h, 0),
        "nvmlDeviceGetTemperature (deprecated)": answer("nvmlDeviceGetTemperature", h, 0),
        "nvmlDeviceGetClock(GRAPHICS, APP_CLOCK_TARGET)": answer("nvmlDeviceGetClock", h, 0, 1),
        "nvmlDeviceGetClock(GRAPHICS, APP_CLOCK_DEFAULT)": answer("nvmlDeviceGetClock", h, 0, 2),
        "nvmlDeviceGetApplicationsClock (deprecated)": answer("nvmlDeviceGetApplicationsClock", h, 0),
        "nvmlDeviceGetDefaultApplicationsClock (deprecated)": answer("nvmlDeviceGetDefaultApplicationsClock", h, 0),
        "nvmlDeviceGetViolationStatus(THERMAL) (deprecated)": answer("nvmlDeviceGetViolationStatus", h, 1),
        "nvmlDeviceGetPerformanceState": answer("nvmlDeviceGetPerformanceState", h),
        "nvmlDeviceGetPowerState (deprecated)": answer("nvmlDeviceGetPowerState", h),
    }
    fields = {}
    try:
        for name, fv in zip(FIELDS, n.nvmlDeviceGetFieldValues(h, list(FIELDS.values()))):
            fields[f"{name} ({FIELDS[name]})"] = (f"ok: {fv.value.ullVal if fv.valueType == 3 else fv.value.uiVal}"
                                                  if fv.nvmlReturn == 0 else f"error: nvmlReturn {fv.nvmlReturn}")
    except Exception as e:
        fields["nvmlDeviceGetFieldValues"] = f"{type(e).__name__}: {e}"[:120]
    gpus.append({"index": i, "name": str(n.nvmlDeviceGetName(h)), "calls": calls, "fields": fields})
doc = {"driver": str(n.nvmlSystemGetDriverVersion()), "gpus": gpus}
json.dump(doc, open(sys.argv[1], "w"), indent=1)
g = gpus[0] if gpus else {"calls": {}, "fields": {}}
everything = {**g["calls"], **g["fields"]}
print(json.dumps(doc))
print(f"driver {doc['driver']}, GPU 0: " + "; ".join(
    f"{k.split(' ')[0].replace('nvmlDeviceGet', '')} {v.split(':')[0]}" for k, v in everything.items())[:150])
EOF
}

# --------------------------------------------------------------------------- main

print_table() {  # each step's row, with its seconds against the expected time and the budget
    printf '\n%-18s %-10s %-12s %s\n' "step" "result" "s/exp/budget" "detail"
    printf '%-18s %-10s %-12s %s\n' "----" "------" "------------" "------"
    local r took
    for r in "${ROWS[@]}"; do
        IFS='|' read -r name result detail <<<"$r"
        took=$(awk -v n="$name" '$1 == n { print $2 "/" $3 "/" $4 }' "$WORK/step_seconds.txt" 2>/dev/null)
        printf '%-18s %-10s %-12s %s\n' "$name" "$result" "${took:--}" "$detail"
    done
}

main() {
    for ext in "$HERE"/gpu_check.d/*.sh; do  # steps other issues add (bench peers) live beside this script
        # shellcheck source=/dev/null
        [ -f "$ext" ] && . "$ext"
    done
    if [ "${1:-}" = "--dry-run" ]; then
        print_plan
        exit $?
    fi
    if ! has_gpu; then
        echo "gpu_check: no NVIDIA GPU here (nvidia-smi missing or lists no GPU): dry mode, nothing was run."
        echo "gpu_check: on a GPU machine it would run:"
        print_plan
        exit 0
    fi
    OUT="${OUT:-$PWD/gpu-check-$(date -u +%Y%m%d-%H%M%S)-$(gpu_name)}"
    mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)" || { echo "gpu_check: cannot create $OUT" >&2; exit 2; }
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")" || { echo "gpu_check: no work folder" >&2; exit 2; }
    PYTHON="$(find_python)"
    PYTHON="$(command -v "$PYTHON" || echo "$PYTHON")"
    skipped setup && TORCH_PY="${TORCH_PY:-$PYTHON}"  # no setup step: nothing searched, nothing installed
    : >"$WORK/table.psv"
    print_plan >"$WORK/plan.txt"
    local i t f start=$SECONDS
    for i in "${!STEPS[@]}"; do
        skipped "${STEPS[$i]}" && continue
        BUDGET="${BUDGETS[$i]}"
        echo "gpu_check: ${STEPS[$i]} (expected ${EXPECTED[$i]} s, budget ${BUDGET} s) ..." >&2
        t=$SECONDS
        STEP_END=$((SECONDS + BUDGET))
        "step_${STEPS[$i]}"
        printf '%s %s %s %s\n' "${STEPS[$i]}" $((SECONDS - t)) "${EXPECTED[$i]}" "$BUDGET" \
            >>"$WORK/step_seconds.txt"
    done
    {
        print_table
        echo
        echo "gpu_check: $((SECONDS - start)) s in all; $([ "$FAILED" = 0 ] && echo "every step passed" \
            || echo "a step FAILED"); everything in $OUT/gpu-check.tgz"
    } >"$WORK/summary.txt"
    rm -rf "$WORK/torch-venv"  # an installed torch is no output
    tar -czf "$OUT/gpu-check.tgz" -C "$WORK" . 2>/dev/null || FAILED=1
    for f in $OUT_FILES; do
        [ "$f" != gpu-check.tgz ] && [ -f "$WORK/$f" ] && cp "$WORK/$f" "$OUT/$f"
    done
    rm -rf "$WORK"
    cat "$OUT/summary.txt"
    [ "$FAILED" = 0 ]
}

# sourced (tests call the steps one by one): define everything, run nothing
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
