"""Kernel log probe: reads dmesg (or journalctl -k) with a short timeout and keeps the NVRM Xid events."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from envdoctor.facts import ProbeStatus, XidEvent
from envdoctor.parsers.kernel_log import parse_xid_events

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
    """dmesg --ctime, then plain dmesg (BusyBox has no --ctime), then journalctl -k -b. Never raises."""
    tried: List[str] = []
    try:
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
    except Exception as e:  # the per-probe guard
        tried.append(f"kernel log probe crashed: {type(e).__name__}: {e}")
    return KernelLog(False, None, "; ".join(tried))
