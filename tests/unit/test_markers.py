"""The test tiers: `gpu` tests run only where an NVIDIA GPU answers, and say why they skip elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import gpu_unavailable_reason
from tests.paths import TESTS


def test_no_control_node_is_a_reason_to_skip(tmp_path):
    reason = gpu_unavailable_reason(str(tmp_path))
    assert reason and "nvidiactl is absent" in reason


def test_a_control_node_without_nvml_is_a_reason_to_skip(tmp_path, monkeypatch):
    (tmp_path / "nvidiactl").write_text("")
    import pynvml

    def broken() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", broken)
    reason = gpu_unavailable_reason(str(tmp_path))
    assert reason and "NVML is unusable" in reason


@pytest.mark.gpu
def test_collect_sees_every_gpu_that_nvml_sees():
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "collect", "--no-torch"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    driver = json.loads(proc.stdout)["driver"]
    assert driver["status"] == "ok" and driver["version"]
    assert len(driver["gpus"]) == count


CONFTEST = TESTS / "conftest.py"


def test_the_hooks_in_a_session(pytester, monkeypatch):
    """The real conftest hooks in an inner session: a gpu test skips with the reason; a venv-building fixture
    used without `slow` refuses to collect (exit 4, usage error)."""
    if gpu_unavailable_reason() is None:  # pragma: no cover - a GPU machine runs gpu tests instead
        pytest.skip("an NVIDIA GPU is here: gpu tests are not skipped")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    gpu: g\n    slow: s\n")
    pytester.makepyfile(test_gpu="import pytest\n\n@pytest.mark.gpu\ndef test_g():\n    assert False\n")
    result = pytester.runpytest_inprocess("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs an NVIDIA GPU*"])

    monkeypatch.setenv("ENVDOCTOR_TEST_CPU_VENV", str(pytester.path / "no-such-venv"))
    pytester.makepyfile(test_gpu="def test_v(cpu_venv):\n    pass\n")
    assert pytester.runpytest_inprocess().ret == pytest.ExitCode.USAGE_ERROR
    pytester.makepyfile(test_gpu="import pytest\n\n@pytest.mark.slow\ndef test_v(cpu_venv):\n    pass\n")
    pytester.runpytest_inprocess().assert_outcomes(skipped=1)  # marked: runs (here: skips, no such venv)


def test_ci_runs_exactly_the_readme_test_command():
    repo = CONFTEST.parent.parent
    block = (repo / "README.md").read_text().split("## The two commands", 1)[1].split("```bash\n", 1)[1]
    install_and_run, test_command = [line.split("  #", 1)[0].strip() for line in block.split("```")[0].splitlines()]
    assert install_and_run.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && envdoctor")
    ci = [line for line in (repo / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == test_command


def test_a_fast_test_that_builds_a_venv_fails(pytester):
    """The fast tier builds no venv (README "Test tiers"): a test not marked slow that starts `python -m venv`
    (or ensurepip, pip install, venv.EnvBuilder) fails before the build starts; marked slow, the guard stands
    aside."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    gpu: g\n    slow: s\n")
    pytester.makepyfile(test_v="import subprocess, sys, venv\n\n"
                               "def test_cli(tmp_path):\n"
                               "    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(tmp_path / 'v')])\n\n"
                               "def test_api(tmp_path):\n"
                               "    venv.EnvBuilder(with_pip=False).create(str(tmp_path / 'v'))\n\n"
                               "def test_fix_line():\n"
                               "    subprocess.run(['bash', '-c', 'python3 -m ensurepip --upgrade && true'])\n\n"
                               "def test_other_commands():\n"
                               "    subprocess.run([sys.executable, '-c', 'print(\"pip install is a phrase\")'])\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=3, passed=1)
    result.stdout.fnmatch_lines(["*test_cli builds a venv*not marked slow*"])
    assert not (pytester.path / "v").exists()


@pytest.mark.parametrize("argv, builds", [
    (["/usr/bin/python3", "-m", "venv", "/tmp/v"], True),
    (f"{sys.executable} -m venv --upgrade /srv/venv", True),
    (["bash", "-n", "-c", "python3.12 -m venv --upgrade /srv/venv"], False),  # only parsed
    (["bash", "-c", "'/opt/no such venv/bin/python' -m pip install torch"], False),  # runs nothing
    (["pip3.11", "install", "torch"], True),
    (["/opt/v/bin/python", "-m", "pip", "install", "torch"], True),
    (["bash", "-c", f"{sys.executable} -m ensurepip --upgrade --default-pip && x"], True),
    (["uv", "pip", "install", "--python", "/p", "torch"], True),
    ([sys.executable, "-m", "envdoctor", "check"], False),
    ([sys.executable, "-c", "print('pip install is a phrase')"], False),
    (["/opt/venv/bin/python", "-c", "import torch"], False),
])
def test_what_counts_as_building_a_venv(argv, builds):
    from tests.conftest import builds_a_venv

    assert builds_a_venv(argv) is builds
