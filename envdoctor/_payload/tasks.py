"""The tasks (inspect, pcie-load) and their entry point main(); prints exactly one JSON object on stdout.

Usage:  python <envdoctor/_payload> [--task NAME] [task options...]   (the folder: __main__.py is the launcher)
  --task inspect (default):  [--no-torch] [--deadline-s S] [--smoke quick|thorough|off] [--smoke-dir DIR]...
  --task pcie-load:          [--seconds S] [--mib M]  host->device pinned copies on every visible GPU
  --task bench:              bench.py's own options (it streams JSON lines instead)
Adding a task: write `def task_NAME(argv, state) -> dict` and register it in TASKS.

Output envelope (one line of JSON on the original stdout):
  {"envdoctor_payload": 1, "task": "inspect", "ok": true, "error": null,
   "stage": null, "timed_out": false, "result": {...}, "duration_s": 1.2}
"""

import os
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Tuple

from .common import ANSWER_FDS, State, _exc_text, _guard, _start_watchdog, pci_key
from .dists import collect_packages, shared_library_files
from .extension_build import load_extensions
from .interp import finish_pth_replay, has_module, site_packages, start_pth_replay
from .libraries import library_candidates, loaded_libraries
from .reader import Remote, die_with_parent, fork_reader, let_go_of_outputs
from .smoke import TIERS, Smoke
from .torch_files import cwd_shadows, extension_archs, module_origin, torch_build_files, torch_dir
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


