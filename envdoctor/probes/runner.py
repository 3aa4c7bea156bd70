"""Subprocess runner for probes: argv lists only, always a timeout, LC_ALL=C, never raises."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Set, Tuple

from envdoctor.domain.fastclass import dataclass

DEFAULT_TIMEOUT_S = 10.0
# What one command may print (per stream) before the rest is dropped: nvidia-smi -q on 8 GPUs is ~200 KB,
# the payload's JSON a few hundred KB at most; a runaway child must not fill envdoctor's memory.
OUTPUT_CAP_BYTES = 8 * 1024 * 1024

# Every child still running, so that Ctrl-C / SIGTERM can end them all at once: each runs in its own
# session (see Runner.run), so the terminal's SIGINT never reaches it and nobody else would.
_LIVE_LOCK = threading.RLock()
_LIVE: Set[subprocess.Popen] = set()
_STOPPING = threading.Event()


class _Popen(subprocess.Popen):
    """Popen whose child never outlives a signal that lands while it starts. Ctrl-C (KeyboardInterrupt) or
    envdoctor's own stop can be raised inside ``Popen()`` after the fork, while the parent waits for the exec:
    the object is then never returned, so nothing could register or kill the child. Here the half-started child
    is killed with its process group and reaped before the exception goes on. An OSError (the exec itself
    failed) is left alone: CPython has already reaped that child, and its pid may be reused."""

    def _execute_child(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        try:
            super()._execute_child(*args, **kwargs)  # type: ignore[misc]
        except OSError:
            raise
        except BaseException:
            pid = getattr(self, "pid", None)
            if pid and os.name == "posix":
                for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL),
                             lambda: os.waitpid(pid, 0)):
                    try:
                        kill()
                    except OSError:
                        pass
            raise


def stop_all_children() -> int:
    """Kill every running child's process group and refuse new ones; returns how many were running.

    Called from envdoctor's signal handler (cli/signals.py, the main thread): the RLock lets it run even if the
    main thread was itself starting a command.
    """
    with _LIVE_LOCK:
        _STOPPING.set()
        live = list(_LIVE)
        for proc in live:
            _kill_tree(proc)
        return len(live)


@contextlib.contextmanager
def children_end_with_interrupt() -> Iterator[None]:
    """For the Python API, where no signal handler of ours runs: a KeyboardInterrupt anywhere inside (while
    the probe threads start, while they are joined, between two probes) ends every child before it goes on.
    Each child runs in its own session, so the terminal's SIGINT never reaches it; a window left outside this
    (a Thread.start() interrupted before the join loop began) left the interpreter's payload running."""
    try:
        yield
    except KeyboardInterrupt:
        stop_all_children()
        raise


def live_children() -> int:
    with _LIVE_LOCK:
        return len(_LIVE)


def allow_children() -> None:
    """Undo stop_all_children (a library caller that handles the signal and carries on)."""
    _STOPPING.clear()


def _nowhere_on_path(name: str, path: Optional[str]) -> bool:
    """A bare command name that no PATH directory holds (as far as this user can see)."""
    if os.sep in name or (os.altsep and os.altsep in name):
        return False
    dirs = (path if path is not None else os.defpath).split(os.pathsep)
    return not any(os.path.lexists(os.path.join(d or ".", name)) for d in dirs)



