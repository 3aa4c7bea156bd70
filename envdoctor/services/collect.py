"""Orchestration: collect facts (probes run concurrently, each guarded), judge them, build the report."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import os
import threading
import time
from dataclasses import field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple

from .. import __version__
from ..domain.fastclass import dataclass
from ..model.facts import (
    Bench,
    BenchResult,
    Driver,
    Facts,
    ProbeRun,
    ProbeStatus,
    PythonEnv,
)
from ..model.findings import Report

# Interrupted and the INTERRUPT flag live in probes/runner.py (stdlib only), so that the CLI's signal handler never
# imports anything while the main thread may be half-way through importing envdoctor; re-exported here.
from ..probes.payload_launch import DEFAULT_TIMEOUT_S, TargetError
from ..probes.payload_launch import data_target as _data_target
from ..probes.payload_launch import python_target as _python_target
from ..probes.runner import INTERRUPT, Interrupted


class OptionsError(ValueError):
    """An option that cannot work (a missing interpreter, a string where a list belongs): the CLI's exit 2."""


def python_target(value: str) -> str:
    """A --python value as the interpreter to run (probes/payload_launch.python_target, the one reading of it);
    a typo is an OptionsError."""
    try:
        return _python_target(value)
    except TargetError as e:
        raise OptionsError(str(e)) from None


def data_target(value: str) -> str:
    """A --data value as the path to read (probes/payload_launch.data_target); a missing path is an OptionsError."""
    try:
        return _data_target(value)
    except TargetError as e:
        raise OptionsError(str(e)) from None


@dataclass
class CollectOptions:
    pythons: List[str] = field(default_factory=list)  # --python; empty: the active environment's
    data_paths: List[str] = field(default_factory=list)  # --data; empty: the current directory
    inspect_torch: bool = True
    python_timeout_s: float = DEFAULT_TIMEOUT_S
    root: str = "/"
    env: Optional[Dict[str, str]] = None  # defaults to os.environ
    # --load-pcie: copy host->device for a moment so that PCIe links leave their idle Gen1 and can be judged
    load_pcie: bool = False
    load_pcie_seconds: float = 1.5
    kernel_log: bool = True  # read Xid events from dmesg / journalctl -k
    # which facts sections to probe (None: all). A section left out is recorded as skipped with the reason,
    # never probed: `node-health` reads only what its fast checks judge (services/node_health.py)
    sections: Optional[FrozenSet[str]] = None
    # the smoke tier (envdoctor/_payload/smoke.py): "quick" (the command line's default: the cheap steps beside
    # the import), "thorough" (every step, torch.compile end to end) or "off" (this API's default)
    smoke: str = "off"


def _guard(name: str, func: Callable[[], Any], failed: Callable[[str], Any]) -> Tuple[Any, ProbeRun]:
    """The probe guard (probes/registry.py): a crash becomes a 'failed' section with the exception as its reason."""
    from ..probes.registry import guard

    return guard(name, func, failed)


# Every subprocess has its own timeout; this margin bounds what no timeout covers (a probe stuck in a
# system call, e.g. statvfs on a hung NFS --data path, or a driver call that never returns).
PROBE_DEADLINE_MARGIN_S = 20.0


