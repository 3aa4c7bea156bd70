"""The README's example output is the current rendering of a real run's snapshot (scripts/readme_example.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_example_output_is_not_stale() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_example.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    block = (ROOT / "README.md").read_text(encoding="utf-8").split("readme-example: begin", 1)[1].split(
        "readme-example: end", 1)[0]
    assert "did not apply here" in block and "skipped" not in block
