"""A watched run as facts, the source of `envdoctor watch`: the launched command (or the --pid process tree, or the
GPUs' processes) sampled with the host and the GPUs until it ends, the step timer's reports read, the recording
summarised into a Facts snapshot; a recording another tool made (replay.py) read into the same facts.

Below the judge (docs/architecture.md): services/watch.py judges what this records, report/watch.py renders it.
Nothing here installs a signal handler or prints: the command line hands each signal it receives to
``Stop.signal`` (forwarded to the launched command once, harder after), and what the run shows as it goes
(samples, the recording so far, a notice that the command is being stopped) goes to the ``Observer`` given.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

STOP_GRACE_S = 5.0
HANGUP = getattr(signal, "SIGHUP", None)  # the terminal hung up (absent on Windows)
DEFAULT_INTERVAL_S = 0.5  # between samples of a live watch
MIN_INTERVAL_S = 0.1  # below it, sampling would cost more than it shows


class RecordingError(ValueError):
    """A run that cannot be watched or a recording that cannot be read: a one-line reason."""


class Stop:
    """Why a live watch stops early: a signal the command line received, handed over with ``signal(signum)``.

    The first is forwarded once to the launched command (its own process group, which a Ctrl-C on the terminal,
    or a hang-up, never reaches), and sampling goes on until it exits; a second is forwarded again, SIGTERM as
    SIGKILL. A signal that came before the command started is forwarded as it starts (``adopt``). It takes no
    lock, so a handler may call it at any moment."""

    def __init__(self) -> None:
        self.why: Optional[str] = None  # the first signal's name ("SIGINT")
        self.signum: Optional[int] = None
        self.at: Optional[float] = None  # time.monotonic() when it came
        self.child: Optional[subprocess.Popen] = None

    def signal(self, signum: int) -> None:
        child = self.child
        if self.why is None:
            self.why, self.signum, self.at = signal.Signals(signum).name, signum, time.monotonic()
            if child is not None:
                signal_child(child, signum)  # forwarded once; we keep sampling until it exits
        elif child is not None:
            signal_child(child, signal.SIGKILL if signum == signal.SIGTERM else signum)

    def adopt(self, child: subprocess.Popen) -> None:
        self.child = child
        if self.signum is not None:
            signal_child(child, self.signum)  # it came while the command was being started


class Observer(Protocol):
    """What sees a live watch as it goes (the command line's live view, through services/watch.py)."""

    @property
    def enabled(self) -> bool:
        """Whether anyone looks as it goes: only then is the recording so far summarised for a verdict."""
        ...

    def begin(self, launched: bool, interval_s: float) -> None: ...

    def sample(self, sample: Dict[str, Any]) -> None: ...

    def so_far(self, watch: Any) -> None:
        """The recording so far (a ``Watch``), every VERDICT_EVERY_S once VERDICT_AFTER_S have passed."""
        ...

    def notice(self, text: str) -> None:
        """One line to tell whoever watches (the command is being stopped)."""
        ...

    def close(self) -> None: ...


class Quiet:
    """The observer of a watch nobody sees as it goes (the Python API, tests)."""

    enabled = False

    def begin(self, launched: bool, interval_s: float) -> None:
        pass

    def sample(self, sample: Dict[str, Any]) -> None:
        pass

    def so_far(self, watch: Any) -> None:
        pass

    def notice(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def replay_recordings(recordings: Sequence[Tuple[str, str]], interval_s: Optional[float] = None):
    """Facts (origin "paste") of recordings another tool made, each (its path as given, its text); several are
    one recording (two tools' outputs side by side). RecordingError when nothing in them is a recording."""
    from ..model.facts import Facts
    from .replay import ReplayError, replay

    paths = [p for p, _ in recordings]
    try:
        w = replay("\n".join(t for _, t in recordings), interval_s=interval_s,
                   name=", ".join(os.path.basename(p) for p in paths))
    except ReplayError as e:
        raise RecordingError(f"{', '.join(paths)}: {e}") from None
    return Facts(watch=w, origin="paste", envdoctor_version=_version(), collected_at=_now())


def _version() -> str:
    from .. import __version__

    return __version__


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


# --------------------------------------------------------------------------- watching


def _launch(cmd: List[str], env: Dict[str, str]) -> subprocess.Popen:
    kw: Dict[str, Any] = {}
    if os.name == "posix":
        # its own process group: a Ctrl-C reaches it once, forwarded by us, and we still report after it
        if sys.version_info >= (3, 11):
            kw["process_group"] = 0
        else:
            kw["preexec_fn"] = os.setpgrp  # no threads exist yet when we launch
    try:
        return subprocess.Popen(cmd, env=env, **kw)
    except OSError as e:
        raise RecordingError(f"cannot run {cmd[0]}: {e.strerror}") from None


def signal_child(child: subprocess.Popen, sig: int) -> None:
    """``sig`` to the launched command's process group (else to it alone)."""
    try:
        os.killpg(child.pid, sig)
    except (OSError, AttributeError):
        try:
            child.send_signal(sig)
        except OSError:
            pass


def signal_child_group(child: subprocess.Popen, sig: int) -> None:
    """``sig`` to what is left of an ended command's process group. Its pid names the group while a member
    lives (Linux does not reuse a pid still in use as a process group's id); with none left, ESRCH, ignored."""
    if os.name != "posix":
        return
    try:
        os.killpg(child.pid, sig)
    except OSError:
        pass


def stop_child(child: subprocess.Popen) -> None:
    """Stop a launched command as Ctrl-C would, then harder if it does not exit."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if child.poll() is not None:
            return
        signal_child(child, sig)
        try:
            child.wait(STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def local_nvme(exclude: List[str]) -> Optional[Dict[str, Any]]:
    """The local NVMe filesystem with most free space, not the one the data is on (a copy destination)."""
    import psutil

    best = None
    parts = psutil.disk_partitions(all=False)
    # the filesystem each data path is on (its longest mount-point prefix) is no place to copy it to
    for path in list(exclude):
        mounts = [q.mountpoint for q in parts if path == q.mountpoint or path.startswith(q.mountpoint.rstrip("/") + "/")]
        if mounts:
            exclude.append(max(mounts, key=len))
    for part in parts:
        if "nvme" not in part.device or part.mountpoint in ("/boot", "/boot/efi") or part.mountpoint in exclude:
            continue
        try:
            free = shutil.disk_usage(part.mountpoint).free
        except OSError:
            continue
        if best is None or free > best["free_bytes"]:
            best = {"mount": part.mountpoint, "device": os.path.basename(part.device), "free_bytes": free,
                    "free_gb": round(free / 1e9)}
    return best


def record_live(cmd: List[str], pid: Optional[int] = None, interval_s: Optional[float] = None,
                duration_s: Optional[float] = None, data: Sequence[str] = (), stop: Optional[Stop] = None,
                observer: Optional[Observer] = None):
    """Watch ``cmd`` (launched here), the process ``pid`` (never signalled) or, with neither, the GPUs'
    processes, until it ends, ``duration_s`` passes or ``stop`` says a signal came; (the facts, the command's
    return code or None). The options are taken as valid (services/watch.py checks them); RecordingError when
    the command cannot start."""
    from ..domain.recording import summarize
    from ..model.facts import Facts, ProbeStatus, Watch
    from .record import Recorder
    from .sample import GpuReader, HostReader, ProcessTree, Unseen, cpus_available
    from .timer import read_reports, watch_dir

    stop = stop if stop is not None else Stop()
    live: Observer = observer if observer is not None else Quiet()
    interval = interval_s or DEFAULT_INTERVAL_S
    data = [os.path.abspath(p) for p in data]
    steps_dir, made_dir, steps_why = steps_directory(watch_dir(), launching=bool(cmd))
    if steps_dir and not mark_steps_directory(steps_dir):
        release_steps_directory(steps_dir, made_dir, ())
        steps_dir, made_dir, steps_why = "", False, f"the step timer's directory {watch_dir()} cannot be marked " \
            "as read by this watch: its reports unread"
    env = dict(os.environ)
    if steps_dir:
        env["ENVDOCTOR_WATCH_DIR"] = steps_dir
    try:
        child = _launch(cmd, env) if cmd else None
    except RecordingError:
        if steps_dir:
            release_steps_directory(steps_dir, made_dir, ())
        raise
    if child is not None:
        stop.adopt(child)
    root = child.pid if child else pid
    unseen = Unseen()
    if steps_why:
        unseen.add(steps_why)
    gpu = GpuReader(unseen)
    host = HostReader(unseen, data)
    tree = ProcessTree(unseen, root)
    if root is None:
        unseen.add("no command or --pid: the processes on the GPUs are watched (none without NVML)")
    live.begin(launched=child is not None, interval_s=interval)
    rec = Recorder()
    t0 = time.monotonic()
    t0_epoch = time.time()
    tree.t0 = t0
    deadline = t0 + duration_s if duration_s else None
    stopped_by_duration = False
    cpu_available, cpu_how = cpus_available(root)
    last_verdict = t0
    try:
        while True:
            tick = time.monotonic()
            gpus = gpu.read()
            gpu_pids = gpu.local_pids(gpus)
            sample: Dict[str, Any] = {"t_s": round(tick - t0, 3), "gpus": gpus, "host": host.read()}
            procs = tree.read(gpu_pids)
            if procs is not None:
                sample["procs"] = procs
            rec.add(sample)
            if live.enabled and tick - last_verdict >= VERDICT_EVERY_S and tick - t0 >= VERDICT_AFTER_S:
                last_verdict = tick
                so_far = recording_so_far(rec.samples, interval, steps_dir, tree.pids_seen, t0_epoch, cpu_available)
                if so_far is not None:
                    live.so_far(so_far)
            live.sample(sample)
            if child is not None and child.poll() is not None:
                break
            if root is not None and child is None and not _alive(root):
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped_by_duration = True
                break
            if stop.why is not None and child is None:
                break
            if stop.signum == HANGUP and child is not None and time.monotonic() - (stop.at or 0.0) >= STOP_GRACE_S:
                break  # no one is left to press Ctrl-C again: stopped below, harder each STOP_GRACE_S
            tree.wait_until(tick + interval)  # the training process's state sampled meanwhile
    finally:
        try:
            live.close()
        except (OSError, ValueError):  # the terminal hung up (EIO): the command is stopped all the same
            pass
        if child is not None and child.poll() is None:
            try:
                live.notice(f"envdoctor watch: --duration {duration_s:g} s reached: stopping {cmd[0]} "
                            f"(SIGINT, then SIGTERM and SIGKILL {STOP_GRACE_S:g} s apart if it does not exit)"
                            if stopped_by_duration else f"envdoctor watch: stopping {cmd[0]}")
            except (OSError, ValueError):
                pass
            stop_child(child)
        if child is not None and stop.signum == HANGUP:
            # its DataLoader workers (its process group) that outlived it: nobody is left to see or stop them
            signal_child_group(child, signal.SIGKILL)
        gpu.close()
    exit_code = child.returncode if child is not None else None
    steps = read_reports(steps_dir, tree.pids_seen) if steps_dir else []
    if steps_dir:
        release_steps_directory(steps_dir, made_dir, tree.pids_seen)
    if not steps:
        unseen.add("no step timer reported (wrap the loader: `for batch in timed(loader)`, "
                   "from envdoctor.watch import timed): the time steps wait for data is unknown")
    if root is not None and not tree.pids_seen:
        unseen.add(f"process {root} and its children could not be read")
    summary = summarize(rec.samples, interval, steps, t0_epoch)
    summary["cpu_available_from"] = cpu_how
    nvme = local_nvme(list(data))
    if nvme:
        summary["local_nvme"] = nvme
    try:
        summary["shm_total_bytes"] = shutil.disk_usage("/dev/shm").total
    except OSError:
        pass
    if stop.why:
        summary["stopped_by"] = stop.why
    elif stopped_by_duration:
        summary["stopped_by"] = "duration"
    w = Watch(status=ProbeStatus.OK, source="live", command=cmd or None, pid=root,
              exit_code=exit_code, interval_s=interval, downsampled_by=rec.every if rec.every > 1 else None,
              data_paths=data or None, cpu_available=cpu_available, samples=rec.samples, summary=summary,
              unseen=unseen.lines)
    facts = Facts(watch=w, origin="live", envdoctor_version=_version(), collected_at=_now())
    if stopped_by_duration and child is not None:
        exit_code = 0  # we stopped it: its exit code says nothing about the run
    return facts, exit_code


def exit_status(returncode: Optional[int]) -> Optional[int]:
    """The command's return code as a shell reports it (what `watch` exits with): killed by signal N
    (``returncode`` -N) is 128 + N (130 for SIGINT, 143 for SIGTERM), not -N taken modulo 256 (254, 241).
    The facts keep the return code itself (``watch.exit_code``: -2)."""
    if returncode is not None and returncode < 0:
        return 128 - returncode
    return returncode


VERDICT_AFTER_S = 5.0  # the live view states a verdict once this much was seen
VERDICT_EVERY_S = 5.0  # and renews it this often (the judge over the samples so far: milliseconds)


def recording_so_far(samples: Sequence[Dict[str, Any]], interval: float, steps_dir: str, pids: Any,
                     t0_epoch: Optional[float], cpu_available: Optional[float]):
    """What was recorded so far as a ``Watch`` (summarised, the step timer's reports read), for the live view's
    verdict; None on any failure (the live view never stops the recording)."""
    try:
        from ..domain.recording import summarize
        from ..model.facts import ProbeStatus, Watch
        from .timer import read_reports

        steps = read_reports(steps_dir, pids) if steps_dir else []
        return Watch(status=ProbeStatus.OK, source="live", interval_s=interval, samples=list(samples),
                     summary=summarize(list(samples), interval, steps, t0_epoch), cpu_available=cpu_available)
    except Exception:  # noqa: BLE001 - a live hint only: the final verdict is judged after the run
        return None


def steps_directory(path: str, launching: bool) -> tuple[str, bool, str]:
    """Where the step timer's reports meet the watch: (directory, whether this watch made it, why not).

    A launched command always gets a fresh private directory of its own (tempfile.mkdtemp, mode 0700) through
    ENVDOCTOR_WATCH_DIR: two watches at once never share one, so one finishing cannot remove the other's. A --pid
    process was started before the watch and can only know the default path, which lies in a world-writable
    /tmp: it is used only when this watch makes it or finds it safe (envdoctor.watch.timer.safe_dir: a real
    directory of this user's that nobody else may write); otherwise its timer is not read and the recording
    says why."""
    import tempfile

    from .timer import safe_dir

    if launching:
        try:
            return tempfile.mkdtemp(prefix="envdoctor-watch-"), True, ""
        except OSError as e:
            return "", False, f"no private directory for the step timer ({e.strerror}): its reports unread"
    try:
        os.mkdir(path, 0o700)
        return path, True, ""
    except FileExistsError:
        if safe_dir(path):
            return path, False, ""
    except OSError as e:
        return "", False, f"the step timer's directory {path} cannot be made ({e.strerror}): its reports unread"
    return "", False, (f"the step timer's directory {path} is not this user's private directory (a link, another "
                       "owner, or writable by others): its reports are not read; remove it, or set "
                       "ENVDOCTOR_WATCH_DIR to a private directory for both the training process and the watch")


def mark_steps_directory(path: str) -> bool:
    """Mark ``path`` as read by this watch (envdoctor.watch.timer.watch_mark): timers write there only while a
    marked watch lives. Marks and reports that dead processes left (a watch killed before its clean-up) go."""
    from .timer import WATCH_MARK_PREFIX, WATCH_MARK_SUFFIX, pid_alive, watch_mark

    try:
        for n in os.listdir(path):
            head, tail = ((WATCH_MARK_PREFIX, WATCH_MARK_SUFFIX) if n.startswith(WATCH_MARK_PREFIX)
                          else ("steps-", ".json"))
            if n.startswith(head) and n.endswith(tail) and n[len(head):-len(tail)].isdigit() \
                    and not pid_alive(int(n[len(head):-len(tail)])):
                os.remove(os.path.join(path, n))
        fd = os.open(os.path.join(path, watch_mark(os.getpid())),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        os.close(fd)
        return True
    except OSError:
        return False


RELEASE_TRIES, RELEASE_PAUSE_S = 8, 0.25  # a timer re-checks the mark every second: 2 s outlasts its last write


def release_steps_directory(path: str, made: bool, pids) -> bool:
    """Take this watch's mark away, remove the watched processes' reports and, when this watch made the directory,
    the directory too (True when it is gone or was not ours). A timer that still runs (a `--pid` process that goes
    on training) may write once more within a second of the mark going: the removal is tried again until that
    has passed, so the directory does not outlive the watch."""
    import time as _time

    from .timer import watch_mark

    try:
        os.remove(os.path.join(path, watch_mark(os.getpid())))
    except OSError:
        pass
    for attempt in range(RELEASE_TRIES if made else 1):
        for pid in pids:
            try:
                os.remove(os.path.join(path, f"steps-{pid}.json"))
            except OSError:
                pass
        if not made:
            return True
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if attempt + 1 < RELEASE_TRIES:
                _time.sleep(RELEASE_PAUSE_S)
    return False


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
