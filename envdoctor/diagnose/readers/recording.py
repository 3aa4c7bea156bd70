"""A pasted recording (nvidia-smi dmon / --query-gpu CSV, dcgmi dmon, gpustat, iostat -x, vmstat): read by the
watch's replay readers into ``acc.watch``, so `diagnose` on an issue's paste judges it with the watch.* checks."""

from __future__ import annotations

from .base import Acc, Paste

# a cheap gate before the readers run: some word every supported format prints
_MARKS = ("# gpu", "#entity", "utilization.gpu", "avg-cpu:", " r  b ", "'c,", "power.draw", "#date")


def read(paste: Paste, acc: Acc) -> None:
    from ...watch.replay import ReplayError, replay

    low = paste.text.lower()
    if not any(m in low for m in _MARKS) and not _headerless_csv(paste):
        return
    try:
        w = replay(paste.text)
    except ReplayError:
        return
    acc.watch = w  # type: ignore[attr-defined]
    acc.found.append(f"a recording ({w.source}, {len(w.samples)} samples)")


def _headerless_csv(paste: Paste) -> bool:
    from ...watch.replay import TIMESTAMP_ROW

    return sum(1 for ln in paste.lines[:50] if TIMESTAMP_ROW.match(ln)) >= 3
