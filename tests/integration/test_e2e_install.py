"""The artifact a user installs: the wheel built from this source tree, installed non-editable into a fresh venv.

Every subcommand that the installed `envdoctor --help` lists answers `--help`, and the known ones run for real
from that install (exit codes, JSON that parses); the wheel holds every file of the package and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List

import pytest

from envdoctor.cli import _command_names, build_parser
from tests.conftest import REPO, InstalledWheel, export_source, source_files
from tests.paths import SHARED

pytestmark = pytest.mark.slow  # builds a wheel and a venv

PASTES = REPO / "tests" / "fixtures" / "pastes"
SHARED_REPORTS = SHARED / "examples" / "reports"  # ../shared beside the checkout, when present


def _run(wheel: InstalledWheel, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """The installed console script, from a directory outside the checkout, with no PYTHONPATH: nothing but
    the installed wheel can be imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(wheel.exe), *args], capture_output=True, text=True, timeout=timeout, cwd=str(cwd),
                          env=env, stdin=subprocess.DEVNULL)


def _listed_commands(help_text: str) -> List[str]:
    """The subcommands under COMMAND in `envdoctor --help` (argparse lists each indented by four spaces)."""
    section = help_text.split("positional arguments:", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^    (\S+)", section, re.M)]


def test_the_wheel_is_imported_from_the_venv_not_the_checkout(installed_wheel, tmp_path):
    proc = subprocess.run([installed_wheel.python, "-c", "import envdoctor, sys; print(envdoctor.__file__)"],
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip()).resolve()
    assert REPO not in path.parents and Path(installed_wheel.python).parent.parent in path.parents


def test_every_listed_subcommand_runs_from_the_installed_wheel(installed_wheel, tmp_path):
    top = _run(installed_wheel, "--help", cwd=tmp_path)
    assert top.returncode == 0, top.stderr
    commands = _listed_commands(top.stdout)
    assert {"check", "collect", "diagnose", "list-checks", "explain"} <= set(commands), commands
    assert set(commands) == set(_command_names(build_parser()))  # the help was read completely
    for cmd in commands:  # a command added later is covered without touching this test
        proc = _run(installed_wheel, cmd, "--help", cwd=tmp_path, timeout=60)
        assert proc.returncode == 0 and proc.stdout.startswith("usage: envdoctor " + cmd), (cmd, proc.stderr)

    # the known ones, for real
    check = _run(installed_wheel, "check", "--format", "json", "--python", sys.executable, "--no-torch", cwd=tmp_path)
    assert check.returncode in (0, 1), check.stderr
    assert json.loads(check.stdout)["facts"]["origin"] == "live"
    bare = _run(installed_wheel, "--no-torch", cwd=tmp_path)  # options alone: `check`, the README's first command
    assert bare.returncode in (0, 1) and "Traceback" not in bare.stderr, bare.stderr

    snap = tmp_path / "s.json"
    collect = _run(installed_wheel, "collect", "-o", str(snap), cwd=tmp_path)
    assert collect.returncode == 0 and collect.stdout == "", collect.stderr
    assert json.loads(snap.read_text())["schema_version"] == 1
    judged = _run(installed_wheel, "check", "--facts", str(snap), "--format", "json", cwd=tmp_path)
    assert judged.returncode in (0, 1), judged.stderr
    assert json.loads(judged.stdout)["facts"]["origin"] == "snapshot"

    diag = _run(installed_wheel, "diagnose", str(PASTES / "gpu-arch.txt"), "--format", "json", cwd=tmp_path)
    assert diag.returncode in (0, 1), diag.stderr  # 3 was the missing-subpackage bug
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in {f["category"] for f in json.loads(diag.stdout)["findings"]}

    listed = _run(installed_wheel, "list-checks", cwd=tmp_path)
    assert listed.returncode == 0 and "driver.present" in listed.stdout, listed.stderr
    explained = _run(installed_wheel, "explain", "NO_NVIDIA_DRIVER", cwd=tmp_path)
    assert explained.returncode == 0 and explained.stdout.startswith("NO_NVIDIA_DRIVER"), explained.stderr

    unknown = _run(installed_wheel, "nosuch", cwd=tmp_path, timeout=60)
    assert unknown.returncode == 2 and len(unknown.stderr.splitlines()) == 1, unknown.stderr


def test_a_shared_report_is_diagnosed_from_the_installed_wheel(installed_wheel, tmp_path):
    if not SHARED_REPORTS.is_dir():
        pytest.skip(f"no real pastes at {SHARED_REPORTS} (../shared beside the checkout)")
    labels = {row["id"]: row["labels"] for row in json.loads((SHARED_REPORTS / "labels.json").read_text())}
    paste = SHARED_REPORTS / "001.txt"
    proc = _run(installed_wheel, "diagnose", str(paste), "--format", "json", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert set(labels["001"]) <= {f["category"] for f in json.loads(proc.stdout)["findings"]}


def test_installed_envdoctor_judges_a_real_torch_interpreter(installed_wheel, cpu_venv, tmp_path):
    proc = _run(installed_wheel, "--format", "json", "--python", cpu_venv.python, cwd=tmp_path)
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


def test_installed_envdoctor_bad_snapshot_exit_2(installed_wheel, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "one"}')
    proc = _run(installed_wheel, "check", "--facts", str(bad), cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def _wheel_names(wheel: Path) -> List[str]:
    with zipfile.ZipFile(wheel) as zf:
        return sorted(zf.namelist())


def _expected_payload(files: List[str]) -> List[str]:
    """Where each package file of the source tree lands in the wheel."""
    out = [f for f in files if f.startswith("envdoctor/")]
    out += ["envdoctor/compat_data/" + f[len("compat_data/"):] for f in files if f.startswith("compat_data/")]
    return sorted(out)


def test_the_wheel_holds_every_package_file_and_nothing_else(built_wheel):
    names = _wheel_names(built_wheel)
    payload = sorted(n for n in names if ".dist-info/" not in n)
    expected = _expected_payload(source_files())
    assert any(n.startswith("envdoctor/diagnose/readers/") for n in expected)  # the subpackage once left out
    assert "envdoctor/compat_data/torch.json" in expected and "envdoctor/py.typed" in expected
    assert payload == expected  # nothing missing, and no tests/, scripts/, docs/ or a stray top-level package
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(built_wheel) as zf:
        metadata = zf.read(meta).decode()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    version = re.search(r'^__version__ = "([^"]+)"', (REPO / "envdoctor" / "__init__.py").read_text(), re.M)
    assert version and f"\nVersion: {version.group(1)}\n" in metadata  # one source for the version
    assert "\nLicense-Expression: Apache-2.0\n" in metadata


def test_stale_build_output_in_a_checkout_never_ships(built_wheel, tmp_path):
    """What an earlier `pip install .` leaves in the checkout (build/, *.egg-info/) must not reach the next
    wheel: a module in build/lib, a file listed in a stale SOURCES.txt, a second build in the same tree."""
    src = export_source(tmp_path / "src")
    (src / "build" / "lib" / "envdoctor").mkdir(parents=True)
    (src / "build" / "lib" / "envdoctor" / "junk_stale.py").write_text("JUNK = 1\n")
    (src / "envdoctor" / "junk_data.json").write_text("{}\n")  # untracked, matched by no package-data pattern
    (src / "envdoctor.egg-info").mkdir()
    (src / "envdoctor.egg-info" / "SOURCES.txt").write_text("envdoctor/junk_data.json\nenvdoctor/junk_stale.py\n")
    clean = _wheel_names(built_wheel)
    for attempt in (1, 2):  # the second build finds the first one's build/ and egg-info
        dist = tmp_path / f"dist{attempt}"
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps",
                               "-w", str(dist), str(src)], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        (wheel,) = dist.glob("envdoctor-*.whl")
        assert _wheel_names(wheel) == clean, attempt


def test_the_readme_first_run_in_envdoctors_own_venv_is_a_short_useful_answer(installed_wheel, tmp_path):
    # `pip install . && envdoctor` with that venv active and no torch anywhere: envdoctor says it judged its
    # own environment and how to point it elsewhere, as a warning (exit 0), never "install torch there"
    home = tmp_path / "home"
    home.mkdir()
    venv = str(Path(installed_wheel.python).parent.parent)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CONDA_PREFIX", "COLUMNS")}
    env.update(VIRTUAL_ENV=venv, HOME=str(home), PATH=str(Path(installed_wheel.python).parent) + os.pathsep
               + "/usr/bin:/bin", COLUMNS="80")
    proc = subprocess.run([str(installed_wheel.exe)], capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
                          env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "envdoctor's own environment" in out and "envdoctor --python" in out, out
    assert "pip install torch" not in out and "✗" not in out, out
    lines = out.splitlines()
    assert len(lines) <= 50 and max(len(line) for line in lines) <= 80, out  # (was 197 lines, 15 wider)
