"""The smoke tier's verdicts (issue 38): every step a run does that failed when tried in the interpreter is a
finding, never a pass and never "could not be judged": a known cause when the error says one (the signature
catalogue, or the causes this module knows: a shadowing file, no compiler, no Python.h, a noexec mount, the
open-files limit), else the step named, its error quoted and one command that reproduces it."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..compat.signatures import normalise, signatures_from
from ..model.facts import PythonEnv, Smoke, SmokeStep
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command, pip_install
from ..remedies.platform import platform_of
from .base import PROBED, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS, applies=PROBED)

STEPS = Findings("smoke.steps", "SMOKE_STEP_FAILED",
                 kinds=("{step}-failed", "{step}-timed-out", "shadowed", "no-compiler", "no-python-headers",
                        "compile-failed", "noexec", "signature-{id}"),
                 categories=("PYTHON_PACKAGE_SHADOWED", "TORCH_COMPILE_UNUSABLE", "SHM_TOO_SMALL",
                             "TORCH_IMPORT_FAILED", "COMPANION_VERSION_MISMATCH", "THIRD_PARTY_EXTENSION_MISMATCH",
                             "CUDA_VARIANT_MIXED", "CUDA_LIBRARY_VERSION_MISMATCH", "SYSTEM_LIB_SHADOWING",
                             "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "GPU_ARCH_NOT_IN_TORCH_BUILD", "INTERCONNECT",
                             "NO_GPU_VISIBLE", "NO_NVIDIA_DRIVER", "DRIVER_LIBRARY_MISMATCH", "HOST_MEMORY_LOW",
                             "ENV_VAR_HARMFUL", "PYTHON_VERSION_UNSUPPORTED", "CONTAINER_NO_GPU_RUNTIME",
                             "WSL_SPECIFIC", "GPU_XID_ERRORS", "GPU_MEMORY_ERRORS", "MIG_ENABLED", "GPU_BUSY",
                             "COMPUTE_MODE_RESTRICTED", "HOST_COMPILER_TOO_NEW", "NVCC_TORCH_CUDA_MISMATCH",
                             "TORCH_CPU_ONLY_BUILD", "REQUIREMENT_UNMET", "PIP_UNAVAILABLE", "UNRECOGNISED_ERROR",
                             "OPEN_FILES_LIMIT_LOW", "TARGET_PYTHON_UNUSABLE", "TORCH_NOT_INSTALLED"),
                 kind_categories={"shadowed": "PYTHON_PACKAGE_SHADOWED", "no-compiler": "TORCH_COMPILE_UNUSABLE",
                                  "no-python-headers": "TORCH_COMPILE_UNUSABLE",
                                  "compile-failed": "TORCH_COMPILE_UNUSABLE", "noexec": "TORCH_COMPILE_UNUSABLE"})
OPEN_FILES = Findings("smoke.open-files", "OPEN_FILES_LIMIT_LOW", kinds=("low", "dataloader-failed"))

# the soft limit many logins and container runtimes give (a common default: systemd's DefaultLimitNOFILE soft
# 1024; `ulimit -n`): at or below it DataLoader's file_descriptor strategy runs out with many tensors per sample
LOW_NOFILE = 1024
SHARING_DOCS = "https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies"
EMFILE = re.compile(r"Too many open files|\[Errno 24\]|EMFILE", re.I)
# what loading a library from a noexec mount says: glibc's dlopen "failed to map segment from shared object"
# (mmap with PROT_EXEC refused), or EPERM ("Operation not permitted")
NOEXEC = re.compile(r"failed to map segment from shared object|Operation not permitted|\[Errno 1\]", re.I)
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


def _smoked(ctx: CheckContext) -> List[Tuple[int, PythonEnv, Smoke]]:
    out = [(i, py, py.smoke) for i, py in enumerate(ctx.facts.pythons)
           if py.smoke is not None and py.smoke.tier not in (None, "off") and py.smoke.steps]
    if not out:
        tiers = [py.smoke.tier for py in ctx.facts.pythons if py.smoke is not None]
        if tiers and all(t == "off" for t in tiers):
            raise SkipCheck("the smoke tier was off (--smoke off)", not_applicable="smoke tier off")
        if tiers:
            why = "; ".join(n for py in ctx.facts.pythons if py.smoke is not None for n in py.smoke.not_tried)
            raise SkipCheck(f"no smoke step ran ({why or 'none planned'})", not_applicable="no smoke step ran")
        raise SkipCheck("no smoke tier ran (`envdoctor check` runs it; --no-torch, the Python API and older "
                        "snapshots do not)", not_applicable="smoke tier not run")
    return out


def _python(py: PythonEnv) -> str:
    return py.executable or "python"


def repro(py: PythonEnv, step: SmokeStep) -> Optional[str]:
    """One command that does what the step did."""
    name = step.name
    if name.startswith("import:"):
        module = step.detail.get("module") or name.split(":", 1)[1].replace("-", "_")
        return command(_python(py), "-c", f"import {module}; print({module}.__file__)")
    if name == "resolve":
        mods = [m.get("module") for m in step.detail.get("modules") or [] if m.get("inside") is not True]
        module = (mods or ["torch"])[0]
        return command(_python(py), "-c", f"import importlib.util; print(importlib.util.find_spec({module!r}))")
    if name == "compile":
        return step.detail.get("compile_command") or None
    code = REPRO.get(name)
    return command(_python(py), "-c", code) if code else None


def _quote(step: SmokeStep) -> str:
    """The error as raised ("OSError: ..."); envdoctor's own wording of a check the step made (StepError) as is."""
    text = (step.error or "").strip().splitlines()
    first = text[0] if text else "(no message)"
    if (step.error_type or "").endswith("StepError"):
        return first[:400]
    return f"{step.error_type or 'error'}: {first}"[:400]


