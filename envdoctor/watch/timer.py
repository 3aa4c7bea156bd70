"""The step timer: ``for batch in timed(loader): ...`` measures how long each step waits for its batch.

Stdlib only and importable on its own (a training process may have envdoctor on PYTHONPATH only). Per step it
costs two ``time.perf_counter()`` calls, a few additions and a comparison; every ``FLUSH_S`` it writes a small
JSON summary into the directory a running ``envdoctor watch`` created (``ENVDOCTOR_WATCH_DIR``, else
``<tmp>/envdoctor-watch-<uid>``) as ``steps-<pid>.json``, while that watch is alive (its mark, ``watch-<pid>.alive``).
When no watch is running, it prints the summary to stderr at exit instead.

A step runs from the moment the loop asks for batch *i* to the moment it asks for batch *i+1*; its wait is the
time ``next()`` took. The first step is left out of the fraction: it includes starting the loader's workers.

Its cost per step does not grow with the run: wrapping the same loader again every epoch (``for epoch ...: for
batch in timed(loader)``) continues that loader's totals instead of adding a loop, and an epoch's end does not
write the report (the next ``FLUSH_S`` tick, or the exit, does). Thousands of short epochs cost what one long
epoch costs (``scripts/bench_watch_overhead.py --epochs``).

The report directory is shared between the watch and the training process, in a world-writable ``/tmp``: it is
used only when it is a real directory (not a link), owned by this user and writable by nobody else, and each
report is written through a new file opened with ``O_EXCL``/``O_NOFOLLOW`` and then renamed, so that nobody can
plant a link that makes the timer write elsewhere.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import stat
import sys
import tempfile
import time
from collections import deque
from typing import Any, Deque, Dict, Iterable, Iterator, List, Optional

FLUSH_S = 0.5
RECENT = 512  # steps kept for percentiles (bounded memory)
# A step whose own work (not its wait for data) stands out from the run's own steps stopped the loop: at least
# STALL_X typical steps, STALL_DEV typical deviations above the typical step (the way TCP tells a lost packet from
# a slow one: a smoothed mean and mean deviation, RFC 6298), and STALL_MIN_S. Before (issue 41) it took ten typical
# steps and 0.5 s, and checkpoints of 3-7 steps each, 20-35% of a run, went unseen.
STALL_X = 2.5
STALL_DEV = 8.0
STALL_MIN_S = 0.1  # below this a stop costs little, whatever the ratio
STALLS_KEPT = 64
EPOCHS_KEPT = 64  # per-epoch totals kept (the first ones: a cold first epoch is judged against the next)


def watch_dir() -> str:
    """Where a running ``envdoctor watch`` collects step reports (it creates the directory, the timer never does)."""
    given = os.environ.get("ENVDOCTOR_WATCH_DIR")
    if given:
        return given
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"envdoctor-watch-{uid}")


def safe_dir(path: str) -> bool:
    """Whether ``path`` may hold the step reports: a directory itself (not a symbolic link), owned by this user,
    that group and others may not write to."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not (st.st_mode & 0o022)  # nobody else may write there (reading is harmless)


# A running watch marks the directory it reads with "watch-<its pid>.alive" and removes the mark when it ends. The
# timer writes only while a marked watch is alive: a directory that outlived its watch (a `watch --pid` that ended
# while the process kept training, and a last write landing between its clean-up steps) is then left alone, and
# the run's summary goes to stderr as with no watch, instead of into a directory nobody reads (issue 41).
WATCH_MARK_PREFIX, WATCH_MARK_SUFFIX = "watch-", ".alive"


