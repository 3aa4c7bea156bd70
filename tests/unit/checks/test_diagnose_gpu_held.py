"""checks/diagnose_gpu_held.py: a GPU the reporter says stays held after its program is gone (issue 42, round 10,
helper storage10): GPU_BUSY at low confidence from the words, skipped without them or where the paste has the GPUs'
memory readings (gpu.busy judges those). The corpus excerpts are in tests/unit/diagnose/test_round11_storage10.py."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _result(text: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == "diagnose.gpu-held")


def test_memory_left_after_the_program_ended_fails(compat) -> None:
    r = _result("torch 2.1.0\nWhen the program ends, the memory of GPU 1 is not released.\n", compat)
    (f,) = r.findings
    assert f.category == "GPU_BUSY" and f.code == "diagnose.gpu-held/reported-leftover" and f.severity == "warning"
    assert f.confidence == "low" and "not released" in f.summary
    assert {e.path for e in f.evidence} >= {"paste.gpu_held_said", "paste.settle"}


@pytest.mark.parametrize("text,why", [
    ("torch 2.1.0\nWhen the program ends, all GPU memory is released.\n", "does not say"),
    ("Even after the program ends the memory is not released:\n"
     "| NVIDIA-SMI 410.48                 Driver Version: 410.48                    |\n"
     "|   0  Tesla P100-SXM2...  Off  | 00000000:05:00.0 Off |                    0 |\n"
     "| N/A   36C    P0    41W / 300W |  12799MiB / 16280MiB |      0%      Default |\n"
     "+-------------------------------+----------------------+----------------------+\n\n"
     "+-----------------------------------------------------------------------------+\n"
     "| Processes:                                                       GPU Memory |\n"
     "|  GPU       PID   Type   Process name                             Usage      |\n"
     "|=============================================================================|\n"
     "|  No running processes found                                                 |\n"
     "+-----------------------------------------------------------------------------+\n", "gpu.busy judges"),
])
def test_skips_without_the_words_or_with_memory_readings(text, why, compat) -> None:
    r = _result(text, compat)
    assert r.status == "skipped" and why in (r.reason or ""), r


def test_a_table_cut_before_its_processes_leaves_it_to_the_words(compat) -> None:
    """A pasted table without its Processes box shows memory but no process list: gpu.busy cannot say whose the
    memory is, so the reporter's words are judged (and the table gives no second, high-confidence finding)."""
    text = ("Even after the program ends the memory is not released:\n"
            "| NVIDIA-SMI 410.48                 Driver Version: 410.48                    |\n"
            "|   0  Tesla P100-SXM2...  Off  | 00000000:05:00.0 Off |                    0 |\n"
            "| N/A   36C    P0    41W / 300W |  12799MiB / 16280MiB |      0%      Default |\n"
            "+-------------------------------+----------------------+----------------------+\n")
    (f,) = _result(text, compat).findings
    assert f.code == "diagnose.gpu-held/reported-leftover" and f.confidence == "low"
    report = diagnose_report([text], compat)
    assert not [x for c in report.checks if c.id == "gpu.busy" for x in c.findings if x.severity != "info"]