def _run_with_deadline(jobs: Mapping[str, Tuple[Callable[[], Any], Callable[[str], Any]]],
                       deadline_s: float, meanwhile: Optional[Callable[[], Any]] = None,
                       progress: Optional[Callable[[float, List[str]], None]] = None,
                       ) -> Dict[str, Tuple[Any, ProbeRun]]:
    """Run each guarded probe in a daemon thread; one still running at the deadline becomes 'failed'.

    Daemon threads, not a ThreadPoolExecutor: the executor's workers are joined at interpreter exit, so a
    probe stuck in the kernel would keep envdoctor from exiting after it has printed its report. ``progress``
    (elapsed seconds, the probes still running) is called about every 0.2 s while the main thread waits.
    """
    out: Dict[str, Tuple[Any, ProbeRun]] = {}
    threads = {}
    for name, (func, failed) in jobs.items():
        def work(name=name, func=func, failed=failed):
            out[name] = _guard(name, func, failed)
        t = threading.Thread(target=work, name=f"envdoctor-probe-{name}", daemon=True)
        t.start()
        threads[name] = t
    began = time.monotonic()
    end = began + deadline_s
    interrupted: Optional[Interrupted] = None
    if meanwhile is not None:
        # a thread too: the main thread only waits, and looks at the signal flag between its joins
        warm = threading.Thread(target=_while_probing, args=(meanwhile,), name="envdoctor-warm-up", daemon=True)
        warm.start()
        threads["(warm-up)"] = warm
    try:
        for t in threads.values():
            while t.is_alive() and time.monotonic() < end:
                t.join(min(0.2, max(0.0, end - time.monotonic())))
                if progress is not None:
                    _tell(progress, time.monotonic() - began, [n for n, th in threads.items() if th.is_alive()])
                INTERRUPT.check()  # the command line's handler recorded a signal (cli/signals.py)
        INTERRUPT.check()  # one that came as the last probe finished: its command may have been killed too
    except Interrupted as e:  # the signal handler killed the children: keep what finished, say what did not
        interrupted = e
    finished = dict(out)  # a snapshot: threads that lose their killed child finish after this
    results = {}
    for name, (_func, failed) in jobs.items():
        # a probe whose command the signal killed says "interrupted" (Runner): not a fact about the machine
        if name in finished and not (interrupted is not None and "interrupted" in (finished[name][1].reason or "")):
            results[name] = finished[name]
        else:
            reason = (f"did not finish within {deadline_s:g} s (stuck in a system call: a hung network "
                      "filesystem or driver call?)") if interrupted is None else \
                f"interrupted by {interrupted.signal_name} before it finished"
            results[name] = (failed(reason), ProbeRun(name, ProbeStatus.FAILED, reason, deadline_s))
    if interrupted is not None:
        interrupted.partial = results
        raise interrupted
    return results


def _tell(progress: Callable[[float, List[str]], None], elapsed_s: float, waiting: List[str]) -> None:
    try:
        progress(elapsed_s, [n for n in waiting if not n.startswith("(")])
    except Exception:  # noqa: BLE001 - a progress line that cannot be written never stops the collection
        pass


def _while_probing(work: Callable[[], Any]) -> None:
    """What the caller does while the probes wait on their commands (import the checks, load the compat data,
    import a renderer): off the critical path, which is the target's `import torch`. Its failure is not the
    probes': the same work runs again, unguarded, where it is needed."""
    try:
        work()
    except Exception:  # noqa: BLE001 - a warm-up only; judge() and the renderer raise it in their own place
        pass


def warm_up() -> None:
    """Import the checks and load the compat data (what judge() needs), e.g. while the probes run."""
    from ..checks import all_checks
    from ..compat import load_compat

    all_checks()
    load_compat()
    # what the first judge() would otherwise import on the critical path, after the probes: the judge itself,
    # and packaging's requirement and marker parsers (the torch-requires check)
    from packaging import requirements  # noqa: F401

    from .. import judging  # noqa: F401


def collect(options: Optional[CollectOptions] = None, runner: Any = None,
            meanwhile: Optional[Callable[[], Any]] = None,
            progress: Optional[Callable[[float, List[str]], None]] = None) -> Facts:
    """Probe this machine: every registered probe (probes/registry.py) at once, each under the one guard.

    Never raises for a probe's failure: it is recorded in the facts. ``meanwhile`` runs in this thread while the
    probes run (e.g. warm_up: the checks' imports and the compat data, off the critical path).
    """
    from ..probes.runner import children_end_with_interrupt

    with children_end_with_interrupt():
        return _collect(options, runner, meanwhile, progress)


