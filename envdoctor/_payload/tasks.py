"""The tasks (inspect, pcie-load) and their entry point main(); prints exactly one JSON object on stdout.

Usage:  python <envdoctor/_payload> [--task NAME] [task options...]   (the folder: __main__.py is the launcher)
  --task inspect (default):  [--no-torch] [--deadline-s S]
  --task pcie-load:          [--seconds S] [--mib M]  host->device pinned copies on every visible GPU
  --task bench:              bench.py's own options (it streams JSON lines instead)
Adding a task: write `def task_NAME(argv, state) -> dict` and register it in TASKS.

Output envelope (one line of JSON on the original stdout):
  {"envdoctor_payload": 1, "task": "inspect", "ok": true, "error": null,
   "stage": null, "timed_out": false, "result": {...}, "duration_s": 1.2}
"""

import os
import sys
import threading
import time
import traceback
from typing import Any, Dict, List, Optional, Tuple

from .common import State, _exc_text, _guard, _start_watchdog, pci_key
from .dists import _read_version_py, collect_packages, shared_library_files
from .extension_build import load_extensions
from .interp import finish_pth_replay, has_module, site_packages, start_pth_replay
from .libraries import library_candidates, loaded_libraries
from .torch_files import extension_archs, module_origin, torch_build_files, torch_dir
from .torch_state import inspect_torch

ENV_VARS = (
    "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
    "PYTORCH_CUDA_ALLOC_CONF", "NVIDIA_VISIBLE_DEVICES", "CONDA_PREFIX", "VIRTUAL_ENV", "PYTHONPATH",
    "PYTHONNOUSERSITE", "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING", "TORCH_CUDA_ARCH_LIST",
)


