"""A job step that asked the scheduler for no GPU (issue 29, kinds C): readers/scheduler.py and
checks/diagnose_scheduler.py on invented launches of the same kind, healthy ones with the same words, and the
real corpus row."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES


@pytest.fixture(scope="module")
def compat():
    return load_compat()

_CHECK = 'python -c "import torch; print(torch.cuda.is_available())"'


def _serious(text: str, compat) -> dict:
    return {f.category: f for f in diagnose_report([text], compat).findings if f.severity in ("warning", "error")}


def test_step_without_request_false_inside_true_outside(compat) -> None:
    text = f"user@login1:~$ {_CHECK}\nTrue\nuser@login1:~$ srun -p gpu -N1 {_CHECK}\nFalse\n"
    f = _serious(text, compat)["NO_GPU_VISIBLE"]
    assert f.code == "diagnose.job-gpus/not-requested" and f.severity == "error" and f.confidence == "high"
    assert {e.path: e.value for e in f.evidence}["paste.job.outside_cuda_available"] is True
    assert "--gpus=<N>" in " ".join(f.fix.commands)


def test_step_without_request_false_only_is_a_warning(compat) -> None:
    text = f"$ salloc -p batch -t 1:00:00\n$ srun {_CHECK}\n# False\n"
    f = _serious(text, compat)["NO_GPU_VISIBLE"]
    assert f.severity == "warning" and f.confidence == "medium"


def test_nvidia_smi_failing_under_a_step_without_gpus_is_no_gpu_visible(compat) -> None:
    text = ("$ srun --partition=a100 --time=10 nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate "
            "with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n")
    got = _serious(text, compat)
    assert "NO_GPU_VISIBLE" in got and "NO_NVIDIA_DRIVER" not in got


def test_requested_gpus_are_not_flagged(compat) -> None:
    for request in ("--gres=gpu:2", "--gpus=1", "-G 1", "--gpus-per-node=4", "--gres=craynetwork:1,gpu:1"):
        text = f"$ srun {request} {_CHECK}\nFalse\n"
        assert "NO_GPU_VISIBLE" not in {c for c, f in _serious(text, compat).items()
                                        if f.code.startswith("diagnose.job-gpus")}, request


def test_a_batch_script_directive_is_a_request(compat) -> None:
    text = f"#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --gres=gpu:a100:1\nsrun {_CHECK}\nFalse\n"
    facts, _ = read_paste([text], compat)
    assert facts.paste.provenance["paste.job.gpus_requested"]["value"] is True
    assert not [f for f in diagnose_report([text], compat).findings if f.code.startswith("diagnose.job-gpus")]


def test_a_step_that_sees_its_gpu_is_healthy(compat) -> None:
    text = f"$ srun --gres=gpu:1 {_CHECK}\nTrue\n$ srun hostname\nnode017\n"
    assert not _serious(text, compat)


def test_a_step_without_request_that_sees_a_gpu_is_not_flagged(compat) -> None:
    # some clusters give every step of a GPU partition its GPUs: what the step printed decides
    text = f"$ srun -p gpu {_CHECK}\nTrue\n"
    assert "NO_GPU_VISIBLE" not in _serious(text, compat)


def test_prose_about_srun_is_no_launch(compat) -> None:
    facts, _ = read_paste(["I use srun to start jobs and torch.cuda.is_available() is False.\n"
                              "RuntimeError: No CUDA GPUs are available"], compat)
    assert "paste.job.scheduler" not in (facts.paste.provenance or {})


def test_corpus_row(compat) -> None:
    text = (FIXTURES / "corpus" / "slurm" / "slurm-002.txt").read_text(encoding="utf-8")
    assert "NO_GPU_VISIBLE" in _serious(text, compat)


def test_a_paste_without_a_scheduler_launch_is_not_judged_here(compat) -> None:
    res = next(c for c in diagnose_report([f"$ {_CHECK}\nFalse\n"], compat).checks if c.id == "diagnose.job-gpus")
    assert res.status == "skipped" and res.findings == []
