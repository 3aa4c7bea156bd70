"""ruff (the test extra's linter, [tool.ruff] in pyproject.toml) finds nothing in envdoctor/, scripts/ and tests/:
unused imports, unsorted import blocks and the like had crept back in through parallel branches, unseen because no
test ran it. The test extra pins ruff to one minor series (pyproject.toml): a new release with new rules
in the selected families must not turn CI red on its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import REPO


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is not installed (pip install -e '.[test]' installs it)")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "envdoctor", "scripts", "tests"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
