"""What checks/smoke.py says about a failed smoke step that is not a verdict: each step's one-command reproduction,
the quoted error and its evidence, the catalogue signature it matches, and the commands of the compile fixes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..compat.signatures import normalise, signatures_from
from ..model.facts import PythonEnv, SmokeStep
from ..model.findings import Evidence, Fix
from ..remedies import command
from ..remedies.platform import platform_of

if TYPE_CHECKING:
    from ..compat.queries import Compat

# the soft limit many logins and container runtimes give (a common default: systemd's DefaultLimitNOFILE soft
# 1024; `ulimit -n`): at or below it DataLoader's file_descriptor strategy runs out with many tensors per sample
LOW_NOFILE = 1024
SHARING_DOCS = "https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies"
# torch's DataLoader says "Too many open files" (EMFILE) where it sees it; where the descriptor is stripped from a
# worker's message instead, multiprocessing says "received 0 items of ancdata" (torch/utils/data/dataloader.py,
# NOTE [ DataLoader on Linux and open files limit ]; pytorch/pytorch#973)
EMFILE = re.compile(r"Too many open files|\[Errno 24\]|EMFILE|received 0 items of ancdata", re.I)
# what loading a library from a noexec mount says: glibc's dlopen "failed to map segment from shared object"
# (mmap with PROT_EXEC refused), or EPERM ("Operation not permitted")
NOEXEC = re.compile(r"failed to map segment from shared object|Operation not permitted|\[Errno 1\]", re.I)


def noexec_of(entry: Dict[str, Any]) -> bool:
    """Whether a directory's load failed because its mount forbids executing files: the mount's own word where
    the step read it (statvfs's ST_NOEXEC flag, else the mountinfo options), else the loader's message."""
    if entry.get("noexec") is not None:
        return bool(entry.get("noexec"))
    options = entry.get("mount_options")
    if options:
        return "noexec" in str(options).split(",")
    return bool(NOEXEC.search(entry.get("error") or ""))


PERMISSION = re.compile(r"Permission denied|Read-only file system|\[Errno (?:13|30)\]")
DIR_VARIABLE = {"temp": "TMPDIR", "inductor-cache": "TORCHINDUCTOR_CACHE_DIR", "triton-cache": "TRITON_CACHE_DIR",
                "torch-extensions": "TORCH_EXTENSIONS_DIR"}

# one command per step that does what the step did (run in the same working directory, with the same python)
REPRO = {
    "dataloader": 'import torch; from torch.utils.data import DataLoader, TensorDataset; '
                  'print(sum(float(b[0].sum()) for b in DataLoader(TensorDataset(torch.arange(64.).reshape(32, 2)), '
                  'batch_size=4, num_workers=2)))',
    "checkpoint": 'import torch; torch.save({"w": torch.ones(4)}, "envdoctor-try.pt"); '
                  'print(torch.load("envdoctor-try.pt"))',
    "distributed": 'import torch, torch.distributed as d; s = d.TCPStore("127.0.0.1", 0, 1, True); '
                   'd.init_process_group("gloo", store=s, rank=0, world_size=1); t = torch.ones(4); '
                   'd.all_reduce(t); print(t)',
    "nccl": 'import torch, torch.distributed as d; s = d.TCPStore("127.0.0.1", 0, 1, True); '
            'd.init_process_group("nccl", store=s, rank=0, world_size=1); t = torch.ones(4, device="cuda"); '
            'd.all_reduce(t); print(t)',
    "cuda-kernel": 'import torch; print((torch.arange(1024., device="cuda") * 2 + 1).sum())',
    "cublas": 'import torch; a = torch.randn(256, 256); print(((a.cuda() @ a.cuda()).cpu() - a @ a).abs().max())',
    "cudnn": 'import torch; x, w = torch.randn(2, 3, 16, 16), torch.randn(4, 3, 3, 3); '
             'print((torch.nn.functional.conv2d(x.cuda(), w.cuda()).cpu() - torch.nn.functional.conv2d(x, w))'
             '.abs().max())',
    "autocast": 'import torch; a = torch.randn(128, 128, device="cuda"); '
                'print(torch.autocast("cuda", dtype=torch.float16).__enter__() or (a @ a).dtype)',
    "torch-compile": 'import torch; print(torch.compile(lambda x: torch.sin(x) * 2 + x.cos())'
                     '(torch.linspace(0, 1, 64)))',
}


def python_of(py: PythonEnv) -> str:
    return py.executable or "python"


def repro(py: PythonEnv, step: SmokeStep) -> Optional[str]:
    """One command that does what the step did."""
    name = step.name
    if name.startswith("import:"):
        module = step.detail.get("module") or name.split(":", 1)[1].replace("-", "_")
        return command(python_of(py), "-c", f"import {module}; print({module}.__file__)")
    if name == "resolve":
        mods = [m.get("module") for m in step.detail.get("modules") or [] if m.get("inside") is not True]
        module = (mods or ["torch"])[0]
        return command(python_of(py), "-c", f"import importlib.util; print(importlib.util.find_spec({module!r}))")
    if name == "compile":
        d = step.detail
        exe, flags, source, build = d.get("compiler_path"), d.get("compile_flags"), d.get("source"), d.get("build_dir")
        if exe and flags and source and build:
            # self-contained: the step's own files are removed, so the source comes on stdin and the module is
            # written where the step wrote it (the build directory, made again if the step had made it)
            return (command("mkdir", "-p", build) + " && " + command("printf", "%s\\n", source) + " | "
                    + command(exe, *flags, "-x", "c++", "-", "-o", build.rstrip("/") + "/envdoctor-try.so"))
        return None  # (an older snapshot: its compile_command names files the step removed)
    code = REPRO.get(name)
    return command(python_of(py), "-c", code) if code else None


# torch's ExceptionWrapper.reraise (torch/_utils.py): "Caught RuntimeError in DataLoader worker process 0."
WRAPPED = re.compile(r"Caught \w+ in DataLoader worker process \d+\.?$")
RAISED = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b: \S")


def quote_error(step: SmokeStep) -> str:
    """The error as raised ("OSError: ..."); envdoctor's own wording of a check the step made (StepError) as is."""
    text = (step.error or "").strip().splitlines()
    first = text[0] if text else "(no message)"
    if (step.error_type or "").endswith("StepError"):
        return first[:400]
    last = step.traceback[-1].strip() if step.traceback else ""
    if WRAPPED.match(first) and RAISED.match(last):
        # torch re-raises a worker's exception in the parent as "Caught X in DataLoader worker process N." with
        # the worker's traceback in the message: the worker's own error (the traceback's last line) is the cause
        return f"{last} (in DataLoader worker: {first})"[:400]
    return f"{step.error_type or 'error'}: {first}"[:400]


def step_evidence(i: int, step: SmokeStep, k: int) -> List[Evidence]:
    ev = [Evidence(f"pythons[{i}].smoke.steps[{k}].status", step.status,
                   expected="ok", source=f"{step.name} in {step.duration_s} s" if step.duration_s is not None else None),
          Evidence(f"pythons[{i}].smoke.steps[{k}].error", quote_error(step))]
    if step.traceback:
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].traceback", " | ".join(step.traceback[-4:])[:600]))
    return ev


