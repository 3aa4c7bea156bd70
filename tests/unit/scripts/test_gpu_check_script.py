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
               PYTHON=sys.executable, STEP_TIMEOUT="120")
    proc = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = (out / "table.psv").read_text().splitlines()
    steps = [line.split("|")[0] for line in table]
    assert steps[:3] == ["pytest_gpu", "envdoctor", "envdoctor_load_pcie"] and "nvml_call_time" in steps
    assert (out / "envdoctor.json").exists() and (out / "facts.json").exists() and (out / "machine.txt").exists()
    assert "step" in proc.stdout and "raw outputs in" in proc.stdout
