"""Xid events: the kernel-log parser on a real dmesg capture, the probe through FakeRunner and here (the gpu.xid
check's tests are in tests/unit/checks/test_gpu_errors.py)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Driver, Facts
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


# --------------------------------------------------------------------------- the facts (gpu.xid's tests: tests/unit/checks/test_gpu_errors.py)


def test_xid_facts_round_trip():
    f = Facts(driver=Driver(status="ok", kernel_log_readable=True, kernel_log_source="dmesg --ctime",
                            xid_events=parse_xid_events(XID_119)))
    assert f.driver.xid_events and Facts.from_json(f.to_json()) == f