def matching_signature(compat: Compat, step: SmokeStep) -> Any:
    """The first catalogue signature the step's error or traceback matches, or None."""
    text = normalise(" ".join([step.error or ""] + list(step.traceback)))
    if not text:
        return None
    try:
        sigs = signatures_from(compat)
    except Exception:  # no catalogue in this compat object: the generic finding says it all
        return None
    for sig in sigs:
        if sig.regex.search(text):
            return sig
    return None


def compiler_fix(facts: Any, py: PythonEnv, what: str) -> Fix:
    tool = platform_of(facts, py).package_tool
    pyver = ".".join((py.python_version or "").split(".")[:2])
    if what == "headers":
        package = {"apt": f"python{pyver}-dev" if pyver else "python3-dev", "dnf": "python3-devel",
                   "zypper": "python3-devel", "pacman": "python"}.get(tool or "", None)
    else:
        package = {"apt": "g++", "dnf": "gcc-c++", "zypper": "gcc-c++", "pacman": "gcc"}.get(tool or "", None)
    cmds = []
    if tool == "apt" and package:
        cmds = ["apt-get install -y " + package]
    elif tool in ("dnf", "zypper") and package:
        cmds = [f"{tool} install -y {package}"]
    elif tool == "pacman" and package:
        cmds = ["pacman -S --needed " + package]
    if what == "headers":
        return Fix("Install the Python development headers (Python.h) for this interpreter"
                   + ("" if cmds else " (the distribution's python3-dev / python3-devel package, or the same "
                      "Python from a distribution that ships them: conda, uv, python.org)"), cmds,
                   "https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html")
    return Fix("Install a C++ compiler on the run's PATH (or set CXX to one): inductor uses $CXX, else g++; "
               "torch.utils.cpp_extension uses $CXX, else c++" + ("" if cmds else " (the distribution's g++ package)"),
               cmds, "https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html")


