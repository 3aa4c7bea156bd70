"""checks/diagnose_p2p.py: GPU-to-GPU traffic the reporter says goes wrong (issue 42, round 12, helper fix12):
INTERCONNECT warning from the words, skipped without them or where a collective hang comes with the GPU topology
(diagnose.p2p-hang judges that). The corpus excerpts are in tests/unit/diagnose/test_round13_fix12.py."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _result(text: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == "diagnose.p2p-said")


def test_a_corrupted_copy_between_gpus_fails(compat) -> None:
    r = _result("torch 1.11.0\nCopying a tensor from one GPU to another returns zeros; through the CPU it is right.\n",
                compat)
    (f,) = r.findings
    assert (f.category, f.code, f.severity, f.confidence) == (
        "INTERCONNECT", "diagnose.p2p-said/p2p-suspected", "warning", "medium")
    assert "IOMMU" in f.summary and {e.path for e in f.evidence} >= {"paste.p2p_said", "paste.settle"}


def test_several_gpus_slower_than_one_is_a_low_confidence_lead(compat) -> None:
    (f,) = _result("torch 1.11.0\nTraining on 4 GPUs is slower than on a single GPU.\n", compat).findings
    assert (f.severity, f.confidence) == ("warning", "low")


TOPO_HANG = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
             "GPU0\t X \tPIX\t0-31\t0\n"
             "GPU1\tPIX\t X \t0-31\t0\n"
             "NCCL all_reduce hangs between GPU0 and GPU1; with NCCL_P2P_DISABLE=1 it works.\n")


@pytest.mark.parametrize("text,why", [
    ("torch 2.1.0\nTraining on 4 GPUs is 3x faster than on one.\n", "does not say"),
    (TOPO_HANG, "diagnose.p2p-hang judges"),
])
def test_skips_without_the_words_or_with_a_hang_and_its_topology(text, why, compat) -> None:
    r = _result(text, compat)
    assert r.status == "skipped" and why in (r.reason or ""), r