def _collect(options: Optional[CollectOptions], runner: Any, meanwhile: Optional[Callable[[], Any]],
             progress: Optional[Callable[[float, List[str]], None]]) -> Facts:
    from ..probes.registry import ProbeContext, all_probes
    from ..probes.runner import Runner, allow_children
    from ..probes.sysroot import SysRoot

    options = options or CollectOptions()
    # a signal came before collecting began (the CLI starts the target's payload first, then imports): it ends the
    # run here; whoever handles it clears the flag (cli.main)
    INTERRUPT.check()
    allow_children()  # a collect() after an interrupted one may start commands again
    env = dict(os.environ if options.env is None else options.env)
    runner = runner or Runner()
    ctx = ProbeContext(runner=runner, fs=SysRoot(options.root), env=env, options=options)
    probes = [p for p in all_probes() if p.enabled(ctx)
              and (options.sections is None or p.section in options.sections)]
    if any(p.section == "driver" and p.merge is None for p in probes):
        from ..probes.nvml import hold_process_lists

        hold_process_lists()  # the inspect payload starts once NVML has listed the GPUs' processes
    # the interpreter first: its `import torch` is the longest wait, every other probe fits inside it
    started = sorted(probes, key=lambda p: p.section != "pythons")
    jobs = {p.name: (functools.partial(p.run, ctx), p.failed) for p in started}
    deadline_s = max(options.python_timeout_s, 10.0) + PROBE_DEADLINE_MARGIN_S
    interrupted: Optional[Interrupted] = None
    try:
        done = _run_with_deadline(jobs, deadline_s, meanwhile, progress)
    except Interrupted as e:
        interrupted, done = e, dict(e.partial or {})
        for p in probes:  # a signal before the wait began (while the threads were starting): none of them is read
            if p.name not in done:
                reason = f"interrupted by {e.signal_name} before it finished"
                done[p.name] = (p.failed(reason), ProbeRun(p.name, ProbeStatus.FAILED, reason, None))
    finally:
        from ..probes.nvml import release_process_lists
        from ..probes.payload_launch import discard_early

        release_process_lists()
        discard_early()  # an early-started payload no probe adopted (it ran another command line or environment): end it
    sections: Dict[str, Any] = {}
    runs: List[ProbeRun] = []
    for p in probes:  # the sections first, then the parts other probes fill in them
        if p.name in done and p.merge is None:
            sections[p.section], run = done[p.name]
            runs.append(run)
    for p in probes:
        if p.name in done and p.merge is not None:
            value, run = done[p.name]
            runs.append(run)
            if p.section in sections:
                sections[p.section] = p.merge(sections[p.section], value)
    for p in all_probes():  # the sections this run was asked not to probe: skipped, with why
        if p.merge is None and p.section not in sections:
            sections[p.section] = _not_probed(p)
            runs.append(ProbeRun(p.name, ProbeStatus.SKIPPED, NOT_PROBED, None))
    bench = Bench()
    if options.load_pcie and interrupted is None:
        drv, run, copies = _load_pcie(sections["driver"], sections["pythons"], options, runner, env)
        sections["driver"] = drv
        runs.append(run)
        if copies:
            bench = Bench(status=ProbeStatus.OK, reason="--load-pcie copies", results=copies)
    facts = Facts(
        envdoctor_version=__version__,
        collected_at=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        origin="live",
        driver=sections["driver"],
        toolkits=sections["toolkits"],
        system_libraries=sections["system_libraries"],
        pythons=list(sections["pythons"]),
        host=sections["host"],
        storage=sections["storage"],
        topology=sections["topology"],
        bench=bench,
        probes=runs,
    )
    signum = interrupted.signum if interrupted is not None else INTERRUPT.signum
    if signum is not None:  # (the flag: a signal during --load-pcie, whose copies the handler killed)
        raise Interrupted(signum, facts=facts)
    return facts


