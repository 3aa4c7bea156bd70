"""Reader for the paste's date: the newest ISO or ctime timestamp near its ends."""

from __future__ import annotations

import re

from .base import LOOSE, Acc, Paste

_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_ISO_DATE = re.compile(r"(?<![\d.])(20\d\d)-(0[1-9]|1[0-2])-([0-2]\d|3[01])[ T]+\d\d:\d\d")
_CTIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) "
                    r"\d\d:\d\d:\d\d (?:\w{3,4} )?(20\d\d)\b")
_DATE_SPAN = 200_000  # characters read at each end of a long paste


def read_date(paste: Paste, acc: Acc) -> None:
    """When the paste was made: the latest timestamp it shows (nvidia-smi's header line, `dmesg -T`, log and
    package-manager lines). Age-based verdicts (a driver branch past its end of life) are judged on that day."""
    text = paste.text
    hay = text if len(text) <= 2 * _DATE_SPAN else text[:_DATE_SPAN] + "\n" + text[-_DATE_SPAN:]
    best = None
    for m in _ISO_DATE.finditer(hay):
        best = max(best or "", f"{m.group(1)}-{m.group(2)}-{m.group(3)}")
    for m in _CTIME.finditer(hay):
        day = f"{m.group(3)}-{_MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"
        best = max(best or "", day)
    if best:
        acc.put("paste.date", best, LOOSE, "the latest timestamp in the paste")
