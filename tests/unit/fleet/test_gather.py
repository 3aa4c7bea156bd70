"""Rank 0's gather (envdoctor/fleet/comm.py) over a fake point-to-point transport: 1,023 sources at once, late
ones named at the deadline without a wait that times out, and the descriptor budget a rank asks for."""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional

from envdoctor.fleet import comm


class _Buf:
    def __init__(self, n: int):
        self.data: List[int] = [0] * n

    def item(self) -> int:
        return self.data[0]

    def tolist(self) -> List[int]:
        return list(self.data)


class _Torch:
    int64 = uint8 = None

    @staticmethod
    def zeros(n: int, dtype: Any = None) -> _Buf:
        return _Buf(n)


class _Work:
    def __init__(self, dist: _Dist, buf: _Buf, src: int, tag: int):
        self.dist, self.buf, self.src, self.tag = dist, buf, src, tag

    def wait(self, timeout: Any = None) -> None:
        self.dist.timeouts.append(timeout.total_seconds())
        if self.src in self.dist.late:
            # a late rank: nothing comes before the test ends (released then); gloo would time out here
            if not self.dist.release.wait(timeout.total_seconds()):
                self.dist.closed = True  # what a gloo timeout does to every pair of the group
                raise RuntimeError("Timed out waiting 1000ms for recv operation to complete")
            raise RuntimeError("Connection closed by peer")
        if self.dist.closed:
            raise RuntimeError("Application timeout caused pair closure")
        body = comm.encode({"rank": self.src})
        if self.tag < 100:
            self.buf.data[0] = len(body)
        else:
            self.buf.data[:] = list(body)


class _Dist:
    def __init__(self, late: List[int]):
        self.late = set(late)
        self.release = threading.Event()
        self.closed = False
        self.timeouts: List[float] = []

    def irecv(self, buf: _Buf, src: int, group: Any = None, tag: int = 0) -> _Work:
        return _Work(self, buf, src, tag)


def _gather(sources: List[int], late: List[int], seconds: float) -> Dict[int, comm.Arrival]:
    dist = _Dist(late)
    threads_before = threading.active_count()
    g = comm.Gatherer(_Torch(), dist, None, comm.TAG_PAYLOAD, sources, time.monotonic() + seconds).start()
    try:
        arrivals = g.wait()
        assert threading.active_count() - threads_before <= len(sources)
        assert not dist.closed, "a wait timed out before the round ended: gloo would have closed every pair"
        assert min(dist.timeouts) >= comm.Gatherer.GRACE_S - 60  # no gloo wait is given the deadline itself
        return arrivals
    finally:
        dist.release.set()


def test_a_round_of_1023_ranks_names_the_late_ones_and_keeps_the_rest():
    sources = list(range(1, 1024))
    late = [7, 512, 1023]
    arrivals = _gather(sources, late, seconds=3.0)
    assert sorted(arrivals) == sources
    assert [r for r, a in arrivals.items() if a.value is None] == late
    assert all(arrivals[r].value == {"rank": r} for r in sources if r not in late)
    assert all(arrivals[r].error.startswith("no answer within the deadline") for r in late)


def test_what_arrives_after_the_deadline_is_not_in_the_round():
    dist = _Dist([2])
    g = comm.Gatherer(_Torch(), dist, None, comm.TAG_HELLO, [1, 2], time.monotonic() + 0.5).start()
    arrivals = g.wait()
    dist.release.set()  # rank 2's receive now ends (its peer went away): too late to change the round
    time.sleep(0.2)
    assert arrivals[2].error.startswith("no answer within the deadline") and g.so_far()[2].error == arrivals[2].error


class _Resource:
    RLIMIT_NOFILE = 7
    RLIM_INFINITY = -1

    def __init__(self, soft: int, hard: int, refuse: bool = False):
        self.limits = (soft, hard)
        self.refuse = refuse

    def getrlimit(self, which: int):
        return self.limits

    def setrlimit(self, which: int, limits) -> None:
        if self.refuse:
            raise ValueError("not allowed to raise maximum limit")
        self.limits = limits


def test_rank_0_of_1024_asks_for_a_descriptor_per_rank_and_the_others_a_constant():
    assert comm.fds_needed(0, 1024) == comm.FD_MARGIN + 1023
    assert comm.fds_needed(5, 1024) == comm.fds_needed(5, 16) == comm.FD_MARGIN
    r = _Resource(1024, 1 << 20)
    assert comm.ensure_fds(comm.fds_needed(0, 1024), r) is None and r.limits == (1279, 1 << 20)
    low = _Resource(1024, 1100)
    note: Optional[str] = comm.ensure_fds(1279, low)
    assert low.limits == (1100, 1100) and "hard limit 1100" in note and "ulimit -Hn 1279" in note
    assert comm.ensure_fds(256, _Resource(1024, 4096)) is None  # already enough: left alone
    assert "could not be raised" in comm.ensure_fds(1279, _Resource(1024, 4096, refuse=True))
