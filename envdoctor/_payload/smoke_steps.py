"""The smoke tier's steps and the loop that runs each in its own bounded child (stdlib only, Python 3.8+).

This module stands alone (no relative import): the payload imports it as part of its package, and the fresh
interpreter that tries imports the way the user's run will (``python -c``: the working directory first on
sys.path, the user's environment) loads it by path, so that nothing of the payload sits on that sys.path.

A *zygote* (a process that runs no step itself) forks one child per unit of work: a unit is one step, or a chain
of steps that share an expensive start (import torch, then each companion); a chain that crashes or hangs goes on
in a fresh child with the steps after the one that failed, so one crash or hang never hides the others. Each
child writes one JSON line per step on a pipe (a ``begin`` line first); a crash's native stack comes on the same
pipe through faulthandler. The zygote writes the records, one JSON line each, on its own output.
"""

import json
import os
import select
import signal
import sys
import time
import traceback
from typing import Any, Dict, List  # noqa: F401  (used in type comments, which ruff does not read)

TRACEBACK_LINES = 12
MAX_TEXT = 2000
CHILD_EXIT_GRACE_S = 0.5


def _short(text, limit=MAX_TEXT):
    s = str(text)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _die_with_parent():
    """Linux: this process gets SIGKILL when its parent ends (a killed zygote leaves no step running)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux, or no libc symbol: the steps' own timeouts still bound them
        pass


def failure_record(name, exc, started):
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    lines = "".join(tb).rstrip().splitlines()
    return {"name": name, "status": "failed", "duration_s": round(time.monotonic() - started, 3),
            "error_type": type(exc).__module__ + "." + type(exc).__name__
            if type(exc).__module__ not in ("builtins", "__main__") and not isinstance(exc, StepError)
            else type(exc).__name__,
            "error": _short(str(exc).strip() or type(exc).__name__),
            "traceback": [_short(x, 300) for x in lines[-TRACEBACK_LINES:]]}


class Skip(Exception):
    """A step that does not apply here (no GPU, no torch): its record says why; it is never a failure."""


def _child(units, wfd, funcs):
    """In the forked child: run each step of ``units`` (name, kwargs) in order, one JSON line per step."""
    _die_with_parent()
    try:
        import faulthandler

        faulthandler.enable(file=os.fdopen(os.dup(wfd), "w"), all_threads=False)
    except Exception:
        pass
    out = os.fdopen(wfd, "w")
    for name, kwargs in units:
        out.write(json.dumps({"begin": name}) + "\n")
        out.flush()
        started = time.monotonic()
        try:
            fn = funcs[name.split(":", 1)[0]]
            detail = fn(**kwargs)
            rec = {"name": name, "status": "ok", "duration_s": round(time.monotonic() - started, 3)}
            if detail:
                rec["detail"] = detail
        except Skip as e:
            rec = {"name": name, "status": "skipped", "duration_s": round(time.monotonic() - started, 3),
                   "reason": _short(str(e))}
        except BaseException as e:  # SystemExit, KeyboardInterrupt from the code tried: all are failures to record
            rec = failure_record(name, e, started)
            detail = getattr(e, "smoke_detail", None)
            if detail:
                rec["detail"] = detail
        try:
            text = json.dumps(rec, default=str)
        except Exception as e:
            text = json.dumps({"name": name, "status": "failed", "error_type": "TypeError",
                               "error": "unserialisable step record: " + _short(e)})
        out.write(text + "\n")
        out.flush()
    os._exit(0)


def _signal_name(code):
    try:
        return signal.Signals(code).name
    except (ValueError, AttributeError):
        return f"signal {code}"


def run_unit(units, timeout_s, funcs, emit):
    """Fork a child that runs ``units`` (a chain); emit a record per step. A step that crashes the child or
    outlives its timeout is recorded as such, and the steps after it go on in a new child."""
    pending = list(units)
    while pending:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            try:
                _child(pending, wfd, funcs)
            finally:
                os._exit(70)
        os.close(wfd)
        buf = b""
        done = []
        current = None
        started = time.monotonic()
        other = []  # type: List[str]  # non-JSON lines: faulthandler's report of a crash
        timed_out = False
        status = None
        reaped = False
        names = [u[0] for u in pending]
        while not all(n in done for n in names):
            left = timeout_s.get(current, 30.0) - (time.monotonic() - started) if current else 30.0
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([rfd], [], [], min(left, 1.0))
            if not ready:
                # the child gone and a second of silence: a process it started (a pool worker) may hold the pipe
                # open forever; what the child said is all there is
                try:
                    got, st = os.waitpid(pid, os.WNOHANG)
                except OSError:
                    got, st = pid, None
                if got == pid:
                    status, reaped = st, True
                    break
                continue
            chunk = os.read(rfd, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    obj = json.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    if line.strip() and len(other) < 40:
                        other.append(line.decode("utf-8", "replace"))
                    continue
                if isinstance(obj, dict) and "begin" in obj:
                    current = obj["begin"]
                    started = time.monotonic()
                elif isinstance(obj, dict) and "name" in obj:
                    done.append(obj["name"])
                    emit(obj)
                    current = None
        if timed_out:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.close(rfd)
        if not reaped:
            try:
                _pid, status = os.waitpid(pid, 0)
            except OSError:
                pass
        pending = [u for u in pending if u[0] not in done]
        if not pending:
            return
        name = current or pending[0][0]
        rec = {"name": name, "duration_s": round(time.monotonic() - started, 3)}
        if timed_out:
            rec.update(status="timed-out", error_type="Timeout",
                       error=f"did not finish in {timeout_s.get(name, 30.0):g} s")
        else:
            how = f"exited with code {os.WEXITSTATUS(status)}" if status is not None and os.WIFEXITED(
                status) else ("killed by " + _signal_name(os.WTERMSIG(status)) if status is not None else "ended")
            rec.update(status="failed", error_type="Crash", error="the process " + how + " during this step")
            if status is not None and os.WIFSIGNALED(status):
                rec["signal"] = _signal_name(os.WTERMSIG(status))
        if other:  # faulthandler's "Fatal Python error: ..." line, then the innermost frames
            keep = other if len(other) <= TRACEBACK_LINES else other[:1] + other[-(TRACEBACK_LINES - 1):]
            rec["traceback"] = [_short(x, 300) for x in keep]
        emit(rec)
        pending = [u for u in pending if u[0] != name]


def serve(plan, funcs, out_fd):
    """The zygote: run every unit of ``plan`` (a list of (units, {name: timeout_s})) and write each record as a
    JSON line on ``out_fd``; a final {"end": true} line says it finished."""
    _die_with_parent()
    out = os.fdopen(out_fd, "w")

    def emit(rec):
        out.write(json.dumps(rec, default=str) + "\n")
        out.flush()

    for units, timeouts in plan:
        try:
            run_unit(units, timeouts, funcs, emit)
        except Exception as e:  # the zygote's own trouble (no fork, no pipe): every step of the unit says so
            for name, _kw in units:
                emit({"name": name, "status": "failed", "error_type": type(e).__name__,
                      "error": "could not start the step: " + _short(e)})
    emit({"end": True})
    out.close()


# --------------------------------------------------------------------------- steps without torch


def _user_name():
    try:
        import getpass

        return getpass.getuser()
    except Exception:
        getuid = getattr(os, "getuid", None)
        return f"uid_{getuid()}" if callable(getuid) else "unknown_user"


def cache_dirs():
    """(role, directory, the variable that sets it, or None where the default came) for each place torch builds
    and loads code, as torch 2.13.0 computes them (torch/_inductor/runtime/cache_dir_utils.py cache_dir and
    default_cache_dir; torch/utils/cpp_extension.py _get_build_directory, get_default_build_root with
    torch/_appdirs.py user_cache_dir; triton's own default is ~/.triton/cache)."""
    import re
    import tempfile

    out = [("temp", tempfile.gettempdir(), "TMPDIR" if os.environ.get("TMPDIR") else None)]
    inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    out.append(("inductor-cache", os.path.abspath(inductor) if inductor else os.path.join(
        tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", _user_name())),
        "TORCHINDUCTOR_CACHE_DIR" if inductor else None))
    triton = os.environ.get("TRITON_CACHE_DIR")
    out.append(("triton-cache", triton or os.path.join(os.path.expanduser("~"), ".triton", "cache"),
                "TRITON_CACHE_DIR" if triton else None))
    ext = os.environ.get("TORCH_EXTENSIONS_DIR")
    if ext:
        out.append(("torch-extensions", ext, "TORCH_EXTENSIONS_DIR"))
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        out.append(("torch-extensions", os.path.join(xdg or os.path.expanduser("~/.cache"), "torch_extensions"),
                    "XDG_CACHE_HOME" if xdg else None))
    return out


def _which(name):
    import shutil

    return shutil.which(name)


def _version_line(exe):
    import subprocess

    out = subprocess.run([exe, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=15)
    text = out.stdout.decode("utf-8", "replace").strip().splitlines()
    return (text[0] if text else ""), out.returncode


class StepError(Exception):
    """A step's failure with what it found so far (its record's detail)."""

    def __init__(self, message, detail=None):
        super().__init__(message)
        self.smoke_detail = detail


SOURCE = r"""
#include <Python.h>
extern "C" int envdoctor_smoke_answer(void) { return (int)sizeof(Py_ssize_t) * 0 + 42; }
"""
# the quick tier's module: without Python.h, whose parsing is most of the compile (0.4 s of CPU against 0.07 s
# here, g++ 12); the header's presence is still checked, and --smoke thorough compiles against it
SOURCE_QUICK = r"""
extern "C" int envdoctor_smoke_answer(void) { return 42; }
"""


def _makedirs(path):
    """Make ``path`` like torch would; the directories made here (to remove after)."""
    made = []
    p = os.path.abspath(path)
    while p and not os.path.isdir(p):
        made.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    os.makedirs(path, exist_ok=True)
    return made


def step_compile(python_h=True, **_kw):
    """Compile a tiny C++ module with the compiler torch.compile would take (CXX, else g++: torch/_inductor/
    config.py cpp.cxx, checked with `--version` as cpp_builder.cpp_compiler_search does), against Python.h
    (sysconfig's include dir), in the inductor cache directory, then load it with ctypes there and in every
    directory torch, triton and cpp_extension build into (a noexec mount fails here: EPERM / failed to map
    segment). Also says which `c++` (cpp_extension's default) and `ninja` (cpp_extension's load()) PATH gives."""
    import ctypes
    import shutil
    import subprocess
    import sysconfig

    detail = {"path": os.environ.get("PATH")}  # type: Dict[str, Any]
    cxx_env = os.environ.get("CXX")
    compiler = cxx_env or "g++"
    detail["compiler_source"] = "CXX" if cxx_env else "default (g++)"
    detail["compiler"] = compiler
    exe = _which(compiler) if os.sep not in compiler else (compiler if os.path.isfile(compiler) else None)
    detail["compiler_path"] = exe
    for tool, name in (("cpp_extension_compiler", cxx_env or "c++"), ("ninja", "ninja")):
        found = _which(name)
        detail[tool] = found
        if found:
            try:
                detail[tool + "_version"] = _version_line(found)[0]
            except Exception as e:
                detail[tool + "_version"] = "error: " + _short(e, 200)
    include = sysconfig.get_paths().get("include") or ""
    detail["python_include"] = include
    detail["python_h"] = os.path.isfile(os.path.join(include, "Python.h"))
    dirs = cache_dirs()
    detail["dirs"] = [{"role": r, "path": p, "variable": v} for r, p, v in dirs]
    if exe is None:
        raise StepError(f"C++ compiler not found: {compiler!r} is not on PATH (torch.compile's inductor and "
                        "torch.utils.cpp_extension need one)", detail)
    version, _rc = _version_line(exe)
    detail["compiler_version"] = version
    if not detail["python_h"]:
        raise StepError("Python.h not found in {} (the Python development headers are not installed)".format(
            include or "sysconfig's include directory"), detail)
    made = []
    build_dir = dirs[1][1]
    try:
        made += _makedirs(build_dir)
        work = os.path.join(build_dir, f"envdoctor_smoke_{os.getpid()}")
        os.makedirs(work, exist_ok=True)
        src = os.path.join(work, "smoke.cpp")
        lib = os.path.join(work, "smoke.so")
        with open(src, "w") as f:
            f.write(SOURCE if python_h else SOURCE_QUICK)
        detail["compiled_with_python_h"] = bool(python_h)
        cmd = [exe, "-shared", "-fPIC", "-O0", "-I" + include, src, "-o", lib]
        detail["compile_command"] = " ".join(cmd)
        # what a reproduction needs once this step's files are gone: the flags, the source and where it built
        detail["compile_flags"] = cmd[1:5]
        detail["source"] = (SOURCE if python_h else SOURCE_QUICK).strip()
        detail["build_dir"] = build_dir
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, cwd=work)
        if run.returncode != 0:
            text = run.stdout.decode("utf-8", "replace").strip().splitlines()
            detail["compiler_output"] = [_short(x, 300) for x in text[-TRACEBACK_LINES:]]
            raise StepError("compiling a one-line C++ module failed (exit {}): {}".format(
                run.returncode, _short(" / ".join(text[-3:]), 600)), detail)
        loads = []
        failed = []
        for role, path, variable in dirs:
            entry = {"role": role, "path": path, "variable": variable}
            loads.append(entry)
            try:
                if role != "inductor-cache":
                    made += _makedirs(path)
                target = lib if role == "inductor-cache" else os.path.join(
                    path, f"envdoctor_smoke_{os.getpid()}.so")
                if target != lib:
                    shutil.copyfile(lib, target)
                try:
                    answer = ctypes.CDLL(target).envdoctor_smoke_answer()
                finally:
                    if target != lib:
                        os.unlink(target)
                entry["ok"] = answer == 42
                if answer != 42:
                    entry["error"] = f"the loaded function returned {answer} instead of 42"
            except Exception as e:
                entry["ok"] = False
                entry["error"] = _short(f"{type(e).__name__}: {e}", 600)
            if not entry["ok"]:
                entry.update(mount_of(path))
                failed.append(entry)
        detail["loads"] = loads
        if failed:
            first = failed[0]
            raise StepError("a freshly compiled module cannot be loaded from {} ({}): {}".format(
                first["path"], first["role"], first["error"]), detail)
    finally:
        shutil.rmtree(os.path.join(build_dir, f"envdoctor_smoke_{os.getpid()}"), ignore_errors=True)
        for d in made:  # only what this step made, deepest first
            try:
                os.rmdir(d)
            except OSError:
                pass
    return detail


def _unescape_mount(field):
    """A mountinfo field with its octal escapes undone ("/mnt/my\\040disk" -> "/mnt/my disk")."""
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_of(path):
    """Where a directory that could not load code is mounted, as this process sees it (its mount namespace):
    statvfs's ST_NOEXEC flag, and the mount point and per-mount options of the last (topmost) mount in
    /proc/self/mountinfo holding it (proc(5): field 5 the mount point, field 6 the options). Read only after a
    load failed."""
    out = {}  # type: Dict[str, Any]
    try:
        out["noexec"] = bool(os.statvfs(path).f_flag & getattr(os, "ST_NOEXEC", 8))
    except (OSError, AttributeError, ValueError):
        pass
    try:
        real = os.path.realpath(path)
        best = None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                point = _unescape_mount(parts[4])
                if (real == point or real.startswith(point.rstrip("/") + "/")) and (
                        best is None or len(point) >= len(best[0])):
                    best = (point, parts[5])
        if best is not None:
            out["mount_point"], out["mount_options"] = best
    except (OSError, ValueError):
        pass
    return out


# the RECORD lines _top_modules looks at, found by the regex engine rather than line by line (torch's RECORD has
# some 15,000 lines, read before `import torch`: 26 ms of Python against 8 here): a package's own __init__.py one
# level down, and a path with no "/" (a top-level module or extension); each path as far as its first comma
_RECORD_PACKAGE = None
_RECORD_TOP_FILE = None


def _top_modules(location, record_text, name):
    """The top-level importable module names a distribution installs, from its RECORD."""
    import re

    global _RECORD_PACKAGE, _RECORD_TOP_FILE
    if _RECORD_PACKAGE is None:
        _RECORD_PACKAGE = re.compile(r'\n"?([^/\r\n",]+)/__init__\.py"?(?=[,\r\n])')
        _RECORD_TOP_FILE = re.compile(r'\n"?([^/\r\n",]+)"?(?=[,\r\n])')
    text = "\n" + (record_text or "") + "\n"
    mods = set()
    for first in _RECORD_PACKAGE.findall(text):
        if not (first.endswith((".dist-info", ".data", ".libs", ".egg-info")) or first in ("..", "__pycache__", "bin")):
            mods.add(first)
    for path in _RECORD_TOP_FILE.findall(text):
        if path.endswith(".py"):
            if not path.startswith("_"):
                mods.add(path[:-3])
        elif (path.endswith(".so") or path.endswith(".pyd")) and "." in path:
            mod = path.split(".", 1)[0]
            if not mod.startswith("_"):
                mods.add(mod)
    want = name.replace("-", "_").lower()
    return sorted(mods, key=lambda m: (m.lower() != want, not want.startswith(m.lower()), m))


def step_resolve(targets=(), **_kw):
    """Where each module would be imported from on this sys.path (the run's own: `python -c` puts the working
    directory first), without executing it: a torch.py or torchvision/ in the working directory shadows the
    installed one. ``targets``: (distribution, version, location, module) of torch and its dependents."""
    import importlib.util

    out = []
    bad = []
    for dist, version, location, module in targets:
        entry = {"distribution": dist, "version": version, "module": module, "location": location}
        try:
            spec = importlib.util.find_spec(module)
        except Exception as e:
            entry["error"] = _short(f"{type(e).__name__}: {e}", 400)
            spec = None
        origin = None
        if spec is not None:
            origin = spec.origin
            if spec.submodule_search_locations:
                origin = list(spec.submodule_search_locations)[0]
        entry["origin"] = origin
        entry["inside"] = _inside(origin, location)
        if entry["inside"] is False:  # found elsewhere (not found at all is the import step's to say)
            bad.append(entry)
        out.append(entry)
    detail = {"cwd": _cwd(), "sys_path0": sys.path[0] if sys.path else None, "modules": out}
    if bad:
        b = bad[0]
        raise StepError("`import {}` would load {} instead of the installed {} {} in {}".format(
            b["module"], b["origin"] or "nothing (module not found)", b["distribution"], b["version"],
            b["location"]), detail)
    return detail


def _cwd():
    try:
        return os.getcwd()
    except OSError:
        return None


def _inside(path, location):
    if not path or not location or path in ("built-in", "frozen"):
        return None
    try:
        p = os.path.realpath(path)
        loc = os.path.realpath(location)
    except (OSError, ValueError):
        return None
    return p == loc or p.startswith(loc.rstrip(os.sep) + os.sep)


def step_import(dist="", version="", location="", module="", **_kw):
    """Import ``module`` (of distribution ``dist``) as the run would, and say whether what came is what is
    installed: its file inside the distribution's location, its __version__ against the distribution's."""
    import importlib

    if not module:
        raise Skip(f"no importable module found in {dist}'s RECORD")
    mod = importlib.import_module(module)
    path = getattr(mod, "__file__", None)
    got = getattr(mod, "__version__", None)
    detail = {"distribution": dist, "version": version, "module": module, "file": path,
              "location": location, "module_version": str(got) if got is not None else None,
              "inside": _inside(path, location)}
    if detail["inside"] is False:
        raise StepError(f"`import {module}` loaded {path}, not the installed {dist} {version} in {location}", detail)
    if _release(detail["module_version"]) and _release(version) and \
            _release(detail["module_version"]) != _release(version):
        detail["version_mismatch"] = True
        raise StepError("`import {}` reports __version__ {} from {}, but the installed {} is {}".format(
            module, detail["module_version"], path, dist, version), detail)
    return detail


def _release(text):
    """The first three numbers of a version ("2.5.1" of "2.5.1.post0+cu124"); None when it starts with none."""
    import re

    m = re.match(r"\s*v?(\d+(?:\.\d+){0,2})", str(text or ""))
    if not m:
        return None
    parts = [int(x) for x in m.group(1).split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


# --------------------------------------------------------------------------- steps with torch


def _stderr_to_file():
    """Point this child's fd 2 (and so its DataLoader workers') at an unlinked temporary file, so that what a
    worker prints before it dies or stalls can be quoted (a worker's feeder thread that runs out of descriptors
    prints OSError: [Errno 24] and the loader waits for a batch that never comes). False where it cannot."""
    import tempfile

    try:
        with tempfile.TemporaryFile() as f:
            os.dup2(f.fileno(), 2)
        return True
    except Exception:
        return False


def _stderr_tail():
    """What was written to fd 2 since _stderr_to_file (the workers' tracebacks): its last lines, and the
    exception lines ("OSError: [Errno 24] Too many open files"), each once."""
    import re

    try:
        end = os.lseek(2, 0, os.SEEK_END)
        os.lseek(2, max(0, end - 8000), os.SEEK_SET)
        text = os.read(2, 8000).decode("utf-8", "replace")
    except OSError:
        return [], []
    lines = [x for x in text.splitlines() if x.strip()]
    raised = [x for x in lines if re.match(r"[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b", x)]
    return lines[-TRACEBACK_LINES:], list(dict.fromkeys(raised))


def step_dataloader(columns=8, batches=8, timeout_s=15.0, **_kw):
    """A DataLoader with two workers passing tensors to this process the default way (torch.multiprocessing's
    default sharing strategy, file_descriptor on Linux), every batch kept as a training step keeps its inputs for
    a moment: by default 8 batches of 8 tensors hold 64 received descriptors at once, so a very low open-files
    limit fails here as a run with many tensors per sample fails at 1,024 (the quick tier asks for 2 batches of 2,
    one from each worker: each received descriptor costs a connection to the worker and back, most of this step's
    time). A TensorDataset, which pickles, so that spawn and forkserver workers (the default start method from
    Python 3.14) get it too."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    batch_size = 4
    columns = [torch.arange(batch_size * batches * 2, dtype=torch.float32).reshape(batch_size * batches, 2) + k
               for k in range(int(columns))]
    # a batch that does not come within timeout_s (less than the step's own bound) is an error that says so,
    # with what the workers printed, rather than a hang the runner can only call timed out
    loader = DataLoader(TensorDataset(*columns), batch_size=batch_size, num_workers=2, timeout=timeout_s)
    captured = _stderr_to_file()
    try:
        kept = [batch for batch in loader]
    except Exception as e:
        tail, raised = _stderr_tail() if captured else ([], [])
        if not tail:
            raise
        raise StepError("{}: {} (the workers said: {})".format(
            type(e).__name__, _short(str(e).strip(), 600), _short(" / ".join(raised[:3] or tail[-1:]), 600)),
            {"worker_stderr": [_short(x, 300) for x in tail]}) from None
    total = sum(float(t.sum()) for batch in kept for t in batch)
    want = sum(float(c.sum()) for c in columns)
    detail = {"sharing_strategy": torch.multiprocessing.get_sharing_strategy(), "batches": len(kept),
              "tensors_held": sum(len(b) for b in kept), "start_method": _start_method()}
    if total != want:
        raise StepError(f"the DataLoader's batches sum to {total} instead of {want}", detail)
    return detail


def _start_method():
    try:
        import multiprocessing

        return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_context().get_start_method()
    except Exception:
        return None


def step_checkpoint(dirs=(), **_kw):
    """torch.save a small state dict into each directory the run writes (--data, the working directory), fsync
    it, read it back with torch.load and compare; the file is removed."""
    import torch

    state = {"w": torch.arange(1024, dtype=torch.float32), "step": 7}
    out = []
    failed = []
    for d in dirs:
        if os.path.exists(d) and not os.path.isdir(d):
            d = os.path.dirname(os.path.abspath(d))  # --data named a file: its directory
        entry = {"dir": d}
        out.append(entry)
        path = os.path.join(d, f".envdoctor_smoke_{os.getpid()}.pt")
        try:
            with open(path, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            back = torch.load(path, map_location="cpu")
            entry["ok"] = bool(torch.equal(back["w"], state["w"])) and back["step"] == 7
            if not entry["ok"]:
                entry["error"] = "the checkpoint read back differs from what was written"
        except Exception as e:
            entry["ok"] = False
            entry["error"] = _short(f"{type(e).__name__}: {e}", 600)
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        if not entry["ok"]:
            failed.append(entry)
    detail = {"dirs": out}
    if failed:
        raise StepError("writing a checkpoint in {} failed: {}".format(failed[0]["dir"], failed[0]["error"]), detail)
    return detail


def step_distributed(**_kw):
    """torch.distributed with one rank: gloo (and NCCL where a GPU is there), one all_reduce, checked."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise StepError("torch.distributed is not available in this build")
    backend = "gloo"
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=__import__("datetime").timedelta(seconds=20))
    dist.init_process_group(backend, store=store, rank=0, world_size=1,
                            timeout=__import__("datetime").timedelta(seconds=20))
    try:
        t = torch.ones(4)
        dist.all_reduce(t)
        if float(t.sum()) != 4.0:
            raise StepError(f"all_reduce over one rank gave {t.tolist()}")
    finally:
        dist.destroy_process_group()
    return {"backend": backend}


def _cuda_or_skip():
    import torch

    if not torch.cuda.is_available():
        raise Skip("CUDA is not available (torch.cuda.is_available() is False)")
    return torch


def step_nccl(**_kw):
    torch = _cuda_or_skip()
    import datetime

    import torch.distributed as dist

    if not dist.is_nccl_available():
        raise Skip("this torch build has no NCCL")
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=20))
    dist.init_process_group("nccl", store=store, rank=0, world_size=1, timeout=datetime.timedelta(seconds=20))
    try:
        t = torch.ones(4, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        if float(t.sum()) != 4.0:
            raise StepError(f"NCCL all_reduce over one rank gave {t.tolist()}")
    finally:
        dist.destroy_process_group()
    return {"backend": "nccl"}


def step_cuda_kernel(**_kw):
    torch = _cuda_or_skip()
    x = torch.arange(1024, device="cuda", dtype=torch.float32)
    y = (x * 2 + 1).sum().item()
    want = float(2 * sum(range(1024)) + 1024)
    if y != want:
        raise StepError(f"an elementwise kernel gave {y} instead of {want}")
    return {"device": torch.cuda.get_device_name(0)}


def _finite_close(torch, got, want, what, tol):
    if not bool(torch.isfinite(got).all()):
        raise StepError(f"{what} gave non-finite values")
    err = float((got.float() - want.float()).abs().max())
    if err > tol:
        raise StepError(f"{what} differs from the CPU result by {err:.3g} (tolerance {tol:g})")
    return err


def step_cublas(**_kw):
    torch = _cuda_or_skip()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(256, 256, generator=g)
    b = torch.randn(256, 256, generator=g)
    got = (a.cuda() @ b.cuda()).cpu()
    err = _finite_close(torch, got, a @ b, "a float32 cuBLAS matmul", 0.5)  # TF32 may be on: loose
    return {"max_abs_error": err}


def step_cudnn(**_kw):
    torch = _cuda_or_skip()
    if not torch.backends.cudnn.is_available():
        raise StepError("cuDNN is not available to this torch (torch.backends.cudnn.is_available() is False)")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 16, 16, generator=g)
    w = torch.randn(4, 3, 3, 3, generator=g)
    got = torch.nn.functional.conv2d(x.cuda(), w.cuda()).cpu()
    err = _finite_close(torch, got, torch.nn.functional.conv2d(x, w), "a cuDNN convolution", 0.05)
    return {"cudnn_version": torch.backends.cudnn.version(), "max_abs_error": err}


