#!/usr/bin/env python3
"""Time `envdoctor diagnose` on a long training log (default 50 MB): the bounded read (head, tail and the
middle's error lines, diagnose/bounded_read.py) plus judging what it kept, against the peer measured in the same
run: judging the log's first 8 MiB, which is all diagnose read before. Prints seconds (best of N, CPU time of this
process) and the ratio, so the figure means the same on a loaded or a fast machine.

Then the size series (issue 29): the same log at --small-mb (default 6) and --mb, each read and judged, and the
ratio of their times; linear would be the ratio of the sizes (10x for 6 vs 60 MB), the bounded read keeps it
below that (it scans every byte, but judges at most head + tail + 1 MiB of the middle). Last, the real command
`envdoctor diagnose --format json` on the large log with stderr on a pseudo-terminal: whether the progress line
appeared on stderr (it shows after 2 s) and whether stdout is still one JSON document. Usage:

    python scripts/bench_diagnose_large.py [--mb 60] [--small-mb 6] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.diagnose import decode_text  # noqa: E402
from envdoctor.diagnose.bounded_read import MiB, read_bounded, trigger_keywords  # noqa: E402
from envdoctor.services.diagnose import diagnose_report  # noqa: E402

HEADER = ("PyTorch version: 2.5.1+cu124\nIs CUDA available: True\nCUDA runtime version: 12.4.131\n"
          "GPU models and configuration: GPU 0: NVIDIA H100 80GB HBM3\nNvidia driver version: 550.54.15\n")
END = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
       "(shm).\n")


def _best(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def _write_log(path: Path, mb: float) -> None:
    with open(path, "w") as fh:
        fh.write(HEADER)
        n = 0
        while fh.tell() < mb * MiB:
            n += 1
            fh.write(f"[2026-11-30 12:00:{n % 60:02d}] epoch {n // 10000} step {n} loss {n % 977 / 977:.4f} "
                     f"lr 3.0e-04 grad_norm {n % 313 / 100:.3f} tokens/s 51234\n")
        fh.write(END)


def _with_pty_stderr(path: Path) -> tuple:
    """`envdoctor diagnose --format json` with stderr on a pseudo-terminal: (stdout, stderr, seconds)."""
    import pty
    import select

    master, slave = pty.openpty()
    t = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json", str(path)],
                            stdout=subprocess.PIPE, stderr=slave, cwd=ROOT)
    os.close(slave)
    err = b""
    out_chunks = []
    sources = [master, proc.stdout]
    while sources:
        ready, _, _ = select.select(sources, [], [], 0.2)
        for src in ready:
            try:
                chunk = os.read(src if src is master else src.fileno(), 65536)
            except OSError:  # the pty's other end closed (EIO): the command has exited
                chunk = b""
            if not chunk:
                sources.remove(src)
            elif src is master:
                err += chunk
            else:
                out_chunks.append(chunk)
    proc.wait()
    return b"".join(out_chunks).decode(), err.decode(errors="replace"), time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=60)
    ap.add_argument("--small-mb", type=int, default=6)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    compat = load_compat()
    keywords = trigger_keywords(compat)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.log"
        small = Path(tmp) / "train-small.log"
        _write_log(path, a.mb)
        _write_log(small, a.small_mb)

        def bounded(p: Path = path) -> None:
            with open(p, "rb") as f:
                data, note = read_bounded(f, p.name, keywords)
            report = diagnose_report([decode_text(data)], compat, read_notes=[note] if note else [])
            assert any(x.category == "SHM_TOO_SMALL" for x in report.findings)

        def first_8_mib() -> None:
            with open(path, "rb") as f:
                diagnose_report([decode_text(f.read(8 * MiB))], compat)

        def read_only(p: Path = path) -> None:
            with open(p, "rb") as f:
                read_bounded(f, p.name, keywords)

        t_read = _best(read_only, a.runs)
        t_new = _best(bounded, a.runs)
        t_old = _best(first_8_mib, a.runs)
        print(f"{a.mb} MB log: bounded read alone {t_read:.2f} s; read + judge {t_new:.2f} s; "
              f"peer (judge the first 8 MiB, the old read) {t_old:.2f} s; ratio {t_new / t_old:.2f}")
        t_small = _best(lambda: bounded(small), a.runs)
        t_small_read = _best(lambda: read_only(small), a.runs)
        print(f"size series: {a.small_mb} MB read + judge {t_small:.2f} s, {a.mb} MB {t_new:.2f} s: ratio "
              f"{t_new / t_small:.2f} for {a.mb / a.small_mb:.0f}x the bytes (linear = {a.mb / a.small_mb:.0f}x); "
              f"the read alone {t_small_read:.3f} s vs {t_read:.3f} s (up to 8 MiB a log is read whole, not scanned)")
        out, err, wall = _with_pty_stderr(path)
        try:
            doc_ok = bool(json.loads(out).get("findings") is not None)
        except ValueError:
            doc_ok = False
        import re

        err = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err)  # rich's cursor and erase codes around the live line
        lines = [x.strip() for x in err.replace("\r", "\n").splitlines() if x.strip()]
        shown = [x for x in lines if x.startswith("envdoctor diagnose:")]
        print(f"envdoctor diagnose --format json {a.mb} MB log, stderr on a terminal: {wall:.1f} s wall; "
              f"stdout one JSON document: {doc_ok}; progress line on stderr: {bool(shown)}"
              + (f" (first: {shown[0]!r}; last: {shown[-1]!r}; {len(shown)} rewrites)" if shown else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
