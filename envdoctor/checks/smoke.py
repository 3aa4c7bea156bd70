"""The smoke tier's verdicts (issue 38): every step a run does that failed when tried in the interpreter is a
finding, never a pass and never "could not be judged": a known cause when the error says one (the signature
catalogue, or the causes this module knows: a shadowing file, no compiler, no Python.h, a noexec mount, the
open-files limit), else the step named, its error quoted and one command that reproduces it."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..model.facts import PythonEnv, Smoke, SmokeStep
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import pip_install, rename_local
from ._smoke import (
    DIR_VARIABLE,
    EMFILE,
    LOW_NOFILE,
    PERMISSION,
    SHARING_DOCS,
    compiler_fix,
    matching_signature,
    mount_evidence,
    move_commands,
    noexec_of,
    python_of,
    quote_error,
    repro,
    step_evidence,
)
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


def _compile_finding(ctx: CheckContext, i: int, py: PythonEnv, step: SmokeStep, k: int) -> Finding:
    d = step.detail
    where = python_of(py)
    ev = step_evidence(i, step, k)
    if step.status == "failed" and d.get("compiler") and not d.get("compiler_path") and "compiler_path" in d:
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.path", d.get("path")))
        return STEPS.error(
            "no-compiler", f"torch.compile cannot build code for {where}: the C++ compiler {d.get('compiler')!r} "
            f"({d.get('compiler_source')}) is not on the run's PATH",
            detail="Inductor compiles C++ for every torch.compile on the CPU (and triton builds its launcher with a C "
                   "compiler on a GPU); torch.utils.cpp_extension.load needs one too. `import torch` works, the "
                   "first compiled call fails with InvalidCxxCompiler.",
            evidence=ev, fix=compiler_fix(ctx.facts, py, "compiler"), subject=py.executable)
    if step.status == "failed" and d.get("python_h") is False:
        return STEPS.error(
            "no-python-headers", f"torch.compile cannot build code for {where}: Python.h is missing from "
            f"{d.get('python_include') or 'the include directory'}",
            detail="Inductor's C++ wrapper and every cpp_extension include Python.h; without the development "
                   "headers the first compiled call fails ('Python.h: No such file or directory').",
            evidence=ev, fix=compiler_fix(ctx.facts, py, "headers"), subject=py.executable)
    bad = [x for x in d.get("loads") or [] if x.get("ok") is False]
    if bad:
        first = bad[0]
        var = first.get("variable") or DIR_VARIABLE.get(first.get("role") or "", "TMPDIR")
        if var == "XDG_CACHE_HOME":
            var = "TORCH_EXTENSIONS_DIR"
        noexec = noexec_of(first)
        places = ", ".join(f"{x.get('path')} ({x.get('role')})" for x in bad)
        points = list(dict.fromkeys(x["mount_point"] for x in bad if x.get("mount_point") and noexec_of(x)))
        summary = (f"a freshly compiled module cannot be loaded from {places}"
                   + ((f": the mount forbids executing files ({', '.join(points)} mounted noexec)" if points else
                       ": the mount forbids executing files (noexec)") if noexec else
                      f": {str(first.get('error') or 'no error text')[:240]}")
                   + "; torch.compile and JIT extensions load their code from there")
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.loads", first.get("error"),
                           source=f"{first.get('path')} ({first.get('role')}, {var})"))
        ev += mount_evidence(i, k, d.get("loads") or [])
        fixes = move_commands(bad, d.get("dirs") or [])
        return STEPS.error(
            "noexec" if noexec else "compile-failed", summary,
            detail="Inductor builds C++ and triton kernels into its cache (TORCHINDUCTOR_CACHE_DIR, by default under "
                   "the temp directory) and cpp_extension into TORCH_EXTENSIONS_DIR, then loads them; a directory on a "
                   "noexec mount (a hardened /tmp, some container and HPC scratch mounts) refuses to map them "
                   "executable: 'failed to map segment from shared object' or 'Operation not permitted'."
                   if noexec else "Inductor and cpp_extension build code into these directories and load it from "
                   "there; the step could not (the error is quoted; the mount, where it was read, allows executing "
                   "files).",
            evidence=ev,
            fix=Fix("Point the variable at a directory on a mount that allows executing files, in the shell or job "
                    "script that starts the run (or, as root, remount without noexec: " + (
                        "; ".join(f"mount -o remount,exec {p}" for p in points) or "mount -o remount,exec <mount>")
                    + ")", fixes,
                    "https://man7.org/linux/man-pages/man8/mount.8.html") if noexec else
            Fix("Point the variable at another directory (one this user can write, on a mount that allows executing "
                "files), in the shell or job script that starts the run; or fix what the error names there "
                "(permissions, a read-only mount, an address-space limit `ulimit -v`, a security policy)", fixes),
            subject=py.executable)
    out = d.get("compiler_output")
    if out:
        ev.append(Evidence(f"pythons[{i}].smoke.steps[{k}].detail.compiler_output", " | ".join(out[-4:])[:600]))
    return STEPS.error(
        "compile-failed", f"building a one-line C++ module with {d.get('compiler_path') or d.get('compiler')} "
        f"failed for {where}: {quote_error(step)}",
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
    ev = step_evidence(i, step, k)
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
        cmds = rename_local([origin], cwd)
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
    sig = None if timed else matching_signature(ctx.compat, step)
    what = step.name.replace("import:", "importing ")
    if sig is not None:
        sev = {"error": Severity.ERROR, "warning": Severity.WARNING}.get(sig.severity, Severity.WARNING)
        ev = step_evidence(i, step, k)
        ev.append(Evidence("signature", sig.id, source=sig.source))
        return STEPS(f"signature-{sig.id}", sev,
                     f"{what} failed when tried in {python_of(py)}: {quote_error(step)}",
                     category=sig.category, detail=sig.explanation, evidence=ev,
                     fix=Fix(sig.fix, [cmd] if cmd else [], sig.source), subject=py.executable,
                     confidence=sig.confidence)
    kind = f"{step.name.replace(':', '-').replace('_', '-')}-{'timed-out' if timed else 'failed'}"
    if step.name == "checkpoint" and PERMISSION.search(step.error or ""):
        # the directory refuses writes (read-only, another owner): where the run writes there it fails, but the
        # working directory need not be where it writes
        return STEPS.warning(
            kind, f"a checkpoint cannot be written where the run may write it, tried in {python_of(py)}: "
            f"{quote_error(step)}",
            detail="envdoctor wrote a small torch.save file, fsynced it and read it back in each --data directory and "
                   "the working directory. Pass --data for the directory the run saves to.",
            evidence=step_evidence(i, step, k),
            fix=Fix("Save checkpoints to a directory this user can write, or fix the permissions",
                    [cmd] if cmd else []), subject=py.executable)
    summary = (f"{what} did not finish in {step.duration_s:g} s when tried in {python_of(py)}" if timed and
               step.duration_s is not None else f"{what} failed when tried in {python_of(py)}: {quote_error(step)}")
    if step.error_type == "Crash":
        summary = f"{what} crashed the process when tried in {python_of(py)}: {step.error}"
    return STEPS.error(
        kind, summary,
        detail="envdoctor did this step the way a training run does, in a child of this interpreter; the run will "
               "meet the same error at the same step. Run the command to see it whole.",
        evidence=step_evidence(i, step, k),
        fix=Fix("Reproduce it with one command and fix what the error names" + (
            " (`python -X faulthandler -c ...` prints the native stack of a crash)" if step.error_type == "Crash"
            else ""), [cmd] if cmd else []),
        subject=py.executable)


def _library_failed(py: PythonEnv, dist: str) -> Optional[str]:
    """The load error of one of ``dist``'s compiled libraries, as the payload's library load met it next to this
    torch (packages.extension-build judges it, with its cause): the smoke import failing too is the same fault."""
    scan = py.extensions
    for lib in (scan.libraries if scan is not None else []):
        if lib.distribution == dist and lib.loaded is False and lib.load_error and lib.skipped is None:
            return lib.load_error
    return None


def _already_said(i: int, py: PythonEnv, step: SmokeStep, k: int) -> Finding:
    dist = step.name.split(":", 1)[1]
    ev = step_evidence(i, step, k)
    ev.append(Evidence(f"pythons[{i}].extensions.libraries", _library_failed(py, dist),
                       source=f"{dist}'s library loaded next to this torch"))
    return STEPS.info(
        f"import-{dist}-failed", f"importing {dist} fails when tried in {python_of(py)}: {quote_error(step)}; its "
        "compiled library already failed to load next to this torch (packages.extension-build names the cause "
        "and the fix)",
        evidence=ev, subject=py.executable)


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
            # the compile and resolve verdicts read what the step found (its detail); a step that crashed, hung or
            # raised before it found anything is judged as any other failed step (never "loads nothing")
            if step.name == "compile" and step.status == "failed" and step.detail.get("compiler"):
                findings.append(_compile_finding(ctx, i, py, step, k))
            elif (step.name == "resolve" and any(m.get("inside") is False for m in step.detail.get("modules") or [])) \
                    or (step.name.startswith("import:") and (
                        step.detail.get("inside") is False or step.detail.get("version_mismatch"))):
                findings.append(_shadow_finding(ctx.facts, i, py, step, k))
            elif step.name.startswith("import:") and _library_failed(py, step.name.split(":", 1)[1]):
                findings.append(_already_said(i, py, step, k))
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
        # the hard limit, or 65536 where it is higher or unlimited (Linux refuses an unlimited RLIMIT_NOFILE: its
        # ceiling is fs.nr_open, getrlimit(2))
        cmds = [f"ulimit -n {hard if hard is not None and hard < 65536 else 65536}",
                "# for every login: '* soft nofile 65536' in /etc/security/limits.conf (not above the hard limit)",
                "# or, where the limit cannot be raised, in the training script before its DataLoaders: "
                "torch.multiprocessing.set_sharing_strategy('file_system')"]
        fix = Fix("Raise the soft open-files limit in the shell or job script that starts the run (or switch "
                  "torch's sharing strategy to file_system in the script, torch's documented alternative)", cmds,
                  SHARING_DOCS)
        if emfile:
            k = smoke.steps.index(loader)
            ev += step_evidence(i, loader, k)
            findings.append(OPEN_FILES.error(
                "dataloader-failed", f"a DataLoader with two workers failed in {python_of(py)}: too many open files "
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