def watch_mark(pid: int) -> str:
    return f"{WATCH_MARK_PREFIX}{pid}{WATCH_MARK_SUFFIX}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 checks without sending anything). On Windows os.kill would end
    the process, so there a mark is taken as alive (the directory's existence, as before the marks)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    except OSError:
        return False
    return True


def watch_running(path: str) -> bool:
    """Whether a watch that is still alive marked ``path`` as the directory it reads."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    for n in names:
        if n.startswith(WATCH_MARK_PREFIX) and n.endswith(WATCH_MARK_SUFFIX):
            try:
                pid = int(n[len(WATCH_MARK_PREFIX):-len(WATCH_MARK_SUFFIX)])
            except ValueError:
                continue
            if pid_alive(pid):
                return True
    return False


_WRITES = itertools.count()


def _write_private(path: str, data: str) -> None:
    """Write ``data`` to ``path`` through a fresh private file in the same directory, then rename it over."""
    tmp = f"{path}.{os.getpid()}.{next(_WRITES)}.tmp"  # O_EXCL: a name already there fails, never followed
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
        # stalls: steps that stood out from the typical step (an exponential average of the others; see STALL_X),
        # the loop stopped for a checkpoint save, an evaluation or a synchronisation; what a
        # step waited for its batch is not a stall (it is counted as the wait)
        self.typical_s: Optional[float] = None
        self.typical_dev_s = 0.0  # mean absolute deviation of the steps from the typical one (smoothed alike)
        self.stall_count = 0
        self.stall_s = 0.0
        self.stall_at: List[float] = []  # time.time() of the first stalls' ends
        self.stall_each: List[float] = []  # ... and their lengths (s of the step's own work), in the same order
        # brief stalls: steps that stood out as far but took under STALL_MIN_S (a save of a small model, a short
        # evaluation); one costs little, hundreds of them do. Kept apart: the watch names them only by what the
        # process did meanwhile (writes, reads), since a loaded box's preemptions look as long
        self.brief_count = 0
        self.brief_s = 0.0
        self.brief_at: List[float] = []
        self.brief_each: List[float] = []
        # epochs: the same loader wrapped again continues these totals, one row per wrap (steps, step s, wait s)
        self.epochs: List[List[float]] = []
        self.epoch_count = 0

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
            "stall_count": self.stall_count, "stall_s": round(self.stall_s, 3),
            "stall_at": [round(t, 3) for t in self.stall_at],
            "stall_each_s": [round(t, 3) for t in self.stall_each],
            "brief_count": self.brief_count, "brief_s": round(self.brief_s, 3),
            "brief_at": [round(t, 3) for t in self.brief_at],
            "brief_each_s": [round(t, 4) for t in self.brief_each],
            "epochs": [[int(e[0]), round(e[1], 4), round(e[2], 4)] for e in self.epochs],
            "epoch_count": self.epoch_count,
        }

    def new_epoch(self) -> None:
        """The loader was wrapped again (the next epoch): its steps are counted in a row of their own."""
        self.epoch_count += 1
        if self.epoch_count <= EPOCHS_KEPT:
            self.epochs.append([0, 0.0, 0.0])

    def step_done(self, step: float, wait: float) -> None:
        """One finished step (after the first two): totals, the recent window, stalls."""
        self.wait_s += wait
        self.step_s += step
        if self.epochs and self.epoch_count <= EPOCHS_KEPT:
            row = self.epochs[-1]
            row[0] += 1
            row[1] += step
            row[2] += wait
        self.recent_wait.append(wait)
        self.recent_step.append(step)
        work = step - wait
        typical = self.typical_s
        if typical is not None and work < STALL_MIN_S and work >= STALL_X * typical \
                and work >= typical + STALL_DEV * self.typical_dev_s:
            self.brief_count += 1
            self.brief_s += work
            if len(self.brief_at) < STALLS_KEPT:
                self.brief_at.append(time.time())
                self.brief_each.append(work)
        elif typical is not None and work >= STALL_MIN_S and work >= STALL_X * typical \
                and work >= typical + STALL_DEV * self.typical_dev_s:
            self.stall_count += 1
            self.stall_s += work
            if len(self.stall_at) < STALLS_KEPT:
                self.stall_at.append(time.time())
                self.stall_each.append(work)
            return  # a stall does not move the typical step
        if typical is None:
            self.typical_s = work
            return
        self.typical_dev_s += 0.05 * (abs(work - typical) - self.typical_dev_s)
        self.typical_s = typical + 0.05 * (work - typical)


def _ms(v: Optional[float]) -> Optional[float]:
    return round(v * 1000.0, 3) if v is not None else None


class _Reporter:
    """Writes the loops' summaries for a running watch; prints them at exit when no watch is there to read them."""

    def __init__(self) -> None:
        self.loops: List[StepStats] = []
        self.by_key: Dict[Any, StepStats] = {}
        self.dir = watch_dir()
        self.seen_watch = False
        self._dir_checked = 0.0
        self._dir_ok = False
        self._last_flush = 0.0
        self.closed = False  # at_exit has written the last summary
        atexit.register(self.at_exit)

    def stats_for(self, iterable: Any, name: str) -> StepStats:
        """The totals of this loader: the same object wrapped again (the next epoch) continues its totals."""
        key = (name, id(iterable))
        stats = self.by_key.get(key)
        if stats is None:
            stats = StepStats(name)
            self.by_key[key] = stats
            self.loops.append(stats)
        return stats

    def flush(self) -> None:
        # a loop left with `break` keeps its generator alive until the interpreter tears the modules down; its
        # `finally` then runs with the builtins gone (`open` undefined): at_exit has already written everything
        if self.closed or sys.is_finalizing():
            return
        now = time.monotonic()
        self._last_flush = now
        if now - self._dir_checked >= 1.0:
            self._dir_checked = now
            self._dir_ok = safe_dir(self.dir) and watch_running(self.dir)
        if not self._dir_ok:
            return
        self.seen_watch = True
        path = os.path.join(self.dir, f"steps-{os.getpid()}.json")
        try:
            _write_private(path, json.dumps({"loops": [s.summary() for s in self.loops]}))
        except OSError:
            self._dir_ok = False  # the watch went away (or the disk is full): never fail the training loop

    def flush_due(self) -> None:
        """An epoch ended: write only if a flush interval has passed (thousands of short epochs, one write each
        ``FLUSH_S`` at most)."""
        if not self._last_flush or time.monotonic() - self._last_flush >= FLUSH_S:
            self.flush()  # the first loop's end is always written: a watch sees a loop that has ended

    def at_exit(self) -> None:
        if not self.loops:
            self.closed = True
            return
        try:
            self._dir_checked = 0.0
            self.flush()
            self.closed = True  # nothing is written after this summary
            if self._dir_ok:
                return  # a watch is there and has the report
            # no watch now (none ever ran, or a `watch --pid` came and went): the summary goes to stderr
            for s in self.loops:
                d = s.summary()
                frac = d["data_wait_fraction"]
                sys.stderr.write(
                    f"envdoctor timed({s.name}): {d['steps']} steps, waiting for data "
                    + (f"{100 * frac:.1f}% of the step time" if frac is not None else "unknown (fewer than 2 steps)")
                    + (f" (wait p50 {d['wait_p50_ms']} ms, step p50 {d['step_p50_ms']} ms)" if d["steps"] > 1
                       else "")
                    + "\n")
        except Exception:  # noqa: BLE001 - at interpreter exit: a report is never worth a traceback
            pass


_REPORTER: Optional[_Reporter] = None


def _reporter() -> _Reporter:
    global _REPORTER
    if _REPORTER is None:
        _REPORTER = _Reporter()
    return _REPORTER


def timed(iterable: Iterable[Any], name: Optional[str] = None) -> Iterator[Any]:
    """Yield what ``iterable`` yields, timing how long each ``next()`` blocks against the whole step."""
    reporter = _reporter()
    stats = reporter.stats_for(iterable, name or type(iterable).__name__)
    stats.new_epoch()
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
                    stats.step_done(step, prev_wait)
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
            if got >= next_flush:
                next_flush = clock() + FLUSH_S
                reporter.flush()
            yield item
    finally:
        # an epoch's end (or the generator closed at interpreter exit, when builtins may be gone: the exit
        # handler writes the last report)
        if not sys.is_finalizing():
            try:
                reporter.flush_due()
            except Exception:  # noqa: BLE001 - never fail the training loop for its report
                pass


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
