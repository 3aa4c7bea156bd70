"""The one signal runtime of the envdoctor process (issue 40: "`cli/` owns the process").

The only module that installs handlers for SIGINT, SIGTERM and SIGHUP in the command line's process
(tests/unit/test_layers.py keeps it so; envdoctor/__main__.py holds them during the imports, the payloads run in
another interpreter, and a fleet rank's supervisor, fleet/arrival.py, is a forked process of its own). The handler:

- records the signal in ``probes.runner.INTERRUPT`` and ends every child (``stop_all_children``), and returns:
  it raises nothing into the code that runs, where a raise could be dropped (importlib's module-lock callbacks)
  or wrapped (class creation). The waits look at the flag and unwind with ``Interrupted`` (services/collect.py's
  join loop, a download, a fleet rank's start-up and gathers); a wait on a child ends as the child is killed;
  cli.main turns a signal that came while nothing waited into its exit code (128 + N) once the command is done;
- a second signal ends the process at once (128 + N), the children first;
- while a live watch runs (``forwarded``), hands each signal to watch's ``Stop`` instead: the launched command is
  stopped as Ctrl-C would, harder on a second one.

``install`` loads what the handler uses, so that it imports nothing while the main thread may be importing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any, Callable, Dict, Iterator, Optional


class _State:
    forward: Optional[Callable[[int], None]] = None  # watch's Stop.signal while a live watch runs
    told = False  # the signal's exit code was given with a line (``exit_code``): cli.main says nothing more


_STATE = _State()


def _runner() -> Any:
    from ..probes import runner

    return runner


def on_signal(signum: int, _frame: Any) -> None:
    """The handler for SIGINT, SIGTERM and SIGHUP: see the module's docstring. Raises nothing."""
    runner = sys.modules["envdoctor.probes.runner"]  # loaded by install(): nothing is imported here
    forward = _STATE.forward
    if forward is not None:
        forward(signum)
        return
    if runner.INTERRUPT.is_set():  # a second one (while the partial report prints, or a wait that hangs): now
        runner.stop_all_children()
        os._exit(128 + signum)
    runner.INTERRUPT.set(signum)
    runner.stop_all_children()


def install() -> Dict[int, Any]:
    """The handlers for SIGINT, SIGTERM and SIGHUP (main thread only); returns the previous ones for ``restore``.
    A signal started ignored stays ignored (nohup, a background job). A signal that came while envdoctor/__main__.py
    held them during the imports is recorded in the flag, as if it came now."""
    runner = _runner()  # loaded now, so that the handler imports nothing when it runs
    previous: Dict[int, Any] = {}
    _STATE.told = False
    if threading.current_thread() is not threading.main_thread():
        return previous
    for sig in runner.STOP_SIGNALS:
        old = signal.getsignal(sig)
        if old == signal.SIG_IGN:
            continue
        previous[sig] = old
        signal.signal(sig, on_signal)
    for old in previous.values():
        held = getattr(old, "held", None)  # envdoctor.__main__'s _Hold: a signal that came during the imports
        if held and not runner.INTERRUPT.is_set():
            runner.INTERRUPT.set(held.pop(0))
    return previous


def restore(previous: Dict[int, Any]) -> None:
    """The handlers ``install`` replaced, back; the flag cleared and children allowed again (the next
    cli.main in this process starts clean)."""
    runner = _runner()
    for sig, old in previous.items():
        signal.signal(sig, old if old is not None else signal.SIG_DFL)
    runner.INTERRUPT.clear()
    runner.allow_children()
    _STATE.told = False


def pending() -> Optional[int]:
    """The signal recorded and not yet answered, if any."""
    return _runner().INTERRUPT.signum


def told() -> bool:
    return _STATE.told


def exit_code(code: int) -> int:
    """``code``, or 128 + N with one line when signal N came while the report was judged and printed: the report
    of what was read is printed whole first (the handler only records the signal)."""
    signum = pending()
    if signum is None:
        return code
    _STATE.told = True
    try:
        sys.stderr.write(f"envdoctor: {_name(signum)} arrived while the report was printed\n")
    except (OSError, ValueError):  # the terminal hung up: the exit code still says it
        pass
    return 128 + signum


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@contextlib.contextmanager
def forwarded(to: Callable[[int], None]) -> Iterator[None]:
    """While a live watch runs, each SIGINT, SIGTERM and SIGHUP goes to ``to`` (services.watch.Stop.signal:
    forwarded to the launched command once, harder after) instead of stopping envdoctor's children and recording
    the stop. Entered before the command starts, so that a Ctrl-C the moment it has started is forwarded to it; a
    signal recorded before (while watch read its options) ends watch here with ``Interrupted``, as before. SIGINT
    and SIGTERM are taken even where they started ignored (as watch always did); an ignored SIGHUP stays ignored (`nohup envdoctor watch ...` goes on after a hang-up)."""
    runner = _runner()
    runner.INTERRUPT.check()  # a signal while watch read its options: it ends here, the command never starts
    hangup = getattr(signal, "SIGHUP", None)
    previous: Dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in runner.STOP_SIGNALS:
            old = signal.getsignal(sig)
            if old is on_signal or (sig == hangup and old == signal.SIG_IGN):
                continue
            previous[sig] = signal.signal(sig, on_signal)
    _STATE.forward = to
    try:
        yield
    finally:
        _STATE.forward = None
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)


def ignore_stops() -> None:
    """SIGTERM and SIGINT ignored from now on (a fleet's rank 0 while it judges and writes every rank's part:
    torchrun sends SIGTERM to the workers still running when one exits non-zero, SIGKILL only after its grace)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread
            pass
