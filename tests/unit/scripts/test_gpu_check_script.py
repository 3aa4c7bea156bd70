"""scripts/gpu_check.sh: dry mode without a GPU (exit 0, nothing run), and the full run's structure with a stand-in nvidia-smi."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO

SCRIPT = REPO / "scripts" / "gpu_check.sh"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="no bash")


def test_script_parses():
    assert subprocess.run([BASH, "-n", str(SCRIPT)]).returncode == 0


def test_dry_mode_without_a_gpu_says_so_and_exits_0(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    out = tmp_path / "out"
    # a PATH with the tools the script needs but no nvidia-smi: the machine has no NVIDIA GPU
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin", OUT=str(out), PYTHON=sys.executable)
    if any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin")):  # pragma: no cover - a GPU box
        pytest.skip("nvidia-smi is in /usr/bin here")
    proc = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "no NVIDIA GPU here" in proc.stdout and "dry mode" in proc.stdout
    assert "payload_pid" in proc.stdout  # it lists what it would run
    assert not out.exists()  # and ran nothing


def _plan(proc):
    """(step, budget seconds) of the plan the script printed, and its total line."""
    steps = [(n, b) for n, _e, b in _plan3(proc)]
    total = re.search(r"^total budget: (\d+)s", proc.stdout, re.M)
    return steps, int(total.group(1)) if total else None


def _plan3(proc):
    """(step, expected seconds, budget seconds) of the plan the script printed."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^(\w+) +(\d+)s +(\d+)s  ", proc.stdout, re.M)]


