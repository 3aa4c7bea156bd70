"""Probe of the Python interpreter being diagnosed: runs the payload (envdoctor/_payload/) inside it and reads its JSON."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.domain.fastclass import dataclass
from envdoctor.model.facts import (
    CwdShadows,
    ExtensionScan,
    FactsError,
    LibraryCopy,
    ModuleOrigin,
    Package,
    ProbeStatus,
    PthExecLine,
    PythonEnv,
    SharedLibraryFile,
    Smoke,
    TorchBuildFiles,
    TorchInfo,
    from_dict,
)
from envdoctor.probes.package_variants import with_variant
from envdoctor.probes.payload_launch import (  # noqa: F401  (DEFAULT_TIMEOUT_S, payload_argv...: this module's API)
    DEFAULT_TIMEOUT_S,
    PAYLOAD_ENV,
    adopt_early,
    default_interpreter,
    inspect_args,
    inspect_targets,
    payload_argv,
    payload_deadline_s,
    payload_path,
    smoke_args,
)
from envdoctor.probes.registry import ProbeContext, probe
from envdoctor.probes.runner import OUTPUT_CAP_BYTES, RunResult

PAYLOAD_VERSION = 1  # must match _payload/tasks.PAYLOAD_VERSION (the envelope's "envdoctor_payload")

@dataclass(frozen=True)
class PayloadRun:
    """What running one payload task gave: the envelope's result and, when it went wrong, why."""

    result: Optional[Dict[str, Any]]  # the task's result (possibly partial), None when nothing came back
    error: Optional[str]  # one line; None when the task finished
    # "ok", "not_found", "timeout", "could_not_run", "no_json", "crashed", "exited", "task_error", "partial_timeout"
    kind: str
    run: RunResult
    stage: Optional[str] = None  # what the payload was doing when it stopped