def step_autocast(**_kw):
    torch = _cuda_or_skip()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(128, 128, generator=g)
    b = torch.randn(128, 128, generator=g)
    with torch.autocast("cuda", dtype=torch.float16):
        got = a.cuda() @ b.cuda()
    if got.dtype != torch.float16:
        raise StepError(f"autocast did not run the matmul in float16 (got {got.dtype})")
    err = _finite_close(torch, got.cpu(), a @ b, "a float16 autocast matmul", 0.5)
    return {"max_abs_error": err}


def step_compile_e2e(**_kw):
    """torch.compile of a small function end to end (inductor: C++ on the CPU, triton on a GPU), checked."""
    import torch

    def f(x):
        return torch.sin(x) * 2 + x.cos()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.linspace(0, 1, 64, device=device)
    got = torch.compile(f)(x)
    want = f(x)
    if not bool(torch.allclose(got, want, atol=1e-5)):
        raise StepError("the compiled function's result differs from eager mode")
    return {"device": device}


FUNCS = {
    "compile": step_compile, "resolve": step_resolve, "import": step_import, "dataloader": step_dataloader,
    "checkpoint": step_checkpoint, "distributed": step_distributed, "nccl": step_nccl,
    "cuda-kernel": step_cuda_kernel, "cublas": step_cublas, "cudnn": step_cudnn, "autocast": step_autocast,
    "torch-compile": step_compile_e2e,
}


def main(argv):
    """The fresh interpreter's entry (``python -c``): argv[0] is the plan as JSON, argv[1] the fd to answer on."""
    plan = json.loads(argv[0])
    out_fd = int(argv[1])
    serve([([(n, kw) for n, kw in units], timeouts) for units, timeouts in plan], FUNCS, out_fd)
