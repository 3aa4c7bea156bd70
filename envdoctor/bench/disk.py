"""Disk read benchmarks under a --data path: sequential MB/s and 4 KiB random-read IOPS, page cache bypassed.

These run in envdoctor's own process (they need no torch): one thread, queue depth 1, ``os.preadv`` into a
page-aligned ``mmap`` buffer, because O_DIRECT wants the buffer, offset and length aligned to the logical
block size (open(2), "O_DIRECT": "the user buffer, the length and the file offset must all be suitably
aligned"; 4096 covers 512e and 4Kn disks). Where the filesystem refuses O_DIRECT (tmpfs, some FUSE and
network filesystems) the file's cached pages are dropped with posix_fadvise(DONTNEED) instead and the
result says the figure may include cache.

An existing large file under the path is read when there is one; otherwise a bounded temporary file is
written (the result says so, free space is checked first) and always removed, Ctrl-C included.
"""

from __future__ import annotations

import errno
import mmap
import os
import random
import shutil
import tempfile
import time
from typing import Any, Callable, Iterator, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import BenchResult, ProbeStatus
from ..probes.runner import INTERRUPT

ALIGN = 4096
SEQ_BLOCK = 1 << 20  # fio's --bs=1M
RAND_BLOCK = 4096  # fio's --bs=4k
MIN_FILE_BYTES = 256 << 20  # smaller files fit in a drive's cache and make the sequential figure meaningless
TEMP_FILE_BYTES = 512 << 20
FREE_MARGIN_BYTES = 2 << 30  # never take a disk below this much free space
MAX_SCAN_ENTRIES = 5000  # how many directory entries we look at for an existing large file
TEMP_PREFIX = ".envdoctor-bench-"


@dataclass(frozen=True)
class Target:
    path: str  # the file read
    size: int
    temporary: bool  # written by us (and removed afterwards)
    note: Optional[str] = None


def find_large_file(root: str, min_bytes: Optional[int] = None,
                    max_entries: int = MAX_SCAN_ENTRIES) -> Optional[Tuple[str, int]]:
    """The largest regular file of at least ``min_bytes`` under ``root`` (a bounded walk; links not followed)."""
    min_bytes = MIN_FILE_BYTES if min_bytes is None else min_bytes
    if os.path.isfile(root):
        try:
            size = os.stat(root).st_size
        except OSError:
            return None
        return (root, size) if size >= min_bytes else None
    best: Optional[Tuple[str, int]] = None
    seen = 0
    for entry in _walk(root):
        seen += 1
        if seen > max_entries:
            break
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        if size >= min_bytes and (best is None or size > best[1]) and not entry.name.startswith(TEMP_PREFIX):
            best = (entry.path, size)
    return best


def _walk(root: str) -> Iterator[os.DirEntry]:
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for entry in it:
                    yield entry
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue


def _aligned_buffer(size: int) -> mmap.mmap:
    return mmap.mmap(-1, size)  # anonymous mappings are page-aligned


def _open(path: str) -> Tuple[int, bool, Optional[str]]:
    """(fd, direct, note): O_DIRECT when the filesystem accepts it, else a buffered fd with its cache dropped."""
    flag = getattr(os, "O_DIRECT", 0)
    if flag:
        try:
            fd = os.open(path, os.O_RDONLY | flag)
        except OSError as e:
            if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
                raise
        else:
            probe = _aligned_buffer(ALIGN)
            try:
                os.preadv(fd, [probe], 0)
                return fd, True, None
            except OSError as e:
                os.close(fd)
                if e.errno != errno.EINVAL:
                    raise
            finally:
                probe.close()
        note = "this filesystem refuses O_DIRECT: read through the page cache after dropping the file's " \
               "cached pages (posix_fadvise DONTNEED); the figure may include cache"
    else:
        note = "no O_DIRECT on this platform: the figure may include cache"
    fd = os.open(path, os.O_RDONLY)
    if hasattr(os, "posix_fadvise"):
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
    return fd, False, note


def _timed_reads(path: str, block: int, seconds: float, read_one: Callable[[int, Any, int], Optional[int]],
                 check_every: int = 1) -> Tuple[int, float, bool, Optional[str]]:
    """Call ``read_one(fd, buf, done)`` until it returns None or ``seconds`` pass: (done, elapsed, direct, note).

    ``done`` sums what ``read_one`` returned; the clock is looked at every ``check_every`` reads.
    """
    fd, direct, note = _open(path)
    buf = _aligned_buffer(block)
    done = 0
    reads = 0
    try:
        t0 = time.perf_counter()
        deadline = t0 + seconds
        while True:
            n = read_one(fd, buf, done)
            if n is None:
                break
            done += n
            reads += 1
            if reads % check_every == 0 and time.perf_counter() > deadline:
                break
        elapsed = time.perf_counter() - t0
    finally:
        buf.close()
        os.close(fd)
    return done, elapsed, direct, note


def seq_read(path: str, size: int, seconds: float) -> Tuple[int, float, bool, Optional[str]]:
    """Read 1 MiB blocks from the start for ``seconds`` (or to the end): (bytes, elapsed, direct, note)."""
    limit = size - size % ALIGN

    def read_one(fd: int, buf: Any, offset: int) -> Optional[int]:
        if offset >= limit:
            return None
        n = os.preadv(fd, [buf], offset)
        return n if n > 0 else None

    return _timed_reads(path, SEQ_BLOCK, seconds, read_one)


