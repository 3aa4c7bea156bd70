"""How the target's payload is started, and starting the inspect payload before envdoctor imports anything heavy.

The target's `import torch` is the longest wait of a run (seconds); everything envdoctor does itself (its imports,
the compat data, the checks, the other probes) can happen while it runs. So ``envdoctor check`` starts the payload
first: cli.main parses its command line (a parser whose building imports nothing heavy) and cli/check.py calls
start_early with the parsed options, before envdoctor's own heavy imports; the inspect probe later adopts that
process (adopt_early) instead of starting its own, when it would have run exactly the same command line in
exactly the same environment (the same functions make both: inspect_targets, inspect_args, payload_argv).
Whatever the probe runs differently (a test's FakeRunner, another environment) is not adopted: the probe runs the
payload as usual and the early process is killed (discard_early). Correctness never depends on it, only the speed.

What a --python or --data value names is read here, once (python_target, data_target): the early start, the
probes, the services and the CLI all ask these. This module imports nothing but the standard library and
probes/runner.py at import, so that calling it first costs milliseconds. ``ENVDOCTOR_EARLY_PAYLOAD=0`` turns the
early start off (to measure what it saves).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

# the one default of --python-timeout and of every python_timeout_s (check, collect, assert, fleet, node-health, the
# Python API): the time the target's `import torch` is given
DEFAULT_TIMEOUT_S = 60.0
# --smoke thorough imports every dependent of torch and compiles a function end to end: the payload's default
# limit becomes this (an explicit --python-timeout wins)
THOROUGH_TIMEOUT_S = 240.0

# Keep the user's environment as it is (that is what is being diagnosed), but do not write
# __pycache__ files into it just because we looked.
PAYLOAD_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}


def payload_path() -> Path:
    """The payload folder, run as a script by the target (``python <folder> --task ...``; its __main__.py is the
    launcher): shipped inside the package as the subpackage envdoctor._payload; when envdoctor runs from a zip
    (the one-file zip scripts/build_pyz.py builds) the target cannot run a folder inside it, so its files are
    copied once per process into a temporary directory (removed at exit)."""
    here = Path(__file__).resolve().parent.parent / "_payload"
    if here.is_dir():
        return here
    return _extracted_payload() or here


_EXTRACTED: List[Path] = []
_EXTRACT_LOCK = threading.Lock()


def _extracted_payload() -> Optional[Path]:
    """The payload's files copied out of the zip envdoctor is imported from (zipimport: this module's loader
    names the archive and its folder inside it), into a new directory under the temporary directory; None when
    envdoctor is not imported from a zip or the copy failed (the target's run then fails with its reason)."""
    import tempfile
    import zipfile

    with _EXTRACT_LOCK:
        if _EXTRACTED:
            return _EXTRACTED[0]
        loader = globals().get("__loader__")
        archive, prefix = getattr(loader, "archive", None), getattr(loader, "prefix", None)
        if not isinstance(archive, str) or not isinstance(prefix, str):
            return None
        inner = prefix.replace("\\", "/").rstrip("/").rsplit("/", 1)[0] + "/_payload/"  # envdoctor/probes/ -> envdoctor/_payload/
        try:
            with zipfile.ZipFile(archive) as zf:
                names = [n for n in zf.namelist() if n.startswith(inner) and n.endswith(".py")
                         and "/" not in n[len(inner):]]
                if not names:
                    return None
                top = Path(tempfile.mkdtemp(prefix="envdoctor-"))
                atexit.register(shutil.rmtree, str(top), True)
                folder = top / "_payload"
                folder.mkdir()
                for name in names:
                    (folder / name[len(inner):]).write_bytes(zf.read(name))
        except (OSError, zipfile.BadZipFile):
            return None
        _EXTRACTED.append(folder)
        return folder


def payload_deadline_s(timeout_s: float) -> float:
    """The payload's own watchdog fires a little before our subprocess timeout, so that a hung
    ``import torch`` still reports what was collected and where it hung."""
    return round(max(timeout_s - 5.0, timeout_s * 0.8), 1)


def payload_argv(executable: str, task: str = "inspect", args: Sequence[str] = (),
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> List[str]:
    """The exact command line run_payload uses (tests key FakeRunner answers on it). The inspect task waits for
    its stdin to close before it initialises CUDA (--cuda-gate): at once under Runner.run, whose stdin is
    /dev/null; an early start's stdin is closed once NVML has listed the GPUs' processes."""
    gate = ["--cuda-gate"] if task == "inspect" else []
    return [str(executable), str(payload_path()), "--task", task,
            "--deadline-s", f"{payload_deadline_s(timeout_s):g}", *gate, *args]


def smoke_args(tier: str, data_paths: Sequence[str] = ()) -> List[str]:
    """The inspect payload's smoke-tier options (--smoke, one --smoke-dir per --data path); none for "off"."""
    if not tier or tier == "off":
        return []
    out = ["--smoke", tier]
    for path in data_paths:
        out += ["--smoke-dir", str(path)]
    return out


def _bin_python(prefix: str) -> str:
    if os.name == "nt":
        return os.path.join(prefix, "python.exe") if os.path.isfile(
            os.path.join(prefix, "python.exe")) else os.path.join(prefix, "Scripts", "python.exe")
    return os.path.join(prefix, "bin", "python")


def default_interpreter(env: Optional[Mapping[str, str]] = None, runner: Any = None) -> Tuple[str, str]:
    """The interpreter to diagnose when the user named none, and how it was chosen.

    An active venv or conda env first (that is where the user's torch lives), then ``python3`` on
    PATH, then envdoctor's own interpreter (which may be a pipx venv without torch: last resort).
    """
    env = os.environ if env is None else env
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if prefix:
            candidate = _bin_python(prefix)
            # a venv whose python is a dangling link (its base Python removed) is still the one to judge: judging
            # python3 on PATH instead would report on another interpreter (and tell the user to install torch there)
            if os.path.isfile(candidate) or (os.path.islink(candidate)
                                             and os.path.isfile(os.path.join(prefix, "pyvenv.cfg"))):
                return candidate, f"${var}"
    name = "python" if os.name == "nt" else "python3"
    found = runner.which(name) if runner is not None else shutil.which(name, path=env.get("PATH"))
    if found:
        # a python3 that another user can change (a PATH entry such as "." or /tmp/bin, run from a world-writable
        # directory) is never run on the user's behalf: envdoctor, often run as root on a fresh box, would run their
        # code (probes/trust.py). The user named no interpreter, so envdoctor's own is judged instead, and says why.
        from .trust import untrusted_because

        why = untrusted_because(found)
        if why is None:
            return found, f"{name} on PATH"
        return sys.executable, f"envdoctor's own interpreter ({name} on PATH, {found}, was not run: {why})"
    return sys.executable, "envdoctor's own interpreter (no active environment, no python3 on PATH)"


# --------------------------------------------------------------------------- what --python and --data name


class TargetError(ValueError):
    """A --python or --data value that names nothing usable (services: OptionsError; the CLI: exit 2)."""


def python_target(value: str) -> str:
    """A --python value as the interpreter to run: a typo is an error (the CLI: exit 2), not a clean report that
    silently judged no interpreter. A venv or conda prefix stands for its bin/python."""
    path = os.path.expanduser(value)
    if os.sep not in path and not os.path.exists(path):  # a bare name: looked up on PATH, like a shell would
        found = shutil.which(path)
        if found is None:
            raise TargetError(f"--python {value}: no such command on PATH")
        return path
    if os.path.isdir(path):
        for candidate in (os.path.join(path, "bin", "python"), os.path.join(path, "python.exe"),
                          os.path.join(path, "Scripts", "python.exe")):
            if os.path.isfile(candidate) or _dangling_venv_link(candidate):
                return candidate
        raise TargetError(f"--python {value}: is a directory with no bin/python (give the interpreter itself)")
    if _dangling_venv_link(path):
        return path  # a venv whose base Python is gone: the probe reads what is left and the check says how to repair it
    problem = _stat_problem(path)
    if problem == "no such file or directory":
        raise TargetError(f"--python {value}: no such file")
    if problem:
        raise TargetError(f"--python {value}: {problem}")
    if not os.access(path, os.X_OK):
        raise TargetError(f"--python {value}: not executable")
    return path


def _dangling_venv_link(path: str) -> bool:
    """A venv's interpreter link that leads nowhere (pyvenv.cfg beside its bin/): not a typo, a broken venv."""
    if not os.path.islink(path) or os.path.exists(path):
        return False
    here = os.path.dirname(os.path.abspath(path))
    return any(os.path.isfile(os.path.join(d, "pyvenv.cfg")) for d in (here, os.path.dirname(here)))


def _stat_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot be looked at: "permission denied" is not "no such file" (os.path.exists says False
    for both)."""
    try:
        os.stat(path)
    except PermissionError:
        return "permission denied (a directory on the way is not readable by this user)"
    except FileNotFoundError:
        return "no such file or directory"
    except OSError as e:
        return e.strerror or str(e)
    return None


def data_target(value: str) -> str:
    """A --data value: a path that does not exist (a typo, a volume not mounted) is an error, not a
    storage check quietly skipped in an otherwise clean report."""
    path = os.path.expanduser(value)
    problem = _stat_problem(path)
    if problem == "no such file or directory":
        raise TargetError(f"--data {value}: no such file or directory (is the volume mounted?)")
    if problem:
        raise TargetError(f"--data {value}: {problem}")
    return path


def inspect_targets(pythons: Sequence[str], env: Optional[Mapping[str, str]] = None,
                    runner: Any = None) -> List[Tuple[str, str]]:
    """The interpreters to inspect, with how each was chosen: each --python once (as python_target gave it), else
    the active environment's (default_interpreter)."""
    if not pythons:
        return [default_interpreter(env, runner)]
    # the same interpreter named twice (or as ./x and x) is inspected and judged once; not
    # realpath: a venv's python is a symlink to its base interpreter, yet a different environment
    seen = set()
    targets: List[Tuple[str, str]] = []
    for p in pythons:
        key = os.path.normpath(os.path.abspath(p)) if os.sep in p else p
        if key not in seen:
            seen.add(key)
            targets.append((p, "--python"))
    return targets


def inspect_args(inspect_torch: bool, smoke: str = "off", data_paths: Sequence[str] = ()) -> List[str]:
    """The inspect task's options: --no-torch, or the smoke tier's (smoke_args)."""
    return smoke_args(smoke, data_paths) if inspect_torch else ["--no-torch"]


# --------------------------------------------------------------------------- the early start

_EARLY: Dict[Tuple[str, ...], Any] = {}  # payload argv -> runner.Started
_EARLY_LOCK = threading.Lock()


def inspect_argvs(pythons: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S, inspect_torch: bool = True,
                  smoke: str = "off", data_paths: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                  runner: Any = None) -> List[List[str]]:
    """The inspect payload command lines the pythons probe runs for these options, one per interpreter."""
    extra = inspect_args(inspect_torch, smoke, data_paths)
    return [payload_argv(exe, "inspect", extra, timeout_s) for exe, _how in inspect_targets(pythons, env, runner)]


def start_early(pythons: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S, inspect_torch: bool = True,
                smoke: str = "off", data_paths: Sequence[str] = ()) -> int:
    """Start now the inspect payload(s) the pythons probe will run for these options (``pythons`` as python_target
    gave them, ``data_paths`` as data_target did); how many were started. Never raises."""
    if os.environ.get("ENVDOCTOR_EARLY_PAYLOAD") == "0":
        return 0
    try:
        plans = inspect_argvs(pythons, timeout_s, inspect_torch, smoke, data_paths)
        from .runner import Runner

        runner = Runner()
        with _EARLY_LOCK:
            if not _EARLY:
                atexit.register(discard_early)
            for plan in plans:
                _EARLY[tuple(plan)] = runner.start(plan, env=PAYLOAD_ENV)
        return len(plans)
    except (OSError, ValueError):  # an optimisation only: the probe starts the payload itself
        return 0


def adopt_early(argv: Sequence[str], runner: Any, env: Mapping[str, str]) -> Any:
    """The early-started process for exactly this command line and environment (it leaves the pool), or None."""
    from .runner import Runner

    with _EARLY_LOCK:
        started = _EARLY.get(tuple(str(a) for a in argv))
        if started is None or not isinstance(runner, Runner) or runner.environment(env) != started.env:
            return None
        del _EARLY[tuple(started.argv)]
        return started


def discard_early() -> int:
    """Kill every early-started payload nobody adopted (a wrong guess, or a run that ended before its probe)."""
    with _EARLY_LOCK:
        left = list(_EARLY.values())
        _EARLY.clear()
    for started in left:
        started.kill()
    return len(left)