def _evidence(i: int, step: SmokeStep, k: int) -> List[Evidence]:
    ev = [Evidence(f"pythons[{i}].smoke.steps[{k}].status", step.status,
                   expected="ok", source=f"{step.name} in {step.duration_s} s" if step.duration_s is not None else None),
          Evidence(f"pythons[{i}].smoke.steps[{k}].error", _quote(step))]
    if step.traceback:
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].traceback", " | ".join(step.traceback[-4:])[:600]))
    return ev


def _signature(ctx: CheckContext, step: SmokeStep) -> Any:
    """The first catalogue signature the step's error or traceback matches, or None."""
    text = normalise(" ".join([step.error or ""] + list(step.traceback)))
    if not text:
        return None
    try:
        sigs = signatures_from(ctx.compat)
    except Exception:  # no catalogue in this compat object: the generic finding says it all
        return None
    for sig in sigs:
        if sig.regex.search(text):
            return sig
    return None


def _compiler_fix(ctx: CheckContext, py: PythonEnv, what: str) -> Fix:
    tool = platform_of(ctx.facts, py).package_tool
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


def _move_commands(bad: List[Dict[str, Any]], dirs: List[Dict[str, Any]]) -> List[str]:
    """The variables that move each directory that cannot load code, as commands: the mount's options first
    (findmnt shows noexec), then a directory made and exported per variable. The inductor cache follows TMPDIR when
    its own variable is unset, so moving TMPDIR moves both; the triton and cpp_extension caches live under HOME by
    default, so when one of those fails the new place is not under HOME."""
    roles = {x.get("role"): x for x in bad}
    home_bad = any(x.get("role") in ("triton-cache", "torch-extensions") and not x.get("variable") for x in bad)
    base = "/var/tmp/torch-exec-$USER" if home_bad else "$HOME/.cache/torch-exec"
    out = [command("findmnt", "-no", "TARGET,OPTIONS", "-T", str(bad[0].get("path")))]
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


