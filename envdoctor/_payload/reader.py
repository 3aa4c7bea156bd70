"""The files read beside ``import torch``: a forked child (the reader) does the inspect task's reading (interpreter
facts, the .pth replay, the smoke tier's start, installed distributions, torch's build files, extensions, library
candidates) while the payload's own process imports torch; it sends what it read back on a pipe, one JSON object a
line, and the payload merges it once torch is imported.

Why a process and not a thread: `import torch` holds the GIL nearly throughout (module code, and dlopen under the
import lock), so a thread's reading was measured to add to the import (issue 19); a child runs on the other CPU.

What stays as it was without the reader: the reader writes the checkpoint (the envelope so far, stage "importing
torch") on the answer pipe as soon as it has read the files, so a crash or hang inside `import torch` still leaves
them; the payload's own final envelope follows only after it has merged the reader's lines, so the two never write
at once. When the deadline watchdog fires first, it stops the reader and merges what it had sent (on_timeout). The
errors the reader met come first in the result's errors, as when they were read before the import.

Lines the reader sends: {"stage": S} | {"result": {...}, "errors": [...]} (the keys it set, every error so far) |
{"smoke": {...}} (what the smoke tier's start found) | {"owners": [...], "done": true} (the reads are complete) |
{"result": {"pth_exec": ...}, ...} (the replay, later) | {"end": true}.
"""

import json
import os
import select
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .common import _exc_text


class Channel:
    """The reader's end: send(obj) writes one line; a parent that is gone is not an error (the checkpoint on the
    answer pipe is what counts then)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.sent: Dict[str, Any] = {}  # result key -> the object last sent (sync sends what changed)
        self.errors_sent = -1

    def send(self, obj: Dict[str, Any]) -> None:
        if self.fd < 0:
            return
        data = (json.dumps(obj, default=str, sort_keys=True) + "\n").encode("ascii")
        try:
            while data:
                n = os.write(self.fd, data)
                data = data[n:]
        except OSError:  # the payload's process is gone: nobody to tell
            self.close()

    def sync(self, result: Dict[str, Any], errors: List[str], **extra: Any) -> None:
        """Send the result's keys that changed since the last sync (a new object or a new key), and the errors (the
        smoke section goes apart: Smoke.started_state)."""
        changed = {k: v for k, v in result.items()
                   if k not in ("errors", "smoke") and self.sent.get(k, _MISSING) is not v}
        if not changed and len(errors) == self.errors_sent and not extra:
            return
        self.sent.update(changed)
        self.errors_sent = len(errors)
        obj = dict(extra, result=changed, errors=list(errors))
        self.send(obj)

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1


_MISSING = object()


class Remote:
    """A process handle (kill, wait) for a child of the reader, as Smoke's readers use it: the reader waits for
    that child and then ends, so waiting for the reader waits for both; killing kills both."""

    def __init__(self, reader_pid: int, child_pid: int) -> None:
        self.reader_pid = reader_pid
        self.child_pid = child_pid

    def kill(self) -> None:
        for pid in (self.child_pid, self.reader_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def wait(self, timeout: Optional[float] = None) -> None:
        _wait_pid(self.reader_pid, timeout)


def _wait_pid(pid: int, timeout: Optional[float]) -> bool:
    """Reap ``pid`` (this process's child); with ``timeout``, give up after it (False)."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            done, _status = os.waitpid(pid, 0 if end is None else os.WNOHANG)
        except ChildProcessError:
            return True
        except InterruptedError:
            continue
        if done:
            return True
        if end is not None and time.monotonic() >= end:
            return False
        time.sleep(0.005)


class Reader:
    """The payload's end: the reader's pid and pipe, and merge() of its lines into the result."""

    def __init__(self, pid: int, fd: int, result: Dict[str, Any], errors: List[str]) -> None:
        self.pid = pid
        self.fd = fd
        self.result = result
        self.errors = errors
        self.merged_errors = 0  # how many of the reader's errors are at the front of ``errors``
        self.buf = b""
        self.stage: Optional[str] = None
        self.smoke: Optional[Dict[str, Any]] = None
        self.owners: Dict[str, Any] = {}
        self.done = False  # the reads are complete (owners received)
        self.ended = False  # its last line read, or its pipe at its end
        self.owned = False  # its pid is a smoke reader's handle (Smoke.finish reaps it)
        self.failed: Optional[str] = None  # what the reader raised
        self.lock = threading.Lock()  # one thread merges at a time
        self.location: Optional[str] = None  # torch's directory, as the reader found it
        self.fresh_fd = -1  # the read end of the fresh interpreter's pipe (tasks._start_reader)
        self.joined = False  # the payload took the reads (tasks._join_reader)
        self.replay: Any = None  # the .pth replay, where the payload read the files itself after all

    def _apply(self, msg: Dict[str, Any]) -> None:
        if isinstance(msg.get("stage"), str):
            self.stage = msg["stage"]
        if isinstance(msg.get("result"), dict):
            self.result.update(msg["result"])
        if isinstance(msg.get("errors"), list):
            self.errors[:self.merged_errors] = [str(e) for e in msg["errors"]]
            self.merged_errors = len(msg["errors"])
        if isinstance(msg.get("smoke"), dict):
            self.smoke = msg["smoke"]
        if isinstance(msg.get("owners"), list):
            self.owners = {str(k): tuple(v) for k, v in msg["owners"] if isinstance(v, list)}
        if isinstance(msg.get("failed"), str):
            self.failed = msg["failed"]
        if isinstance(msg.get("location"), str):
            self.location = msg["location"]
        if msg.get("done"):
            self.done = True
        if msg.get("end"):
            self.ended = True

    def pump(self, until: Callable[[], bool], timeout_s: Optional[float],
             on_stage: Optional[Callable[[str], None]] = None) -> bool:
        """Read and merge lines until ``until()`` holds, the pipe ends or ``timeout_s`` passes (None: no limit);
        whether ``until()`` held."""
        if not self.lock.acquire(blocking=False):  # the other thread is merging (the watchdog's or the task's)
            return until()
        try:
            return self._pump(until, timeout_s, on_stage)
        finally:
            self.lock.release()

    def _pump(self, until: Callable[[], bool], timeout_s: Optional[float],
              on_stage: Optional[Callable[[str], None]]) -> bool:
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while not until() and not self.ended and self.fd >= 0:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                ready, _, _ = select.select([self.fd], [], [], 1.0 if left is None else min(left, 1.0))
            except InterruptedError:
                continue
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 1 << 20)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.ended = True
                break
            self.buf += chunk
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    msg = json.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    continue
                if isinstance(msg, dict):
                    self._apply(msg)
                    if self.stage and on_stage is not None and not self.done:
                        on_stage(self.stage)
        return until()

    def close(self) -> None:
        """Close the pipe and reap the reader unless a smoke reader owns it (it ends with the fresh interpreter)."""
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
        if not self.owned:
            if not _wait_pid(self.pid, 5.0):
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                _wait_pid(self.pid, 5.0)

    def on_timeout(self) -> None:
        """The watchdog's hook: stop the reader (it must not write on the answer pipe now) and merge what it had
        sent."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.pump(lambda: False, 1.0)
        except Exception:
            pass


def fork_reader(work: Callable[[Channel], None], keep_fds: List[int], result: Dict[str, Any],
                errors: List[str]) -> Optional[Reader]:
    """Fork the reader, which runs ``work(channel)`` and ends (never returns); None where it cannot fork (the
    caller reads in its own process then). ``keep_fds``: descriptors of this process the reader may use (the answer
    pipe); every other one above stderr is closed in the reader (the launcher's pipe, envdoctor's stdin copy are not
    its to hold open)."""
    if not hasattr(os, "fork"):
        return None
    try:
        rfd, wfd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(rfd)
        os.close(wfd)
        return None
    if pid == 0:  # the reader
        code = 0
        try:
            # a Ctrl-C is the payload's to answer, not the reader's: noted and dropped (a handler, not SIG_IGN,
            # which the commands it starts would inherit: the fresh interpreter and the .pth replay stay stoppable)
            signal.signal(signal.SIGINT, _ignore)
            _close_other_fds(set(keep_fds) | {0, 1, 2, wfd})
            work(Channel(wfd))
        except BaseException as e:  # nothing may escape into a second copy of the payload's own code
            try:
                Channel(wfd).send({"failed": _exc_text(e)})
            except Exception:
                pass
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    return Reader(pid, rfd, result, errors)


def _ignore(_signum: int, _frame: Any) -> None:
    return None


def _close_other_fds(keep: set) -> None:
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        fds = list(range(3, 256))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def die_with_parent(parent: int) -> bool:
    """Linux: SIGKILL to this process when its parent ends (the payload's process); False when the parent has
    ended already."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass
    return os.getppid() == parent


def let_go_of_outputs(out_fd: int) -> None:
    """The reader is done writing: envdoctor reads the payload's stdout and stderr to their end, so the reader
    holds no copy of them (nor of the answer pipe) while it waits for the fresh interpreter."""
    try:
        os.close(out_fd)
    except OSError:
        pass
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass
