"""Run the benchmark plan: torch kernels in the target interpreter (streamed, each with a deadline), disks here.

The payload (envdoctor/_payload/bench.py, run as `--task bench` of the payload folder) prints one JSON line per event. We read them as they come so that
the progress display is live and so that a kernel that overruns its budget (a hung kernel or driver call)
is killed with its process group at the deadline; the kernels still to run get a fresh process. This is
why the bench does not go through python_env.execute_payload, which returns only when the child exits.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..domain.arch import parse_cc
from ..domain.fastclass import dataclass
from ..domain.pci import bus_key
from ..model.facts import (
    Bench,
    BenchResult,
    Driver,
    FactsError,
    GpuProcess,
    ProbeStatus,
    PythonEnv,
    Storage,
    from_dict,
)
from ..probes.runner import Runner
from ..queries import busy_slices, compute_processes
from .suite import KERNELS, PlanItem, plan

STARTUP_TIMEOUT_S = 90.0  # import torch + CUDA initialisation, before the first kernel
BETWEEN_KERNELS_S = 15.0  # from one kernel's result to the next one's start (allocations, cuBLAS handles)

Progress = Callable[[Dict[str, Any]], None]


def bench_payload_path() -> Path:
    """The payload folder (envdoctor/_payload, shipped as a subpackage; copied out of the one-file zip when envdoctor
    runs from the zip: probes/payload_launch.payload_path); the bench is its task ``bench``."""
    from ..probes.payload_launch import payload_path

    return payload_path()


@dataclass
class BenchOptions:
    python: str  # the target interpreter (torch lives there)
    names: List[str] = field(default_factory=list)  # empty: the quick suite
    device: str = "cuda"  # "cpu", "cuda", "all"
    data_paths: List[str] = field(default_factory=list)
    sustain_s: Optional[float] = None
    budget_s: Optional[float] = None
    force: bool = False  # measure GPUs that another process is using
    mem_fraction: float = 0.5  # of free memory, per device
    allow_write: bool = True  # a temporary file for the disk benchmarks when no large file exists
    thorough: bool = False  # mamf-finder's matmul procedure, longer copies (scripts/gpu_bench_peers.py compares)
    startup_timeout_s: float = STARTUP_TIMEOUT_S


def kill_grace_s(budget_s: float) -> float:
    """How long past its budget a kernel may run before it counts as hung (allocation, first cuBLAS call)."""
    return max(10.0, budget_s)


@dataclass
class StreamOutcome:
    events: List[Dict[str, Any]]
    killed: Optional[Dict[str, Any]] = None  # the start event of the kernel killed at its deadline
    killed_after_s: Optional[float] = None
    error: Optional[str] = None  # the payload could not run, or died without finishing
    finished: bool = False


def stream_payload(argv: Sequence[str], on_event: Callable[[Dict[str, Any]], None],
                   startup_timeout_s: float = STARTUP_TIMEOUT_S, env: Optional[Dict[str, str]] = None,
                   grace: Optional[Callable[[float], float]] = None) -> StreamOutcome:
    """Run ``argv``, hand each bench event to ``on_event`` as it arrives; kill at a kernel's deadline. Never
    raises, except KeyboardInterrupt (after killing the child)."""
    grace = grace or kill_grace_s
    events: List[Dict[str, Any]] = []
    outcome = StreamOutcome(events)
    state: Dict[str, Any] = {"current": None, "started_at": time.monotonic()}

    def on_line(line: str) -> Optional[float]:
        obj = _parse(line)
        if obj is None:
            return None
        kind = obj.get("event")
        more = None
        if kind == "start":
            state["current"], state["started_at"] = obj, time.monotonic()
            budget = float(obj.get("budget_s") or 0.0)
            more = budget + grace(budget)
        elif kind in ("result", "info"):
            more = BETWEEN_KERNELS_S
        elif kind == "done":
            outcome.finished = True
        elif kind == "error":
            outcome.error = str(obj.get("error"))
        events.append(obj)
        on_event(obj)
        return more

    res = Runner(env).stream(argv, on_line, startup_timeout_s, env={"PYTHONDONTWRITEBYTECODE": "1"})
    if res.error:
        outcome.error = f"could not run {argv[0]}: {res.error}"
    elif res.killed:
        outcome.killed = state["current"] or {"name": None, "device": None, "budget_s": startup_timeout_s}
        outcome.killed_after_s = round(time.monotonic() - state["started_at"], 1)
    elif not outcome.finished and outcome.error is None:
        tail = [ln for ln in res.stderr.splitlines() if ln.strip()]
        rc = res.returncode
        how = f"was killed by signal {-rc}" if rc is not None and rc < 0 else f"exited {rc}"
        outcome.error = f"the bench payload {how} before finishing" + (f": {tail[-1][:300]}" if tail else "")
    return outcome


def _parse(raw: str) -> Optional[Dict[str, Any]]:
    line = raw.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and obj.get("envdoctor_bench") == 1 else None


def _pids(procs: List[GpuProcess]) -> str:
    return ", ".join(f"pid {p.pid}" + (f" ({p.name})" if p.name else "") for p in procs[:3])


def mig_uuid_key(uuid: Optional[str]) -> str:
    """A MIG device's UUID as the payload compares it with CUDA's (torch device properties' ``uuid``: the bare
    UUID, no "MIG-"/"GPU-" prefix), lowercased."""
    u = (uuid or "").strip().lower()
    return u[4:] if u.startswith(("mig-", "gpu-")) else u


def busy_gpus(driver: Driver) -> Dict[str, str]:
    """PCI bus key (a whole GPU) or MIG device UUID (one slice) -> "pid 1234 (python)" for each GPU or slice with
    a compute process running on it. On a GPU in MIG mode only the slices that have a process are busy (each
    slice has its own SMs and memory: NVIDIA MIG User Guide); when a process's slice cannot be told (no
    instance ids), the whole GPU is."""
    out = {}
    for g in driver.gpus:
        procs = compute_processes(g)
        key = bus_key(g.pci_bus_id)
        if not procs or not key:
            continue
        slices = busy_slices(g) if g.mig_mode_current else None
        if slices is None:
            out[key] = _pids(procs)
            continue
        for uuid, on in slices.items():
            out[mig_uuid_key(uuid)] = _pids(on)
    return out


def _to_result(data: Dict[str, Any], notes: List[str]) -> Optional[BenchResult]:
    try:
        return from_dict(BenchResult, data, "bench.result")
    except FactsError as e:
        notes.append(str(e))
        return None


def run_torch_kernels(python: str, items: List[PlanItem], mem_fraction: float, busy: Dict[str, str],
                      progress: Progress, payload: Optional[Path] = None,
                      startup_timeout_s: float = STARTUP_TIMEOUT_S,
                      hooks: Optional[Callable[[Dict[str, Any]], None]] = None
                      ) -> Tuple[List[BenchResult], Dict[str, Any], List[str]]:
    """Run ``items`` in ``python``; restart after a kill. (results, info event, notes)."""
    payload = payload or bench_payload_path()
    results: List[BenchResult] = []
    notes: List[str] = []
    info: Dict[str, Any] = {}
    done: List[str] = []
    state: Dict[str, Any] = {"current": None}
    plan_json = json.dumps([dataclasses.asdict(i) for i in items])

    def on_event(obj: Dict[str, Any]) -> None:
        kind = obj.get("event")
        if kind == "info":
            info.update(obj)
        elif kind == "start":
            state["current"] = obj
        elif kind == "result" and isinstance(obj.get("result"), dict):
            r = _to_result(obj["result"], notes)
            if r is not None:
                results.append(r)
            cur = state["current"]
            if cur is not None:
                key = f"{cur.get('name')}@{cur.get('device')}"
                if key not in done:
                    done.append(key)
        if hooks is not None:
            hooks(obj)
        progress(obj)

    for _attempt in range(len(items) + 1):
        argv = [python, str(payload), "--task", "bench", "--plan", plan_json, "--mem-fraction", f"{mem_fraction:g}",
                "--busy", ",".join(busy)]
        for key in done:
            argv += ["--skip", key]
        state["current"] = None
        out = stream_payload(argv, on_event, startup_timeout_s)
        if out.killed is None:
            if out.error:
                notes.append(out.error)
                _fill_missing(items, results, out.error)
            break
        k = out.killed
        if k.get("name") is None:
            reason = f"the payload gave no sign of life within {startup_timeout_s:g} s (import torch or CUDA " \
                     "initialisation hung?): killed"
            notes.append(reason)
            _fill_missing(items, results, reason)
            break
        reason = (f"did not finish within its {k.get('budget_s')} s budget plus "
                  f"{kill_grace_s(float(k.get('budget_s') or 0)):g} s (a hung kernel or driver call?): killed "
                  f"after {out.killed_after_s} s; the other benchmarks ran in a fresh process")
        hung = BenchResult(str(k.get("name")), ProbeStatus.FAILED, reason, device=str(k.get("device")),
                           duration_s=out.killed_after_s)
        results.append(hung)
        progress({"event": "result", "result": dataclasses.asdict(hung)})
        done.append(f"{k.get('name')}@{k.get('device')}")
    for r in results:
        key = bus_key(r.params.get("pci_bus_id")) if isinstance(r.params, dict) else None
        uuid = mig_uuid_key(r.params.get("uuid")) if isinstance(r.params, dict) else ""
        if r.status == ProbeStatus.SKIPPED and (key in busy or uuid in busy):
            idx = results.index(r)
            what = "this GPU" if key in busy else "this MIG slice"
            results[idx] = dataclasses.replace(
                r, reason=f"another process is using {what} ({busy.get(key) or busy[uuid]}); --force measures it "
                          "anyway")
    return results, info, notes


def _fill_missing(items: List[PlanItem], results: List[BenchResult], reason: str) -> None:
    """Plan items that produced no result at all get one saying why (never silently absent)."""
    have = {(r.name, r.device if r.device in ("cpu", "cuda") else ("cuda" if (r.device or "").startswith("cuda")
                                                                    else r.device)) for r in results}
    for i in items:
        if (i.name, i.device) not in have:
            results.append(BenchResult(i.name, ProbeStatus.FAILED, reason, device=i.device))


def torch_unusable(env: Optional[PythonEnv]) -> Tuple[Optional[str], bool]:
    """(why the torch kernels cannot run in the interpreter the inspect payload already tried, whether only the
    CUDA ones): ``import torch`` failed or hung there, CUDA start-up hung, torch is not installed, or there is
    no such interpreter. (None, False) when it imported or was not tried (--no-torch, not inspected). Starting
    the kernels anyway would wait out the bench's own start-up deadline on the same hang."""
    if env is None or env.torch_inspected is False:
        return None, False
    exe = env.executable or env.requested_as or "the target interpreter"
    t = env.torch
    stage = env.failure_stage or ""
    hung = env.failure == "timeout"
    if (hung and stage.startswith("importing torch")) or (t is not None and t.import_error):
        why = (t.import_error if t is not None and t.import_error else env.reason) or "it did not finish"
        return (f"import torch {'hung' if hung else 'failed'} in {exe} when envdoctor inspected it "
                f"({why.strip().splitlines()[-1][:200]}): the torch benchmarks were not started"), False
    if hung and stage.startswith("initialising CUDA"):
        return (f"CUDA start-up hung in {exe} when envdoctor inspected it ({env.reason}): the GPU benchmarks "
                "were not started"), True
    if env.failure in ("not_found", "not_python"):
        return f"{exe} cannot run ({env.reason or env.failure}): the torch benchmarks were not started", False
    if env.status == ProbeStatus.OK and t is None:
        return f"torch is not installed in {exe}: the torch benchmarks were not started", False
    return None, False


