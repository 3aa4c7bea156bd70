#!/usr/bin/env python3
"""envdoctor's disk_seq_read and disk_rand_read against fio on the same file, direct I/O, in the same run.

    python scripts/bench_vs_fio.py [--path DIR] [--seconds 3] [--runs 3] [--file-mib 1024]

Writes one temporary file under DIR (removed at the end), then alternates envdoctor's reader
(envdoctor.bench.disk: one thread, queue depth 1, O_DIRECT, 1 MiB sequential / 4 KiB random) and fio with the
same pattern (--ioengine=psync --iodepth=1 --numjobs=1 --direct=1, --bs=1M --rw=read / --bs=4k --rw=randread).
Prints both figures and envdoctor / fio; the target is within 15%. fio comes from Debian's packages
(apt-get install fio) when it is not on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from envdoctor.bench import disk  # noqa: E402


def ensure_fio() -> str:
    found = shutil.which("fio")
    if found:
        return found
    print("fio not found: apt-get update && apt-get install -y fio", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=False, timeout=600)
    subprocess.run(["apt-get", "install", "-y", "-qq", "fio"], check=True, timeout=600)
    return shutil.which("fio") or "fio"


def fio(binary: str, path: str, rw: str, bs: str, seconds: float, size: int) -> dict:
    argv = [binary, "--name=envdoctor-peer", f"--filename={path}", f"--rw={rw}", f"--bs={bs}", "--direct=1",
            "--ioengine=psync", "--iodepth=1", "--numjobs=1", f"--size={size}", f"--runtime={seconds:g}",
            "--readonly", "--output-format=json", "--randrepeat=0"]
    if rw == "randread":
        argv.append("--time_based")
    p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=True)
    read = json.loads(p.stdout)["jobs"][0]["read"]
    return {"bw_bytes": read["bw_bytes"], "iops": read["iops"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=os.getcwd())
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--file-mib", type=int, default=1024)
    args = ap.parse_args()
    binary = ensure_fio()
    size = args.file_mib << 20
    created: list = []
    rows = []
    try:
        path = disk.make_temp_file(args.path, size, created.append)
        print(f"file {path} ({args.file_mib} MiB), {args.seconds:g} s per measurement, fio {binary}")
        for i in range(args.runs):
            nbytes, secs, direct, note = disk.seq_read(path, size, args.seconds)
            ours_seq = nbytes / secs / 1e6
            peer_seq = fio(binary, path, "read", "1M", args.seconds, size)["bw_bytes"] / 1e6
            reads, secs, direct2, _ = disk.rand_read(path, size, args.seconds, seed=i)
            ours_iops = reads / secs
            peer_iops = fio(binary, path, "randread", "4k", args.seconds, size)["iops"]
            rows.append((ours_seq, peer_seq, ours_iops, peer_iops))
            print(f"run {i + 1}: seq envdoctor {ours_seq:.1f} MB/s vs fio {peer_seq:.1f} (ratio "
                  f"{ours_seq / peer_seq:.3f}; O_DIRECT {direct})  rand envdoctor {ours_iops:.0f} IOPS vs fio "
                  f"{peer_iops:.0f} (ratio {ours_iops / peer_iops:.3f}; O_DIRECT {direct2})" + (f"  [{note}]" if note else ""))
    finally:
        for p in created:
            try:
                os.unlink(p)
            except OSError:
                pass
    seq = statistics.median(r[0] / r[1] for r in rows)
    rnd = statistics.median(r[2] / r[3] for r in rows)
    print(f"\nmedian over {len(rows)} runs (load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs): "
          f"disk_seq_read envdoctor/fio = {seq:.3f}, disk_rand_read envdoctor/fio = {rnd:.3f}")
    ok = abs(seq - 1) <= 0.15 and abs(rnd - 1) <= 0.15
    print("within 15%: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
