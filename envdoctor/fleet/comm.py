"""JSON messages between ranks over torch.distributed point-to-point calls, each with a deadline.

Why not ``gather_object``: it pickles (a rank running another envdoctor or torch must still be read, not
crashed on), it needs numpy to decode (torch's CPU wheels run without it: "RuntimeError: Numpy is not
available"), and a collective with a dead rank names no one. Here every rank sends rank 0 its message as two
tensors (its length, then its UTF-8 bytes); rank 0 waits for all of them at once until one shared deadline, so
a rank that never sends is named with what happened: gloo raises "Connection closed by peer" at once when a
rank's process is gone, and the deadline covers a rank that hangs or comes late. A gloo wait that times out
closes the group's pairs for good (measured: every later wait says "Application timeout caused pair closure"),
so rank 0 never lets one time out: it stops waiting at the deadline in Python and leaves the late rank's
receive posted (Gatherer.GRACE_S), and the next rounds still reach the ranks that came.

The waits run in a thread: the main thread stays in Python and takes SIGTERM (torchrun sends it to every worker
when one fails) at once, and the report is written from what arrived by then.

What the gather holds, for a world of N ranks (measured with 12 gloo ranks on torch 2.13.0, sockets counted in
/proc/self/fd; tests/integration/test_fleet.py checks it with 16):
- sockets: gloo's default "full mesh" connects every rank to every other at init_process_group, N-1 pairs each
  (the PyTorch docs, distributed.html "Improving initialization time": TORCH_GLOO_LAZY_INIT "establishes
  connections on demand rather than using a full mesh"); measured N+1 sockets on every rank (the pairs, the
  rendezvous store, one more). envdoctor's ranks set TORCH_GLOO_LAZY_INIT=1 unless the user set it, so a pair
  opens only where messages go: rank 0 ends with N+1 sockets (one pair per rank it heard from), every other
  rank with 3 (rank 0, the store, one more); measured at 12 and 16 ranks, so at 1,024 (not run) rank 0 holds
  1,025 and the others 3, where the full mesh gives every rank 1,025. --bench's all-reduce adds the pairs its
  algorithm uses (not counted here). With NCCL the control group is gloo too (the same counts); NCCL's own
  sockets (its bootstrap, its proxy) are not counted here.
- file descriptors: the sockets plus a constant (the interpreter, torch's libraries, stdio, the report file).
  Rank 0 needs more than the usual soft limit of 1,024 at 1,024 ranks: ensure_fds raises the soft limit up to
  the hard one before init_process_group, and says so where the hard limit is too low.
- threads: rank 0 waits with one thread per rank of the round (N-1, each with a STACK_BYTES stack, so 1,023
  threads at 1,024 ranks hold 1,023 x 256 KiB of address space); the other ranks use none.
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
import time
from typing import Any, Dict, List, Optional

from envdoctor.domain.fastclass import dataclass

TAG_HELLO, TAG_PAYLOAD, TAG_GO = 11, 12, 13
STACK_BYTES = 256 << 10  # a receiving thread's stack: it runs recv() and decode(), nothing deep
FD_MARGIN = 256  # descriptors a rank holds besides its peers' sockets (libraries, stdio, the store, logs)


def fds_needed(rank: int, world_size: int) -> int:
    """Descriptors a rank needs during the gather: rank 0 a socket per other rank on top of FD_MARGIN; the
    others FD_MARGIN (their socket to rank 0 and the store's are in it)."""
    return FD_MARGIN + (max(0, world_size - 1) if rank == 0 else 0)


def ensure_fds(needed: int, resource: Any = None) -> Optional[str]:
    """Raise this process's soft RLIMIT_NOFILE to ``needed`` (at most the hard limit); None when it fits, else
    a line saying what the limit is and what to type."""
    if resource is None:
        try:
            import resource  # noqa: PLC0415 - POSIX only
        except ImportError:
            return None
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError) as e:
        return f"open-file limit {soft} is below the {needed} this rank needs and could not be raised ({e})"
    if target < needed:
        return (f"open-file limit raised to its hard limit {hard}, below the {needed} this rank needs: "
                f"'ulimit -Hn {needed}' (or LimitNOFILE= in the job's unit) before launching")
    return None


def open_sockets() -> Optional[int]:
    """Sockets this process holds (/proc/self/fd entries that are sockets); None where /proc is not there."""
    import os

    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    n = 0
    for fd in fds:
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return n


@dataclass
class Arrival:
    """What rank 0 got from one rank: the message, or why not."""

    value: Optional[Dict[str, Any]] = None
    at: Optional[float] = None  # time.time() of its arrival
    error: Optional[str] = None


def _delta(seconds: float) -> _dt.timedelta:
    return _dt.timedelta(seconds=max(0.05, seconds))


def encode(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, default=str).encode("utf-8")


