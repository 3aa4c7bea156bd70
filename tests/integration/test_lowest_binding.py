"""The NVML tests again, against the lowest nvidia-ml-py the pin allows (pyproject.toml), so that `.ci/run`
(`pip install -e '.[test]' && pytest -q`) runs them on the newest binding (the venv's) and on the lowest one.

The lowest binding is installed with pip into a --target folder (it is one pure-Python file) and put first on
PYTHONPATH of a pytest subprocess that runs the NVML test modules over the stand-in library."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.domain.versions import release
from envdoctor.probes.nvml import MIN_BINDING

pytestmark = pytest.mark.slow  # pip install from the package index, then a pytest subprocess

ROOT = Path(__file__).resolve().parents[2]
NVML_TESTS = ["tests/unit/probes/test_nvml.py", "tests/unit/probes/test_nvml_layout.py",
              "tests/unit/probes/test_nvml_partitions.py", "tests/unit/probes/test_driver.py"]


def lowest_allowed() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    m = re.search(r'"nvidia-ml-py>=([0-9.]+)"', text)
    assert m, "pyproject.toml must pin nvidia-ml-py with a lower bound"
    return m.group(1)


def test_the_pin_and_the_probes_minimum_agree():
    assert release(lowest_allowed()) == MIN_BINDING


@pytest.fixture(scope="module")
def lowest_binding(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("nvidia-ml-py-lowest")
    version = lowest_allowed()
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
                           "--target", str(target), f"nvidia-ml-py=={version}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"pip could not install nvidia-ml-py=={version}:\n{proc.stdout}\n{proc.stderr}"
    assert (target / "pynvml.py").is_file()
    return target


def test_nvml_tests_pass_on_the_lowest_allowed_binding(lowest_binding):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lowest_binding), str(ROOT)]))
    probe = subprocess.run([sys.executable, "-c", "import importlib.metadata as m, pynvml; "
                            "print(m.version('nvidia-ml-py')); print(pynvml.__file__)"],
                           capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=60)
    version, path = probe.stdout.split()
    assert version == lowest_allowed() and Path(path).parent == lowest_binding, probe.stdout + probe.stderr
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NVML_TESTS],
                          capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=500)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, f"NVML tests on nvidia-ml-py {version}:\n{tail}"
    assert re.search(r"\b\d+ passed", proc.stdout) and " skipped" not in proc.stdout.splitlines()[-1], tail
