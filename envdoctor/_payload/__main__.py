"""Launcher: ``python <envdoctor/_payload> --task NAME [options]``, run by the *target* interpreter (3.8+, stdlib).

The folder is run as a script, not as ``python -m envdoctor._payload``: the target need not have envdoctor
installed (its site-packages are the user's), so nothing may be imported through the name ``envdoctor``. Python
puts this folder first on sys.path, where our module names (tasks, bench, elf...) would shadow top-level names for
everything imported later, torch included: it is taken off, and the folder is imported as a package under a name
nothing else uses, so that its modules import one another relatively and shadow nothing.
"""

import importlib
import importlib.util
import os
import sys

PACKAGE = "_envdoctor_payload"  # the name the folder is imported under in the target


def load_package() -> str:
    """Import this folder as a package (once) and return its name: ``envdoctor._payload`` when envdoctor's own
    interpreter runs ``-m envdoctor._payload``, else PACKAGE, loaded from this folder by path."""
    if __package__:
        return __package__
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, os.path.join(here, "__init__.py"),
                                                      submodule_search_locations=[here])
        if spec is None or spec.loader is None:
            raise ImportError("cannot load envdoctor's payload from " + here)
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        spec.loader.exec_module(module)
    return PACKAGE


def main(argv: list) -> int:
    package = load_package()
    if len(argv) >= 2 and argv[0] == "--task" and argv[1] == "bench":
        return int(importlib.import_module(package + ".bench_run").main(argv[2:]))
    return int(importlib.import_module(package + ".tasks").main(argv))


def exit_now(rc: int) -> None:
    """Leave without the interpreter's teardown, once everything is said: with torch imported, tearing it down
    takes 0.7-1.5 s (CUDA venv here, `python -c "import torch"` against the same plus ``os._exit(0)``), and
    envdoctor waits for this process to end. The answer is written with os.write (unbuffered); what Python
    buffers is flushed first. Nothing of the user's is torn down: this process is envdoctor's. In the worker
    of hand_off, the output is closed and the launcher told the exit code: it ends at once, while this process's
    memory (torch's) is still being freed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream: nothing left to say on it
            pass
    if _LAUNCHER:
        answer = getattr(sys.modules.get(load_package() + ".common"), "ANSWER_FDS", [])
        for fd in [0, 1, 2] + list(answer):  # every copy of envdoctor's pipes: it reads to their end
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.write(_LAUNCHER[0], bytes([rc & 0xFF]))
        except OSError:  # the launcher is gone: nobody waits on this exit code
            pass
    os._exit(rc)


_LAUNCHER: list = []  # in hand_off's worker: the pipe to the launcher


def hand_off(argv: list) -> None:
    """Run the inspect task in a forked worker while this process, the one envdoctor started and waits for,
    only relays how it ended: the worker closes envdoctor's pipes and says its exit code once it has answered,
    and this launcher ends at once; the worker's own exit, the unmapping of torch's memory, no longer holds
    envdoctor (25-120 ms on a loaded 2-core box here, from the answer to the process's end). Returns in the
    worker (or where there is no fork: one process does everything, as before); never in the launcher."""
    if not hasattr(os, "fork") or _task(argv) != "inspect":
        return
    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        return
    if pid == 0:
        os.close(r)
        _LAUNCHER.append(w)
        _die_with_parent()
        return
    os.close(w)
    _relay(pid, r)


def _task(argv: list) -> str:
    for i, arg in enumerate(argv[:-1]):
        if arg == "--task":
            return argv[i + 1]
    return "inspect"


def _die_with_parent() -> None:
    """Linux: SIGKILL to the worker when the launcher ends (killed alone, the worker would run on unwatched)."""
    try:
        import ctypes  # (torch imports it too)

        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass


def _relay(pid: int, r: int) -> None:
    """The launcher: the worker's exit code once it says it, else (it died without a word: a crash, the
    watchdog's exit) how it ended, a signal included, as if this process had run it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches both processes: the worker answers it
    said = b""
    while True:
        try:
            chunk = os.read(r, 16)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        said += chunk
    if said:
        os._exit(said[-1])
    status = None
    while status is None:
        try:
            status = os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except OSError:
            os._exit(1)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:  # end by the same signal (envdoctor names it: "killed by SIGSEGV"), without a core file of its own
            import ctypes
            import resource

            ctypes.CDLL(None).prctl(4, 0)  # PR_SET_DUMPABLE 0: no core dump of this process
            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        except Exception:
            pass
        try:
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    hand_off(sys.argv[1:])
    exit_now(main(sys.argv[1:]))