def _compile_finding(ctx: CheckContext, i: int, py: PythonEnv, step: SmokeStep, k: int) -> Finding:
    d = step.detail
    where = _python(py)
    ev = _evidence(i, step, k)
    if step.status == "failed" and d.get("compiler") and not d.get("compiler_path") and "compiler_path" in d:
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.path", d.get("path")))
        return STEPS.error(
            "no-compiler", f"torch.compile cannot build code for {where}: the C++ compiler {d.get('compiler')!r} "
            f"({d.get('compiler_source')}) is not on the run's PATH",
            detail="Inductor compiles C++ for every torch.compile on the CPU (and triton builds its launcher with a C "
                   "compiler on a GPU); torch.utils.cpp_extension.load needs one too. `import torch` works, the "
                   "first compiled call fails with InvalidCxxCompiler.",
            evidence=ev, fix=_compiler_fix(ctx, py, "compiler"), subject=py.executable)
    if step.status == "failed" and d.get("python_h") is False:
        return STEPS.error(
            "no-python-headers", f"torch.compile cannot build code for {where}: Python.h is missing from "
            f"{d.get('python_include') or 'the include directory'}",
            detail="Inductor's C++ wrapper and every cpp_extension include Python.h; without the development "
                   "headers the first compiled call fails ('Python.h: No such file or directory').",
            evidence=ev, fix=_compiler_fix(ctx, py, "headers"), subject=py.executable)
    bad = [x for x in d.get("loads") or [] if x.get("ok") is False]
    if bad:
        first = bad[0]
        var = first.get("variable") or DIR_VARIABLE.get(first.get("role") or "", "TMPDIR")
        if var == "XDG_CACHE_HOME":
            var = "TORCH_EXTENSIONS_DIR"
        noexec = bool(NOEXEC.search(first.get("error") or ""))
        places = ", ".join(f"{x.get('path')} ({x.get('role')})" for x in bad)
        summary = (f"a freshly compiled module cannot be loaded from {places}"
                   + (": the mount forbids executing files (noexec)" if noexec else "")
                   + "; torch.compile and JIT extensions load their code from there")
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.loads", first.get("error"),
                           source=f"{first.get('path')} ({first.get('role')}, {var})"))
        fixes = _move_commands(bad, d.get("dirs") or [])
        return STEPS.error(
            "noexec" if noexec else "compile-failed", summary,
            detail="Inductor builds C++ and triton kernels into its cache (TORCHINDUCTOR_CACHE_DIR, by default under "
                   "the temp directory) and cpp_extension into TORCH_EXTENSIONS_DIR, then loads them; a directory on a "
                   "noexec mount (a hardened /tmp, some container and HPC scratch mounts) refuses to map them "
                   "executable: 'failed to map segment from shared object' or 'Operation not permitted'.",
            evidence=ev,
            fix=Fix("Point the variable at a directory on a mount that allows executing files (or remount without "
                    "noexec), in the shell or job script that starts the run", fixes,
                    "https://man7.org/linux/man-pages/man8/mount.8.html"),
            subject=py.executable)
    out = d.get("compiler_output")
    if out:
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.compiler_output", " | ".join(out[-4:])[:600]))
    return STEPS.error(
        "compile-failed", f"building a one-line C++ module with {d.get('compiler_path') or d.get('compiler')} "
        f"failed for {where}: {_quote(step)}",
        detail="This is what torch.compile's inductor and torch.utils.cpp_extension do on their first call.",
        evidence=ev, fix=Fix("Run the compile command and fix what the compiler says",
                             [repro(py, step)] if repro(py, step) else []),
        subject=py.executable)


