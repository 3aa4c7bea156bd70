"""pcie.link (envdoctor/checks/pcie.py): GPU PCIe links at full width and speed. Full width and generation pass, a
narrower link is a warning with its numbers, a low generation at idle is only a note (links slow down to save
power), and no link readings at all are skipped. Real captures: tests/unit/checks/test_health.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, Topology
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _a100(**pcie) -> Facts:
    base = dict(pcie_gen_current=4, pcie_gen_max=4, pcie_width_current=16, pcie_width_max=16)
    base.update(pcie)
    g = replace(m.gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"), **base)
    return m.facts(m.driver("550.54.15", "12.4", [g]), [])


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "pcie.link"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_a_full_link_passes(compat):
    res = _run(_a100(), compat)
    assert res.status == CheckStatus.PASSED and res.findings == []


def test_a_narrower_link_is_a_warning_with_the_widths(compat):
    res = _run(_a100(pcie_width_current=8), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("pcie.link/width", "PCIE_LINK_DEGRADED", Severity.WARNING)
    assert f.summary == "GPU PCIe link narrower than it should be: GPU 0 (NVIDIA A100-SXM4-80GB): x8 of x16"
    (ev,) = f.evidence
    assert (ev.path, ev.value, ev.expected) == ("driver.gpus[0].pcie_width_current", 8, "x16 (pcie_width_max)")
    assert "x16 slot" in f.fix.summary and f.fix.commands[0].startswith("nvidia-smi --query-gpu=")


def test_a_low_generation_at_idle_is_only_a_note(compat):
    from envdoctor.services.collect import judge

    (res,) = judge(_a100(pcie_gen_current=1), compat, only=["pcie.link"]).checks  # settled: noted, not passed
    (f,) = res.findings
    assert (res.status, f.code, f.severity) == (CheckStatus.NOTED, "pcie.link/gen-idle", Severity.INFO)
    assert "Gen1 of Gen4; idle, not verified" in f.summary


def test_no_link_reading_is_skipped(compat):
    f = _a100(pcie_gen_current=None, pcie_gen_max=None, pcie_width_current=None, pcie_width_max=None)
    res = _run(replace(f, topology=Topology()), compat)
    assert res.status == CheckStatus.SKIPPED and res.reason.startswith("PCIe link state unknown")
    assert res.not_applicable is None  # a GPU is here: its link is unknown, not absent
