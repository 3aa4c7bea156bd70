"""`python -m envdoctor`, and the `envdoctor` console script (``run``): a signal during start-up is held, not raised.

SIGINT, SIGTERM or SIGHUP while envdoctor's modules are still being imported must end as 130/143/129 with one line, never a
traceback: a KeyboardInterrupt (or the CLI's ``Interrupted``) raised inside an import can be turned into another
error on its way out (class creation wraps what ``__set_name__`` raises in a RuntimeError on Python < 3.12, and
importlib drops what its module-lock callbacks raise). So until ``cli.main`` has installed the process's one
signal runtime (cli/signals.py), ``_Hold`` only notes the signal; ``signals.install`` records a noted one in the same
flag its handler sets (probes.runner.INTERRUPT), ``cli.main`` then ends at once with its exit code, and the hold is
back after ``main`` returns, so that a signal while the interpreter shuts down prints nothing either. Only the
interpreter's own start-up (``site``, the ``envdoctor`` package's one import) comes before this module.
"""

import os
import sys

if __name__ == "__main__" and sys.path:
    # `python -m envdoctor` puts the working directory first on sys.path: a numbers.py or typing.py there (what
    # torch.cwd-shadow reports about the user's run) would break envdoctor's own imports. The envdoctor package is
    # imported already, so nothing of envdoctor's is found through that entry.
    try:
        if os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
            del sys.path[0]
    except OSError:  # the working directory was removed: its entry finds nothing anyway
        pass

import signal  # noqa: E402
from typing import Any, List  # noqa: E402


class _Hold:
    """A signal handler that notes the signal (``held``) and returns; cli/signals.py's ``install`` moves the first
    one into the runtime's flag (probes.runner.INTERRUPT)."""

    def __init__(self) -> None:
        self.held: List[int] = []

    def __call__(self, signum: int, _frame: Any) -> None:
        self.held.append(signum)


HOLD = _Hold()


# probes/runner.py's STOP_SIGNALS (not imported here: nothing of envdoctor's is loaded before the hold; a test pins
# the two equal). SIGHUP: the terminal hung up (an SSH connection dropped); absent on Windows.
STOP_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def hold_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP only noted from now on (main thread; a signal started ignored stays ignored:
    `nohup envdoctor ...` keeps running after a hang-up)."""
    for sig in STOP_SIGNALS:
        try:
            if signal.getsignal(sig) != signal.SIG_IGN:
                signal.signal(sig, HOLD)
        except ValueError:  # not the main thread: nothing to hold there
            return


def run() -> int:
    """The console script: hold signals, import the command line, run it; a signal held after it returned
    (while its last lines were written) still gives its exit code."""
    hold_signals()
    from .cli import main

    code = main()
    if HOLD.held:
        sys.stderr.write(f"envdoctor: interrupted by {signal.Signals(HOLD.held[0]).name}\n")
        code = 128 + HOLD.held[0]
    leave_now(code)
    return code


def leave_now(code: int) -> None:
    """End the process with ``code`` once everything is written, without the interpreter's teardown: freeing every
    module and object a run loaded (rich, the compat data, the facts) took 0.19-0.29 s on a loaded 2-core box here
    (`envdoctor --format json` against the same run ending in os._exit, 3 pairs), after the report was out. The
    atexit handlers still run and stdout and stderr are flushed. Returns (the usual exit follows) when another
    non-daemon thread is alive, which the interpreter would wait for, or when a stream cannot be flushed, which
    the interpreter's own exit reports."""
    import atexit
    import os
    import threading

    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    if not _flushed():
        return
    atexit._run_exitfuncs()  # (then cleared: the usual exit, if it follows, does not run them twice)
    if _flushed():  # what a handler wrote
        os._exit(code)


def _flushed() -> bool:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed or broken stream: the interpreter's exit says so, as before
            return False
    return True


if __name__ == "__main__":
    sys.exit(run())