def _interpreter_facts() -> Dict[str, Any]:
    import platform
    import sysconfig

    base_prefix = getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))
    conda_prefix = os.environ.get("CONDA_PREFIX")
    is_conda = os.path.isdir(os.path.join(sys.prefix, "conda-meta")) or os.path.isdir(
        os.path.join(base_prefix, "conda-meta"))
    return {
        "python_version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": sysconfig.get_platform(),
        "prefix": sys.prefix,
        "base_prefix": base_prefix,
        "is_venv": sys.prefix != base_prefix or hasattr(sys, "real_prefix"),
        # PEP 668: the distribution manages this Python's packages (pip refuses to install into it); a venv
        # made from it is not managed
        "externally_managed": sys.prefix == base_prefix and os.path.isfile(
            os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")),
        "is_conda": is_conda,
        "conda_prefix": conda_prefix,
        "sys_path": list(sys.path),
        "env": dict((k, os.environ.get(k)) for k in ENV_VARS),
    }


def read_files(state: State, errors: List[str], owners: Dict[str, Tuple[str, str]], env: Dict[str, Optional[str]],
               prefixes: List[str], location: Optional[str], stage: List[Optional[str]]) -> Dict[str, Any]:
    """What the files say, without importing anything: installed distributions, torch's build files, the GPU
    architectures of its extensions, CUDA libraries outside its wheels. ``stage[0]`` says what is being read."""
    out: Dict[str, Any] = {}
    stage[0] = "reading installed distributions"
    out["packages"] = collect_packages(errors, owners)
    stage[0] = "reading library files that two wheels claim"
    out["shared_library_files"] = _guard(errors, "library files two wheels claim", shared_library_files)
    stage[0] = "reading torch's build from its files"
    # a damaged install: the import says more
    out["torch_build"] = _guard(errors, "reading torch's build files",
                                lambda: torch_build_files(location, out["packages"])) if location else None
    stage[0] = "reading the GPU architectures of torch's CUDA extensions"
    out["extensions"] = _guard(errors, "extension architectures", lambda: extension_archs(torch_location=location))
    stage[0] = "looking for CUDA libraries outside torch's wheels"
    out["library_candidates"] = _guard(errors, "library candidates",
                                       lambda: library_candidates(env, prefixes, owners))
    stage[0] = None
    return out


def _version_py_build(location: str) -> Dict[str, Any]:
    """torch's version.py alone (microseconds): what a crash in the first moments of `import torch` keeps,
    before read_files has read the rest of its build."""
    vp = _read_version_py(os.path.dirname(location), os.path.basename(location))
    return {"location": location, "version": vp.get("__version__"), "cuda": vp.get("cuda"), "hip": vp.get("hip"),
            "git_version": vp.get("git_version")}


def task_inspect(argv: List[str], state: State) -> Dict[str, Any]:
    """Interpreter, installed distributions and, unless --no-torch, torch and its CUDA state.

    The files are read first (0.2 s in a CUDA venv since they are read once, by hand) and checkpointed, then
    torch is imported. With --overlap, `import torch` starts first in the main thread and the files are read
    in a second thread while it runs; their facts join the envelope, and a checkpoint, as soon as they are read.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="_payload.py --task inspect")
    parser.add_argument("--no-torch", action="store_true", help="do not import torch")
    parser.add_argument("--sequential", action="store_true",
                        help="read the files, then import torch (the default; kept for scripts)")
    parser.add_argument("--cuda-gate", action="store_true",
                        help="before initialising CUDA, wait until stdin is closed (envdoctor's NVML gate)")
    parser.add_argument("--overlap", action="store_true",
                        help="import torch while a second thread reads the files")
    parser.add_argument("--no-extension-load", action="store_true",
                        help="do not load torch extensions' libraries after importing torch")
    parser.add_argument("--no-fork", action="store_true",
                        help="read the files in this process, not in a forked child while torch imports")
    opts = parser.parse_args(argv)
    # Measured (docs/measurements.md, 6 paired runs on the CUDA venv, 2 loaded cores): the reader thread made
    # the payload 0.66 s slower (median of paired differences), not faster: `import torch` is mostly Python
    # module execution that holds the GIL, and the thread's reads (0.2 s now) contend for it. Sequential stays
    # the default; --overlap keeps the concurrent path for machines where it pays.
    opts.sequential = opts.sequential or not opts.overlap
    result = state.envelope["result"]
    errors: List[str] = []
    result["errors"] = errors
    state.stage = "reading interpreter facts"
    result.update(_interpreter_facts())
    result["torch_inspected"] = not opts.no_torch
    state.stage = "reading the interpreter's pip and .pth files"
    result["site_packages"] = site_packages()
    result["has_pip"] = has_module("pip")
    result["has_ensurepip"] = has_module("ensurepip")
    # the .pth replay runs in a child while the files are read and torch imports; its answer joins at the end
    replay = _guard(errors, "executable .pth lines", lambda: start_pth_replay(errors))
    try:
        return _inspect(opts, state, result, errors)
    finally:
        result["pth_exec"] = _guard(errors, "executable .pth lines", lambda: finish_pth_replay(replay, errors))


def _inspect(opts: Any, state: State, result: Dict[str, Any], errors: List[str]) -> Dict[str, Any]:
    prefixes = [p for p in (result.get("conda_prefix"), sys.prefix if result["is_conda"] else None) if p]
    owners: Dict[str, Tuple[str, str]] = {}
    location = torch_dir(errors)
    result["torch_origin"] = _guard(errors, "where torch is imported from", lambda: module_origin("torch", location))
    stage: List[Optional[str]] = [None]
    child = None
    if not (opts.no_torch or location is None or opts.overlap or opts.no_fork or not _fork_pays()):
        # the files are read by a forked child while this process imports torch: two processes, two cores, no
        # GIL between them (a thread was measured slower); the child writes the checkpoint a crash in
        # `import torch` leaves behind. None where there is no fork (Windows) or it failed: read them here.
        child = _fork_reader(state, result, prefixes, location)
    collector = None
    if child is not None:
        result["torch_build"] = _version_py_build(location)
        reader = None
        # the child's answer joins the result as soon as it comes (a pipe read: no GIL held while waiting), so
        # that the envelope the deadline watchdog writes during a hung `import torch` still holds the files
        collector = _start_collector(state, child, result, errors, owners)
    elif opts.no_torch or location is None or opts.sequential:
        result.update(read_files(state, errors, owners, result["env"], prefixes, location, stage))
        if opts.no_torch or location is None:
            result["torch"] = None
            result["loaded_libraries"] = []
            return result
        reader = None
    else:
        result["torch_build"] = _version_py_build(location)
        reader = _start_reader(state, errors, owners, result, prefixes, location, stage)
    state.stage = "importing torch"
    if child is None:  # (a forked child writes it once it has read the files)
        state.checkpoint()  # a segfault or a hang inside `import torch` still leaves what was read by then
    result["torch"] = inspect_torch(state, errors, cuda_gate=opts.cuda_gate)
    if collector is not None:
        state.stage = "reading files (after importing torch)"
        collector.join()
        if not getattr(collector, "answered", False):  # the child died or said nothing: read them here after all
            errors.append("the forked file reader gave no answer: the files were read after importing torch")
            result.update(read_files(state, errors, owners, result["env"], prefixes, location, stage))
    if reader is not None:
        state.stage = (stage[0] or "reading files") + " (after importing torch)"
        reader.join()
    if result["torch"] is not None:
        state.stage = "reading loaded libraries"
        libs, err = loaded_libraries(prefixes, owners)
        result["loaded_libraries"] = libs or []
        if err:
            errors.append(err)
        if not result["torch"].get("import_error") and not opts.no_extension_load:
            # after the libraries torch loaded are read (an extension may map another CUDA runtime): each
            # extension's library loaded next to this torch; a hang here is the deadline's, named by the stage
            state.stage = "loading torch extensions' libraries"
            state.checkpoint()

            def loading(path: str) -> None:
                state.stage = "loading the torch extension " + path

            _guard(errors, "loading extension libraries",
                   lambda: load_extensions(result.get("extensions"), on_load=loading))
            state.stage = None
    else:
        result["loaded_libraries"] = []
    return result


def _fork_reader_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _fork_pays() -> bool:
    """Is a forked reader worth it here? ENVDOCTOR_PAYLOAD_FORK=0/1 decides; else only with 4 usable CPUs or more:
    on 2 CPUs (measured, docs/measurements.md) the child, this import and envdoctor's own start-up are three busy
    processes on two cores, and the run got slower, not faster."""
    choice = os.environ.get("ENVDOCTOR_PAYLOAD_FORK")
    if choice in ("0", "1"):
        return choice == "1"
    return _fork_reader_cpus() >= 4


def _fork_reader(state: State, result: Dict[str, Any], prefixes: List[str], location: str) -> Optional[Tuple[int, int]]:
    """Fork a child that reads the files (read_files), writes the checkpoint with them and sends them back
    through a pipe; (pid, read end), or None when this platform cannot fork or the fork failed."""
    import json

    if not hasattr(os, "fork"):
        return None
    try:
        r, w = os.pipe()
    except OSError:
        return None
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: read, checkpoint, answer, and leave without running the parent's exit handlers
        code = 0
        try:
            os.close(r)
            state.lock = threading.Lock()  # a copy of a lock another thread held at the fork would never open
            state.timer = None
            errors: List[str] = []
            owners: Dict[str, Tuple[str, str]] = {}
            files = read_files(state, errors, owners, result["env"], prefixes, location, [None])
            result.update(files)
            result["errors"] = list(result.get("errors") or []) + errors
            state.stage = "importing torch"  # what the parent is doing: a checkpoint says so when it dies there
            state.checkpoint()
            data = json.dumps({"files": files, "errors": errors, "owners": owners}, default=str).encode("utf-8")
            while data:
                n = os.write(w, data)
                data = data[n:]
        except BaseException:  # noqa: BLE001 - the parent reads the files itself when the child says nothing
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _collect_reader(child: Tuple[int, int]) -> Optional[Dict[str, Any]]:
    """The forked reader's answer ({"files", "errors", "owners"}), or None when it died without one."""
    import json

    pid, r = child
    chunks: List[bytes] = []
    try:
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        chunks = []
    finally:
        os.close(r)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass
    try:
        got = json.loads(b"".join(chunks).decode("utf-8"))
    except ValueError:
        return None
    return got if isinstance(got, dict) and {"files", "errors", "owners"} <= set(got) else None


def _start_collector(state: State, child: Tuple[int, int], result: Dict[str, Any], errors: List[str],
                     owners: Dict[str, Tuple[str, str]]) -> threading.Thread:
    """A daemon thread that waits for the forked reader and merges its answer; ``.answered`` says it came."""

    def work() -> None:
        got = _collect_reader(child)
        if got is None:
            return
        with state.lock:
            result.update(got["files"])
            errors.extend(got["errors"])
            owners.update({k: tuple(v) for k, v in got["owners"].items()})
        collector.answered = True  # type: ignore[attr-defined]

    collector = threading.Thread(target=work, name="envdoctor-payload-fork-reader", daemon=True)
    collector.answered = False  # type: ignore[attr-defined]
    collector.start()
    return collector


def _start_reader(state: State, errors: List[str], owners: Dict[str, Tuple[str, str]], result: Dict[str, Any],
                  prefixes: List[str], location: str, stage: List[Optional[str]]) -> threading.Thread:
    """read_files in a daemon thread; its facts join ``result`` (and a checkpoint) when they are all read."""
    # what the reader imports, imported here first: two threads importing the same modules at once (the
    # reader and `import torch`) can meet in importlib's module locks
    import csv  # noqa: F401
    import importlib.util  # noqa: F401
    from importlib import metadata  # noqa: F401

    def work() -> None:
        mine: List[str] = []
        try:
            files = read_files(state, mine, owners, result["env"], prefixes, location, stage)
        except Exception as e:  # read_files guards each part; this is a bug in it: say so, keep the rest
            files = {}
            mine.append(f"reading files: {_exc_text(e)}")
        with state.lock:
            result.update(files)
            errors.extend(mine)
        for _ in range(3):  # the main thread may be filling torch's facts: a dump that raced it is retried
            if state.checkpoint():
                break

    reader = threading.Thread(target=work, name="envdoctor-payload-files", daemon=True)
    reader.start()
    return reader


def task_pcie_load(argv: List[str], state: State) -> Dict[str, Any]:
    """Copy pinned host memory to every visible GPU for --seconds, so that the links train up to
    their top PCIe generation while envdoctor samples them through NVML (links idle at Gen1)."""
    import argparse

    parser = argparse.ArgumentParser(prog="_payload.py --task pcie-load")
    parser.add_argument("--seconds", type=float, default=1.5, help="how long to keep the copies going")
    parser.add_argument("--mib", type=int, default=64, help="size of each copy")
    opts = parser.parse_args(argv)
    result = state.envelope["result"]
    result["ran"] = False
    state.stage = "importing torch"
    try:
        import torch  # only here: the payload stays stdlib-only at import
    except Exception as e:
        result["reason"] = "import torch failed: " + _exc_text(e)
        return result
    state.stage = "initialising CUDA"
    if not torch.cuda.is_available():
        result["reason"] = "torch.cuda.is_available() is False (torch {}, CUDA {})".format(
            torch.__version__, getattr(torch.version, "cuda", None))
        return result
    count = torch.cuda.device_count()
    state.stage = "allocating pinned buffers"
    nbytes = max(1, opts.mib) * 1024 * 1024
    bufs = []
    devices = []
    for i in range(count):
        # CUDA numbers devices FASTEST_FIRST by default, not in NVML's PCI order (CUDA C Programming Guide,
        # CUDA_DEVICE_ORDER): each device is named by its PCI bus id, never by cuda:i alone
        entry = {"index": i, "name": None, "pci_bus_id": None, "bytes": 0}
        devices.append(entry)
        try:  # per device: one GPU that cannot be used (busy, no memory, lost) must not stop the others
            props = torch.cuda.get_device_properties(i)
            entry["name"] = props.name
            entry["pci_bus_id"] = pci_key(props)
            host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
            dev = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{i}")
            bufs.append((i, host, dev, torch.cuda.Stream(device=i)))
        except Exception as e:
            entry["error"] = _exc_text(e)
    state.stage = "copying host to device"
    start = time.monotonic()
    result["load_started_s"] = round(start - state.start, 3)
    while bufs and time.monotonic() - start < opts.seconds:
        issued = []
        for item in list(bufs):  # all devices' copies in flight together, so every link carries traffic
            try:
                with torch.cuda.stream(item[3]):
                    item[2].copy_(item[1], non_blocking=True)
                issued.append(item)
            except Exception as e:
                devices[item[0]]["error"] = _exc_text(e)
                bufs.remove(item)
        for item in issued:
            try:
                item[3].synchronize()
                devices[item[0]]["bytes"] += nbytes
            except Exception as e:
                devices[item[0]]["error"] = _exc_text(e)
                bufs.remove(item)
    elapsed = time.monotonic() - start
    for d in devices:
        d["gb_per_s"] = round(d["bytes"] / elapsed / 1e9, 2) if elapsed > 0 and d["bytes"] else None
    result["ran"] = True
    result["seconds"] = round(elapsed, 3)
    result["devices"] = devices
    return result


TASKS = {"inspect": task_inspect, "pcie-load": task_pcie_load}


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Keep stdout for our one JSON line: everything else anyone prints (torch, .pth files, C code
    # writing to fd 1) goes to stderr for the rest of this process.
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    state = State(out_fd)
    rc = 0
    try:
        task = "inspect"
        deadline: Optional[float] = None
        rest: List[str] = []
        i = 0
        while i < len(argv):
            if argv[i] == "--task" and i + 1 < len(argv):
                task = argv[i + 1]
                i += 2
            elif argv[i] == "--deadline-s" and i + 1 < len(argv):
                deadline = float(argv[i + 1])
                i += 2
            else:
                rest.append(argv[i])
                i += 1
        state.envelope["task"] = task
        if deadline is not None and deadline > 0:
            _start_watchdog(state, deadline)
        fn = TASKS.get(task)
        if fn is None:
            state.envelope["error"] = "unknown task {!r} (known: {})".format(task, ", ".join(sorted(TASKS)))
            rc = 2
        else:
            result = fn(rest, state)
            state.envelope["result"] = result
            state.envelope["ok"] = True
            state.stage = None
    except SystemExit as e:  # argparse errors
        state.envelope["error"] = f"bad arguments (exit {e.code}); see stderr"
        rc = 2
    except BaseException as e:
        state.envelope["error"] = _exc_text(e)
        state.envelope["stage"] = state.stage
        traceback.print_exc()
        rc = 1
    state.emit()
    if state.timer is not None:
        state.timer.cancel()  # torch's atexit handlers must not trip the watchdog after we answered
    return rc
