"""Shared fixtures: real virtual environments with torch for the integration tests, built once per session."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

PIP_TIMEOUT_S = 600

# No test may see (or write) a user's ~/.cache/envdoctor: an update installed there would change every
# verdict judged from the bundled matrix. Set before any test imports envdoctor; subprocesses inherit it.
os.environ["ENVDOCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="envdoctor-test-cache-")


@dataclass(frozen=True)
class Venv:
    python: str  # the interpreter to diagnose
    torchvision_error: Optional[str] = None  # why `pip install torchvision` failed (None: installed or not asked)


def _python_of(path: str) -> str:
    """ENVDOCTOR_TEST_*_VENV may name the venv directory or its python."""
    p = Path(path)
    if p.is_dir():
        p = p / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    return str(p)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("WARNING: Location")]
    return lines[-1] if lines else "(no output)"


def _run(argv: List[str]) -> Optional[str]:
    """Run a build step; None on success, else pip's (or venv's) last line."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{' '.join(argv[:4])}: {e}"
    if proc.returncode != 0:
        return _last_line(proc.stderr or proc.stdout)
    return None


@pytest.fixture(scope="session")
def cpu_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """torch 2.13.0 (the +cpu wheel here) plus torchvision 0.28.0 from PyPI, a CUDA 13.0 build,
    installed --no-deps: the classic "mixed variants" environment."""
    given = os.environ.get("ENVDOCTOR_TEST_CPU_VENV")
    if given:
        python = _python_of(given)
        if not Path(python).is_file():
            pytest.skip(f"ENVDOCTOR_TEST_CPU_VENV={given}: no interpreter at {python}")
        return Venv(python)
    root = tmp_path_factory.mktemp("venvs") / "cpu"
    err = _run([sys.executable, "-m", "venv", str(root)])
    if err:
        pytest.skip(f"cannot create a venv: {err}")
    python = _python_of(str(root))
    err = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "torch==2.13.0"])
    if err:
        pytest.skip(f"cannot install torch==2.13.0 into a test venv: {err}")
    tv_err = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
                   "torchvision==0.28.0"])
    return Venv(python, torchvision_error=tv_err)


@pytest.fixture(scope="session")
def cuda_venv() -> Venv:
    """A venv with a CUDA build of torch; only where ENVDOCTOR_TEST_CUDA_VENV names one (multi-GB wheels)."""
    given = os.environ.get("ENVDOCTOR_TEST_CUDA_VENV")
    if not given:
        pytest.skip("set ENVDOCTOR_TEST_CUDA_VENV to a venv with a CUDA build of torch to run this test")
    python = _python_of(given)
    if not Path(python).is_file():
        pytest.skip(f"ENVDOCTOR_TEST_CUDA_VENV={given}: no interpreter at {python}")
    return Venv(python)
