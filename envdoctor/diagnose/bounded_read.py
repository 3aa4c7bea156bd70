"""Reading a paste of any size in bounded memory: a long training log's last error must count.

Up to ``WHOLE_MAX`` bytes are read whole. Beyond that the reader keeps the first ``HEAD`` bytes (collect_env and
nvidia-smi output usually open a log), the last ``TAIL`` bytes (the error that ended the run), and from the middle
only the lines that hold an error or warning trigger word (the messages reader's own keywords and each
signature's longest literal), each with a few lines around it, at most ``MIDDLE_MAX`` bytes of them, the latest
kept. Skipped lines become empty lines, so every line number the report quotes is the file's own; the note
returned says what was skipped, and the report lists it under what the paste does not show.

Engine time grows with the text it is given (about 0.3-0.5 s per MiB on a shared 2-core box), so what reaches
it is bounded too: at most HEAD + TAIL + MIDDLE_MAX bytes of text.
"""

from __future__ import annotations

from collections import deque
from typing import Any, BinaryIO, Callable, Deque, Dict, List, Optional, Sequence, Tuple

MiB = 1 << 20
WHOLE_MAX = 8 * MiB  # read whole up to this size (what diagnose always read)
HEAD = 2 * MiB
TAIL = 2 * MiB
MIDDLE_MAX = 1 * MiB  # trigger lines (and their neighbours) kept from the middle
CHUNK = 4 * MiB
MAX_PAD_LINES = 2_000_000  # past this many skipped lines, one marker line stands for them (1 byte a line)
BEFORE, AFTER = 1, 4  # neighbours kept around a trigger line, so a wrapped message is assembled whole


def trigger_keywords(compat: Any = None) -> List[bytes]:
    """Lower-case byte strings whose presence marks a line worth keeping from the middle."""
    from .readers.messages import _KEYWORDS, _literal_keywords

    words = list(_KEYWORDS) + ["traceback"]
    if compat is not None:
        try:
            from ..compat.signatures import signatures_from

            words += _literal_keywords(signatures_from(compat))
        except Exception:  # noqa: BLE001 - a matrix without signatures: the reader's own keywords still apply
            pass
    found = {w.lower().encode() for w in words if w.strip()}
    # a word holding another one adds a scan of the middle and no line: the line holding it holds the other
    # ("importerror" holds "error"); each kept word costs one pass over every block
    return sorted(w for w in found if not any(o != w and o in w for o in found))


