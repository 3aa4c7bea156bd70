"""gpu_errors' checks: gpu.memory-errors on real nvidia-smi captures and the healthy 8x H100 snapshot, gpu.xid
on kernel-log lines (a real dmesg capture and single lines from public reports)."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks import gpu_errors, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    Driver,
    Facts,
    Gpu,
    XidEvent,
)
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.parsers.kernel_log import parse_xid_events
from tests.paths import FIXTURES
from tests.unit.checks.health_facts import (
    codes,
    finding,
    from_driver,
    healthy,
    one,
    q,
    table_facts,
)


@pytest.fixture(scope="module")
def compat():
    return load_compat()


# --------------------------------------------------------------------------- gpu.memory-errors


def test_memory_errors_a10_pending_row_remap(compat):
    res = one(q("other/a10_535.129.03_row-remap-pending_nvidia-smi-q.txt"), compat, "gpu.memory-errors")
    f = finding(res, "gpu.memory-errors/remap-pending")
    assert (f.category, f.severity) == ("GPU_MEMORY_ERRORS", Severity.ERROR)
    assert "4 uncorrectable" in f.summary
    assert {e.path: e.value for e in f.evidence} == {"driver.gpus[0].remapped_rows_pending": True,
                                                     "driver.gpus[0].remapped_rows_uncorrectable": 4}
    assert "sudo nvidia-smi -i 0 -r" in f.fix.commands


def test_memory_errors_v100_inforom_corrupted(compat):
    res = one(table_facts("nvidia-smi-table/v100-sxm2-x8_460.32.03_inforom-corrupted.txt"), compat,
              "gpu.memory-errors")
    f = finding(res, "gpu.memory-errors/inforom")
    assert (f.category, f.severity) == ("GPU_MEMORY_ERRORS", Severity.WARNING)
    assert f.evidence[0].path == "driver.gpus[7].inforom_valid"


def test_memory_errors_clean_h100_passes_and_says_xid_not_read(compat):
    res = one(q("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt"), compat, "gpu.memory-errors")
    assert res.status == CheckStatus.PASSED
    assert codes(res) == ["gpu.memory-errors/xid-not-read"]


def test_memory_errors_note_names_only_the_counters_read(compat):
    # an nvidia-smi table shows the volatile ECC column but no row-remap state: the note must not call
    # row-remap counters clean
    facts = table_facts("nvidia-smi-table/v100-sxm2-x8_460.32.03_inforom-corrupted.txt")
    facts = dataclasses.replace(facts, driver=dataclasses.replace(facts.driver, gpus=[
        dataclasses.replace(g, inforom_valid=None, notes=None) for g in facts.driver.gpus]))
    note = finding(one(facts, compat, "gpu.memory-errors"), "gpu.memory-errors/xid-not-read")
    assert note.summary.startswith("ECC counters show no error (row-remap state not read)")
    full = one(q("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt"), compat, "gpu.memory-errors")
    note = finding(full, "gpu.memory-errors/xid-not-read")
    assert "row-remap" in note.summary and "ECC" in note.summary


def test_memory_errors_skip_when_nothing_reported(compat):
    f = from_driver(Driver(gpus=[dataclasses.replace(healthy().driver.gpus[0], ecc_volatile_uncorrected=None,
                                                     ecc_aggregate_uncorrected=None, remapped_rows_pending=None,
                                                     remapped_rows_failure=None, remapped_rows_uncorrectable=None,
                                                     retired_pages_pending=None, retired_pages_double_bit=None,
                                                     inforom_valid=None, notes=None)]))
    assert one(f, compat, "gpu.memory-errors").status == CheckStatus.SKIPPED



# --------------------------------------------------------------------------- gpu.xid

XID_119 = (FIXTURES / "kernel-log" / "h100-x8_dmesg-ctime_xid-119-gsp-timeout.log").read_text(encoding="utf-8")
XID_79_JOURNAL = "Feb 14 05:03:41 gpu-1 kernel: NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus."


def _facts(events=None, readable=True, reason=None, gpus=None) -> Facts:
    gpus = gpus if gpus is not None else [Gpu(index=4, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:9B:00.0")]
    return Facts(driver=Driver(status="ok", gpus=gpus, kernel_log_readable=readable, kernel_log_source="dmesg --ctime",
                               kernel_log_reason=reason, xid_events=events))


def _xid(facts, compat):
    (res,) = run_checks(facts, compat, [c for c in gpu_errors.CHECKS if c.id == "gpu.xid"])
    return res


def test_xid_clean_log_passes(compat):
    res = _xid(_facts(events=[]), compat)
    assert (res.status, res.findings) == (CheckStatus.PASSED, [])


def test_xid_119_gsp_timeouts_on_real_capture(compat):
    res = _xid(_facts(events=parse_xid_events(XID_119)), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("gpu.xid/119", "GPU_XID_ERRORS", Severity.ERROR)
    assert f.summary.startswith("5 x Xid 119 on GPU 4 (NVIDIA H100 80GB HBM3) at 0000:9b:00 "
                                "(last at Sun Feb 23 16:30:13 2025): GSP RPC timeout")
    assert f.evidence[0].path == "driver.xid_events" and f.evidence[0].value == 5
    assert "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380" in f.evidence[0].source
    assert f.fix.commands[0] == "sudo nvidia-smi -i 4 -r"


def test_xid_ecc_79_nvlink_and_app_codes_get_their_categories(compat):
    events = [XidEvent(48, "0000:9b:00", "An uncorrectable double bit error"), XidEvent(95, "0000:9b:00"),
              XidEvent(63, "0000:9b:00"), XidEvent(79, "0000:44:00", "GPU has fallen off the bus"),
              XidEvent(74, "0000:9b:00"), XidEvent(13, "0000:9b:00")]
    res = _xid(_facts(events=events), compat)
    got = {f.code: (f.category, f.severity) for f in res.findings}
    assert got == {
        "gpu.xid/13": ("NOTE", Severity.INFO),  # an application fault: a note about GPU_XID_ERRORS
        "gpu.xid/48": ("GPU_MEMORY_ERRORS", Severity.ERROR),
        "gpu.xid/63": ("GPU_MEMORY_ERRORS", Severity.WARNING),
        "gpu.xid/74": ("INTERCONNECT", Severity.ERROR),
        "gpu.xid/79": ("GPU_XID_ERRORS", Severity.ERROR),
        "gpu.xid/95": ("GPU_MEMORY_ERRORS", Severity.ERROR),
    }
    f79 = next(f for f in res.findings if f.code == "gpu.xid/79")
    assert f79.summary == "1 x Xid 79 on the GPU at 0000:44:00: GPU has fallen off the bus"
    # what a scheduler does: NVIDIA's immediate action for the code where it names one (79: RESTART_BM, a
    # reboot; 95: RESET_GPU; 63: IGNORE), the catalogue's otherwise (48's WORKFLOW_XID_48, 74's NVLink workflow);
    # an application fault (13) asks nothing
    acts = {f.code: f.action for f in res.findings}
    assert acts == {"gpu.xid/13": "none", "gpu.xid/48": "reset-gpu", "gpu.xid/63": "none", "gpu.xid/74": "reset-gpu",
                    "gpu.xid/79": "reboot-node", "gpu.xid/95": "reset-gpu"}


def test_xid_unreadable_log_is_info_with_the_reason(compat):
    why = "`dmesg --ctime` exited 1: dmesg: read kernel buffer failed: Operation not permitted"
    res = _xid(_facts(readable=False, reason=why), compat)
    # nothing was judged: no check mark, the reason, and a note saying how to read the log
    assert (res.status, res.reason) == (CheckStatus.SKIPPED, f"kernel log not readable: {why}")
    (f,) = res.findings
    assert (f.code, f.category, f.about, f.severity) == ("gpu.xid/log-unreadable", "NOTE", "GPU_XID_ERRORS",
                                                         Severity.INFO)
    assert f.summary == f"kernel log not readable: {why}; Xid errors not checked"
    assert f.evidence[0].path == "driver.kernel_log_reason"


def test_xid_skipped_when_the_log_was_not_read(compat):
    res = _xid(_facts(readable=None), compat)
    assert res.status == CheckStatus.SKIPPED and "kernel log was not read" in res.reason


def test_xid_judged_even_when_nvml_lost_the_gpu(compat):
    # Xid 79 is exactly when NVML stops answering: the check must not need the driver probe "ok"
    f = _facts(events=parse_xid_events(XID_79_JOURNAL), gpus=[])
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, status="failed"))
    assert [x.code for x in _xid(f, compat).findings] == ["gpu.xid/79"]


def test_memory_errors_no_longer_says_xid_not_read_when_the_log_was_read(compat):
    g = Gpu(index=0, pci_bus_id="00000000:9B:00.0", ecc_volatile_uncorrected=0, remapped_rows_pending=False)
    (res,) = run_checks(_facts(events=[], gpus=[g]), compat,
                        [c for c in gpu_errors.CHECKS if c.id == "gpu.memory-errors"])
    assert (res.status, res.findings) == (CheckStatus.PASSED, [])


# Xid 154 lines as the driver logs them (a public report, forums.developer.nvidia.com/t/364958, driver 595.58.03)
XID_154_RESET = ("Mar 29 15:38:59 kernel: NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x0 "
                 "(None) to 0x1 (GPU Reset Required)")


def test_xid_154_names_the_recovery_action_it_announces_an_error_unless_it_is_none(compat):
    res = _xid(_facts(events=parse_xid_events(XID_154_RESET)), compat)
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("gpu.xid/154", "GPU_XID_ERRORS", Severity.ERROR)
    assert f.summary == ("1 x Xid 154 on GPU 4 (NVIDIA H100 80GB HBM3) at 0000:9b:00: "
                         "the driver now requires: GPU Reset Required")
    assert "NVIDIA's Xid catalog: immediate action XID_154" in f.detail
    assert f.action == "reset-gpu"  # the recovery action the line announces
    back = XID_154_RESET.replace("from 0x0 (None) to 0x1 (GPU Reset Required)",
                                 "from 0x1 (GPU Reset Required) to 0x0 (None)")
    (f,) = _xid(_facts(events=parse_xid_events(back)), compat).findings
    assert f.severity == Severity.INFO and f.summary.endswith("the driver now requires: None")


def test_an_xid_envdoctor_does_not_judge_is_info_with_nvidias_meaning_and_buckets(compat):
    (f,) = _xid(_facts(events=[XidEvent(109, "0000:9b:00", "Ch 00000008, errorString CTX SWITCH TIMEOUT")]),
                compat).findings
    assert (f.code, f.category, f.about, f.severity) == ("gpu.xid/109", "NOTE", "GPU_XID_ERRORS", Severity.INFO)
    assert f.summary == "1 x Xid 109 on GPU 4 (NVIDIA H100 80GB HBM3) at 0000:9b:00: Context Switch Timeout Error"
    assert f.detail == ("First logged: Ch 00000008, errorString CTX SWITCH TIMEOUT; NVIDIA's Xid catalog: immediate "
                        "action RESET_GPU, investigation CONTACT_SUPPORT")


def test_the_recovery_action_nvml_reports_is_an_error_with_or_without_the_kernel_log(compat):
    g = Gpu(index=4, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:9B:00.0", recovery_action="gpu_reset")
    for readable in (True, False, None):
        res = _xid(_facts(events=[], readable=readable, reason="no CAP_SYSLOG", gpus=[g]), compat)
        (f,) = res.findings
        assert (res.status, f.code, f.severity, f.category) == (CheckStatus.FAILED, "gpu.xid/recovery-action",
                                                                Severity.ERROR, "GPU_XID_ERRORS")
        assert f.summary == ("The driver requires a recovery action before new work: GPU 4 (NVIDIA H100 80GB HBM3): "
                             "a GPU reset")
        assert [(e.path, e.value, e.expected) for e in f.evidence] == [
            ("driver.gpus[0].recovery_action", "gpu_reset", "none")]
        assert f.fix.commands[0] == "sudo nvidia-smi -i 4 -r" and f.action == "reset-gpu"
    reboot = dataclasses.replace(g, recovery_action="node_reboot")
    (f,) = _xid(_facts(events=[], gpus=[g, dataclasses.replace(reboot, index=5)]), compat).findings
    assert f.action == "reboot-node"  # the strongest over the GPUs
    calm = dataclasses.replace(g, recovery_action="none")
    assert _xid(_facts(events=[], gpus=[calm]), compat).findings == []
    assert _xid(_facts(events=[], readable=None, gpus=[calm]), compat).status == CheckStatus.SKIPPED