NOT_PROBED = "not probed in this run (not one of the sections it asked for)"


def _not_probed(p: Any) -> Any:
    """A section this run did not probe: its probe's empty form, marked skipped (pythons: none judged)."""
    if p.section == "pythons":
        return []
    return dataclasses.replace(p.failed(NOT_PROBED), status=ProbeStatus.SKIPPED)


def _load_pcie(drv: Driver, pythons: List[PythonEnv], options: CollectOptions, runner: Any,
               env: Dict[str, str]) -> Tuple[Driver, ProbeRun, List[BenchResult]]:
    """Run the PCIe load in the first target interpreter and put the readings on the GPUs it loaded."""
    from ..domain.pci import bus_key
    from ..probes.pcie_load import PcieLoad, probe_pcie_load
    from ..probes.python_env import default_interpreter

    exe = next((p.executable for p in pythons if p.executable), None) or default_interpreter(env, runner)[0]
    res, run = _guard("pcie_load", functools.partial(
        probe_pcie_load, exe, runner, drv, seconds=options.load_pcie_seconds,
        timeout_s=options.python_timeout_s + options.load_pcie_seconds + 10),
        lambda reason: PcieLoad(ProbeStatus.FAILED, reason))
    # the GB/s of those copies as facts (all GPUs copying at once, 64 MiB buffers: not judged like h2d_pinned)
    copies = [BenchResult("pcie_load", ProbeStatus.OK, "host->device pinned copies on every GPU at once (--load-pcie)",
                          device=f"cuda:{d.get('index')}", value=d.get("gb_per_s"), unit="GB/s",
                          params={"pci_bus_id": d.get("pci_bus_id"), "gpu_name": d.get("name"),
                                  "n": d.get("bytes")}, duration_s=res.seconds)
              for d in res.copies if isinstance(d, dict) and isinstance(d.get("gb_per_s"), (int, float))]
    if not res.readings:
        return drv, run, copies
    gpus = []
    for g in drv.gpus:
        reading = res.readings.get(bus_key(g.pci_bus_id) or "")
        if reading:
            g = dataclasses.replace(g, pcie_gen_under_load=reading[0], pcie_width_under_load=reading[1])
        gpus.append(g)
    return dataclasses.replace(drv, gpus=gpus), run, copies


def judge(facts: Facts, compat: Any = None, only: Optional[List[str]] = None,
          ignore: Optional[List[str]] = None, expect_gpu: bool = False) -> Report:
    """`check` and `check --facts`: the one judge (``judging.judge``) with the CLI's selection; the policy follows
    the facts (a paste's facts are judged as `diagnose` judges them).

    ``expect_gpu``: the user says this machine should have NVIDIA GPUs (--expect-gpu), so having none is an error.
    """
    from ..judging import Selection
    from ..judging import judge as one_judge

    return one_judge(facts, compat, Selection(only=only, ignore=ignore, expect_gpu=expect_gpu))