def _is_wide_text(head: bytes) -> bool:
    """UTF-16/32 (a BOM, or every other byte NUL): byte-level line scanning does not apply."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        return True
    sample = head[:4096]
    return len(sample) >= 8 and (sample[1::2].count(0) > 0.8 * len(sample[1::2])
                                 or sample[0::2].count(0) > 0.8 * len(sample[0::2]))


class _Middle:
    """The skipped middle: its line count and the trigger lines kept ((line index, text), in order); when they
    pass MIDDLE_MAX the earliest go first: the error that ended the run is the latest."""

    def __init__(self, first_line: int, keywords: Sequence[bytes]):
        self.first_line = first_line
        self.lines = 0
        self.bytes = 0
        self.keywords = keywords
        self.kept: Deque[Tuple[int, bytes]] = deque()
        self.kept_bytes = 0
        self.triggers = 0
        self.dropped = 0

    def scan(self, block: bytes) -> None:
        """``block`` holds whole lines (it ends at a newline)."""
        base = self.first_line + self.lines
        low = block.lower()
        starts = set()
        for kw in self.keywords:
            pos = low.find(kw)
            while pos != -1:
                start = low.rfind(b"\n", 0, pos) + 1
                starts.add(start)
                end = low.find(b"\n", pos)
                pos = low.find(kw, end if end != -1 else len(low))
        if starts:
            self._keep(block, sorted(starts), base)
        self.lines += block.count(b"\n")
        self.bytes += len(block)

    def _keep(self, block: bytes, starts: List[int], base: int) -> None:
        self.triggers += len(starts)
        lines_by_index: Dict[int, bytes] = {}
        line, at = 0, 0
        for s in starts:  # starts are sorted: the line index of each is counted in one pass over the block
            line += block.count(b"\n", at, s)
            at = s
            lo = s
            for _ in range(BEFORE):
                if lo == 0:
                    break
                lo = block.rfind(b"\n", 0, lo - 1) + 1
            first = line - block.count(b"\n", lo, s)
            hi = s
            for _ in range(AFTER + 1):
                nxt = block.find(b"\n", hi)
                if nxt == -1:
                    hi = len(block)
                    break
                hi = nxt + 1
            for k, piece in enumerate(block[lo:hi].rstrip(b"\n").split(b"\n")):
                lines_by_index.setdefault(first + k, piece[:4000])
        for i in sorted(lines_by_index):
            piece = lines_by_index[i]
            self.kept.append((base + i, piece))
            self.kept_bytes += len(piece) + 1
            while self.kept_bytes > MIDDLE_MAX and self.kept:
                _, old = self.kept.popleft()  # the latest lines win: the error that ended the run is late
                self.kept_bytes -= len(old) + 1
                self.dropped += 1


def read_bounded(fh: BinaryIO, name: str, keywords: Sequence[bytes],
                 progress: Optional[Callable[[int], None]] = None) -> Tuple[bytes, Optional[str]]:
    """(the bytes to judge, None) for an input up to WHOLE_MAX; else (head + kept middle lines + tail, a note
    saying what was skipped). Memory stays within about WHOLE_MAX + CHUNK + TAIL whatever the input's size.
    ``progress`` is called with the bytes read so far after each chunk (the CLI's progress line)."""
    data = fh.read(WHOLE_MAX + 1)
    read_so_far = len(data)
    if progress is not None:
        progress(read_so_far)
    if len(data) <= WHOLE_MAX:
        return data, None
    wide = _is_wide_text(data)
    cut = HEAD if wide else data.rfind(b"\n", 0, HEAD) + 1 or HEAD
    if wide:
        cut -= cut % 4
    head, pending = data[:cut], data[cut:]
    del data
    middle = _Middle(head.count(b"\n"), keywords if not wide else ())
    while True:
        chunk = fh.read(CHUNK)
        if chunk:
            pending += chunk
            read_so_far += len(chunk)
            if progress is not None:
                progress(read_so_far)
        if len(pending) > TAIL + CHUNK or (not chunk and len(pending) > TAIL):
            split = len(pending) - TAIL
            if not wide:
                nl = pending.rfind(b"\n", 0, split)
                split = nl + 1 if nl != -1 else split
            else:
                split -= split % 4
            if split > 0:
                middle.scan(pending[:split])
                pending = pending[split:]
        if not chunk:
            break
    total = len(head) + middle.bytes + len(pending)
    if middle.lines <= MAX_PAD_LINES and not wide:
        parts: List[bytes] = [head]
        line = middle.first_line
        for i, text in middle.kept:
            parts.append(b"\n" * (i - line))
            parts.append(text + b"\n")
            line = i + 1
        parts.append(b"\n" * (middle.first_line + middle.lines - line))
        parts.append(pending)
        body = b"".join(parts)
        numbering = ""
    else:
        marker = b"" if wide else f"[envdoctor: {middle.bytes / MiB:.1f} MiB of {name} not read here]\n".encode()
        body = head + marker + b"".join(t + b"\n" for _, t in middle.kept) + pending
        numbering = "; line numbers past it are not the file's"
    if wide:
        return body, (f"the middle of {name} ({middle.bytes / MiB:.1f} of {total / MiB:.1f} MiB, UTF-16/32 text): "
                      f"not read; only its first {HEAD // MiB} and last {TAIL // MiB} MiB were")
    first, last = middle.first_line + 1, middle.first_line + middle.lines
    kept = len(middle.kept)
    what = ("only its error/warning lines and the lines around them were read "
            f"({kept} line{'s' if kept != 1 else ''})")
    if middle.dropped:
        what += f"; past {MIDDLE_MAX // MiB} MiB of them the latest were kept"
    note = (f"the middle of {name} (lines {first}-{last}, {middle.bytes / MiB:.1f} of {total / MiB:.1f} MiB): "
            f"{what}{numbering}")
    return body, note
