"""The step timer: ``for batch in timed(loader): ...`` measures how long each step waits for its batch.

Stdlib only and importable on its own (a training process may have envdoctor on PYTHONPATH only). Per step it
costs two ``time.perf_counter()`` calls, a few additions and a comparison; every ``FLUSH_S`` it writes a small
JSON summary into the directory a running ``envdoctor watch`` created (``ENVDOCTOR_WATCH_DIR``, else
``<tmp>/envdoctor-watch-<uid>``) as ``steps-<pid>.json``. When no watch ever ran, it prints the summary to stderr
at exit instead.

A step runs from the moment the loop asks for batch *i* to the moment it asks for batch *i+1*; its wait is the
time ``next()`` took. The first step is left out of the fraction: it includes starting the loader's workers.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import tempfile
import time
from collections import deque
from typing import Any, Deque, Dict, Iterable, Iterator, List, Optional

FLUSH_S = 0.5
RECENT = 512  # steps kept for percentiles (bounded memory)


def watch_dir() -> str:
    """Where a running ``envdoctor watch`` collects step reports (it creates the directory, the timer never does)."""
    given = os.environ.get("ENVDOCTOR_WATCH_DIR")
    if given:
        return given
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"envdoctor-watch-{uid}")


def _pct(values: List[float], q: float) -> Optional[float]:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class StepStats:
    """Running totals of the steps one ``timed`` loop made."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.steps = 0
        self.wait_s = 0.0  # summed over steps after the first
        self.step_s = 0.0
        self.first_wait_s: Optional[float] = None
        self.recent_wait: Deque[float] = deque(maxlen=RECENT)
        self.recent_step: Deque[float] = deque(maxlen=RECENT)
        self.started = time.time()

    def summary(self) -> Dict[str, Any]:
        waits, steps = list(self.recent_wait), list(self.recent_step)
        return {
            "name": self.name, "pid": os.getpid(), "steps": self.steps,
            "data_wait_fraction": round(self.wait_s / self.step_s, 4) if self.step_s > 0 else None,
            "wait_s": round(self.wait_s, 4), "step_s": round(self.step_s, 4),
            "first_wait_s": round(self.first_wait_s, 4) if self.first_wait_s is not None else None,
            "wait_p50_ms": _ms(_pct(waits, 0.5)), "wait_p90_ms": _ms(_pct(waits, 0.9)),
            "step_p50_ms": _ms(_pct(steps, 0.5)), "step_p90_ms": _ms(_pct(steps, 0.9)),
            "updated": round(time.time(), 3), "started": round(self.started, 3),
        }


def _ms(v: Optional[float]) -> Optional[float]:
    return round(v * 1000.0, 3) if v is not None else None


class _Reporter:
    """Writes the loops' summaries for a running watch; prints them at exit when none was seen."""

    def __init__(self) -> None:
        self.loops: List[StepStats] = []
        self.dir = watch_dir()
        self.seen_watch = False
        self._dir_checked = 0.0
        self._dir_ok = False
        self.closed = False  # at_exit has written the last summary
        atexit.register(self.at_exit)

    def flush(self) -> None:
        # a loop left with `break` keeps its generator alive until the interpreter tears the modules down; its
        # `finally` then runs with the builtins gone (`open` undefined): at_exit has already written everything
        if self.closed or sys.is_finalizing():
            return
        now = time.monotonic()
        if now - self._dir_checked >= 1.0:
            self._dir_checked = now
            self._dir_ok = os.path.isdir(self.dir)
        if not self._dir_ok:
            return
        self.seen_watch = True
        path = os.path.join(self.dir, f"steps-{os.getpid()}.json")
        try:
            tmp = f"{path}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"loops": [s.summary() for s in self.loops]}, fh)
            os.replace(tmp, path)
        except OSError:
            self._dir_ok = False  # the watch went away (or the disk is full): never fail the training loop

    def at_exit(self) -> None:
        if not self.loops:
            self.closed = True
            return
        self._dir_checked = 0.0
        self.flush()
        self.closed = True
        if self.seen_watch:
            return
        for s in self.loops:
            d = s.summary()
            frac = d["data_wait_fraction"]
            sys.stderr.write(
                f"envdoctor timed({s.name}): {d['steps']} steps, waiting for data "
                + (f"{100 * frac:.1f}% of the step time" if frac is not None else "unknown (fewer than 2 steps)")
                + (f" (wait p50 {d['wait_p50_ms']} ms, step p50 {d['step_p50_ms']} ms)" if d["steps"] > 1 else "")
                + "\n")


_REPORTER: Optional[_Reporter] = None


def _reporter() -> _Reporter:
    global _REPORTER
    if _REPORTER is None:
        _REPORTER = _Reporter()
    return _REPORTER


def timed(iterable: Iterable[Any], name: Optional[str] = None) -> Iterator[Any]:
    """Yield what ``iterable`` yields, timing how long each ``next()`` blocks against the whole step."""
    reporter = _reporter()
    stats = StepStats(name or type(iterable).__name__)
    reporter.loops.append(stats)
    return _timed(iter(iterable), stats, reporter)


def _timed(it: Iterator[Any], stats: StepStats, reporter: _Reporter) -> Iterator[Any]:
    clock = time.perf_counter
    next_flush = clock() + FLUSH_S
    prev_start: Optional[float] = None
    prev_wait = 0.0
    try:
        while True:
            start = clock()
            if prev_start is not None:  # the previous step ends as this one asks for its batch
                step = start - prev_start
                if stats.steps > 1:
                    stats.wait_s += prev_wait
                    stats.step_s += step
                    stats.recent_wait.append(prev_wait)
                    stats.recent_step.append(step)
            try:
                item = next(it)
            except StopIteration:
                return
            got = clock()
            prev_wait = got - start
            prev_start = start
            stats.steps += 1
            if stats.first_wait_s is None:
                stats.first_wait_s = prev_wait
            if got >= next_flush - 0.0 and time.monotonic() >= next_flush:
                next_flush = clock() + FLUSH_S
                reporter.flush()
            yield item
    finally:
        reporter.flush()


def read_reports(directory: str, pids: Optional[Iterable[int]] = None) -> List[Dict[str, Any]]:
    """The loops reported in ``directory`` (by the watched pids only, when given); unreadable files are skipped."""
    wanted = set(pids) if pids is not None else None
    out: List[Dict[str, Any]] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return out
    for n in names:
        if not (n.startswith("steps-") and n.endswith(".json")):
            continue
        try:
            pid = int(n[len("steps-"):-len(".json")])
        except ValueError:
            continue
        if wanted is not None and pid not in wanted:
            continue
        try:
            with open(os.path.join(directory, n), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        for loop in data.get("loops", []) if isinstance(data, dict) else []:
            if isinstance(loop, dict):
                out.append(loop)
    return out
