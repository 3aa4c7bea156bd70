"""mypy is clean on the packages pyproject.toml lists ([tool.mypy] files), and the list keeps the packages issue 40
named: the model, the judge, the services and the check base (it only grows)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.paths import REPO

# issue 40: "mypy in the suite on model/, judging/, services/ and checks/base.py with zero errors"
REQUIRED = {"envdoctor/model", "envdoctor/judging", "envdoctor/services", "envdoctor/checks/base.py"}


def _listed() -> list:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the 3.9/3.10 dependency (pyproject.toml)
        import tomli as tomllib
    with open(REPO / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["tool"]["mypy"]["files"])


def test_the_checked_list_keeps_the_packages_the_issue_named():
    listed = _listed()
    assert REQUIRED <= set(listed), sorted(REQUIRED - set(listed))
    assert all((REPO / p).exists() for p in listed), [p for p in listed if not (REPO / p).exists()]


def test_mypy_finds_no_error_in_the_checked_packages(request):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]' installs it)")
    # the cache lives in pytest's own cache folder (ignored by git), so a second run reads what did not change
    pytest_cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    cache = pytest_cache.mkdir("mypy") if pytest_cache is not None else None
    argv = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
    if cache is not None:
        argv += ["--cache-dir", str(cache)]
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "MYPY_CACHE_DIR")}
    done = subprocess.run(argv, cwd=str(REPO), capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout
