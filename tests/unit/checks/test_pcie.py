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


def _on_slot(port_cap: int, gpu_sta: int = 8, port_sta=None) -> Facts:
    """An RTX 5090 (LnkCap x16) whose link runs x``gpu_sta``, under a root port of LnkCap x``port_cap`` (sysfs
    max_link_width / current_link_width of the device and of the port above it, as probes/pcie.py reads them)."""
    from envdoctor.model.facts import PcieLink, ProbeStatus

    g = replace(m.gpu(0, "NVIDIA GeForce RTX 5090", "12.0", 32), pcie_gen_current=5, pcie_gen_max=5,
                pcie_width_current=gpu_sta, pcie_width_max=16)
    links = [PcieLink("0000:18:00.0", "VGA compatible controller: NVIDIA Corporation Device [10de:2b85]",
                      cap_speed_gts=32.0, cap_width=16, sta_speed_gts=32.0, sta_width=gpu_sta,
                      upstream_bdf="0000:00:01.1"),
             PcieLink("0000:00:01.1", "PCI bridge: root port", cap_speed_gts=32.0, cap_width=port_cap,
                      sta_speed_gts=32.0, sta_width=port_sta or gpu_sta)]
    return m.facts(m.driver("570.124.06", "12.8", [g]), [],
                   topology=Topology(status=ProbeStatus.OK, pcie_links=links))


def test_an_x8_slot_is_what_the_platform_gives_and_below_it_is_a_fault(compat):
    # issue 39: a card at x8 in a slot whose port supports x8 (an x8 slot, a board's x8/x8 split) runs at what the
    # platform gives: a note with the port's LnkCap, not "move the GPU" (Linux max_link_width = LnkCap's width)
    res = _run(_on_slot(8), compat)
    (f,) = res.findings
    assert (f.code, f.severity) == ("pcie.link/platform-width", Severity.INFO)
    assert "x8 of the card's x16, its slot's port 0000:00:01.1 supports x8 (LnkCap)" in f.summary
    assert ("topology.pcie_links[1].cap_width", 8) in [(e.path, e.value) for e in f.evidence]
    # the port supports x16 and the link trained x8: degraded below what the slot supports
    (f,) = _run(_on_slot(16), compat).findings
    assert (f.code, f.severity) == ("pcie.link/width", Severity.WARNING) and "x8 of x16" in f.summary
    # an x8 slot whose link trained x4: below what the platform gives, a fault
    (f,) = _run(_on_slot(8, gpu_sta=4, port_sta=4), compat).findings
    assert (f.code, f.severity) == ("pcie.link/width", Severity.WARNING) and "x4 of x16" in f.summary


def test_in_a_vm_the_width_seen_is_the_platforms(compat):
    f = _a100(pcie_width_current=8)
    vm = replace(f, host=replace(f.host, virtualization="kvm"))
    (x,) = _run(vm, compat).findings
    assert (x.code, x.severity) == ("pcie.link/platform-width", Severity.INFO)
    assert "a virtual machine (host.virtualization=kvm)" in x.summary