def decode(data: bytes) -> Dict[str, Any]:
    value = json.loads(data.decode("utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def short_error(e: BaseException) -> str:
    """gloo's messages carry a source path and a pun; keep what names the cause."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if text.startswith("[") and "] " in text:
        text = text.split("] ", 1)[1]
    for cut in (". This is typically caused", " GLHF"):
        text = text.split(cut, 1)[0]
    return text[:300]


def why_not(e: BaseException) -> str:
    """A failed receive in words: the peer's process is gone, or it did not answer in time."""
    reason = short_error(e)
    low = reason.lower()
    if "closed by peer" in low or "connection reset" in low or "broken pipe" in low:
        return f"its process exited or crashed (gloo: {reason})"
    if "timed out" in low or "timeout" in low:
        return f"no answer within the deadline (gloo: {reason})"
    return reason


def send(torch: Any, dist: Any, obj: Any, dst: int, group: Any, tag: int, timeout_s: float) -> None:
    """Send one JSON message to ``dst``; raises on failure or after ``timeout_s``."""
    data = encode(obj)
    size = torch.tensor([len(data)], dtype=torch.int64)
    body = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.zeros(0, dtype=torch.uint8)
    end = time.monotonic() + timeout_s
    w1 = dist.isend(size, dst=dst, group=group, tag=tag)
    w2 = dist.isend(body, dst=dst, group=group, tag=tag + 100)
    w1.wait(timeout=_delta(end - time.monotonic()))
    w2.wait(timeout=_delta(end - time.monotonic()))


def recv(torch: Any, dist: Any, src: int, group: Any, tag: int, timeout_s: float) -> Dict[str, Any]:
    """One JSON message from ``src``; raises on failure or after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    size = torch.zeros(1, dtype=torch.int64)
    dist.irecv(size, src=src, group=group, tag=tag).wait(timeout=_delta(end - time.monotonic()))
    n = int(size.item())
    if n < 0 or n > (1 << 30):
        raise ValueError(f"message length {n} from rank {src} is not plausible")
    body = torch.zeros(n, dtype=torch.uint8)
    if n:
        dist.irecv(body, src=src, group=group, tag=tag + 100).wait(timeout=_delta(end - time.monotonic()))
    return decode(bytes(body.tolist()))


class Gatherer:
    """Rank 0's side of one round: a message from each of ``sources`` until ``deadline`` (time.monotonic).

    One thread per source, all waiting at once: a gloo wait that times out closes every pair of the group (gloo's
    tcp context signals the exception to all its pairs: "Application timeout caused pair closure"), so a rank
    that hangs must not be waited for before the others; at the deadline everyone else has already arrived.
    """

    # the gloo waits themselves outlast the deadline by this much: rank 0 stops waiting at the deadline (in
    # Python) and leaves a late rank's receive posted, so no gloo timeout closes the pairs the next rounds use
    # (measured: a receive never waited for leaves the group usable; one whose wait times out does not)
    GRACE_S = 3600.0

    def __init__(self, torch: Any, dist: Any, group: Any, tag: int, sources: List[int], deadline: float):
        self.arrivals: Dict[int, Arrival] = {}
        self.started = time.time()
        self.deadline = deadline
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [threading.Thread(target=self._one, args=(torch, dist, group, tag, src, deadline),
                                          name=f"envdoctor-fleet-recv-{src}", daemon=True) for src in sources]
        self._sources = list(sources)

    def _one(self, torch: Any, dist: Any, group: Any, tag: int, src: int, deadline: float) -> None:
        try:
            value = recv(torch, dist, src, group, tag, deadline - time.monotonic() + self.GRACE_S)
            got = Arrival(value=value, at=time.time())
        except Exception as e:  # noqa: BLE001 - any failure is the fact to report
            got = Arrival(error=why_not(e), at=time.time())
        with self._lock:
            if not self._closed:  # what comes after the deadline is not in this round
                self.arrivals[src] = got

    def start(self) -> Gatherer:
        old = threading.stack_size(STACK_BYTES)
        try:
            for t in self._threads:
                t.start()
        finally:
            threading.stack_size(old)
        return self

    def wait(self) -> Dict[int, Arrival]:
        """Block until every source answered or failed; a signal ends the wait with ``Interrupted`` (the command
        line's handler records it in probes.runner.INTERRUPT)."""
        from ..probes.runner import INTERRUPT

        for t in self._threads:
            while t.is_alive() and time.monotonic() < self.deadline:
                t.join(max(0.0, min(0.2, self.deadline - time.monotonic())))
                INTERRUPT.check()
        with self._lock:
            self._closed = True
            for src in self._sources:
                self.arrivals.setdefault(src, Arrival(
                    error=f"no answer within the deadline ({max(0.0, time.time() - self.started):.0f} s)",
                    at=time.time()))
            return dict(self.arrivals)

    def so_far(self) -> Dict[int, Arrival]:
        return dict(self.arrivals)