def _string_list(value: Any, name: str) -> List[str]:
    """A list of strings: a bare string would be iterated letter by letter ("/", "u", "s", ...)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise OptionsError(f"{name} must be a list of strings, got {type(value).__name__} {value!r}")
    bad = [v for v in value if not isinstance(v, str) or not v]
    if bad:
        raise OptionsError(f"{name}: {bad[0]!r} is not a non-empty string")
    return list(value)


def validate_options(options: CollectOptions, only: Any = None, ignore: Any = None) -> CollectOptions:
    """What the CLI checks before probing, for the Python API: OptionsError on anything that cannot work."""
    import fnmatch
    import math

    from ..checks import all_checks, select

    if not isinstance(options, CollectOptions):
        raise OptionsError(f"options must be a CollectOptions, got {type(options).__name__}")
    pythons = [python_target(p) for p in _string_list(options.pythons, "pythons")]
    data_paths = [data_target(p) for p in _string_list(options.data_paths, "data_paths")]
    t = options.python_timeout_s
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise OptionsError(f"python_timeout_s must be a positive number of seconds, got {t!r}")
    if options.smoke not in ("quick", "thorough", "off"):
        raise OptionsError(f"smoke must be 'quick', 'thorough' or 'off', got {options.smoke!r}")
    ids = [c.id for c in all_checks()]
    globs = {}
    for name, value in (("only", only), ("ignore", ignore)):
        globs[name] = _string_list(value, name) or None
        for pat in globs[name] or []:
            if not any(fnmatch.fnmatchcase(i, pat) for i in ids):
                raise OptionsError(f"{name}: {pat!r} matches no check id")
    if (globs["only"] or globs["ignore"]) and not select(all_checks(), globs["only"], globs["ignore"]):
        raise OptionsError("only/ignore leave no check to run")
    return dataclasses.replace(options, pythons=pythons, data_paths=data_paths, python_timeout_s=float(t))


def doctor(options: Optional[CollectOptions] = None, only: Optional[List[str]] = None,
           ignore: Optional[List[str]] = None, expect_gpu: bool = False) -> Report:
    """The Python API of `envdoctor check`: collect this machine's facts and judge them.

    Its arguments are validated as the CLI validates its options (OptionsError, a ValueError, before any
    probing): a missing interpreter or data path, or a string where a list belongs, is an error.
    """
    options = validate_options(options if options is not None else CollectOptions(), only, ignore)
    return judge(collect(options), only=list(only) if only else None, ignore=list(ignore) if ignore else None,
                 expect_gpu=expect_gpu)


def bench_python(facts: Facts, options: Optional[CollectOptions] = None) -> str:
    """The interpreter the kernels run in: the first --python, else the one `collect` inspected."""
    from ..probes.python_env import default_interpreter

    if options is not None and options.pythons:
        return options.pythons[0]
    exe = next((p.executable for p in facts.pythons if p.executable), None)
    return exe or default_interpreter()[0]


def run_benchmarks(facts: Facts, bench_options: Any, progress: Optional[Callable[[Dict[str, Any]], None]] = None
                   ) -> Facts:
    """Run ``envdoctor bench`` on top of collected facts: Facts.bench filled, PCIe links seen under load put
    on the GPUs (the PCIE_LINK_DEGRADED check reads them there)."""
    from ..bench.run import run_bench
    from ..domain.pci import bus_key

    # bench_python runs the first --python (or the interpreter collect inspected): facts.pythons[0]
    inspected = next((p for p in facts.pythons if p.executable == bench_options.python),
                     facts.pythons[0] if facts.pythons else None)
    from ..probes.runner import children_end_with_interrupt

    with children_end_with_interrupt():  # the Python API: Ctrl-C inside the kernels ends their interpreter
        bench = run_bench(bench_options, facts.driver, facts.storage, progress, inspected=inspected)
    bench = dataclasses.replace(bench, results=list(facts.bench.results) + list(bench.results))
    best: Dict[str, Tuple[int, int]] = {}
    for r in bench.results:
        gen, width = r.params.get("pcie_gen_under_load"), r.params.get("pcie_width_under_load")
        key = bus_key(r.params.get("pci_bus_id"))
        if key and isinstance(gen, int) and isinstance(width, int):
            old = best.get(key, (0, 0))
            best[key] = (max(old[0], gen), max(old[1], width))
    gpus = []
    for g in facts.driver.gpus:
        reading = best.get(bus_key(g.pci_bus_id) or "")
        if reading and not g.pcie_gen_under_load:
            g = dataclasses.replace(g, pcie_gen_under_load=reading[0], pcie_width_under_load=reading[1])
        gpus.append(g)
    driver = dataclasses.replace(facts.driver, gpus=gpus)
    return dataclasses.replace(facts, bench=bench, driver=driver)