def gpu_capabilities(driver: Optional[Driver]) -> List[Tuple[int, int]]:
    """The compute capabilities NVML gave for the GPUs (unparseable or missing ones left out)."""
    out: List[Tuple[int, int]] = []
    for g in (driver.gpus if driver is not None else None) or []:
        try:
            out.append(parse_cc(g.compute_capability))
        except (TypeError, ValueError):
            continue
    return out


def run_bench(options: BenchOptions, driver: Driver, storage: Optional[Storage] = None,
              progress: Optional[Progress] = None, nvml: Any = None, payload: Optional[Path] = None,
              inspected: Optional[PythonEnv] = None) -> Bench:
    """The whole benchmark run; never raises except KeyboardInterrupt (temp files removed, child killed).
    ``inspected`` is what `collect` found of ``options.python``: where ``import torch`` failed or hung there,
    the torch kernels are skipped saying so, not started to hang again."""
    progress = progress or (lambda _e: None)
    start = time.monotonic()
    items = plan(options.names, options.device, options.budget_s, options.sustain_s, thorough=options.thorough,
                 gpu_ccs=gpu_capabilities(driver))
    torch_items = [i for i in items if KERNELS[i.name].kind == "torch"]
    disk_items = [i for i in items if KERNELS[i.name].kind == "disk"]
    results: List[BenchResult] = []
    notes: List[str] = []
    unusable, cuda_only = torch_unusable(inspected) if torch_items else (None, False)
    if unusable:
        for i in [i for i in torch_items if i.device == "cuda" or not cuda_only]:
            r = BenchResult(i.name, ProbeStatus.SKIPPED, unusable, device=i.device)
            results.append(r)
            progress({"event": "result", "result": dataclasses.asdict(r)})
        notes.append(unusable)
        torch_items = [i for i in torch_items if cuda_only and i.device != "cuda"]
    busy = {} if options.force else busy_gpus(driver)
    if nvml is None and any(i.device == "cuda" for i in torch_items):
        try:
            from ..probes.nvml import import_pynvml

            nvml = import_pynvml()
        except ImportError:
            nvml = None
    hooks = _NvmlHooks(nvml) if nvml is not None and driver.gpus else None
    if torch_items:
        rs, info, ns = run_torch_kernels(options.python, torch_items, options.mem_fraction, busy, progress,
                                         payload=payload, startup_timeout_s=options.startup_timeout_s,
                                         hooks=hooks.on_event if hooks else None)
        if hooks:
            hooks.stop()
            rs = hooks.apply(rs)
        elif any(r.name == "sustained" and (r.device or "").startswith("cuda") for r in rs):
            rs = [_sustained_without_nvml(r) if r.name == "sustained" else r for r in rs]
        elif any(r.name == "sustained" for r in rs):
            rs = [_sustained_without_nvml(r, "no NVML on a CPU") if r.name == "sustained" else r for r in rs]
        results += rs
        notes += ns
        if info.get("cuda_reason") and options.device != "cpu":
            notes.append(f"CUDA: {info['cuda_reason']}")
    if disk_items:  # one target file per data path serves both disk benchmarks
        results += _disks(options, disk_items, storage, progress)
    status = ProbeStatus.OK if any(r.status == ProbeStatus.OK for r in results) else (
        ProbeStatus.FAILED if any(r.status == ProbeStatus.FAILED for r in results) else ProbeStatus.SKIPPED)
    ran = sum(1 for r in results if r.status == ProbeStatus.OK)
    reason = f"{ran} of {len(results)} measurements ran in {time.monotonic() - start:.1f} s"
    if notes:
        reason += "; " + "; ".join(dict.fromkeys(notes))
    return Bench(status=status, reason=reason, results=results, budget_s=options.budget_s,
                 duration_s=round(time.monotonic() - start, 3), device=options.device, python=options.python)