def parse_envelope(stdout: str) -> Optional[Dict[str, Any]]:
    """The payload's JSON envelope: its last line that parses (stray prints before it are tolerated)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "envdoctor_payload" in obj:
            return obj
    return None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def execute_payload(executable: str, runner: Any, task: str = "inspect", args: Sequence[str] = (),
                    timeout_s: float = DEFAULT_TIMEOUT_S, stage_hint: Optional[str] = None) -> PayloadRun:
    """Run one payload task in ``executable`` through ``runner``; never raises.

    ``stage_hint`` names what most likely hung when our own timeout (not the payload's) fires.
    """
    argv = payload_argv(executable, task, args, timeout_s)
    if not (payload_path() / "__main__.py").is_file():
        rr = RunResult(tuple(argv), None, error="payload missing")
        return PayloadRun(None, f"envdoctor's payload script is missing ({payload_path()}): reinstall envdoctor",
                          "could_not_run", rr)
    early = adopt_early(argv, runner, PAYLOAD_ENV)  # started by cli.main before envdoctor's own imports
    if task == "inspect":
        from envdoctor.probes.nvml import wait_for_process_lists

        wait_for_process_lists()  # not while NVML lists the GPUs' processes: the payload's CUDA context is not another tenant
    # an early payload has been importing torch meanwhile; closing its stdin lets it initialise CUDA (--cuda-gate)
    rr = early.result(timeout_s) if early is not None else runner.run(argv, timeout=timeout_s, env=PAYLOAD_ENV)
    if rr.not_found:
        return PayloadRun(None, f"Python interpreter {executable} not found", "not_found", rr)
    envelope = parse_envelope(rr.stdout) if rr.stdout else None
    if envelope is not None and envelope.get("checkpoint") and envelope.get("envdoctor_payload") == PAYLOAD_VERSION:
        # the payload said what it had before a risky step (import torch) and never answered after it
        return _stopped_after_checkpoint(executable, envelope, rr, timeout_s)
    if rr.timed_out and envelope is None:
        where = f" while {stage_hint}" if stage_hint else ""
        return PayloadRun(None, f"timed out after {timeout_s:g} s{where}", "timeout", rr, stage_hint)
    if rr.error and envelope is None:
        return PayloadRun(None, f"could not run {executable}: {rr.error}", "could_not_run", rr)
    if envelope is None:
        tail = _last_line(rr.stderr) or _last_line(rr.stdout) or "no output"
        if rr.returncode is not None and rr.returncode < 0:  # killed by a signal: a crash in native code
            where = f" while {stage_hint}" if stage_hint else ""
            said = f": {tail}" if tail != "no output" else ""
            return PayloadRun(None, f"{executable} was killed by {_signal_name(-rr.returncode)}{where}{said}",
                              "crashed", rr, stage_hint)
        msg = f"the payload printed no JSON (exit {rr.returncode}): {tail}"
        if getattr(rr, "truncated", False):  # FakeRunner results may predate the field
            msg = (f"the payload printed more than {OUTPUT_CAP_BYTES // 2**20} MiB (exit {rr.returncode}); "
                   "envdoctor reads no more than that")
        if "SyntaxError" in rr.stderr:
            msg += " (is this Python older than 3.8? the payload needs 3.8+)"
        elif not rr.stdout.strip() and not rr.stderr.strip():
            msg = (f"{executable} ran envdoctor's payload script and printed nothing (exit {rr.returncode}): "
                   "it does not behave like a Python interpreter")
        return PayloadRun(None, msg, "no_json", rr)
    if envelope.get("envdoctor_payload") != PAYLOAD_VERSION:
        return PayloadRun(None, f"payload protocol {envelope.get('envdoctor_payload')!r} is not "
                                f"{PAYLOAD_VERSION}: a mixed envdoctor installation", "protocol", rr)
    result = envelope.get("result")
    if not isinstance(result, dict):
        result = None
    stage = envelope.get("stage") if isinstance(envelope.get("stage"), str) else None
    if envelope.get("ok") is True:
        return PayloadRun(result, None, "ok", rr)
    error = str(envelope.get("error") or "the payload reported a failure without a message")
    kind = "partial_timeout" if envelope.get("timed_out") else "task_error"
    return PayloadRun(result or None, error, kind, rr, stage)


def _stopped_after_checkpoint(executable: str, envelope: Dict[str, Any], rr: RunResult,
                              timeout_s: float) -> PayloadRun:
    """The payload's last word was a checkpoint: it was killed, hung or exited during the next step."""
    stage = envelope.get("stage") if isinstance(envelope.get("stage"), str) else None
    result = envelope.get("result") if isinstance(envelope.get("result"), dict) else None
    where = f" while {stage}" if stage else ""
    tail = _last_line(rr.stderr)
    said = f": {tail}" if tail else ""
    if rr.timed_out:
        return PayloadRun(result, f"timed out after {timeout_s:g} s{where}", "timeout", rr, stage)
    if rr.returncode is not None and rr.returncode < 0:
        return PayloadRun(result, f"killed by {_signal_name(-rr.returncode)}{where}{said}", "crashed", rr, stage)
    return PayloadRun(result, f"exited with code {rr.returncode}{where} without answering{said}", "exited", rr, stage)


def _signal_name(signum: int) -> str:
    import signal

    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    meaning = {"SIGSEGV": "segmentation fault", "SIGABRT": "aborted", "SIGILL": "illegal instruction",
               "SIGBUS": "bus error", "SIGKILL": "killed, e.g. out of memory"}.get(name)
    return f"{name} ({meaning})" if meaning else name


def run_payload(executable: str, runner: Any, task: str = "inspect", args: Sequence[str] = (),
                timeout_s: float = DEFAULT_TIMEOUT_S) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Run a payload task (``inspect``, later ``bench``...): (result or None, error or None).

    Both can be set: a task that timed out inside the payload returns what it had collected.
    """
    pr = execute_payload(executable, runner, task, args, timeout_s)
    return pr.result, pr.error


# --------------------------------------------------------------------------- choosing the interpreter


# --------------------------------------------------------------------------- result -> facts


def _section(cls: Any, data: Any, path: str, notes: List[str]) -> Any:
    try:
        return from_dict(cls, data, path)
    except FactsError as e:
        notes.append(f"unreadable payload section: {e}")
        return None


def env_from_result(result: Dict[str, Any], notes: List[str]) -> PythonEnv:
    """Build PythonEnv from the inspect task's result (status/reason are set by the caller)."""
    scalar_keys = ("executable", "python_version", "implementation", "platform", "prefix", "is_venv",
                   "is_conda", "env", "import_errors", "torch_inspected", "externally_managed", "site_packages",
                   "has_pip", "has_ensurepip")
    base = _section(PythonEnv, {k: result[k] for k in scalar_keys if k in result}, "python", notes) or PythonEnv()
    packages = []
    for i, p in enumerate(result.get("packages") or []):
        # the payload reports what the files say; the variant is judged here (probes/package_variants.py)
        pkg = _section(Package, with_variant(p) if isinstance(p, dict) else p, f"python.packages[{i}]", notes)
        if pkg is not None:
            packages.append(pkg)
    libs = _copies(result.get("loaded_libraries"), "python.loaded_libraries", notes)
    candidates = _copies(result.get("library_candidates"), "python.library_candidates", notes)
    torch = None
    if isinstance(result.get("torch"), dict):
        torch = _section(TorchInfo, result["torch"], "python.torch", notes)
    build = None
    if isinstance(result.get("torch_build"), dict):
        build = _section(TorchBuildFiles, result["torch_build"], "python.torch_build", notes)
    torch = merge_build_files(torch, build)
    extensions = None
    if isinstance(result.get("extensions"), dict):
        extensions = _section(ExtensionScan, result["extensions"], "python.extensions", notes)
    shared = None
    if isinstance(result.get("shared_library_files"), list):
        shared = [x for x in (_section(SharedLibraryFile, f, f"python.shared_library_files[{k}]", notes)
                              for k, f in enumerate(result["shared_library_files"])) if x is not None]
    origin = None
    if isinstance(result.get("torch_origin"), dict):
        origin = _section(ModuleOrigin, result["torch_origin"], "python.torch_origin", notes)
    if torch is not None and not torch.version and torch.import_error:
        # the import failed before __version__ existed; the installed distribution still says which torch
        dist = next((p for p in packages if p.name == "torch"), None)
        if dist is not None:
            torch = replace(torch, version=dist.version)
    pth = None
    if isinstance(result.get("pth_exec"), list):
        pth = [x for x in (_section(PthExecLine, ln, f"python.pth_exec[{k}]", notes)
                           for k, ln in enumerate(result["pth_exec"])) if x is not None]
    cwd_shadows = None
    if isinstance(result.get("cwd_shadows"), dict):
        cwd_shadows = _section(CwdShadows, result["cwd_shadows"], "python.cwd_shadows", notes)
    smoke = None
    if isinstance(result.get("smoke"), dict):
        smoke = _section(Smoke, result["smoke"], "python.smoke", notes)
    payload_errors = [str(e) for e in (result.get("errors") or [])]
    return replace(base, smoke=smoke, pth_exec=pth, packages=packages, loaded_libraries=libs, library_candidates=candidates, torch=torch, extensions=extensions,
                   torch_origin=origin, shared_library_files=shared, cwd_shadows=cwd_shadows,
                   notes=(payload_errors + notes) or None)


def _copies(items: Any, path: str, notes: List[str]) -> List[LibraryCopy]:
    out = []
    for i, lib in enumerate(items or []):
        copy = _section(LibraryCopy, lib, f"{path}[{i}]", notes)
        if copy is not None:
            out.append(copy)
    return out


def merge_build_files(torch: Optional[TorchInfo], build: Optional[TorchBuildFiles]) -> Optional[TorchInfo]:
    """One TorchInfo from what the import saw and what torch's files say.

    The import wins where it answered (it is what runs); the files fill what a failed or skipped
    import could not say (the version with its +cu130 tag, torch.version.cuda, the arch list).
    """
    if build is None:
        if torch is not None:
            imported = torch.import_error is None and bool(torch.version)
            torch = replace(torch, imported=imported,
                            arch_list_source="torch" if torch.arch_list is not None else None)
        return torch
    if torch is None:
        torch = TorchInfo()
    imported = torch.import_error is None and torch.import_seconds is not None
    if imported and torch.version:
        return replace(torch, imported=True, build_files=build,
                       arch_list_source="torch" if torch.arch_list is not None else None)
    arch, source = torch.arch_list, "torch" if torch.arch_list is not None else None
    if arch is None and build.arch_list is not None:
        arch, source = list(build.arch_list), "fatbin"
    return replace(
        torch, imported=False, build_files=build,
        version=torch.version or build.version or build.dist_version,
        cuda=torch.cuda or build.cuda, hip=torch.hip or build.hip,
        git_version=torch.git_version or build.git_version,
        arch_list=arch, arch_list_source=source,
    )


def _ok_reason(penv: PythonEnv, inspect_torch: bool) -> str:
    t = penv.torch
    if not inspect_torch:
        if t is not None and t.version:
            return f"torch {t.version} read from its files; not imported (--no-torch)"
        return "torch not inspected (--no-torch)"
    if t is None:
        return "torch is not installed in this interpreter"
    if t.import_error:
        return f"import torch failed: {t.import_error.splitlines()[-1][:200]}"
    took = f" in {t.import_seconds:.1f} s" if t.import_seconds is not None else ""
    if not t.version:
        return f"a module named torch with no __version__ was imported{took}: a stray torch/ folder or a broken install"
    cuda = "CUDA available" if t.cuda_available else "CUDA not available"
    return f"torch {t.version} imported{took}{_from_elsewhere(penv)}; {cuda}"


def _from_elsewhere(penv: PythonEnv) -> str:
    """" from <entry> (PYTHONPATH), not this interpreter's site-packages" when torch comes from elsewhere."""
    o = penv.torch_origin
    if o is None or o.via in (None, "site-packages") or not o.entry or \
            any(os.path.normpath(o.entry) == os.path.normpath(d) for d in o.site_packages):
        return ""
    return f" from {o.entry} ({o.via}), not this interpreter's own site-packages"


def _mark_hang(penv: PythonEnv, stage: Optional[str], error: str) -> PythonEnv:
    """Record a payload-side timeout on the torch fact it interrupted."""
    t = penv.torch
    if t is None or not stage:
        return penv
    if stage == "importing torch" and not t.import_error and not t.imported:
        t = replace(t, import_error=error)
    elif "CUDA" in stage and not t.cuda_init_error:
        t = replace(t, cuda_init_error=error)
    return replace(penv, torch=t)


def probe_python(executable: str, runner: Any, timeout_s: float = DEFAULT_TIMEOUT_S, inspect_torch: bool = True,
                 requested_as: Optional[str] = None, smoke: Sequence[str] = ()) -> PythonEnv:
    """Inspect ``executable`` in its own process.

    ok: the payload answered (torch may still have failed to import: that is in ``torch``);
    absent: no such interpreter; failed: it timed out, crashed or printed no JSON.
    """
    return _probe_python(executable, runner, timeout_s, inspect_torch, requested_as, smoke)


def probe_pythons(targets: Sequence[Tuple[str, str]], runner: Any, timeout_s: float = DEFAULT_TIMEOUT_S,
                  inspect_torch: bool = True, smoke: Sequence[str] = ()) -> List[PythonEnv]:
    """Every (interpreter, how it was chosen) inspected at once, each under the probe guard: a bug met while
    reading one interpreter fails that one, never the others."""
    from functools import partial

    from envdoctor.probes.registry import guard

    def one(exe: str, how: str) -> PythonEnv:
        extra = {"smoke": smoke} if smoke else {}  # (the usual call, without the smoke tier, unchanged)
        return guard("pythons", partial(probe_python, exe, runner, timeout_s, inspect_torch, how, **extra),
                     partial(_failed_env, exe, how))[0]

    if len(targets) == 1:  # the usual run: no pool (concurrent.futures imports logging: 20 ms of start-up)
        return [one(*targets[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        futures = [pool.submit(one, exe, how) for exe, how in targets]
        return [f.result() for f in futures]


def _failed_env(executable: str, requested_as: Optional[str], reason: str) -> PythonEnv:
    return PythonEnv(status=ProbeStatus.FAILED, reason=reason, executable=str(executable), requested_as=requested_as)


def _targets(ctx: ProbeContext) -> List[Tuple[str, str]]:
    """The interpreters to inspect: each --python once, else the active environment's."""
    return inspect_targets(list(getattr(ctx.options, "pythons", None) or []), ctx.env, ctx.runner)


@probe("pythons", failed=lambda reason: [PythonEnv(status=ProbeStatus.FAILED, reason=reason)])
def collect_pythons(ctx: ProbeContext) -> List[PythonEnv]:
    options = ctx.options
    envs = probe_pythons(_targets(ctx), ctx.runner, getattr(options, "python_timeout_s", DEFAULT_TIMEOUT_S),
                         getattr(options, "inspect_torch", True),
                         smoke_args(getattr(options, "smoke", "off"), getattr(options, "data_paths", None) or []))
    return [who_is_judged(e, envs, ctx.env, ctx.runner) for e in envs]


def _same_path(a: Optional[str], b: Optional[str]) -> bool:
    if not a or not b:
        return False
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return a == b


def _cwd() -> Optional[str]:
    try:
        return os.getcwd()
    except OSError:  # the current directory was deleted
        return None


def who_is_judged(penv: PythonEnv, judged: Sequence[PythonEnv], env: Mapping[str, str], runner: Any,
                  own_prefix: Optional[str] = None, cwd: Optional[str] = None) -> PythonEnv:
    """Mark envdoctor's own environment and, for an interpreter without torch, list those with torch elsewhere."""
    if penv.status != ProbeStatus.OK:
        return penv
    own = _same_path(penv.prefix, own_prefix or sys.prefix)
    penv = replace(penv, own_environment=own)
    if penv.torch is not None or penv.package("torch") is not None:
        return penv
    from envdoctor.probes.torch_interpreters import find_torch_interpreters

    exclude = [p for e in judged for p in (e.prefix, e.executable) if p]
    refused: Dict[str, str] = {}
    found = find_torch_interpreters(env, runner, cwd if cwd is not None else _cwd(), exclude, refused=refused)
    return replace(penv, torch_elsewhere=found, torch_elsewhere_refused=refused or None)


_FAILURE = {"not_found": "not_found", "could_not_run": "not_executable", "no_json": "not_python",
            "crashed": "crashed", "timeout": "timeout", "partial_timeout": "timeout", "exited": "exited",
            "task_error": "payload_error", "protocol": "payload_error"}


def _probe_python(executable: str, runner: Any, timeout_s: float, inspect_torch: bool,
                  requested_as: Optional[str], smoke: Sequence[str] = ()) -> PythonEnv:
    penv = _run_inspect(executable, runner, timeout_s, inspect_torch, requested_as, smoke)
    return with_interpreter_files(penv, executable, runner)


def with_interpreter_files(penv: PythonEnv, executable: str, runner: Any) -> PythonEnv:
    """The interpreter's venv (pyvenv.cfg and links) and the `pip` on PATH, read from files: also for an
    interpreter that did not start, whose dangling link is then the fact to judge."""
    from envdoctor.probes.interpreter_files import path_pip, venv_config

    venv = venv_config(executable, runner, penv.python_version)
    pip = path_pip(penv.executable or executable, runner) if penv.status == ProbeStatus.OK else None
    penv = replace(penv, venv=venv, path_pip=pip)
    dead = [link for link in (venv.links if venv is not None else []) if link.resolves is False]
    if penv.failure in ("not_found", "not_executable") and dead:
        # not "no such file": the file is a venv's link whose base Python is gone
        penv = replace(penv, reason=f"the venv's interpreter link is dangling ({dead[-1].path} -> {dead[-1].target}): "
                                    "its base Python was removed or moved")
    return penv


def _run_inspect(executable: str, runner: Any, timeout_s: float, inspect_torch: bool,
                 requested_as: Optional[str], smoke: Sequence[str] = ()) -> PythonEnv:
    args = list(smoke) if inspect_torch else inspect_args(False)
    # the payload writes a checkpoint line just before `import torch`: with none on stdout, it had not got there
    hint = "starting up or reading installed packages (before importing torch)" if inspect_torch \
        else "reading installed packages"
    pr = execute_payload(executable, runner, "inspect", args, timeout_s, stage_hint=hint)
    if pr.kind == "partial_timeout" and pr.error:
        # the payload's own watchdog fires a little early (payload_deadline_s) so that it can still answer: the
        # limit the user set (--python-timeout 8) is the one to report, not the watchdog's 6.4 s
        import re

        pr = replace(pr, error=re.sub(r"timed out after [0-9.]+ s", f"timed out after {timeout_s:g} s", pr.error))
    common = {"requested_as": requested_as, "duration_s": round(pr.run.duration_s, 3)}
    failure = {"failure": _FAILURE.get(pr.kind, "payload_error"), "failure_stage": pr.stage} if pr.kind != "ok" else {}
    if pr.kind == "not_found":
        return PythonEnv(status=ProbeStatus.ABSENT, reason=pr.error, executable=str(executable), **common, **failure)
    notes: List[str] = []
    penv = env_from_result(pr.result, notes) if pr.result else PythonEnv(executable=str(executable))
    if penv.executable is None:
        penv = replace(penv, executable=str(executable))
    if penv.torch_inspected is None and pr.result:
        penv = replace(penv, torch_inspected=inspect_torch)
    if pr.kind == "ok":
        return replace(penv, status=ProbeStatus.OK, reason=_ok_reason(penv, inspect_torch), **common)
    if pr.kind in ("partial_timeout", "timeout", "crashed", "exited"):
        penv = _mark_hang(penv, pr.stage, pr.error or "timed out")
    return replace(penv, status=ProbeStatus.FAILED, reason=pr.error, **common, **failure)