def _shadow_finding(facts: Any, i: int, py: PythonEnv, step: SmokeStep, k: int) -> Finding:
    d = step.detail
    mods = [m for m in d.get("modules") or [] if m.get("inside") is False or m.get("origin") is None]
    if step.name.startswith("import:"):
        mods = [{"module": d.get("module"), "origin": d.get("file"), "distribution": d.get("distribution"),
                 "version": d.get("version"), "location": d.get("location")}]
    m = mods[0] if mods else {}
    origin = m.get("origin") or ""
    cwd = d.get("cwd")
    ev = _evidence(i, step, k)
    if d.get("version_mismatch") and d.get("inside") is not False:
        # the installed files hold another build than the metadata says (a copy unpacked over the wheel, a
        # stale build directory, a failed uninstall): what is imported is not what pip thinks is installed
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.module_version", d.get("module_version"),
                           expected=d.get("version"), source=origin or None))
        dist = d.get("distribution") or m.get("module")
        return STEPS.error(
            "shadowed", f"`import {m.get('module')}` gives {dist} {d.get('module_version')} from {origin}, but the "
            f"installed distribution says {d.get('version')}",
            detail="The module's own __version__ and the installed metadata disagree: files of another build sit "
                   "in the package directory (a copy unpacked over the wheel, a half-done uninstall), so pip's view "
                   "of the environment is not what runs.",
            evidence=ev, fix=Fix("Reinstall the distribution cleanly", [
                pip_install(facts, py, [f"{dist}=={d.get('version')}"], force=True, no_deps=True)]),
            subject=py.executable)
    ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.modules", origin or None,
                       expected=f"inside {m.get('location')}"))
    cmds = []
    if origin and cwd and origin.startswith(cwd.rstrip("/") + "/"):
        new = origin.rstrip("/")
        base = new.rsplit("/", 1)[-1]
        stem, dot, ext = base.partition(".")
        renamed = f"{stem}_local{dot}{ext}" if dot else f"{stem}_local"
        cmds = [command("mv", new, new[: -len(base)] + renamed),
                command("rm", "-rf", cwd.rstrip("/") + "/__pycache__")]
    return STEPS.error(
        "shadowed", f"`import {m.get('module')}` in {cwd or 'the working directory'} loads {origin or 'nothing'}, "
        f"not the installed {m.get('distribution')} {m.get('version') or ''}".rstrip(),
        detail="Python puts the script's directory (or the working directory, for `python -c` and notebooks) first "
               "on sys.path: a file or folder there named like a package hides the installed one, and the run "
               "fails with AttributeError or 'partially initialized module' at its first use.",
        evidence=ev, fix=Fix("Rename the local file or folder that carries the package's name (and remove its "
                             "compiled cache)", cmds, "https://docs.python.org/3/library/sys_path_init.html"),
        subject=py.executable)


def _generic(ctx: CheckContext, i: int, py: PythonEnv, step: SmokeStep, k: int) -> Finding:
    cmd = repro(py, step)
    timed = step.status == "timed-out"
    sig = None if timed else _signature(ctx, step)
    what = step.name.replace("import:", "importing ")
    if sig is not None:
        sev = {"error": Severity.ERROR, "warning": Severity.WARNING}.get(sig.severity, Severity.WARNING)
        ev = _evidence(i, step, k)
        ev.append(Evidence("signature", sig.id, source=sig.source))
        return STEPS(f"signature-{sig.id}", sev,
                     f"{what} failed when tried in {_python(py)}: {_quote(step)}",
                     category=sig.category, detail=sig.explanation, evidence=ev,
                     fix=Fix(sig.fix, [cmd] if cmd else [], sig.source), subject=py.executable,
                     confidence=sig.confidence)
    kind = f"{step.name.replace(':', '-').replace('_', '-')}-{'timed-out' if timed else 'failed'}"
    if step.name == "checkpoint" and PERMISSION.search(step.error or ""):
        # the directory refuses writes (read-only, another owner): where the run writes there it fails, but the
        # working directory need not be where it writes
        return STEPS.warning(
            kind, f"a checkpoint cannot be written where the run may write it, tried in {_python(py)}: "
            f"{_quote(step)}",
            detail="envdoctor wrote a small torch.save file, fsynced it and read it back in each --data directory and "
                   "the working directory. Pass --data for the directory the run saves to.",
            evidence=_evidence(i, step, k),
            fix=Fix("Save checkpoints to a directory this user can write, or fix the permissions",
                    [cmd] if cmd else []), subject=py.executable)
    summary = (f"{what} did not finish in {step.duration_s:g} s when tried in {_python(py)}" if timed and
               step.duration_s is not None else f"{what} failed when tried in {_python(py)}: {_quote(step)}")
    if step.error_type == "Crash":
        summary = f"{what} crashed the process when tried in {_python(py)}: {step.error}"
    return STEPS.error(
        kind, summary,
        detail="envdoctor did this step the way a training run does, in a child of this interpreter; the run will "
               "meet the same error at the same step. Run the command to see it whole.",
        evidence=_evidence(i, step, k),
        fix=Fix("Reproduce it with one command and fix what the error names" + (
            " (`python -X faulthandler -c ...` prints the native stack of a crash)" if step.error_type == "Crash"
            else ""), [cmd] if cmd else []),
        subject=py.executable)


