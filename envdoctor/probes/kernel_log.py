"""Kernel log probe: reads dmesg (or journalctl -k) with a short timeout and keeps the NVRM Xid events."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, List, Optional

from envdoctor.domain.fastclass import dataclass
from envdoctor.model.facts import Driver, ProbeStatus, XidEvent
from envdoctor.parsers.kernel_log import parse_xid_events
from envdoctor.probes.registry import ProbeContext, probe

# Reading the ring buffer is instant when allowed; a slow answer is a hung journal, not more data.
DMESG_TIMEOUT_S = 5.0
JOURNALCTL_TIMEOUT_S = 8.0


@dataclass(frozen=True)
class KernelLog:
    readable: bool
    source: Optional[str] = None  # the command that answered
    reason: Optional[str] = None  # why it could not be read (each attempt, in order)
    events: List[XidEvent] = field(default_factory=list)

    @property
    def status(self) -> str:
        # unreadable is "failed" in ProbeStatus terms: we tried and were refused (or found nothing)
        return ProbeStatus.OK if self.readable else ProbeStatus.FAILED


def _why(res: Any) -> str:
    if res.error:
        return f"`{' '.join(res.argv)}`: {res.error}"
    tail = (res.stderr.strip() or res.stdout.strip()).splitlines()
    msg = tail[-1].strip() if tail else "no output"
    # kernel.dmesg_restrict=1 (the default on Ubuntu/Debian) or a container without CAP_SYSLOG:
    # "dmesg: read kernel buffer failed: Operation not permitted" (util-linux dmesg(1))
    return f"`{' '.join(res.argv)}` exited {res.returncode}: {msg[:200]}"


def _read_ok(source: str, text: str) -> KernelLog:
    events = parse_xid_events(text)
    return KernelLog(True, source, f"`{source}`: {len(events)} Xid event(s)", events)


def read_kernel_log(runner: Any) -> KernelLog:
    """dmesg --ctime, then plain dmesg (BusyBox has no --ctime), then journalctl -k -b."""
    tried: List[str] = []
    if runner.which("dmesg"):
        for argv in (["dmesg", "--ctime"], ["dmesg"]):
            res = runner.run(argv, timeout=DMESG_TIMEOUT_S)
            if res.ok and res.stdout.strip():
                return _read_ok(" ".join(argv), res.stdout)
            tried.append(_why(res) if not res.ok else f"`{' '.join(argv)}` printed nothing")
            low = (res.stderr or "").lower()
            if not ("unrecognized option" in low or "invalid option" in low or "unknown option" in low):
                break  # --ctime was understood: plain dmesg would fail the same way
    else:
        tried.append("dmesg not on PATH")
    if runner.which("journalctl"):
        argv = ["journalctl", "-k", "-b", "--no-pager", "-q"]
        res = runner.run(argv, timeout=JOURNALCTL_TIMEOUT_S)
        if res.ok and res.stdout.strip():
            return _read_ok("journalctl -k -b", res.stdout)
        # a container has no journal of the host's kernel: exit 0 and no lines
        tried.append(_why(res) if not res.ok else "`journalctl -k -b` returned no kernel messages")
    else:
        tried.append("journalctl not on PATH")
    return KernelLog(False, None, "; ".join(tried))


def into_driver(driver: Driver, klog: KernelLog) -> Driver:
    """The kernel log is part of the driver section: its Xid events are driver facts."""
    return dataclasses.replace(driver, kernel_log_readable=klog.readable, kernel_log_source=klog.source,
                               kernel_log_reason=None if klog.readable else klog.reason,
                               xid_events=list(klog.events) if klog.readable else None)


def _wanted(ctx: ProbeContext) -> bool:
    # the ring buffer is this machine's: under a test root there is no kernel log of that root to read
    return bool(getattr(ctx.options, "kernel_log", True)) and ctx.fs.live


@probe("kernel_log", section="driver", merge=into_driver, enabled=_wanted,
       failed=lambda reason: KernelLog(False, None, reason))
def collect_kernel_log(ctx: ProbeContext) -> KernelLog:
    return read_kernel_log(ctx.runner)
