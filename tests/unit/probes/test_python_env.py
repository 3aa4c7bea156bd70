"""Tests of envdoctor.probes.python_env through FakeRunner: JSON to PythonEnv, and every way the payload can fail."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from envdoctor.model.facts import Facts, ProbeStatus
from envdoctor.probes import python_env as pe
from envdoctor.probes.runner import RunResult
from tests.fakes.runner import FakeRunner

PY = "/envs/ml/bin/python"
ARGV = tuple(pe.payload_argv(PY, "inspect", [], 60.0))


def result_json(**torch_overrides: Any) -> Dict[str, Any]:
    torch: Dict[str, Any] = {
        "version": "2.5.1+cu124", "cuda": "12.4", "hip": None, "git_version": "a8d6afb", "debug": False,
        "cudnn_version": 90100, "nccl_version": "2.21.5", "arch_list": ["sm_80", "sm_90"],
        "cuda_available": False, "device_count": 0, "devices": [], "cxx11_abi": False,
        "cuda_init_error": "Found no NVIDIA driver on your system.", "import_seconds": 2.5,
        "warnings": ["Failed to initialize NumPy: _ARRAY_API not found"],
    }
    torch.update(torch_overrides)
    return {
        "python_version": "3.11.7", "implementation": "CPython", "executable": PY, "platform": "linux-x86_64",
        "prefix": "/envs/ml", "base_prefix": "/usr", "is_venv": True, "is_conda": False, "conda_prefix": None,
        "sys_path": [], "env": {"CUDA_VISIBLE_DEVICES": None, "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
        "errors": ["torch.cuda.nccl.version(): RuntimeError: boom"], "torch_inspected": True,
        "packages": [
            {"name": "numpy", "version": "2.1.0", "location": "/envs/ml/lib/site-packages", "requires": None,
             "installer": "pip", "variant": None, "variant_evidence": None},
            {"name": "torch", "version": "2.5.1+cu124", "location": "/envs/ml/lib/site-packages",
             "requires": ["filelock"], "installer": "pip", "variant": "cu124",
             "variant_evidence": "version local tag: 2.5.1+cu124"},
            {"name": "torchvision", "version": "0.20.1", "location": "/envs/ml/lib/site-packages",
             "requires": ["torch (==2.5.1)"], "installer": "pip", "variant": "cpu",
             "variant_evidence": "compiled files link libtorch/libc10 but no CUDA or ROCm library"},
            {"name": "requests", "version": "2.32.3"},
        ],
        "torch": torch,
        "loaded_libraries": [
            {"name": "cudart", "path": "/envs/ml/lib/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
             "version": "12.4.127", "origin": "wheel"},
        ],
    }


def envelope(result: Any, ok: bool = True, **extra: Any) -> str:
    env = {"envdoctor_payload": pe.PAYLOAD_VERSION, "task": "inspect", "ok": ok, "error": None, "stage": None,
           "timed_out": False, "result": result, "duration_s": 3.0}
    env.update(extra)
    return "\n" + json.dumps(env) + "\n"


def probe(answer: Any, **kw: Any):
    runner = FakeRunner({ARGV: answer})
    return pe.probe_python(PY, runner, **kw)


def test_argv_shape() -> None:
    assert ARGV[0] == PY and Path(ARGV[1]).name == "_payload" and (Path(ARGV[1]) / "__main__.py").is_file()
    assert ARGV[2:] == ("--task", "inspect", "--deadline-s", "55", "--cuda-gate")
    assert pe.payload_deadline_s(10) == 8.0


def test_ok_result_becomes_python_env() -> None:
    env = probe(envelope(result_json()), requested_as="--python")
    assert env.status == ProbeStatus.OK
    assert env.reason == "torch 2.5.1+cu124 imported in 2.5 s; CUDA not available"
    assert env.requested_as == "--python"
    assert env.executable == PY and env.python_version == "3.11.7" and env.is_venv is True
    assert env.env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64"
    t = env.torch
    assert t is not None and t.cuda == "12.4" and t.cudnn_version == 90100 and t.arch_list == ["sm_80", "sm_90"]
    assert t.cuda_init_error == "Found no NVIDIA driver on your system."
    assert t.warnings == ["Failed to initialize NumPy: _ARRAY_API not found"]
    assert env.package("torchvision").variant == "cpu"
    assert env.package("requests").location is None
    assert env.loaded_libraries[0].name == "cudart" and env.loaded_libraries[0].origin == "wheel"
    assert env.notes == ["torch.cuda.nccl.version(): RuntimeError: boom"]
    facts = Facts(pythons=[env])
    assert Facts.from_json(facts.to_json()) == facts


def test_no_torch_argv_and_reason() -> None:
    argv = tuple(pe.payload_argv(PY, "inspect", ["--no-torch"], 60.0))
    result = dict(result_json(), torch=None, loaded_libraries=[], torch_inspected=False)
    env = pe.probe_python(PY, FakeRunner({argv: envelope(result)}), inspect_torch=False)
    assert env.status == ProbeStatus.OK and env.torch is None
    assert env.reason == "torch not inspected (--no-torch)"


def test_torch_not_installed() -> None:
    env = probe(envelope(dict(result_json(), torch=None, loaded_libraries=[])))
    assert env.status == ProbeStatus.OK and env.torch is None
    assert env.reason == "torch is not installed in this interpreter"


def test_torch_import_error_is_ok_status_with_the_error_as_fact() -> None:
    torch = {"import_error": "ImportError: libcudnn.so.9: cannot open shared object file", "import_seconds": 0.4,
             "warnings": [], "devices": []}
    env = probe(envelope(dict(result_json(), torch=torch, loaded_libraries=[])))
    assert env.status == ProbeStatus.OK
    assert env.torch.import_error == "ImportError: libcudnn.so.9: cannot open shared object file"
    assert env.torch.version == "2.5.1+cu124"  # from the installed distribution, since __version__ never loaded
    assert env.reason == "import torch failed: ImportError: libcudnn.so.9: cannot open shared object file"


def test_missing_interpreter_is_absent() -> None:
    env = probe(FakeRunner.NOT_FOUND, requested_as="$VIRTUAL_ENV")
    assert env.status == ProbeStatus.ABSENT
    assert env.reason == f"Python interpreter {PY} not found"
    assert env.requested_as == "$VIRTUAL_ENV" and env.executable == PY


def test_our_timeout_is_failed_with_the_stage() -> None:
    env = probe(FakeRunner.TIMEOUT)
    assert env.status == ProbeStatus.FAILED
    # no checkpoint came back, so it never reached `import torch`
    assert env.reason == "timed out after 60 s while starting up or reading installed packages (before importing torch)"
    assert env.torch is None  # nothing came back: do not invent a torch
    argv = tuple(pe.payload_argv(PY, "inspect", ["--no-torch"], 20.0))
    env = pe.probe_python(PY, FakeRunner({argv: FakeRunner.TIMEOUT}), timeout_s=20.0, inspect_torch=False)
    assert env.reason == "timed out after 20 s while reading installed packages"


def test_payload_watchdog_timeout_keeps_partial_facts() -> None:
    partial = dict(result_json(), torch={"warnings": [], "devices": []})
    partial.pop("loaded_libraries")
    out = envelope(partial, ok=False, timed_out=True, stage="importing torch",
                   error="timed out after 55 s while importing torch")
    env = probe((3, out, ""))
    assert env.status == ProbeStatus.FAILED
    # the payload's watchdog fires at 55 s so that it can still answer; the limit given (60 s) is what is said
    assert env.reason == "timed out after 60 s while importing torch"
    assert env.python_version == "3.11.7" and env.package("torch") is not None
    assert env.torch.import_error == "timed out after 60 s while importing torch"


def test_payload_watchdog_timeout_in_cuda_init() -> None:
    partial = dict(result_json(cuda_init_error=None, cuda_available=None))
    out = envelope(partial, ok=False, timed_out=True, stage="initialising CUDA in torch",
                   error="timed out after 55 s while initialising CUDA in torch")
    env = probe((3, out, ""))
    assert env.status == ProbeStatus.FAILED
    assert env.torch.version == "2.5.1+cu124" and env.torch.import_error is None
    assert env.torch.cuda_init_error == "timed out after 60 s while initialising CUDA in torch"


def test_garbage_output_is_failed_with_last_stderr_line() -> None:
    env = probe((1, "this is not json\n", "Traceback (most recent call last):\n  ...\nMemoryError: out of memory\n"))
    assert env.status == ProbeStatus.FAILED
    assert env.reason == "the payload printed no JSON (exit 1): MemoryError: out of memory"


def test_segfault_without_output() -> None:
    env = probe((-11, "", ""))
    assert env.status == ProbeStatus.FAILED
    assert env.reason == (f"{PY} was killed by SIGSEGV (segmentation fault) while starting up or reading installed "
                          "packages (before importing torch)")


def test_python2_syntax_error_hint() -> None:
    env = probe((1, "", '  File "_payload.py", line 40\n    def f(x: int) -> None:\nSyntaxError: invalid syntax\n'))
    assert env.status == ProbeStatus.FAILED
    assert "SyntaxError: invalid syntax" in env.reason and "3.8+" in env.reason


def test_stray_stdout_before_json_is_tolerated() -> None:
    env = probe("hello from a .pth file\n{not json}\n" + envelope(result_json()))
    assert env.status == ProbeStatus.OK and env.torch.version == "2.5.1+cu124"


def test_crash_after_answering_still_counts() -> None:
    # torch's atexit handlers can crash after the payload printed its answer
    env = probe((-6, envelope(result_json()), "terminate called without an active exception\n"))
    assert env.status == ProbeStatus.OK


def test_payload_task_error_is_failed() -> None:
    env = probe((1, envelope({}, ok=False, error="KeyError: 'x'", stage="reading installed packages"), ""))
    assert env.status == ProbeStatus.FAILED and env.reason == "KeyError: 'x'"


def test_protocol_mismatch() -> None:
    out = json.dumps({"envdoctor_payload": 99, "ok": True, "result": {}})
    env = probe(out)
    assert env.status == ProbeStatus.FAILED and "protocol 99" in env.reason


def test_wrongly_typed_section_is_dropped_with_a_note() -> None:
    bad = result_json()
    bad["packages"].append({"name": "broken", "version": 3})
    env = probe(envelope(bad))
    assert env.status == ProbeStatus.OK
    assert env.package("broken") is None and env.package("torch") is not None
    assert any("python.packages[4].version" in n for n in env.notes)


def test_permission_denied() -> None:
    env = probe(RunResult(ARGV, None, error="permission denied: [Errno 13]"))
    assert env.status == ProbeStatus.FAILED
    assert env.reason == f"could not run {PY}: permission denied: [Errno 13]"


def test_runner_that_raises_is_contained() -> None:
    class Exploding:
        def run(self, *a: Any, **k: Any) -> RunResult:
            raise ValueError("bug")

    # contained by the one probe guard, per interpreter (probe_pythons), the interpreter still named
    env = pe.probe_pythons([(PY, "--python")], Exploding())[0]
    assert env.status == ProbeStatus.FAILED and "probe crashed: ValueError: bug" in env.reason
    assert env.executable == PY and env.requested_as == "--python"


def test_run_payload_generic_task() -> None:
    argv = tuple(pe.payload_argv(PY, "bench", ["--kernel", "matmul"], 30.0))
    runner = FakeRunner({argv: envelope({"value": 1.0}, task="bench")})
    assert pe.run_payload(PY, runner, "bench", ["--kernel", "matmul"], 30.0) == ({"value": 1.0}, None)
    runner = FakeRunner({argv: envelope({}, ok=False, error="unknown task 'bench' (known: inspect)")})
    result, error = pe.run_payload(PY, runner, "bench", ["--kernel", "matmul"], 30.0)
    assert result is None and error == "unknown task 'bench' (known: inspect)"


def test_run_payload_for_real_in_this_interpreter() -> None:
    from envdoctor.probes.runner import Runner

    result, error = pe.run_payload(sys.executable, Runner(), "inspect", ["--no-torch"], 60.0)
    assert error is None and result["python_version"]
    env = pe.probe_python(sys.executable, Runner(), inspect_torch=True)
    assert env.status == ProbeStatus.OK and env.package("pytest") is not None


# --------------------------------------------------------------------------- default_interpreter


def _make_python(prefix: Path) -> str:
    exe = prefix / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    return str(exe)


def test_default_interpreter_order(tmp_path: Path) -> None:
    venv_py = _make_python(tmp_path / "venv")
    conda_py = _make_python(tmp_path / "conda")
    runner = FakeRunner(which={"python3": "/usr/bin/python3"})
    env = {"VIRTUAL_ENV": str(tmp_path / "venv"), "CONDA_PREFIX": str(tmp_path / "conda")}
    assert pe.default_interpreter(env, runner) == (venv_py, "$VIRTUAL_ENV")
    assert pe.default_interpreter({"CONDA_PREFIX": str(tmp_path / "conda")}, runner) == (conda_py, "$CONDA_PREFIX")
    # a stale VIRTUAL_ENV (deleted venv) falls through
    assert pe.default_interpreter({"VIRTUAL_ENV": str(tmp_path / "gone")}, runner) == ("/usr/bin/python3",
                                                                                       "python3 on PATH")
    path, how = pe.default_interpreter({}, FakeRunner())
    assert path == sys.executable and how.startswith("envdoctor's own interpreter")


@pytest.mark.skipif(os.name == "nt", reason="POSIX PATH lookup")
def test_default_interpreter_without_runner_uses_path(tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "python3"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert pe.default_interpreter({"PATH": str(exe.parent)}) == (str(exe), "python3 on PATH")


def test_failed_import_keeps_the_installed_torch_version():
    from envdoctor.probes.python_env import env_from_result

    result = {"python_version": "3.11.7", "packages": [{"name": "torch", "version": "2.14.1"}],
              "torch": {"import_error": "ModuleNotFoundError: No module named 'typing_extensions'"}}
    env = env_from_result(result, [])
    assert env.torch.version == "2.14.1" and "typing_extensions" in env.torch.import_error


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="owners and modes are POSIX's; root owns all")
def test_default_interpreter_never_runs_a_python3_another_user_can_change(tmp_path: Path) -> None:
    # issue 40: PATH with a world-writable entry (".", run from /tmp; a shared bin): the python3 there could be
    # anyone's; envdoctor judges its own interpreter instead and says why
    exe = tmp_path / "bin" / "python3"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    exe.parent.chmod(0o777)
    try:
        path, how = pe.default_interpreter({"PATH": str(exe.parent)})
    finally:
        exe.parent.chmod(0o755)
    assert path == sys.executable
    assert how == (f"envdoctor's own interpreter (python3 on PATH, {exe}, was not run: {exe.parent} is writable by "
                   "every user)")