class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived: the children are already killed; ``facts`` holds what was read by then.

    A BaseException, like KeyboardInterrupt, so that no probe or check guard (``except Exception``) eats it. The
    waits raise it when ``INTERRUPT`` holds a signal (the command line's handler raises nothing).
    """

    def __init__(self, signum: int, facts: Any = None):
        super().__init__(signum)
        self.signum = signum
        self.facts = facts  # envdoctor.model.facts.Facts, when collection had begun
        self.partial: Optional[Dict[str, Tuple[Any, Any]]] = None  # probe results, while collecting

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


# The signals that stop a command: SIGINT (Ctrl-C), SIGTERM (a scheduler, kill) and SIGHUP (the terminal hung up:
# an SSH connection dropped; absent on Windows). Each ends every child envdoctor started: the CLI's one handler
# (cli/signals.py) takes all three, and hands them to watch's Stop (watch/command.py) while a watch runs (issue 40: a hang-up left the watched run, its
# DataLoader workers and a hung target interpreter running, each in its own process group or session).
STOP_SIGNALS: Tuple[int, ...] = tuple(
    s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)



class Interrupt:
    """The stop a signal asked for. The command line's one signal runtime (cli/signals.py) records the signal here
    and ends the children (``stop_all_children``); it raises nothing into the code that runs, because a raise can
    land where Python drops it (an import's module-lock callback) or wraps it (class creation). The waits look
    here instead and unwind with ``Interrupted``: the probes' join loop (services/collect.py), a download's wait,
    a fleet rank's start-up and gathers, the bench's disk reads; a wait on a child needs nothing, the child is
    killed. cli.main clears it when the command is done (``clear``).

    A plain attribute, no lock and no threading.Event: the handler runs in the main thread between two bytecodes,
    and an Event's lock may be held by that same thread at that moment."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None

    def set(self, signum: int) -> None:
        if self.signum is None:  # the first signal is the one reported
            self.signum = signum

    def clear(self) -> None:
        self.signum = None

    def is_set(self) -> bool:
        return self.signum is not None

    def check(self) -> None:
        """Raise ``Interrupted`` when a signal was recorded (called by the waits)."""
        signum = self.signum
        if signum is not None:
            raise Interrupted(signum)

    def join(self, thread: threading.Thread, timeout: Optional[float] = None, every_s: float = 0.1) -> None:
        """``thread.join(timeout)`` that ends early with ``Interrupted`` once a signal is recorded: a long join
        is not woken by a handler that returns (PEP 475 resumes the wait)."""
        end = None if timeout is None else time.monotonic() + timeout
        while thread.is_alive():
            self.check()
            left = every_s if end is None else min(every_s, end - time.monotonic())
            if left <= 0:
                return
            thread.join(left)
        self.check()


INTERRUPT = Interrupt()

@dataclass(frozen=True)
class RunResult:
    argv: tuple
    returncode: Optional[int]  # None when the command did not run or timed out
    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None  # "not found", "timed out after 10.0 s", "permission denied: ..."
    duration_s: float = 0.0
    truncated: bool = False  # it printed more than OUTPUT_CAP_BYTES on a stream: the rest was dropped

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    @property
    def not_found(self) -> bool:
        return self.error == "not found"

    @property
    def timed_out(self) -> bool:
        return bool(self.error and self.error.startswith("timed out"))

    def describe(self) -> str:
        """One line for a probe's reason: what ran and how it ended."""
        cmd = " ".join(self.argv)
        if self.error:
            return f"`{cmd}`: {self.error}"
        if self.returncode != 0:
            tail = (self.stderr.strip() or self.stdout.strip()).splitlines()
            msg = tail[-1] if tail else ""
            return f"`{cmd}` exited {self.returncode}" + (f": {msg[:200]}" if msg else "")
        return f"`{cmd}` ok"


@dataclass(frozen=True)
class StreamResult:
    """How a streamed command ended (its stdout went line by line to the caller)."""

    argv: tuple
    returncode: Optional[int]  # None when it did not run, or was killed at its deadline
    stderr: str = ""  # its last OUTPUT_CAP_BYTES
    error: Optional[str] = None  # "not found", "could not start: ...", "interrupted"
    killed: bool = False  # a deadline passed before its next line: killed with its process group
    duration_s: float = 0.0


class Runner:
    """Runs commands for probes. Tests substitute ``tests.fakes.FakeRunner`` (same interface)."""

    def __init__(self, env: Optional[Mapping[str, str]] = None):
        self._env = env

    def which(self, name: str) -> Optional[str]:
        path = self._env.get("PATH") if self._env is not None else None
        return shutil.which(name, path=path)

    def environment(self, env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """The environment a command run with ``env`` gets: ours (or the one given), ``env`` on top, LC_ALL=C."""
        full_env: Dict[str, str] = dict(self._env if self._env is not None else os.environ)
        if env:
            full_env.update(env)
        full_env["LC_ALL"] = "C"
        full_env.setdefault("LANG", "C")
        return full_env

    def start(self, argv: Sequence[str], env: Optional[Mapping[str, str]] = None) -> Started:
        """Start a command now and read its output as it comes; ``Started.result(timeout)`` waits for it later.

        Its stdin is a pipe, open until ``Started.close_stdin()`` (a child may wait on it as a gate). Never
        raises: a command that could not start is a Started whose result() says why."""
        argv = tuple(str(a) for a in argv)
        full_env = self.environment(env)
        start = time.monotonic()
        with _LIVE_LOCK:
            if _STOPPING.is_set():
                return Started(argv, full_env, None, RunResult(argv, None, error="interrupted"), start)
            try:
                proc = _Popen(  # noqa: S603 - argv list, no shell; its own session, as in run()
                    argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, env=full_env,
                    start_new_session=os.name == "posix",
                )
            except FileNotFoundError:
                return Started(argv, full_env, None, RunResult(argv, None, error="not found"), start)
            except OSError as e:
                return Started(argv, full_env, None, RunResult(argv, None, error=f"could not start: {e}"), start)
            _LIVE.add(proc)
        return Started(argv, full_env, proc, None, start)

    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Optional[Mapping[str, str]] = None,
        input_text: Optional[str] = None,
    ) -> RunResult:
        argv = tuple(str(a) for a in argv)
        start = time.monotonic()
        proc = self._start(argv, env, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        if isinstance(proc, RunResult):
            return proc
        try:
            return self._wait(proc, argv, input_text, timeout, start)
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)

    def _start(self, argv: tuple, env: Optional[Mapping[str, str]], stdin, stderr):
        """The child, started and registered in _LIVE as one step (a signal's stop_all_children never misses
        it), or the RunResult saying why it did not start."""
        full_env = self.environment(env)
        start = time.monotonic()
        with _LIVE_LOCK:
            if _STOPPING.is_set():
                return RunResult(argv, None, error="interrupted", duration_s=0.0)
            try:
                # Its own session, so that a timeout kills the whole tree: a wrapper script (conda's
                # python shim, a vendor's nvidia-smi wrapper) would otherwise leave its hung child behind.
                proc = _Popen(  # noqa: S603 - argv list, no shell
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    stdin=stdin,
                    env=full_env,
                    start_new_session=os.name == "posix",
                )
            except FileNotFoundError:
                return RunResult(argv, None, error="not found", duration_s=time.monotonic() - start)
            except PermissionError as e:
                if _nowhere_on_path(argv[0], full_env.get("PATH")):
                    # exec tried each PATH entry and one was an unsearchable directory: the command is missing,
                    # not forbidden (a missing nvidia-smi is "not found")
                    return RunResult(argv, None, error="not found", duration_s=time.monotonic() - start)
                return RunResult(argv, None, error=f"permission denied: {e}", duration_s=time.monotonic() - start)
            except OSError as e:
                return RunResult(argv, None, error=f"could not start: {e}", duration_s=time.monotonic() - start)
            _LIVE.add(proc)
        return proc

    def stream(self, argv: Sequence[str], on_line: Callable[[str], Optional[float]], first_line_s: float,
               env: Optional[Mapping[str, str]] = None) -> StreamResult:
        """Run ``argv`` and hand each line of its stdout to ``on_line`` as it arrives (for a child that reports
        progress: the bench payload). The first line must come within ``first_line_s`` seconds; ``on_line``
        returns how many seconds the next line may take from now (None: the deadline stands). At a deadline the
        child is killed with its process group. Same environment, session and stop_all_children rules as
        ``run``; never raises, except what ``on_line`` raises (KeyboardInterrupt), after killing the child."""
        argv = tuple(str(a) for a in argv)
        start = time.monotonic()
        with tempfile.TemporaryFile() as err_file:
            proc = self._start(argv, env, stdin=subprocess.DEVNULL, stderr=err_file)
            if isinstance(proc, RunResult):
                return StreamResult(argv, None, error=proc.error, duration_s=proc.duration_s)
            try:
                killed = _pump_lines(proc, on_line, first_line_s)
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(proc)
            err_file.seek(0, os.SEEK_END)
            err_file.seek(max(0, err_file.tell() - OUTPUT_CAP_BYTES))
            stderr = err_file.read().decode("utf-8", "replace")
        if killed:
            return StreamResult(argv, None, stderr, killed=True, duration_s=time.monotonic() - start)
        if _STOPPING.is_set() and proc.returncode is not None and proc.returncode < 0:
            return StreamResult(argv, None, stderr, error="interrupted", duration_s=time.monotonic() - start)
        return StreamResult(argv, proc.returncode, stderr, duration_s=time.monotonic() - start)

    def _wait(self, proc: subprocess.Popen, argv: tuple, input_text: Optional[str], timeout: float,
              start: float) -> RunResult:
        try:
            out_b, err_b, capped = _communicate(proc, input_text, timeout)
        except subprocess.TimeoutExpired as e:
            _kill_tree(proc)
            out_b = e.output or b""  # what it printed before it hung (the payload's partial JSON)
            return RunResult(
                argv, None, stdout=out_b.decode("utf-8", "replace"),
                error=f"timed out after {timeout:g} s", duration_s=time.monotonic() - start,
            )
        except BaseException:  # Ctrl-C: its own session does not get the terminal's SIGINT, so end it here
            _kill_tree(proc)
            raise
        if _STOPPING.is_set() and proc.returncode is not None and proc.returncode < 0:
            return RunResult(argv, None, error="interrupted", duration_s=time.monotonic() - start)
        return RunResult(
            argv,
            proc.returncode,
            stdout=out_b.decode("utf-8", "replace"),
            stderr=err_b.decode("utf-8", "replace"),
            truncated=capped,
            duration_s=time.monotonic() - start,
        )


class Started:
    """A command started by Runner.start: its output is read from the start (a full pipe would stall it)."""

    def __init__(self, argv: tuple, env: Dict[str, str], proc: Optional[subprocess.Popen],
                 failed: Optional[RunResult], start: float) -> None:
        self.argv, self.env, self.proc, self._failed, self.start = argv, env, proc, failed, start
        self._pumps = _Pumps(proc) if proc is not None else None

    def close_stdin(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        """End it (and its process group) unread."""
        if self.proc is not None:
            _kill_tree(self.proc)
            with _LIVE_LOCK:
                _LIVE.discard(self.proc)

    def result(self, timeout: float) -> RunResult:
        """Wait until it ends, at most ``timeout`` seconds counted from its start, like Runner.run."""
        if self.proc is None or self._pumps is None:
            failed = self._failed or RunResult(self.argv, None, error="could not start")
            return dataclasses.replace(failed, duration_s=time.monotonic() - self.start)
        proc, argv = self.proc, self.argv
        self.close_stdin()
        try:
            try:
                out_b, err_b, capped = self._pumps.wait(max(0.0, timeout - (time.monotonic() - self.start)))
            except subprocess.TimeoutExpired as e:
                return RunResult(argv, None, stdout=(e.output or b"").decode("utf-8", "replace"),
                                 error=f"timed out after {timeout:g} s", duration_s=time.monotonic() - self.start)
            except BaseException:
                _kill_tree(proc)
                raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        if _STOPPING.is_set() and proc.returncode is not None and proc.returncode < 0:
            return RunResult(argv, None, error="interrupted", duration_s=time.monotonic() - self.start)
        return RunResult(argv, proc.returncode, stdout=out_b.decode("utf-8", "replace"),
                         stderr=err_b.decode("utf-8", "replace"), truncated=capped,
                         duration_s=time.monotonic() - self.start)


class _Pumps:
    """Both output streams of a child read to at most OUTPUT_CAP_BYTES each (the rest is read and dropped)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.bufs = {"out": bytearray(), "err": bytearray()}
        self.capped = {"out": False, "err": False}
        self.threads = [threading.Thread(target=self._pump, args=("out", proc.stdout), daemon=True),
                        threading.Thread(target=self._pump, args=("err", proc.stderr), daemon=True)]
        for t in self.threads:
            t.start()

    def _pump(self, name: str, stream) -> None:
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                room = OUTPUT_CAP_BYTES - len(self.bufs[name])
                if room > 0:
                    self.bufs[name] += chunk[:room]
                if len(chunk) > room:
                    self.capped[name] = True
        except (OSError, ValueError):
            pass

    def _await_output_end(self, timeout: float) -> float:
        """Until the child closes its stdout (as it ends), or ends, or ``timeout`` passes: Popen.wait with a
        timeout polls, sleeping up to 50 ms between looks once it has waited a while (CPython's subprocess), so a
        payload that answered after seconds was seen ended 25 ms late on average; the pipe's end wakes the
        reader thread at once, and the wait that follows starts polling with short sleeps. Returns the time left."""
        end = time.monotonic() + timeout
        reader = self.threads[0]
        while reader.is_alive():
            left = end - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:  # ended: a grandchild may hold the pipe open
                break
            reader.join(min(left, 0.05))  # (a pipe held open after the end: seen as late as before)
        return max(0.0, end - time.monotonic())

    def wait(self, timeout: float):
        """(stdout, stderr, capped) once the child exits; raises subprocess.TimeoutExpired (``output``: what stdout
        gave so far) after killing its process group, as communicate does."""
        try:
            self.proc.wait(timeout=self._await_output_end(timeout))
        except subprocess.TimeoutExpired as e:
            _kill_tree(self.proc)
            for t in self.threads:  # the killed group closes the pipes; never wait long for a grandchild that kept them
                t.join(2.0)
            e.output = bytes(self.bufs["out"])
            raise
        for t in self.threads:
            t.join(2.0)  # a daemonised grandchild may hold the pipe open: what we have is what it printed
        return bytes(self.bufs["out"]), bytes(self.bufs["err"]), self.capped["out"] or self.capped["err"]


def _communicate(proc: subprocess.Popen, input_text: Optional[str], timeout: float):
    """proc.communicate() with each stream read to at most OUTPUT_CAP_BYTES (the rest is read and dropped).

    Raises subprocess.TimeoutExpired (``output`` holds what stdout gave so far) like communicate does.
    """
    pumps = _Pumps(proc)
    if proc.stdin is not None:
        try:
            if input_text is not None:
                proc.stdin.write(input_text.encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
    return pumps.wait(timeout)


def _pump_lines(proc: subprocess.Popen, on_line: Callable[[str], Optional[float]], first_line_s: float) -> bool:
    """Feed ``proc``'s stdout lines to ``on_line`` until EOF or a deadline; True when killed at a deadline."""
    lines: queue.Queue[Optional[bytes]] = queue.Queue()

    def reader() -> None:
        try:
            for raw in proc.stdout:  # type: ignore[union-attr]
                lines.put(raw)
        except (OSError, ValueError):
            pass
        lines.put(None)

    threading.Thread(target=reader, name="envdoctor-stream-reader", daemon=True).start()
    deadline = time.monotonic() + first_line_s
    try:
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                _kill_tree(proc)
                try:
                    proc.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    pass
                return True
            try:
                raw = lines.get(timeout=min(wait, 0.25))
            except queue.Empty:
                continue
            if raw is None:
                break
            more = on_line(raw.decode("utf-8", "replace"))
            if more is not None:
                deadline = time.monotonic() + more
    except BaseException:  # Ctrl-C: the child is in its own session and did not get the SIGINT
        _kill_tree(proc)
        raise
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        proc.wait(timeout=5.0)
    return False


def _kill_tree(proc: subprocess.Popen) -> None:
    """Kill a timed-out command and everything it started (its session's process group)."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.kill()
    except OSError:
        pass
