"""smoke.steps on a DataLoader step whose worker failed: torch re-raises the worker's exception in the parent as
"Caught X in DataLoader worker process N." with the worker's traceback inside the message; the finding quotes the
worker's own error and matches the catalogue on it (here: /dev/shm full, torch 2.13's wording)."""

from __future__ import annotations

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv, Smoke, SmokeStep, TorchInfo
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
WORKER_TB = [
    '  File "/srv/venv/lib/python3.11/site-packages/torch/storage.py", line 414, in _new_shared',
    "    return cls._new_using_fd_cpu(size)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "RuntimeError: unable to allocate shared memory(shm) for file </torch_7816_1426635364_2>: No space left on "
    "device (28)",
]


def facts(step: SmokeStep) -> Facts:
    ok = [SmokeStep("resolve", "ok", 0.01), SmokeStep("compile", "ok", 0.4), SmokeStep("checkpoint", "ok", 0.02)]
    return Facts(pythons=[PythonEnv(
        status=ProbeStatus.OK, executable=PY, python_version="3.11.7",
        torch=TorchInfo(version="2.13.0+cpu", arch_list=[], imported=True),
        smoke=Smoke(tier="quick", steps=ok + [step], open_files_limit=[65536, 65536], duration_s=1.0))])


def test_a_worker_that_found_dev_shm_full_is_named_by_its_own_error() -> None:
    step = SmokeStep("dataloader", "failed", 0.4, error_type="RuntimeError",
                     error="Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent "
                           "call last):\n" + "\n".join(WORKER_TB), traceback=WORKER_TB)
    (f,) = [f for f in judge(facts(step), load_compat()).findings if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/signature-torch-shm-write-failed", "SHM_TOO_SMALL",
                                                "error")
    assert f.summary.startswith("dataloader failed when tried in /srv/venv/bin/python: RuntimeError: unable to "
                                "allocate shared memory(shm) for file </torch_7816_1426635364_2>: No space left")
    assert f.summary.endswith("(in DataLoader worker: Caught RuntimeError in DataLoader worker process 0.)")


def test_a_worker_error_that_is_no_exception_line_keeps_the_wrapper() -> None:
    # the last traceback line is a frame, not an exception: nothing better to quote than the wrapper
    step = SmokeStep("dataloader", "failed", 0.4, error_type="RuntimeError",
                     error="Caught RuntimeError in DataLoader worker process 1.", traceback=WORKER_TB[:2])
    (f,) = [f for f in judge(facts(step), load_compat()).findings if f.code.startswith("smoke.")]
    assert f.code == "smoke.steps/dataloader-failed"
    assert "RuntimeError: Caught RuntimeError in DataLoader worker process 1." in f.summary
