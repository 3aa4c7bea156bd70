"""Reader for NCCL's own log (`NCCL_DEBUG=INFO`; issue 29): a run whose communicator finished initialising and
then made no progress.

NCCL prints ``host:pid:tid [rank] NCCL INFO ... Init COMPLETE`` once a communicator is set up, and its
``Channel NN : a[a] -> b[b] via P2P/...`` / ``via SHM/...`` lines name the transport each pair of ranks uses. A
paste that shows the communicator complete and then ends on a progress bar still at 0% (tqdm's ``0%|`` or
``0/16``), with no error after it, shows a collective that never finished between those GPUs: the hang that
diagnose.p2p-hang judges (with a topology matrix it can name PCIe peer-to-peer behind a switch; without one it
says what to paste). The transports seen are kept with it, as said.
"""

from __future__ import annotations

import re

from .base import LOOSE, Acc, Paste

_NCCL_INFO = re.compile(r"^\s*\S+:\d+:\d+ \[\d+\] NCCL INFO (?P<what>.*)$")
_CHANNEL = re.compile(r"Channel \d+(?:/\d+)? ?: ?\d+\[\d+\] -> \d+\[\d+\] via (?P<via>[A-Za-z]+)")
_STALLED = re.compile(r"(?:^|\s)0%\|[^|]*\|\s*0/\d+|\b0/\d+ \[00:00<")
_FAILED = re.compile(r"Error\b|NCCL WARN|Traceback|exited with|Killed|timed? ?out", re.I)


def read_nccl_log(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    hits = paste.with_any(["nccl info"])
    if not hits:
        return
    complete = [i for i in hits if "Init COMPLETE" in lines[i] and _NCCL_INFO.match(lines[i][:2000])]
    if not complete:
        return
    vias = sorted({m.group("via") for i in hits for m in [_CHANNEL.search(lines[i][:2000])] if m})
    acc.add_found("NCCL INFO log" + (f" (transports: {', '.join(vias)})" if vias else ""))
    tail = [ln for ln in lines[complete[-1] + 1:] if ln.strip()]
    if not tail or not _STALLED.search(tail[-1]) or any(_FAILED.search(ln) for ln in tail):
        return
    said = (f"NCCL finished initialising (Init COMPLETE{', via ' + '/'.join(vias) if vias else ''}), then the run "
            f"made no progress: {tail[-1].strip()[:120]}")
    acc.put("paste.collective_hang", said, LOOSE, lines[complete[-1]].strip()[:160])
