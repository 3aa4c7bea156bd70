"""Xid events: the kernel-log parser on a real dmesg capture, the probe through FakeRunner and here, the gpu.xid check."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks import gpu_errors, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Driver, Facts, Gpu, XidEvent
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.parsers.kernel_log import parse_xid_events
from envdoctor.probes.kernel_log import DMESG_TIMEOUT_S, JOURNALCTL_TIMEOUT_S, read_kernel_log
from tests.fakes.runner import FakeRunner, RecordingRunner
from tests.paths import FIXTURES

FIX = FIXTURES / "kernel-log"
XID_119 = (FIX / "h100-x8_dmesg-ctime_xid-119-gsp-timeout.log").read_text(encoding="utf-8")
# single lines as printed in public reports (tests/fixtures/SOURCES.md "Kernel log")
XID_79_JOURNAL = "Feb 14 05:03:41 gpu-1 kernel: NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus."
XID_79_DMESG = ("[111111111.111] NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, "
                "GPU has fallen off the bus.")
XID_63 = "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."
XID_13_OLD = "May 6 00:38:27 alex kernel: [ 4909.922970] NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d 00000104"
DENIED = (1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")


@pytest.fixture(scope="module")
def compat():
    return load_compat()


# --------------------------------------------------------------------------- parser


def test_parse_real_dmesg_ctime_capture_xid_119():
    events = parse_xid_events(XID_119)
    assert [e.code for e in events] == [119] * 5
    assert {e.pci_bus_id for e in events} == {"0000:9b:00"}
    assert events[0].timestamp == "Sun Feb 23 16:24:18 2025"
    assert events[0].message.startswith("pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC")
    assert events[-1].timestamp == "Sun Feb 23 16:30:13 2025"


def test_parse_single_lines_of_each_era():
    (j,) = parse_xid_events(XID_79_JOURNAL)
    assert (j.code, j.pci_bus_id, j.message, j.timestamp) == (79, "0000:44:00", "GPU has fallen off the bus",
                                                              "Feb 14 05:03:41")
    (d,) = parse_xid_events(XID_79_DMESG)
    assert (d.code, d.pci_bus_id, d.timestamp) == (79, "0000:05:00", "111111111.111")
    (r,) = parse_xid_events(XID_63)
    assert (r.code, r.pci_bus_id, r.timestamp) == (63, "0000:10:1c", None)
    (old,) = parse_xid_events(XID_13_OLD)
    assert (old.code, old.pci_bus_id, old.timestamp) == (13, "0000:01:00", "4909.922970")
    assert parse_xid_events("NVRM: GPU at PCI:0000:9b:00: GPU-509665ad\nNVRM: Xid error: xyz, invalid") == []


def test_parse_keeps_the_newest_when_there_are_too_many():
    text = "\n".join(f"NVRM: Xid (PCI:0000:01:00): {13 if i < 5 else 31}, n={i}" for i in range(10))
    events = parse_xid_events(text, limit=4)
    assert [e.message for e in events] == ["n=6", "n=7", "n=8", "n=9"]


# --------------------------------------------------------------------------- probe


def test_probe_reads_dmesg_ctime():
    r = FakeRunner({("dmesg", "--ctime"): XID_119}, which={"dmesg": "/usr/bin/dmesg"})
    log = read_kernel_log(r)
    assert (log.readable, log.source, len(log.events)) == (True, "dmesg --ctime", 5)
    assert log.status == "ok"


def test_probe_permission_denied_falls_back_to_journalctl():
    r = FakeRunner({("dmesg", "--ctime"): DENIED,
                    ("journalctl", "-k", "-b", "--no-pager", "-q"): XID_79_JOURNAL + "\n"},
                   which={"dmesg": "/usr/bin/dmesg", "journalctl": "/usr/bin/journalctl"})
    log = read_kernel_log(r)
    assert (log.readable, log.source, [e.code for e in log.events]) == (True, "journalctl -k -b", [79])
    # --ctime was understood (the refusal is a permission error), so plain dmesg, refused the same way, is not
    # tried: journalctl comes next (the strict fake would raise on plain dmesg; this pins the order too)
    assert r.calls == [("dmesg", "--ctime"), ("journalctl", "-k", "-b", "--no-pager", "-q")]


def test_probe_busybox_dmesg_without_ctime():
    r = FakeRunner({("dmesg", "--ctime"): (1, "", "dmesg: unrecognized option '--ctime'\n"),
                    ("dmesg",): XID_79_DMESG + "\n"}, which={"dmesg": "/bin/dmesg"})
    log = read_kernel_log(r)
    assert (log.readable, log.source, [e.code for e in log.events]) == (True, "dmesg", [79])


def test_probe_unreadable_says_why():
    r = FakeRunner({("dmesg", "--ctime"): DENIED, ("journalctl", "-k", "-b", "--no-pager", "-q"): ""},
                   which={"dmesg": "/usr/bin/dmesg", "journalctl": "/usr/bin/journalctl"})
    log = read_kernel_log(r)
    assert not log.readable and log.status == "failed"
    assert "Operation not permitted" in log.reason and "no kernel messages" in log.reason
    timeout = FakeRunner({("dmesg", "--ctime"): FakeRunner.TIMEOUT}, which={"dmesg": "/usr/bin/dmesg"})
    log = read_kernel_log(timeout)
    assert not log.readable and "timed out" in log.reason and "journalctl not on PATH" in log.reason


def test_probe_on_this_machine_is_bounded():
    runner = RecordingRunner()
    log = read_kernel_log(runner)
    assert log.readable or log.reason  # readable, or it says why not
    # bounded by construction: at most dmesg --ctime, plain dmesg and journalctl, each under its own limit
    # (checked on the work done, not on a stopwatch that a busy CI machine would trip)
    argvs = [argv[0] for argv, _, _ in runner.calls]
    assert len(argvs) <= 3 and argvs.count("journalctl") <= 1
    assert sum(t for _, t, _ in runner.calls) <= 2 * DMESG_TIMEOUT_S + JOURNALCTL_TIMEOUT_S


# --------------------------------------------------------------------------- gpu.xid check


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


def test_xid_facts_round_trip():
    f = _facts(events=parse_xid_events(XID_119))
    assert Facts.from_json(f.to_json()) == f
