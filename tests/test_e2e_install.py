"""End to end: `pip install .` into a fresh venv, then `envdoctor --format json` against a real torch interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _python_of, _run

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def installed_envdoctor(tmp_path_factory) -> Path:
    """envdoctor installed from this checkout (a real wheel build, compat_data included) into its own venv."""
    root = tmp_path_factory.mktemp("venvs") / "envdoctor"
    err = _run([sys.executable, "-m", "venv", str(root)])
    if err:
        pytest.skip(f"cannot create a venv: {err}")
    python = _python_of(str(root))
    err = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", str(REPO)])
    if err:
        pytest.skip(f"cannot pip install envdoctor into a fresh venv (no package index?): {err}")
    exe = Path(python).parent / "envdoctor"
    assert exe.is_file(), "the console script was not installed"
    return exe


def test_installed_envdoctor_judges_a_real_torch_interpreter(installed_envdoctor, cpu_venv):
    proc = subprocess.run([str(installed_envdoctor), "--format", "json", "--python", cpu_venv.python],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr  # the documented codes for "judged"
    report = json.loads(proc.stdout)
    assert report["schema_version"] == 1 and report["compat_as_of"]
    py = report["facts"]["pythons"][0]
    assert py["status"] == "ok"
    assert py["torch"]["version"] == "2.13.0+cpu" and py["torch"]["cuda"] is None
    categories = {f["category"] for f in report["findings"]}
    if report["facts"]["driver"]["status"] == "absent":
        assert {"NO_NVIDIA_DRIVER", "HEALTHY"} & categories  # no driver, or no NVIDIA hardware at all
    if cpu_venv.torchvision_error is None:
        # torchvision 0.28.0 from PyPI is a CUDA 13.0 build next to a +cpu torch
        mixed = [f for f in report["findings"] if f["category"] == "CUDA_VARIANT_MIXED"]
        assert mixed, categories
        assert "2.13.0+cpu" in mixed[0]["summary"] and "torchvision 0.28.0" in mixed[0]["summary"]
        assert any("torch==2.13.0 torchvision==0.28.0" in c for c in mixed[0]["fix"]["commands"])
    assert proc.returncode == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)


def test_installed_envdoctor_bad_snapshot_exit_2(installed_envdoctor, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "one"}')
    proc = subprocess.run([str(installed_envdoctor), "check", "--facts", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