def test_dry_run_fits_300_s_with_every_budget_above_its_expected_time_and_says_what_comes_back(tmp_path):
    env = dict(os.environ, PATH=f"{tmp_path}:/usr/bin:/bin", PYTHON=sys.executable)
    proc = subprocess.run([BASH, str(SCRIPT), "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps, total = _plan(proc)
    names = [n for n, _ in steps]
    for needed in ("collect", "judge", "payload_pid", "nvml_facts", "nvml_successors", "smi_timings",
                   "pcie_under_load", "bench", "pytest_gpu", "bench_peers"):
        assert needed in names, names
    assert total == sum(b for _, b in steps) and total <= 300, proc.stdout
    for name, expected, budget in _plan3(proc):
        assert budget >= 1.3 * expected and expected > 0, (name, expected, budget)
    assert names.count("collect") == 1  # collected once, judged from that snapshot
    assert names[0] == "setup"  # the interpreters are found (or installed) before any step uses them
    # what a lent run brings back: the GPU tests' summary, envdoctor against its peers, the NVML successor answers
    back = proc.stdout.split("a lent run brings back", 1)[1]
    assert "GPU tests: the pytest -m gpu summary line" in back and "test_gpu_bench_quick_suite_structure" in back
    assert "envdoctor against its peers" in back and "(peers.md)" in back
    assert "NVML successor answers" in back and "(nvml.json)" in back
    # the bench budget is split across the GPUs (envdoctor bench --budget applies per GPU)
    split = re.search(r"^bench split .*: 1 GPU at --budget ([\d.]+); 8 GPUs: (\d+) of them at --budget ([\d.]+)$",
                      proc.stdout, re.M)
    assert split, proc.stdout
    one, benched, per = float(split.group(1)), int(split.group(2)), float(split.group(3))
    assert 20 <= one <= dict(steps)["bench"] - 20 and 1 <= benched <= 8 and per >= 6
    assert 20 + benched * (per + 2) <= dict(steps)["bench"]


def test_a_budget_under_its_expected_time_fails_the_dry_run(tmp_path):
    ext = tmp_path / "scripts" / "gpu_check.d"
    ext.mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / "scripts" / "gpu_check.sh")
    (ext / "tight.sh").write_text('step_tight() { :; }\nadd_step tight 10 "too tight" 9\n')
    proc = subprocess.run([BASH, str(tmp_path / "scripts" / "gpu_check.sh"), "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "budget under expected x 1.3: tight" in proc.stdout


def test_dry_run_lists_at_most_8_output_files_one_archive_and_the_summary(tmp_path):
    import re

    proc = subprocess.run([BASH, str(SCRIPT), "--dry-run"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)  # from any directory
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = re.search(r"^output files: (.+)$", proc.stdout, re.M).group(1).split()
    assert len(files) <= 8 and len(set(files)) == len(files)
    assert "gpu-check.tgz" in files and "summary.txt" in files
    assert [f for f in files if f.endswith((".tgz", ".tar.gz"))] == ["gpu-check.tgz"]


def test_skip_steps_leaves_them_out_of_the_budget(tmp_path):
    env = dict(os.environ, PATH=f"{tmp_path}:/usr/bin:/bin", SKIP_STEPS="bench bench_peers")
    proc = subprocess.run([BASH, str(SCRIPT), "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    steps, total = _plan(proc)
    assert proc.returncode == 0 and "bench" not in dict(steps) and "bench_peers" not in dict(steps)
    assert total == sum(b for _, b in steps)


def test_a_plan_over_the_limit_fails_the_dry_run(tmp_path):
    ext = tmp_path / "scripts" / "gpu_check.d"
    ext.mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / "scripts" / "gpu_check.sh")
    (ext / "big.sh").write_text('step_big() { :; }\nadd_step big 400 "too long"\n')
    proc = subprocess.run([BASH, str(tmp_path / "scripts" / "gpu_check.sh"), "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "big" in proc.stdout


def test_dry_mode_when_nvidia_smi_lists_no_gpu(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    smi.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin", OUT=str(tmp_path / "out"))
    proc = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "dry mode" in proc.stdout


@pytest.mark.slow
def test_full_run_structure_with_a_stand_in_nvidia_smi(tmp_path):
    # not a GPU test: a stand-in nvidia-smi lists one GPU, so every step runs, fails where NVML is missing,
    # and still lands in the table with its raw output kept
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text('#!/bin/sh\ncase "$*" in\n  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)";;\n'
                   '  *--query-gpu=name*) echo "NVIDIA H100 80GB HBM3";;\n  *) echo "stand-in"; exit 9;;\nesac\n')
    smi.chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}", OUT=str(out),
               PYTHON=sys.executable, TORCH_PY=sys.executable, SKIP_STEPS="bench bench_peers pytest_gpu")
    proc = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=500,
                          cwd=tmp_path)  # not the repository: the script finds its own way
    assert proc.returncode == 1, proc.stderr[-2000:]  # steps fail without NVML, and the run says so
    assert "a step FAILED" in proc.stdout
    table = (out / "table.psv").read_text().splitlines()
    steps = [line.split("|")[0] for line in table]
    assert steps[:5] == ["setup", "machine", "smi_timings", "collect", "judge"] and "nvml_facts" in steps
    assert table[0].split("|")[1] == "ok"  # PYTHON imports envdoctor and pytest; TORCH_PY was given
    assert "bench" not in steps and "bench_peers" not in steps  # SKIP_STEPS
    kept = sorted(p.name for p in out.rglob("*"))
    assert len(kept) <= 8 and "summary.txt" in kept and "machine.txt" not in kept, kept
    import tarfile

    with tarfile.open(out / "gpu-check.tgz") as tgz:
        names = tgz.getnames()
    assert "./facts.json" in names and "./summary.txt" in names and "./table.psv" in names
    assert "./machine.txt" in names and "./nvml_facts.out" in names
    assert "step" in proc.stdout and "gpu-check.tgz" in proc.stdout


# ---------------------------------------------------------------------------- steps, sourced one by one

# a stand-in PYTHON: `-m envdoctor|pytest ...` logs its arguments and CUDA_VISIBLE_DEVICES, writes a report where
# -o names one and exits with FAKE_RC; anything else (the script's own python snippets) runs the real interpreter
FAKE_PY = """#!/bin/sh
if [ "$1" = "-m" ]; then
    echo "$* CVD=${CUDA_VISIBLE_DEVICES-unset}" >>"$FAKE_LOG"
    out=""; prev=""
    for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
    [ -n "$out" ] && cp "$FAKE_REPORT" "$out"
    [ "$2" = pytest ] && echo "5 passed, 1 skipped, 1 deselected in 61.20s"
    exit "${FAKE_RC:-0}"
fi
exec "%s" "$@"
"""

SMI_8 = "#!/bin/sh\ncase \"$*\" in\n  -L) for i in 0 1 2 3 4 5 6 7; do echo \"GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$i)\"; done;;\n  *) exit 9;;\nesac\n"


def _report(tmp_path, findings=()):
    results = [{"name": "matmul_bf16", "device": f"cuda:{i}", "status": "ok", "value": 780.0 + i, "unit": "TFLOP/s",
                "params": {"timer": "cuda events", "shape": [8192, 8192, 8192],
                           "sweep": [{"shape": [8192, 8192, 8192], "tflops": 780.0 + i}]}} for i in range(2)]
    results.append({"name": "membw_device", "device": "cuda:0", "status": "ok", "value": 2600.0, "unit": "GB/s",
                    "params": {}})
    doc = {"facts": {"bench": {"results": results}, "driver": {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}] * 2,
                                                                "driver_version": "590.48.01"}},
           "findings": [{"code": c, "severity": s} for c, s in findings]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(doc))
    return path


def _step(tmp_path, body, rc=0, smi=SMI_8, extra_env=None):
    """Source the script and run ``body`` (bash) with WORK, PYTHON (the stand-in) and a stand-in nvidia-smi."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "nvidia-smi").write_text(smi)
    (bindir / "nvidia-smi").chmod(0o755)
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY % sys.executable)
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin", FAKE_LOG=str(tmp_path / "log"), FAKE_RC=str(rc),
               FAKE_REPORT=str(_report(tmp_path, [("bench.membw/below-expected", "error")])), **(extra_env or {}))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    script = (f'source "{SCRIPT}"; WORK="{work}"; PYTHON="{fake}"; TORCH_PY="{sys.executable}"; : >"$WORK/table.psv"; '
              + body + '; cat "$WORK/table.psv"')
    proc = subprocess.run([BASH, "-c", script], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    log = (tmp_path / "log").read_text() if (tmp_path / "log").exists() else ""
    rows = [line.split("|") for line in proc.stdout.splitlines() if line.count("|") >= 2]
    return proc, rows, log


def test_judge_counts_an_error_finding_exit_1_as_a_result_and_a_crash_as_a_failure(tmp_path):
    proc, rows, _log = _step(tmp_path, 'BUDGET=8; STEP_END=$((SECONDS + 8)); step_judge; echo "FAILED=$FAILED"', rc=1)
    assert rows[0][:2] == ["judge", "ok"] and rows[0][2].startswith("exit 1: 1 error(s), 0 warning(s): bench.membw")
    assert "FAILED=0" in proc.stdout, proc.stdout + proc.stderr
    proc, rows, _log = _step(tmp_path, 'BUDGET=8; STEP_END=$((SECONDS + 8)); step_judge; echo "FAILED=$FAILED"', rc=3)
    assert rows[-1][:2] == ["judge", "exit 3"] and "FAILED=1" in proc.stdout


def test_bench_splits_its_budget_across_the_gpus_and_counts_exit_1_as_a_result(tmp_path):
    proc, rows, log = _step(tmp_path, 'BUDGET=60; STEP_END=$((SECONDS + 60)); step_bench; echo "FAILED=$FAILED"', rc=1,
                            extra_env={"PYTHON_REAL": sys.executable})
    assert "FAILED=0" in proc.stdout, proc.stdout + proc.stderr
    (call,) = [line for line in log.splitlines() if " envdoctor bench " in f" {line} "]
    # 8 GPUs in 60 s: 5 of them at 6 s each (20 s start-up and 2 s warm-up per GPU), never 8 x the whole suite
    assert "--budget 6.0" in call and call.endswith("CVD=0,1,2,3,4"), call
    assert rows[0][:2] == ["bench", "ok"] and rows[0][2].startswith("exit 1, 5 of 8 GPU(s) at --budget 6.0: 3/3 ran, "
                                                                  "bf16 on every GPU by CUDA events: True; 1 bench error")
    one_gpu = "#!/bin/sh\n[ \"$1\" = -L ] && echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\n"
    _proc, rows, log = _step(tmp_path, 'BUDGET=60; STEP_END=$((SECONDS + 60)); step_bench', smi=one_gpu)
    call = [line for line in log.splitlines() if " envdoctor bench " in f" {line} "][-1]
    assert call.endswith("CVD=unset") and "--budget 32.5" in call, call  # one GPU: the whole quick suite


def test_pytest_gpu_leaves_the_quick_suite_rerun_out_and_reports_its_summary_line(tmp_path):
    _proc, rows, log = _step(tmp_path, 'BUDGET=80; STEP_END=$((SECONDS + 80)); TORCH_PY=/x/python; step_pytest_gpu')
    (call,) = [line for line in log.splitlines() if line.startswith("-m pytest")]
    assert "-m gpu" in call and "--deselect tests/unit/bench/test_bench.py::test_gpu_bench_quick_suite_structure" in call
    assert rows[0] == ["pytest_gpu", "exit 0", "5 passed, 1 skipped, 1 deselected in 61.20s"]


def test_bench_peers_compares_the_peers_with_the_bench_steps_own_json(tmp_path):
    # gpu_bench_peers.py with --envdoctor-json: no envdoctor run; the peers (stand-ins for mamf-finder's loop and
    # the copies, printed by a stand-in torch interpreter) sit beside GPU 0's figures of the given report
    torch_py = tmp_path / "torchpy"
    torch_py.write_text("#!/bin/sh\ncase \"$*\" in\n"
                        "  *is_available*) echo True;;\n"
                        "  *l2.zero_*) echo '[{\"dtype\": \"bf16\", \"shape\": [8192, 8192, 8192], \"mean_tflops\": 800.0}]';;\n"
                        "  *pin_memory*) echo '{\"h2d_pinned\": 50.0, \"d2h_pinned\": 51.0, \"membw_device\": 2650.0}';;\n"
                        "  *) exit 7;;\nesac\n")
    torch_py.chmod(0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\n")
    (bindir / "nvidia-smi").chmod(0o755)
    out = tmp_path / "peers"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    proc = subprocess.run([sys.executable, str(REPO / "scripts/gpu_bench_peers.py"), "--python", str(torch_py),
                           "--out", str(out), "--budget", "40", "--envdoctor-json", str(_report(tmp_path))],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr
    table = (out / "peers.md").read_text()
    assert "| matmul_bf16 TFLOP/s 8192x8192x8192 | 780.0 | mamf-finder procedure" in table and "| 0.975 |" in table
    assert "| membw_device GB/s | 2600.0 | nvbandwidth-style copy" in table and "| 0.981 |" in table
    assert "envdoctor side:" in table and "envdoctor --thorough: not run" in table
