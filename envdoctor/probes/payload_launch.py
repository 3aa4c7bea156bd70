"""How the target's payload is started, and starting the inspect payload before envdoctor imports anything heavy.

The target's `import torch` is the longest wait of a run (seconds); everything envdoctor does itself (its imports,
the compat data, the checks, the other probes) can happen while it runs. So ``envdoctor check`` starts the payload
first: cli.main calls start_early(argv) before it builds its parser, and the inspect probe later adopts that
process (adopt_early) instead of starting its own, when it would have run exactly the same command line in
exactly the same environment. The guess is made from the raw command line and may be wrong (an option spelled in
a way this module does not read): then nothing is adopted, the probe runs the payload as usual and the early
process is killed (discard_early). Correctness never depends on the guess, only the speed does.

This module imports nothing but the standard library and probes/runner.py at import, so that calling it first
costs milliseconds. ``ENVDOCTOR_EARLY_PAYLOAD=0`` turns the early start off (to measure what it saves).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

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


# --------------------------------------------------------------------------- the early start

_EARLY: Dict[Tuple[str, ...], Any] = {}  # payload argv -> runner.Started
_EARLY_LOCK = threading.Lock()
# what makes `check` not run the inspect payload at all, or not the way a plain run does
_NO_EARLY = ("-h", "--help", "--version", "--facts", "--bench")


def _early_python(value: str, environ: Mapping[str, str]) -> Optional[str]:
    """The interpreter cli.common.python_target would make of a --python value, for the simple spellings (a file, a
    bare command on PATH); None for the others (a venv folder...), which then start the usual way."""
    path = os.path.expanduser(value)
    if os.sep not in path and not os.path.exists(path):
        return path if shutil.which(path, path=environ.get("PATH")) else None
    return path if os.path.isfile(path) else None


def _writable_file(path: str) -> bool:
    """Could the report be written to ``path``: not a directory, in a directory this user can write to."""
    path = os.path.expanduser(path)
    parent = os.path.dirname(os.path.abspath(path))
    return not os.path.isdir(path) and os.path.isdir(parent) and os.access(parent, os.W_OK)


def early_argvs(argv: Sequence[str], default_timeout_s: float = DEFAULT_TIMEOUT_S,
                environ: Optional[Mapping[str, str]] = None) -> List[List[str]]:
    """The inspect payload command lines `envdoctor ARGV` will run, read from the raw command line; [] when it
    runs none, or when this reading is not sure enough to start one early."""
    environ = os.environ if environ is None else environ
    args = list(argv)
    if args and not args[0].startswith("-"):
        if args[0] != "check":
            return []
        args = args[1:]
    pythons: List[str] = []
    timeout_s, no_torch = default_timeout_s, False
    tier, data_paths = "quick", []  # the CLI's default tier (cli/common.py --smoke)
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in _NO_EARLY or args[i] == "--":
            return []
        if name in ("--python", "--python-timeout", "--smoke", "--data"):
            if not eq:
                if i + 1 >= len(args):
                    return []
                i += 1
                value = args[i]
            if name == "--python":
                pythons.append(value)
            elif name == "--smoke":
                tier = value
            elif name == "--data":
                path = os.path.expanduser(value)
                if not os.path.exists(path):
                    return []  # the CLI refuses it (exit 2) before probing
                data_paths.append(path)
            else:
                try:
                    timeout_s = float(value)
                except ValueError:
                    return []
                if not timeout_s > 0:
                    return []
        elif name in ("-o", "--output") or (args[i].startswith("-o") and not args[i].startswith("--")):
            # an output the CLI will refuse (exit 2 before probing) must not have started the target first
            if name in ("-o", "--output") and not eq:
                if i + 1 >= len(args):
                    return []
                i += 1
                value = args[i]
            elif not eq:
                value = args[i][2:]
            if value != "-" and not _writable_file(value):
                return []
        elif args[i] == "--no-torch":
            no_torch = True
        i += 1
    if pythons:
        exes: List[str] = []
        seen = set()
        for value in pythons:
            exe = _early_python(value, environ)
            if exe is None:
                return []
            key = os.path.normpath(os.path.abspath(exe)) if os.sep in exe else exe  # as python_env._targets
            if key not in seen:
                seen.add(key)
                exes.append(exe)
    else:
        exes = [default_interpreter(environ)[0]]
    if tier == "thorough" and timeout_s == default_timeout_s:
        timeout_s = max(timeout_s, THOROUGH_TIMEOUT_S)
    extra = ["--no-torch"] if no_torch else smoke_args(tier, data_paths)
    return [payload_argv(exe, "inspect", extra, timeout_s) for exe in exes]


def start_early(argv: Sequence[str], default_timeout_s: float = DEFAULT_TIMEOUT_S) -> int:
    """Start the inspect payload(s) ``envdoctor ARGV`` will need, now; how many were started. Never raises."""
    if os.environ.get("ENVDOCTOR_EARLY_PAYLOAD") == "0":
        return 0
    try:
        plans = early_argvs(argv, default_timeout_s)
        if not plans:
            return 0
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
