"""Integration: probe_python on real venvs with torch (skipped with a reason where none can be built)."""

from __future__ import annotations

import pytest

from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv
from envdoctor.probes.python_env import probe_python
from envdoctor.probes.runner import Runner
from tests.conftest import MIXED_VARIANT_CHECKS

pytestmark = pytest.mark.slow  # a venv with torch (built once per session, or ENVDOCTOR_TEST_*_VENV)


@pytest.fixture(scope="module")
def cpu_env(cpu_venv) -> PythonEnv:
    return probe_python(cpu_venv.python, Runner(), timeout_s=120.0)


def test_cpu_venv_torch_facts(cpu_env: PythonEnv) -> None:
    assert cpu_env.status == ProbeStatus.OK, cpu_env.reason
    assert cpu_env.is_venv is True
    t = cpu_env.torch
    assert t is not None and t.import_error is None
    assert t.version == "2.13.0+cpu"
    assert t.cuda is None
    assert t.cuda_available is False
    assert t.device_count == 0
    assert t.arch_list == []
    assert t.cuda_init_error and "not compiled with CUDA" in t.cuda_init_error
    assert t.import_seconds is not None and t.import_seconds > 0
    assert t.cxx11_abi in (True, False)
    torch_pkg = cpu_env.package("torch")
    assert torch_pkg is not None and torch_pkg.variant == "cpu"
    assert torch_pkg.installer == "pip"
    # a CPU build maps no CUDA library
    assert [lib for lib in cpu_env.loaded_libraries if lib.name in ("cudart", "cublas", "cudnn")] == []


def test_cpu_venv_mixed_torchvision_variant(cpu_venv, cpu_env: PythonEnv) -> None:
    if cpu_venv.torchvision_error:
        pytest.skip(f"no torchvision==0.28.0 in the cpu venv: {cpu_venv.torchvision_error}")
    tv = cpu_env.package("torchvision")
    assert tv is not None, "torchvision not listed"
    assert tv.version.startswith("0.28.0")
    assert tv.variant in ("cu130", "cuda13"), tv
    assert tv.variant_evidence and "libcudart" in tv.variant_evidence
    # never imported by the payload: no import error recorded for it
    assert "torchvision" not in cpu_env.import_errors


def test_cpu_venv_snapshot_round_trip(cpu_env: PythonEnv) -> None:
    facts = Facts(pythons=[cpu_env])
    assert Facts.from_json(facts.to_json()) == facts


def test_no_torch_mode_skips_import(cpu_venv) -> None:
    env = probe_python(cpu_venv.python, Runner(), timeout_s=60.0, inspect_torch=False)
    assert env.status == ProbeStatus.OK, env.reason
    assert env.loaded_libraries == []
    assert env.package("torch") is not None
    # not imported, but its files still say which build it is
    t = env.torch
    assert t is not None and t.imported is False and t.import_seconds is None
    assert t.version == env.package("torch").version and t.build_files is not None
    assert t.build_files.version == t.version and t.cuda is None
    assert "--no-torch" in (env.reason or "")


def test_cuda_venv_without_driver(cuda_venv) -> None:
    env = probe_python(cuda_venv.python, Runner(), timeout_s=120.0)
    assert env.status == ProbeStatus.OK, env.reason
    t = env.torch
    assert t is not None and t.import_error is None, t
    assert t.cuda == "13.0"
    assert t.arch_list and "sm_90" in t.arch_list
    if t.cuda_available:
        pytest.skip("this machine has a working NVIDIA driver: the no-driver assertions do not apply")
    assert t.cuda_init_error and "driver" in t.cuda_init_error.lower()
    assert t.cudnn_version is not None and t.cudnn_version >= 90000
    assert t.nccl_version
    names = {lib.name for lib in env.loaded_libraries}
    assert {"cudart", "cublas"} <= names
    cudart = next(lib for lib in env.loaded_libraries if lib.name == "cudart")
    assert cudart.origin in ("wheel", "torch", "conda", "system")
    assert cudart.version and cudart.version.startswith("13")
    assert env.package("torch").variant == "cu130"


def test_cpu_venv_default_console_is_short_and_fits_80_columns(cpu_venv, tmp_path) -> None:
    # issue 19's bar: at most 40 lines, none wider than 80 columns, no "skipped" checklist lines
    import os
    import subprocess
    import sys

    env = dict(os.environ, COLUMNS="80")
    # the session venv holds PyPI's torchvision 0.28.0 (a cu130 build) beside the +cpu torch where pip could
    # install it (tests/conftest.py): that CUDA_VARIANT_MIXED error is real and not what this bar is about, so
    # that one check is left out there; a CPU venv without torchvision is judged whole
    # That torchvision was installed --no-deps, so its numpy and pillow are missing (packages.requires-dist says
    # so, issue 38), and it does not import (the smoke tier's import step, a note under the cause): both follow
    # from how the fixture is made, and are left out with it.
    ignore = [a for c in (*MIXED_VARIANT_CHECKS, "packages.requires-dist", "smoke.steps") for a in ("--ignore", c)] \
        if cpu_venv.torchvision_error is None else []
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "--python", cpu_venv.python, *ignore],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # the fixture's mixed torchvision (above) also shows in the facts' "tried" row ("1 failed (import:torchvision)"),
    # which then wraps once more: one line the fixture adds
    limit = 40 + (1 if cpu_venv.torchvision_error is None else 0)
    assert len(lines) <= limit and max(len(line) for line in lines) <= 80, proc.stdout
    assert "skipped" not in proc.stdout and "did not apply here" in proc.stdout, proc.stdout