def task_inspect(argv: List[str], state: State) -> Dict[str, Any]:
    """Interpreter, installed distributions and, unless --no-torch, torch and its CUDA state.

    The files are read beside `import torch`, in a forked child (reader.py), which checkpoints what it read (a
    crash or hang inside the import still leaves it) and sends it back; the import starts at once in this
    process. Before issue 38's third look they were read first, then torch imported (--sequential still does):
    a thread was measured slower (the GIL, issue 19) and a forked reader then too, on 2 loaded CPUs, beside a
    heavier envdoctor start-up; docs/measurements.md has both and the measurement that brought the child back.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="_payload.py --task inspect")
    parser.add_argument("--no-torch", action="store_true", help="do not import torch")
    parser.add_argument("--sequential", action="store_true",
                        help="read the files first, then import torch, in one process (no reader child)")
    parser.add_argument("--cuda-gate", action="store_true",
                        help="before initialising CUDA, wait until stdin is closed (envdoctor's NVML gate)")
    parser.add_argument("--no-extension-load", action="store_true",
                        help="do not load torch extensions' libraries after importing torch")
    parser.add_argument("--smoke", choices=TIERS, default="off",
                        help="the smoke tier: what a training run does, tried in bounded children (smoke.py)")
    parser.add_argument("--smoke-dir", action="append", default=[],
                        help="a directory the run writes (--data): the checkpoint step writes there too")
    opts = parser.parse_args(argv)
    result = state.envelope["result"]
    errors: List[str] = []
    result["errors"] = errors
    smoke = Smoke(opts.smoke, opts.smoke_dir, result, state.deadline_at, private_fds=(state.out_fd,))
    reader = None
    if not opts.no_torch and not opts.sequential and torch_dir([]) is not None:
        result["torch_inspected"] = True
        reader = _start_reader(opts, state, result, errors, smoke)
    replay: Any = None
    location: Optional[str] = None
    owners: Dict[str, Tuple[str, str]] = {}
    if reader is None:
        replay, location, owners = _before_import(opts, state, result, errors, smoke, lambda: torch_dir(errors))
    try:
        return _inspect(opts, state, result, errors, smoke, reader, location, owners)
    finally:
        if reader is not None and reader.replay is None:
            state.stage = "reading the interpreter's executable .pth lines"
            reader.pump(lambda: "pth_exec" in result, None, None)
            if "pth_exec" not in result:  # (the reader's own guard says why when it ran)
                result["pth_exec"] = None
        else:
            replay = reader.replay if reader is not None else replay
            result["pth_exec"] = _guard(errors, "executable .pth lines", lambda: finish_pth_replay(replay, errors))
        if reader is not None:
            reader.close()
        if opts.smoke != "off" and not opts.no_torch:
            state.stage = "waiting for the smoke steps"
            _guard(errors, "the smoke steps", smoke.finish)


def _before_import(opts: Any, state: State, result: Dict[str, Any], errors: List[str], smoke: Any,
                   where_torch: Any, say: Any = None, sync: Any = None,
                   fresh_fd: Optional[int] = None) -> Tuple[Any, Optional[str], Dict[str, Tuple[str, str]]]:
    """What is read before torch is imported (in this process with --sequential, --no-torch or without fork;
    else beside the import, in the reader): the interpreter, the .pth replay started, the smoke tier started
    (``fresh_fd``: the pipe its fresh interpreter answers on), the files. Returns the replay, torch's directory
    and the owners of the files read (for the libraries torch loads)."""
    say = say or (lambda stage: setattr(state, "stage", stage))
    say("reading interpreter facts")
    result.update(_interpreter_facts())
    result["torch_inspected"] = not opts.no_torch
    say("reading the interpreter's pip and .pth files")
    result["site_packages"] = site_packages()
    result["has_pip"] = has_module("pip")
    result["has_ensurepip"] = has_module("ensurepip")
    # the .pth replay runs in a child while the files are read and torch imports; its answer joins at the end
    replay = _guard(errors, "executable .pth lines", lambda: start_pth_replay(errors))
    if sync is not None:
        sync()
    if not opts.no_torch:  # --no-torch: nothing of torch is run, its smoke steps neither
        say("starting the smoke steps")
        _guard(errors, "starting the smoke steps", lambda: smoke.start(fresh_fd))
    elif fresh_fd is not None:
        os.close(fresh_fd)
    location = where_torch()
    result["torch_origin"] = _guard(errors, "where torch is imported from", lambda: module_origin("torch", location))
    say("reading installed distributions and torch's files")
    owners: Dict[str, Tuple[str, str]] = {}
    result.update(read_files(state, errors, owners, result["env"], _prefixes(result), location, [None]))
    return replay, location, owners


def _prefixes(result: Dict[str, Any]) -> List[str]:
    return [p for p in (result.get("conda_prefix"), sys.prefix if result.get("is_conda") else None) if p]


def _start_reader(opts: Any, state: State, result: Dict[str, Any], errors: List[str], smoke: Any) -> Any:
    """Fork the reader (reader.py): it runs _before_import, checkpoints, sends what it read; None where it
    cannot fork."""
    fresh = os.pipe() if opts.smoke != "off" else None
    parent = os.getpid()

    def work(channel: Any) -> None:
        def say(stage: str) -> None:
            state.stage = stage
            channel.send({"stage": stage})

        replay, location, owners = _before_import(opts, state, result, errors, smoke, lambda: torch_dir(errors),
                                                  say, lambda: channel.sync(result, errors),
                                                  fresh[1] if fresh else None)
        state.stage = "importing torch"  # what the payload's process is doing (or did) by now
        state.checkpoint()  # a segfault or a hang inside `import torch` still leaves what was read
        channel.sync(result, errors)
        channel.send({"smoke": smoke.started_state(), "owners": sorted(owners.items()), "location": location,
                      "done": True})
        result["pth_exec"] = _guard(errors, "executable .pth lines", lambda: finish_pth_replay(replay, errors))
        channel.sync(result, errors)
        channel.send({"end": True})
        channel.close()
        let_go_of_outputs(state.out_fd)
        if smoke.fresh is not None and die_with_parent(parent):
            smoke.fresh.wait()  # the fresh interpreter's steps are bounded; the payload reaps this process after

    reader = fork_reader(work, [state.out_fd] + ([fresh[1]] if fresh else []), result, errors)
    if fresh:
        os.close(fresh[1])
        if reader is None:
            os.close(fresh[0])
    if reader is not None:
        reader.fresh_fd = fresh[0] if fresh else -1
        state.on_timeout = reader.on_timeout
    return reader


def _join_reader(state: State, reader: Any, smoke: Any, opts: Any, result: Dict[str, Any],
                 errors: List[str]) -> None:
    """Wait for the reader's reads (once torch is imported) and take them; where it ended without them, read the
    files here after all."""
    if reader is None or reader.joined:
        return
    reader.joined = True
    stage = state.stage
    reader.pump(lambda: reader.done, None, lambda s: setattr(state, "stage", s))
    state.stage = stage
    if reader.done and reader.smoke is not None:
        def handle(pid: int) -> Any:
            reader.owned = True
            return Remote(reader.pid, pid)

        smoke.adopt(reader.smoke, reader.fresh_fd, handle)
        return
    if reader.fresh_fd >= 0:
        os.close(reader.fresh_fd)
    del errors[:reader.merged_errors]
    errors.append("reading the files in a child process: " + (reader.failed or "it ended without answering")
                  + "; read here after the import")
    reader.merged_errors = 0
    reader.replay, reader.location, reader.owners = _before_import(opts, state, result, errors, smoke,
                                                                   lambda: torch_dir(errors))


def _inspect(opts: Any, state: State, result: Dict[str, Any], errors: List[str], smoke: Any,
             reader: Any, location: Optional[str], owners: Dict[str, Tuple[str, str]]) -> Dict[str, Any]:
    if opts.no_torch or (location is None and reader is None):
        result["torch"] = None
        result["loaded_libraries"] = []
        return result
    if reader is None:
        state.stage = "importing torch"
        state.checkpoint()  # a segfault or a hang inside `import torch` still leaves what was read by then

    def before_cuda(torch: Any) -> None:
        _join_reader(state, reader, smoke, opts, result, errors)
        smoke.after_torch_import(bool(getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)))

    result["torch"] = inspect_torch(state, errors, cuda_gate=opts.cuda_gate, before_cuda=before_cuda)
    if reader is not None:
        _join_reader(state, reader, smoke, opts, result, errors)  # (the import failed: not joined yet)
        owners = reader.owners
    prefixes = _prefixes(result)
    # what `import torch` pulled in, against the files a run started from the working directory would load first
    result["cwd_shadows"] = _guard(errors, "the working directory's module names", cwd_shadows)
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
    devices = []  # type: List[Dict[str, Any]]
    for i in range(count):
        # CUDA numbers devices FASTEST_FIRST by default, not in NVML's PCI order (CUDA C Programming Guide,
        # CUDA_DEVICE_ORDER): each device is named by its PCI bus id, never by cuda:i alone
        entry = {"index": i, "name": None, "pci_bus_id": None, "bytes": 0}  # type: Dict[str, Any]
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
    ANSWER_FDS.append(out_fd)
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
