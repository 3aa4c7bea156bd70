"""`envdoctor watch`: the sampling loop, the launched command, the report (its options: envdoctor/cli/watch.py).

    envdoctor watch -- python train.py ...   launch and watch (exit code passes through unless --fail-on)
    envdoctor watch --pid PID                a run already going: its process tree
    envdoctor watch                          the GPUs and whichever processes use them
    envdoctor watch --replay FILE            judge a recording another tool made (dmon, query-gpu, iostat ...)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional

from ..probes.runner import STOP_SIGNALS

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
STOP_GRACE_S = 5.0
HANGUP = getattr(signal, "SIGHUP", None)  # the terminal hung up (absent on Windows)


class WatchUsageError(Exception):
    pass


# --------------------------------------------------------------------------- the command


def cmd_watch(args: Any, write: Callable[..., None]) -> int:
    """Run `envdoctor watch` with the parsed ``args``; ``write(text, output, utf8=False)`` prints the report
    (envdoctor.cli.common.write: the command line owns stdout). Bad options raise WatchUsageError."""
    cmd = list(args.cmd or [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.replay and (cmd or args.pid):
        raise WatchUsageError("--replay judges a recording: it takes no command and no --pid")
    if cmd and args.pid:
        raise WatchUsageError("give either a command to launch or --pid, not both")
    if args.pid is not None and args.pid <= 0:
        raise WatchUsageError(f"--pid must be a process id, got {args.pid}")
    if args.replay:
        facts = _replay(args)
        exit_code: Optional[int] = None
    else:
        facts, exit_code = _live(args, cmd)
    if args.output:
        _save(facts, args.output, redact=not args.no_redact)
    return _report(facts, args, exit_code, write)


def _replay(args: Any):
    from ..model.facts import Facts
    from .replay import ReplayError, replay

    texts = []
    for path in args.replay:
        try:
            if path == "-":
                texts.append(sys.stdin.read())
            else:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    texts.append(fh.read(64 * 2**20))
        except OSError as e:
            raise WatchUsageError(f"cannot read {path}: {e.strerror}") from None
    try:
        w = replay("\n".join(texts), interval_s=args.interval, name=", ".join(os.path.basename(p) for p in args.replay))
    except ReplayError as e:
        raise WatchUsageError(f"{', '.join(args.replay)}: {e}") from None
    return Facts(watch=w, origin="paste", envdoctor_version=_version(), collected_at=_now())


def _version() -> str:
    from .. import __version__

    return __version__


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _save(facts, path: str, redact: bool = True) -> None:
    """The recording as a facts snapshot; redacted like `collect` (host names, home paths) unless --no-redact."""
    import json

    from ..domain.safe_text import escape_json_surrogates
    from ..report.redact import redact_facts_dict

    data = facts.to_dict()
    if redact:
        data = redact_facts_dict(data)
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(escape_json_surrogates(json.dumps(data, indent=2, sort_keys=True)) + "\n")
    except OSError as e:
        raise WatchUsageError(f"cannot write {path}: {e.strerror}") from None


def _report(facts, args, exit_code: Optional[int], write: Callable[..., None]) -> int:
    from ..report import render_json, render_markdown
    from ..services.collect import judge
    from .display import timeline

    report = judge(facts, only=["watch.*"])
    w = facts.watch
    lines = timeline(w.samples)
    if args.format == "json":
        write(render_json(report, redact=not args.no_redact), None, utf8=True)
    elif args.format == "markdown":
        md = render_markdown(report, redact=not args.no_redact)
        block = ["", "### Timeline", "", "```", *lines, "```", ""] if lines else []
        write(_header(w) + "\n" + "\n".join(block) + "\n" + md, None, utf8=True)
    else:
        from ..report.console import terminal_width
        from ..report.redact import redact_text
        from .display import verdict_lines

        text = "\n".join([_header(w), *lines, "", *verdict_lines(report, args.verbose, terminal_width())])
        write(text if args.no_redact else redact_text(text), None)
    if args.fail_on and report.has_at_least(args.fail_on):
        return EXIT_FINDINGS
    return exit_code if exit_code is not None else EXIT_OK


def _header(w) -> str:
    s = w.summary or {}
    what = " ".join(w.command) if w.command else (f"pid {w.pid}" if w.pid else w.source or "the GPUs")
    parts = [f"envdoctor watch: {what}: {s.get('sample_count', len(w.samples))} samples over "
             f"{s.get('duration_s', '?')} s"]
    if s.get("warmup_s"):
        parts.append(f"warm-up {s['warmup_s']:g} s")
    if s.get("dataloader_workers") is not None:
        parts.append(f"DataLoader workers {s['dataloader_workers']}")
    if s.get("data_wait_fraction") is not None:
        parts.append(f"data wait {100 * s['data_wait_fraction']:.1f}% of {s.get('step_count')} steps")
    if w.exit_code is not None:
        parts.append(f"exit code {w.exit_code}")
    out = ", ".join(parts)
    for u in w.unseen:
        out += f"\n  not seen: {u}"
    for n in s.get("notes") or []:
        out += f"\n  note: {n}"
    return out


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
        raise WatchUsageError(f"cannot run {cmd[0]}: {e.strerror}") from None


def _signal_child(child: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(child.pid, sig)
    except (OSError, AttributeError):
        try:
            child.send_signal(sig)
        except OSError:
            pass


def _signal_child_group(child: subprocess.Popen, sig: int) -> None:
    """``sig`` to what is left of an ended command's process group. Its pid names the group while a member
    lives (Linux does not reuse a pid still in use as a process group's id); with none left, ESRCH, ignored."""
    if os.name != "posix":
        return
    try:
        os.killpg(child.pid, sig)
    except OSError:
        pass


def _stop_child(child: subprocess.Popen) -> None:
    """Stop a launched command as Ctrl-C would, then harder if it does not exit."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if child.poll() is not None:
            return
        _signal_child(child, sig)
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


def _live(args: Any, cmd: List[str]):
    from ..domain.recording import summarize
    from ..model.facts import Facts, ProbeStatus, Watch
    from .display import Live
    from .record import Recorder
    from .sample import GpuReader, HostReader, ProcessTree, Unseen, cpus_available
    from .timer import read_reports, watch_dir

    interval = args.interval or 0.5
    if interval < 0.1:
        raise WatchUsageError("--interval below 0.1 s would cost more than it shows")
    data = [os.path.abspath(p) for p in (args.data or [])]
    for p in data:
        if not os.path.exists(p):
            raise WatchUsageError(f"--data {p}: no such file or directory")
    if args.pid is not None:
        import psutil

        if not psutil.pid_exists(args.pid):
            raise WatchUsageError(f"--pid {args.pid}: no such process")
    steps_dir, made_dir, steps_why = steps_directory(watch_dir(), launching=bool(cmd))
    if steps_dir and not mark_steps_directory(steps_dir):
        release_steps_directory(steps_dir, made_dir, ())
        steps_dir, made_dir, steps_why = "", False, f"the step timer's directory {watch_dir()} cannot be marked " \
            "as read by this watch: its reports unread"
    env = dict(os.environ)
    if steps_dir:
        env["ENVDOCTOR_WATCH_DIR"] = steps_dir
    stop: Dict[str, Any] = {"why": None, "signum": None, "at": None}
    previous = {}
    launched: List[Optional[subprocess.Popen]] = [None]

    def on_signal(signum, _frame):
        child = launched[0]
        if stop["why"] is None:
            stop["why"], stop["signum"], stop["at"] = signal.Signals(signum).name, signum, time.monotonic()
            if child is not None:
                _signal_child(child, signum)  # forwarded once; we keep sampling until it exits
        else:
            if child is not None:
                _signal_child(child, signal.SIGKILL if signum == signal.SIGTERM else signum)

    # the handler before the command starts: a Ctrl-C the moment it has started is forwarded to it, not lost
    # to the command line's own handler (which would end watch before the command). SIGHUP too: the command runs
    # in its own process group, which a terminal's hang-up (an SSH drop) never reaches; one ignored from the
    # start (`nohup envdoctor watch ...`) stays ignored, and the run goes on
    for sig in STOP_SIGNALS:
        try:
            if sig == HANGUP and signal.getsignal(sig) == signal.SIG_IGN:
                continue
            previous[sig] = signal.signal(sig, on_signal)
        except ValueError:  # not the main thread
            pass
    child = _launch(cmd, env) if cmd else None
    launched[0] = child
    if child is not None and stop["signum"] is not None:
        _signal_child(child, stop["signum"])  # it came while the command was being started
    root = child.pid if child else args.pid
    unseen = Unseen()
    if steps_why:
        unseen.add(steps_why)
    gpu = GpuReader(unseen)
    host = HostReader(unseen, data)
    tree = ProcessTree(unseen, root)
    if root is None:
        unseen.add("no command or --pid: the processes on the GPUs are watched (none without NVML)")
    live = Live(in_place=child is None, interval_s=interval)
    rec = Recorder()
    t0 = time.monotonic()
    t0_epoch = time.time()
    deadline = t0 + args.duration if args.duration else None
    stopped_by_duration = False
    cpu_available, cpu_how = cpus_available(root)
    last_verdict = t0
    from .display import StableVerdict

    stable = StableVerdict()
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
                live.set_verdict(stable.offer(_verdict_so_far(rec.samples, interval, steps_dir, tree.pids_seen,
                                                              t0_epoch, cpu_available)))
            live.update(sample)
            if child is not None and child.poll() is not None:
                break
            if root is not None and child is None and not _alive(root):
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped_by_duration = True
                break
            if stop["why"] is not None and child is None:
                break
            if stop["signum"] == HANGUP and child is not None and time.monotonic() - stop["at"] >= STOP_GRACE_S:
                break  # no one is left to press Ctrl-C again: stopped below, harder each STOP_GRACE_S
            tree.wait_until(tick + interval)  # the training process's state sampled meanwhile
    finally:
        try:
            live.close()
        except (OSError, ValueError):  # the terminal hung up (EIO): the command is stopped all the same
            pass
        if child is not None and child.poll() is None:
            try:
                sys.stderr.write(f"envdoctor watch: --duration {args.duration:g} s reached: stopping {cmd[0]} "
                                 f"(SIGINT, then SIGTERM and SIGKILL {STOP_GRACE_S:g} s apart if it does not exit)\n"
                                 if stopped_by_duration else f"envdoctor watch: stopping {cmd[0]}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            _stop_child(child)
        if child is not None and stop["signum"] == HANGUP:
            # its DataLoader workers (its process group) that outlived it: nobody is left to see or stop them
            _signal_child_group(child, signal.SIGKILL)
        gpu.close()
        for sig, old in previous.items():
            signal.signal(sig, old)
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
    if stop["why"]:
        summary["stopped_by"] = stop["why"]
    elif stopped_by_duration:
        summary["stopped_by"] = "duration"
    w = Watch(status=ProbeStatus.OK, source="live", command=cmd or None, pid=root,
              exit_code=exit_code, interval_s=interval, downsampled_by=rec.every if rec.every > 1 else None,
              data_paths=data or None, cpu_available=cpu_available, samples=rec.samples, summary=summary,
              unseen=unseen.lines)
    facts = Facts(watch=w, origin="live", envdoctor_version=_version(), collected_at=_now())
    if stopped_by_duration and child is not None:
        exit_code = EXIT_OK  # we stopped it: its exit code says nothing about the run
    return facts, exit_status(exit_code)


def exit_status(returncode: Optional[int]) -> Optional[int]:
    """The command's return code as watch's own exit status, as a shell reports it: killed by signal N
    (``returncode`` -N) is 128 + N (130 for SIGINT, 143 for SIGTERM), not -N taken modulo 256 (254, 241).
    The facts keep the return code itself (``watch.exit_code``: -2)."""
    if returncode is not None and returncode < 0:
        return 128 - returncode
    return returncode


VERDICT_AFTER_S = 5.0  # the live view states a verdict once this much was seen
VERDICT_EVERY_S = 5.0  # and renews it this often (the judge over the samples so far: milliseconds)


def _verdict_so_far(samples, interval, steps_dir, pids, t0_epoch, cpu_available) -> tuple[str, str] | None:
    """The watch checks' verdict on what was recorded so far, (its finding code, one phrase), for the live view;
    None on any failure (the live view never stops the recording)."""
    try:
        from ..domain.recording import summarize
        from ..model.facts import Facts, ProbeStatus, Watch
        from ..services.collect import judge
        from .display import headline_of
        from .timer import read_reports

        steps = read_reports(steps_dir, pids) if steps_dir else []
        w = Watch(status=ProbeStatus.OK, source="live", interval_s=interval, samples=list(samples),
                  summary=summarize(list(samples), interval, steps, t0_epoch), cpu_available=cpu_available)
        return headline_of(judge(Facts(watch=w), only=["watch.*"]))
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