def move_commands(bad: List[Dict[str, Any]], dirs: List[Dict[str, Any]]) -> List[str]:
    """The variables that move each directory that cannot load code, as commands: the mount's options first
    (findmnt shows noexec), then a directory made and exported per variable. The inductor cache follows TMPDIR when
    its own variable is unset, so moving TMPDIR moves both; the triton and cpp_extension caches live under HOME by
    default, so when one of those fails the new place is not under HOME."""
    roles = {x.get("role"): x for x in bad}
    home_bad = any(x.get("role") in ("triton-cache", "torch-extensions") and not x.get("variable") for x in bad)
    home = _home_of(dirs)
    if home and any(_under(home, x.get("mount_point")) for x in bad if x.get("mount_point") not in (None, "/")):
        home_bad = True  # HOME is on a mount that failed (set variables pointed there): not under HOME either
    base = "/var/tmp/torch-exec-$USER" if home_bad else "$HOME/.cache/torch-exec"
    # findmnt -T needs the path to exist: a directory that could not even be made (ENOENT under a HOME that is
    # not there) gets no mount to look at, only its move
    gone = all("[Errno 2]" in str(x.get("error") or "") or "No such file or directory" in str(x.get("error") or "")
               for x in bad)
    out = [] if gone else [command("findmnt", "-no", "TARGET,OPTIONS", "-T", str(bad[0].get("path")))]
    wanted: List[str] = []
    for x in bad:
        role, var = x.get("role") or "", x.get("variable")
        if role == "inductor-cache" and not var and "temp" in roles:
            continue  # under the temp directory: moving TMPDIR moves it
        name = {"temp": "TMPDIR", "inductor-cache": "TORCHINDUCTOR_CACHE_DIR", "triton-cache": "TRITON_CACHE_DIR",
                "torch-extensions": "TORCH_EXTENSIONS_DIR"}.get(role, var or "TMPDIR")
        if name not in wanted:
            wanted.append(name)
    for name in wanted:
        target = f"{base}/{name.lower()}"
        out.append(f"mkdir -p {target} && export {name}={target}")
    return out


def _home_of(dirs: List[Dict[str, Any]]) -> Optional[str]:
    """HOME as the step saw it: triton's default cache is HOME/.triton/cache (smoke_steps.cache_dirs)."""
    for x in dirs:
        path = str(x.get("path") or "")
        if x.get("role") == "triton-cache" and not x.get("variable") and path.endswith("/.triton/cache"):
            return path[: -len("/.triton/cache")] or "/"
    return None


def _under(path: str, mount_point: Optional[str]) -> bool:
    if not mount_point:
        return False
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def mount_evidence(i: int, k: int, loads: List[Dict[str, Any]]) -> List[Evidence]:
    """The mount of each directory that could not load code, as the step read it (mountinfo, statvfs)."""
    out = []
    for j, x in enumerate(loads):
        if x.get("ok") is False and (x.get("mount_options") or x.get("noexec") is not None):
            out.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.loads[{j}].mount_options",
                                x.get("mount_options"), expected="exec (no noexec)",
                                source=f"/proc/self/mountinfo: {x.get('path')} is on {x.get('mount_point') or '?'}"
                                + ("; statvfs: ST_NOEXEC" if x.get("noexec") else "")))
    return out
