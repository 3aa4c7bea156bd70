"""scripts/gpu_check.sh: dry mode without a GPU (exit 0, nothing run), and the full run's structure with a stand-in nvidia-smi."""

from __future__ import annotations

import os
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
    import re

    steps = [(m.group(1), int(m.group(2))) for m in re.finditer(r"^(\w+) +(\d+)s  ", proc.stdout, re.M)]
    total = re.search(r"^total budget: (\d+)s", proc.stdout, re.M)
    return steps, int(total.group(1)) if total else None


def test_dry_run_lists_each_step_with_its_budget_under_6_minutes(tmp_path):
    env = dict(os.environ, PATH=f"{tmp_path}:/usr/bin:/bin")
    proc = subprocess.run([BASH, str(SCRIPT), "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps, total = _plan(proc)
    names = [n for n, _ in steps]
    for needed in ("collect", "judge", "payload_pid", "nvml_facts", "smi_timings", "pcie_under_load", "pytest_gpu",
                   "bench_peers"):
        assert needed in names, names
    assert total == sum(b for _, b in steps) and total <= 360, proc.stdout
    assert names.count("collect") == 1  # collected once, judged from that snapshot
    # envdoctor's own bench has a step of its own, with the largest share of the budget
    assert dict(steps)["bench"] == max(b for _, b in steps) >= 90
    assert names[0] == "setup"  # the interpreters are found (or installed) before any step uses them


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