def _disks(options: BenchOptions, items: List[PlanItem], storage: Optional[Storage],
           progress: Progress) -> List[BenchResult]:
    from .disk import bench_disk

    paths = options.data_paths or [os.getcwd()]
    budgets = {i.name: i.budget_s for i in items}
    out: List[BenchResult] = []
    for path in paths:
        for name in budgets:
            progress({"event": "start", "name": name, "device": path, "budget_s": budgets[name]})
        rs = bench_disk(path, budgets.get("disk_seq_read", 0.0), budgets.get("disk_rand_read", 0.0),
                        allow_write=options.allow_write, want=tuple(budgets))
        for r in rs:
            progress({"event": "result", "result": dataclasses.asdict(r)})
        out += rs
    return out


def _sustained_without_nvml(r: BenchResult, why: str = "NVML unavailable") -> BenchResult:
    from .sampler import merge_sustained, sustained_summary

    if r.status != ProbeStatus.OK or not r.samples:
        return r
    t0 = min(s["t"] for s in r.samples)
    series = merge_sustained(r.samples, [], t0)
    return dataclasses.replace(r, samples=series, params={**r.params, **sustained_summary(series), "nvml": why})


class _NvmlHooks:
    """NVML beside the payload: PCIe links during host<->device copies, and clocks / throttle reasons during
    every GPU kernel (every 0.2 s; 0.5 s during --sustain), so that a slow figure comes with its cause."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.links: Dict[str, Dict[str, Tuple[int, int]]] = {}  # kernel name -> bus -> (gen, width)
        self._link_stop: Optional[threading.Event] = None
        self._link_thread: Optional[threading.Thread] = None
        self.sampler: Any = None
        self._current: Optional[Tuple[str, str]] = None
        self.kernel_samples: Dict[Tuple[str, str], Dict[str, List[Dict[str, Any]]]] = {}
        self.sampler_errors: List[str] = []
        self.sustain_t0: Optional[float] = None
        self.health: Dict[str, Dict[str, Any]] = {}  # bus -> counter deltas and Xids over --sustain

    def on_event(self, obj: Dict[str, Any]) -> None:
        kind = obj.get("event")
        if kind in ("start", "result", "done"):
            self._stop_links()
            self._stop_sampler()
        if kind != "start":
            return
        name, device = str(obj.get("name", "")), str(obj.get("device", ""))
        if name.startswith(("h2d_", "d2h_")):
            self._start_links(name)
        if device.startswith("cuda"):
            from .sampler import GpuSampler

            # --sustain: ECC, PCIe replay and violation counters and Xid events over the load (DCGM diag)
            self.sampler = GpuSampler(self.nvml, interval_s=0.5 if name == "sustained" else 0.2,
                                      watch_health=name == "sustained")
            self._current = (name, device)
            if name == "sustained":
                self.sustain_t0 = float(obj.get("t") or time.monotonic())
            self.sampler.start()

    def _stop_sampler(self) -> None:
        if self.sampler is not None and self._current is not None:
            self.sampler.stop()
            self.kernel_samples[self._current] = self.sampler.samples
            if self._current[0] == "sustained":
                self.health = self.sampler.health
            if self.sampler.error:
                self.sampler_errors.append(self.sampler.error)
        self.sampler = None
        self._current = None

    def _start_links(self, name: str) -> None:
        from ..probes.nvml import sample_pcie_links

        stop = threading.Event()
        self._link_stop = stop

        def work() -> None:
            best, _n, _err = sample_pcie_links(self.nvml, lambda: not stop.is_set(), max_s=600.0)
            self.links[name] = {bus_key(b) or b: v for b, v in best.items()}

        self._link_thread = threading.Thread(target=work, name="envdoctor-bench-links", daemon=True)
        self._link_thread.start()

    def _stop_links(self) -> None:
        if self._link_stop is not None:
            self._link_stop.set()
            if self._link_thread is not None:
                self._link_thread.join(3.0)
            self._link_stop = None

    def stop(self) -> None:
        self._stop_links()
        self._stop_sampler()

    def apply(self, results: List[BenchResult]) -> List[BenchResult]:
        from .sampler import (
            LIMITING_REASONS,
            health_params,
            merge_sustained,
            reason_counts,
            sustained_summary,
        )

        out = []
        for r in results:
            key = bus_key(r.params.get("pci_bus_id")) if isinstance(r.params, dict) else None
            params = dict(r.params)
            if r.name in self.links and key in self.links[r.name]:
                params["pcie_gen_under_load"], params["pcie_width_under_load"] = self.links[r.name][key]
            by_bus = self.kernel_samples.get((r.name, r.device or "")) or self.kernel_samples.get((r.name, "cuda"))
            nv = (by_bus or {}).get(key or "", [])
            if r.name == "sustained" and r.status == ProbeStatus.OK and r.samples:
                t0 = self.sustain_t0 or min(s["t"] for s in r.samples)
                series = merge_sustained(r.samples, nv, t0)
                params.update(sustained_summary(series))
                params.update(health_params(self.health.get(key or "")))
                if self.sampler_errors:
                    params["nvml"] = self.sampler_errors[0]
                r = dataclasses.replace(r, samples=series)
            elif nv:
                clocks = sorted(s["sm_clock_mhz"] for s in nv if isinstance(s.get("sm_clock_mhz"), int))
                params["throttle_reasons_seen"] = sorted({x for s in nv for x in (s.get("throttle_reasons") or [])
                                                          if x in LIMITING_REASONS})
                # how many samples each reason was in: one HW Slowdown sample may be a P-state change
                params["throttle_reason_samples"] = reason_counts(nv)
                if clocks:
                    params["sm_clock_mhz_during"] = clocks[len(clocks) // 2]
                params["nvml_samples"] = len(nv)
            out.append(dataclasses.replace(r, params=params))
        return out