def rand_read(path: str, size: int, seconds: float, seed: int = 0) -> Tuple[int, float, bool, Optional[str]]:
    """Read 4 KiB blocks at uniformly random aligned offsets for ``seconds``: (reads, elapsed, direct, note)."""
    blocks = max(1, size // RAND_BLOCK)
    rng = random.Random(seed)

    def read_one(fd: int, buf: Any, _done: int) -> Optional[int]:
        os.preadv(fd, [buf], rng.randrange(blocks) * RAND_BLOCK)
        return 1

    return _timed_reads(path, RAND_BLOCK, seconds, read_one, check_every=16)


def make_temp_file(directory: str, size: int, register: Callable[[str], None]) -> str:
    """Write ``size`` bytes of incompressible data to a new hidden file in ``directory`` and fsync it."""
    fd, path = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
    register(path)
    block = os.urandom(SEQ_BLOCK)  # random: a compressing filesystem (ZFS, btrfs) must not shrink it
    try:
        written = 0
        while written < size:
            written += os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def choose_target(data_path: str, allow_write: bool, register: Callable[[str], None],
                  temp_bytes: int = TEMP_FILE_BYTES) -> Tuple[Optional[Target], Optional[str]]:
    """The file to read under ``data_path``, or (None, why not)."""
    found = find_large_file(data_path)
    if found:
        return Target(found[0], found[1], False, f"read the existing file {found[0]} ({found[1] >> 20} MiB)"), None
    directory = data_path if os.path.isdir(data_path) else os.path.dirname(os.path.abspath(data_path))
    if not allow_write:
        return None, (f"no file of {MIN_FILE_BYTES >> 20} MiB or more under {data_path} and writing a "
                      "temporary one was not allowed (--no-write)")
    try:
        free = shutil.disk_usage(directory).free
    except OSError as e:
        return None, f"cannot read free space of {directory}: {e.strerror}"
    if free < temp_bytes + FREE_MARGIN_BYTES:
        return None, (f"no file of {MIN_FILE_BYTES >> 20} MiB or more under {data_path}, and only "
                      f"{free >> 20} MiB free: a {temp_bytes >> 20} MiB temporary file would leave less than "
                      f"the {FREE_MARGIN_BYTES >> 20} MiB envdoctor keeps free, so none is written")
    if not os.access(directory, os.W_OK):
        return None, f"no file of {MIN_FILE_BYTES >> 20} MiB or more under {data_path} and {directory} is not writable"
    path = make_temp_file(directory, temp_bytes, register)
    return Target(path, temp_bytes, True, f"wrote a temporary {temp_bytes >> 20} MiB file {path} (removed afterwards)"), None


def bench_disk(data_path: str, seq_s: float, rand_s: float, allow_write: bool = True,
               want: Tuple[str, ...] = ("disk_seq_read", "disk_rand_read"),
               temp_bytes: int = TEMP_FILE_BYTES) -> List[BenchResult]:
    """disk_seq_read and disk_rand_read under ``data_path``; the temporary file, if any, is always removed."""
    created: List[str] = []
    start = time.monotonic()
    try:
        target, why = choose_target(data_path, allow_write, created.append, temp_bytes)
        if target is None:
            return [BenchResult(n, ProbeStatus.SKIPPED, why, device=data_path) for n in want]
        out = []
        base = {"path": data_path, "file": target.path, "file_bytes": target.size, "temporary_file": target.temporary,
                "target": target.note, "queue_depth": 1, "threads": 1}
        INTERRUPT.check()  # a signal while the file was written: no measurement after it (cli/signals.py)
        if "disk_seq_read" in want:
            t0 = time.monotonic()
            nbytes, secs, direct, note = seq_read(target.path, target.size, seq_s)
            out.append(BenchResult(
                "disk_seq_read", ProbeStatus.OK, note, device=data_path,
                value=round(nbytes / secs / 1e6, 2) if secs > 0 else None, unit="MB/s",
                params={**base, "block_bytes": SEQ_BLOCK, "bytes_read": nbytes, "direct": direct},
                duration_s=round(time.monotonic() - t0, 3)))
        INTERRUPT.check()
        if "disk_rand_read" in want:
            t0 = time.monotonic()
            reads, secs, direct, note = rand_read(target.path, target.size, rand_s)
            iops = reads / secs if secs > 0 else None
            out.append(BenchResult(
                "disk_rand_read", ProbeStatus.OK, note, device=data_path,
                value=round(iops, 1) if iops is not None else None, unit="IOPS",
                params={**base, "block_bytes": RAND_BLOCK, "reads": reads, "direct": direct,
                        "mb_per_s": round(iops * RAND_BLOCK / 1e6, 3) if iops is not None else None},
                duration_s=round(time.monotonic() - t0, 3)))
        return out
    except OSError as e:
        reason = f"reading under {data_path} failed: {e.strerror or e}"
        return [BenchResult(n, ProbeStatus.FAILED, reason, device=data_path,
                            duration_s=round(time.monotonic() - start, 3)) for n in want]
    finally:
        for path in created:  # also on Interrupted (a signal) or KeyboardInterrupt: the finally runs first
            try:
                os.unlink(path)
            except OSError:
                pass
