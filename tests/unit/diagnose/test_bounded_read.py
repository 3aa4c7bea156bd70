"""diagnose of any size: a long training log is read in bounded memory (head, tail, the middle's error lines),
so the error that ended the run counts, and the report says what of the middle was skipped."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest

from envdoctor import cli
from envdoctor.diagnose import bounded_read
from envdoctor.diagnose.bounded_read import MiB, read_bounded, trigger_keywords

HEADER = ("PyTorch version: 2.5.1+cu124\nIs CUDA available: True\nCUDA runtime version: 12.4.131\n"
          "GPU models and configuration: GPU 0: NVIDIA H100 80GB HBM3\nNvidia driver version: 550.54.15\n")
END = ("Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    for batch in loader:\n"
       "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
       "(shm).\n")
XID = "[123456.789] NVRM: Xid (PCI:0000:18:00): 79, pid=4242, GPU has fallen off the bus.\n"
STEP = "[2026-11-30 12:00:00] epoch 3 step 123456 loss 0.2345 lr 3.0e-04 grad_norm 1.234 tokens/s 51234\n"


def _log(path, size: int, middle: str = "") -> int:
    """HEADER, then training lines to ``size`` bytes with ``middle`` halfway, then END; the line of ``middle``."""
    block = (STEP * (MiB // len(STEP))).encode()
    with open(path, "wb") as fh:
        fh.write(HEADER.encode())
        line, written, placed = HEADER.count("\n"), len(HEADER), 0
        while written + len(block) <= size:
            if middle and not placed and written >= size // 2:
                fh.write(middle.encode())
                placed = line + 1
                line += middle.count("\n")
                written += len(middle)
            fh.write(block)
            written += len(block)
            line += block.count(b"\n")
        fh.write(END.encode())
    return placed


def test_a_50_mb_log_whose_real_error_is_at_the_end(tmp_path, monkeypatch, capsys) -> None:
    # small windows keep the engine's share fast; the 50 MB are still streamed and scanned
    monkeypatch.setattr(bounded_read, "HEAD", 256 * 1024)
    monkeypatch.setattr(bounded_read, "TAIL", 256 * 1024)
    path = tmp_path / "train.log"
    xid_line = _log(path, 50 * MiB, middle=XID)
    assert cli.main(["diagnose", str(path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    problems = [f for f in doc["findings"] if f["severity"] == "error"]
    cats = [f["category"] for f in problems]
    # the end's DataLoader bus error and the middle's Xid 79 both count; before, only the first 8 MiB did
    assert "SHM_TOO_SMALL" in cats and "GPU_XID_ERRORS" in cats, cats
    skipped = [n for n in doc["facts"]["paste"]["not_found"] if n.startswith("the middle of train.log")]
    assert skipped and "error/warning lines" in skipped[0] and "of 50.0 MiB)" in skipped[0]
    # line numbers are the file's own: the middle's message is quoted at its real line
    # line numbers stay the file's own: skipped lines are empty lines, kept ones sit where they were
    with open(path, "rb") as fh:
        body, _ = read_bounded(fh, "train.log", trigger_keywords())
    lines = body.split(b"\n")
    assert xid_line > 200_000 and lines[xid_line - 1] == XID.strip().encode()
    assert lines[-2] == END.splitlines()[-1].encode() and len(lines) - 1 == sum(1 for _ in open(path, "rb"))


def test_small_inputs_are_read_whole() -> None:
    data = (HEADER + END).encode()
    assert read_bounded(io.BytesIO(data), "x", trigger_keywords()) == (data, None)


def test_memory_stays_bounded_whatever_the_size() -> None:
    class Stream(io.RawIOBase):
        """64 MiB of log lines, produced as read (never held whole)."""

        def __init__(self) -> None:
            self.left = 64 * MiB
            self.block = (STEP * (MiB // len(STEP))).encode()

        def read(self, n: int = -1) -> bytes:
            if self.left <= 0:
                return b""
            n = min(n if n > 0 else len(self.block), self.left)
            reps = -(-n // len(self.block))
            out = (self.block * reps)[:n]
            self.left -= n
            return out

    tracemalloc.start()
    body, note = read_bounded(Stream(), "stream", trigger_keywords())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    bound = bounded_read.WHOLE_MAX + 3 * (bounded_read.TAIL + 2 * bounded_read.CHUNK)
    assert peak < bound, (peak / MiB, bound / MiB)
    kept = len(body) - body.count(b"\n")  # skipped lines are empty lines
    assert kept < bounded_read.HEAD + bounded_read.TAIL + bounded_read.MIDDLE_MAX
    assert note and "of 64.0 MiB" in note


@pytest.mark.parametrize("bom", [b"\xff\xfe"])
def test_utf16_beyond_the_limit_keeps_head_and_tail(bom) -> None:
    text = (HEADER + STEP * 200_000 + END).encode("utf-16-le")
    body, note = read_bounded(io.BytesIO(bom + text), "win.txt", trigger_keywords())
    assert note and "UTF-16/32" in note
    decoded = body[len(bom):].decode("utf-16-le", errors="replace")
    assert decoded.startswith("PyTorch version") and "insufficient shared memory" in decoded
