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
