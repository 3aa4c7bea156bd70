"""`python -m envdoctor` from a directory holding files named like standard-library modules (what
torch.cwd-shadow reports about the user's run) still runs: its own imports do not load them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_python_m_envdoctor_ignores_the_working_directory(tmp_path: Path) -> None:
    for name in ("typing", "numbers", "json", "signal", "decimal"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('the local copy was imported')\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "--version"], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("envdoctor ")
