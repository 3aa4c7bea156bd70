"""Find nvidia-smi -q / -q -x, nvlink, topo -m, lspci -vv, df/mount, nproc and free blocks in a paste."""

from __future__ import annotations

from .base import Acc, Paste


def read(paste: Paste, acc: Acc) -> None:
    return None