@check(STEPS, "every step a run does works when tried (imports, torch.compile's toolchain, DataLoader, checkpoint, "
              "process group, GPU kernels)")
def check_steps(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    for i, py, smoke in _smoked(ctx):
        for k, step in enumerate(smoke.steps):
            if step.status in ("ok", "skipped"):
                continue
            if step.name == "dataloader" and EMFILE.search((step.error or "") + " ".join(step.traceback)):
                continue  # smoke.open-files names the cause and its fix
            if step.name == "compile":
                findings.append(_compile_finding(ctx, i, py, step, k))
            elif step.name == "resolve" or (step.name.startswith("import:") and (
                    step.detail.get("inside") is False or step.detail.get("version_mismatch"))):
                findings.append(_shadow_finding(ctx.facts, i, py, step, k))
            else:
                findings.append(_generic(ctx, i, py, step, k))
    return findings


@check(OPEN_FILES, "the open-files limit leaves DataLoader workers room")
def check_open_files(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    judged = False
    for i, py, smoke in _smoked(ctx):
        limit = smoke.open_files_limit
        loader = smoke.step("dataloader")
        emfile = loader is not None and loader.status == "failed" and bool(
            EMFILE.search((loader.error or "") + " ".join(loader.traceback)))
        if limit is None and not emfile:
            continue
        judged = True
        soft = limit[0] if limit else None
        hard = limit[1] if limit and len(limit) > 1 else None
        if not emfile and (soft is None or soft > LOW_NOFILE):
            continue
        ev = [Evidence(f"pythons[{i}].smoke.open_files_limit", soft, expected=f"> {LOW_NOFILE}",
                       source=f"RLIMIT_NOFILE soft {soft}, hard {'unlimited' if hard is None else hard}")]
        raise_to = "unlimited" if hard is None else hard
        cmds = [f"ulimit -n {raise_to if hard is None or hard < 65536 else 65536}",
                "# for every login: '* soft nofile 65536' in /etc/security/limits.conf (not above the hard limit)",
                "# or, where the limit cannot be raised, in the training script before its DataLoaders: "
                "torch.multiprocessing.set_sharing_strategy('file_system')"]
        fix = Fix("Raise the soft open-files limit in the shell or job script that starts the run (or switch "
                  "torch's sharing strategy to file_system in the script, torch's documented alternative)", cmds,
                  SHARING_DOCS)
        if emfile:
            k = smoke.steps.index(loader)
            ev += _evidence(i, loader, k)
            findings.append(OPEN_FILES.error(
                "dataloader-failed", f"a DataLoader with two workers failed in {_python(py)}: too many open files "
                f"(soft limit {soft})",
                detail="DataLoader workers pass each tensor as a file descriptor (torch's default file_descriptor "
                       "sharing strategy on Linux); the process ran out of descriptors.",
                evidence=ev, fix=fix, subject=py.executable))
            continue
        ok = loader is not None and loader.status == "ok"
        findings.append(OPEN_FILES.info(
            "low", f"the open-files soft limit is {soft}: DataLoader workers with many tensors per sample run "
            f"out of descriptors ('Too many open files')" + ("; the smoke DataLoader passed" if ok else ""),
            detail="torch's default sharing strategy keeps a file descriptor per shared tensor; if the limit "
                   "cannot be raised, torch's documentation advises the file_system strategy.",
            evidence=ev, fix=fix, subject=py.executable))
    if not judged:
        raise SkipCheck("the open-files limit was not read (not a POSIX system, or no smoke tier)",
                        not_applicable="open-files limit not read")
    return findings
