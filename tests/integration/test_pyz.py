"""Integration: envdoctor.pyz built from a clean copy of the tree runs with `python3 -I` in a bare venv.

The box as it comes: a venv made --without-pip (site-packages empty), the interpreter isolated (-I: no user site,
no PYTHON* variables), HOME, TMPDIR and the working directory fresh; check, diagnose of a pasted report,
node-health and recommend --format json answer, and nothing is left behind anywhere (the payload's temporary copy
is removed at exit).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from tests.paths import FIXTURES, REPO, SHARED

pytestmark = pytest.mark.slow  # builds a zip and a venv


def _tree(root: Path) -> Dict[str, int]:
    return {str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    work = tmp_path_factory.mktemp("pyz")
    src = work / "src"
    for part in ("envdoctor", "compat_data", "scripts"):  # a clean copy: no byte code, no egg-info, no build/
        shutil.copytree(REPO / part, src / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pyz = work / "envdoctor.pyz"
    built = subprocess.run([sys.executable, str(src / "scripts" / "build_pyz.py"), "-o", str(pyz)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    venv = work / "bare"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True,
                          text=True, timeout=120)
    if made.returncode != 0:
        pytest.skip(f"cannot make a venv here: {made.stderr.strip()[-200:]}")
    python = venv / "bin" / "python3"
    site = subprocess.run([str(python), "-I", "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, timeout=60).stdout.strip()
    assert site and not [p for p in Path(site).iterdir()], f"site-packages not empty: {site}"
    home, tmp, cwd = work / "home", work / "tmp", work / "cwd"
    for d in (home, tmp, cwd):
        d.mkdir()
    return {"pyz": pyz, "python": python, "home": home, "tmp": tmp, "cwd": cwd, "venv": venv,
            "before": {d: _tree(d) for d in (home, tmp, cwd, venv, src)}, "src": src}


def _run(box, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    # PATH: the bare venv's python3 first, so the target `check` inspects is that bare interpreter too
    env = {"HOME": str(box["home"]), "TMPDIR": str(box["tmp"]), "LC_ALL": "C.UTF-8",
           "PATH": f"{box['python'].parent}:/usr/bin:/bin"}
    return subprocess.run([str(box["python"]), "-I", str(box["pyz"]), *args], cwd=str(box["cwd"]), env=env,
                          capture_output=True, text=True, timeout=timeout)


def _paste() -> Path:
    shared = sorted((SHARED / "examples").glob("reports*/*.txt")) if SHARED.is_dir() else []
    return shared[0] if shared else FIXTURES / "pastes" / "busy.txt"


def test_pyz_runs_on_a_bare_python_and_writes_nothing(box) -> None:
    outputs: List[str] = []
    r = _run(box, "check", "--format", "json", "--python-timeout", "120")
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    inspected = [p for p in report["facts"]["pythons"] if p.get("status") == "ok"]
    assert inspected, report["facts"]["pythons"]  # the payload ran in the target (copied out of the zip)
    outputs.append(r.stdout)

    r = _run(box, "diagnose", str(_paste()), "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["facts"]["origin"] == "paste"

    r = _run(box, "node-health")
    assert r.returncode in (0, 1), r.stderr
    assert r.stdout.startswith("envdoctor ")

    r = _run(box, "recommend", "--format", "json", "--gpu", "H100", "--driver", "535.104.05", "--python", "3.11")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)["recommendation"]
    assert rec["variant"].startswith("cu") and rec["torch"]

    r = _run(box, "watch", "--duration", "1")
    assert r.returncode == 2 and "psutil" in r.stderr  # said, not a traceback

    after = {d: _tree(d) for d in box["before"]}
    assert after == box["before"], "envdoctor.pyz wrote outside its temporary directory, or left it behind"
    assert not os.listdir(box["tmp"])
