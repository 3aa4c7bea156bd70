#!/usr/bin/env python3
"""Time reading torch's build from its files (version.py, DT_NEEDED, the .nv_fatbin arch list) against `import torch`.

Both run in the target interpreter, best of N fresh processes each, so the figure is what the payload pays
before it imports torch, as a fraction of the import itself (the peer, measured in the same run). Usage:

    python scripts/bench_torch_static.py /path/to/venv/bin/python [--runs 3] [--cold]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PAYLOAD_DIR = Path(__file__).resolve().parents[1] / "envdoctor"

STATIC = """
import json, os, sys, time
sys.path.insert(0, {payload_dir!r})
import _payload.torch_files as p
if {cold!r}:
    # evict the library's pages from the page cache (a hint, no root needed) to time a cold read
    d = p.torch_dir([])
    for name in ("libtorch_cuda.so", "libtorch_hip.so"):
        path = os.path.join(d, "lib", name)
        if os.path.isfile(path):
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
t0 = time.perf_counter()
d = p.torch_dir([])
info = p.torch_build_files(d, []) if d else {{}}
print(json.dumps({{"s": time.perf_counter() - t0, "arch": info.get("arch_list"), "lib": info.get("native_library"),
                  "fatbins": info.get("fatbin_count")}}))
"""
IMPORT = """
import json, time
t0 = time.perf_counter()
import torch
print(json.dumps({"s": time.perf_counter() - t0, "arch": torch.cuda.get_arch_list()}))
"""


def best(python: str, code: str, runs: int) -> dict:
    out = None
    for _ in range(runs):
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"{python} failed: {proc.stderr.strip()[-300:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        if out is None or got["s"] < out["s"]:
            out = got
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("python", help="an interpreter with torch installed")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="drop libtorch_cuda.so from the page cache before each read")
    args = ap.parse_args()
    static = best(args.python, STATIC.format(payload_dir=str(PAYLOAD_DIR), cold=args.cold), args.runs)
    imported = best(args.python, IMPORT, args.runs)
    print(f"library       {static['lib']} ({static['fatbins']} fat binaries)")
    print(f"static read   {static['s'] * 1000:.1f} ms   arch {' '.join(static['arch'] or []) or '-'}")
    print(f"import torch  {imported['s'] * 1000:.1f} ms   arch {' '.join(imported['arch'] or []) or '-'}")
    print(f"ratio         static read / import = {static['s'] / imported['s']:.3f}")
    print(f"same arch     {static['arch'] == imported['arch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
