"""The target interpreter failing: a crash in import torch names the signal; a torch without __version__."""

from __future__ import annotations

from envdoctor.model.facts import ProbeStatus
from tests.fakes.runner import FakeRunner


def test_interpreter_crashing_in_import_torch_names_the_signal():
    import json

    from envdoctor.probes.python_env import PAYLOAD_VERSION, payload_argv, probe_python
    from envdoctor.probes.runner import RunResult

    argv = tuple(payload_argv("/opt/py", "inspect", [], 60.0))
    # the payload writes a checkpoint just before `import torch`; the crash leaves it as the last word
    checkpoint = json.dumps({"envdoctor_payload": PAYLOAD_VERSION, "checkpoint": True, "stage": "importing torch",
                             "result": {"python_version": "3.11.7"}})
    penv = probe_python("/opt/py", FakeRunner({argv: RunResult(argv, -11, checkpoint + "\n", "")}), 60.0)
    assert penv.status == ProbeStatus.FAILED
    assert penv.reason == "killed by SIGSEGV (segmentation fault) while importing torch"
    assert penv.failure == "crashed" and penv.python_version == "3.11.7"


def test_torch_module_without_version_is_not_called_torch_none():
    from envdoctor.model.facts import PythonEnv, TorchInfo
    from envdoctor.probes.python_env import _ok_reason

    reason = _ok_reason(PythonEnv(torch=TorchInfo(import_seconds=0.01)), True)
    assert "None" not in reason and "no __version__" in reason
