"""Watch verdicts GPU by GPU: one never working, one lagging, all stopping together, memory, clocks."""

from __future__ import annotations

from typing import List

from ..domain.recording import BURST_BYTES, Analysis, pct
from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch import (
    IDLE_P90,
    MEM_PRESSURE_PCT,
    STRAGGLER_GAP,
    THROTTLED_SHARE,
    analysis_of,
    confidence,
    no_gpu_reason,
    recording,
    unseen_text,
    working,
)
from ._watch_gaps import SAVE_FIX, STALL_SHARE, STALLS, mb_text, named_findings, waited_most
from ._watch_main import main_of, name_gaps, worker_lulls, write_bursts
from ._watch_moment import IDLE, one_moment
from ._watch_words import words_idle, words_memory
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


# --------------------------------------------------------------------------- GPUs one by one



@check(IDLE, "Every GPU of the run does work")
def idle_gpu(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    if not a.gpus or all(g.util_p90 is None for g in a.gpus):
        said = words_idle(IDLE, w)  # a paste: the reporter says the other GPUs stay idle
        if said is not None:
            return [said]
        raise SkipCheck(no_gpu_reason(w))
    idle = [g for g in a.gpus if g.util_p90 is not None and g.util_p90 < IDLE_P90]
    if not idle:
        return []
    ev = [Evidence(f"watch.summary.gpus[{g.index}].util_p90", g.util_p90, f">= {IDLE_P90:g}") for g in idle]
    def mem(g):
        return f" (holding {g.mem_used_mib_max:g} MiB)" if g.mem_used_mib_max is not None else ""
    names = ", ".join(f"GPU {g.index}{mem(g)}" for g in idle)
    moment = one_moment(w, a, idle, ev)
    if moment is not None:
        return [moment]
    if len(idle) == len(a.gpus):
        return [IDLE.warning(
            "all-idle", f"No GPU did any work in {a.sample_count} samples ({a.duration_s:g} s): {names}",
            evidence=ev, confidence=confidence(a, direct=False),
            detail="Either the job has not started using the GPUs yet (loading the model, data or a compile), it "
                   "runs on the CPU, or it waits on its input the whole time (a DataLoader in the main process "
                   "with heavy augmentation shows this). " + (unseen_text(w) or ""),
            fix=Fix("Check that the model and the batches are on the GPU (.to('cuda')) and watch past the start-up; "
                    "if the GPU waits on input, see watch.bottleneck"))]
    busy = [g for g in a.gpus if g not in idle]
    return [IDLE.warning(
        "unused", f"{names} did no work (utilisation p90 under {IDLE_P90:g}%) while "
        + ", ".join(f"GPU {g.index} ran at p50 {g.util_p50:g}%" for g in busy[:4]),
        evidence=ev, confidence=confidence(a, direct=False),
        detail="A GPU given to the job that never works: the code uses one device (DataParallel not applied, "
               "a hard-coded cuda:0, CUDA_VISIBLE_DEVICES wider than the launch), or a framework reserved its "
               "memory without running on it. If nobody meant to use it, it is only idle. "
               + (unseen_text(w) or ""),
        fix=Fix("Launch one process per GPU (torchrun --nproc_per_node=<GPUs>) with DistributedDataParallel, or "
                "hide the unused GPU (CUDA_VISIBLE_DEVICES) so it can serve another job"))]


STRAGGLER = Findings("watch.straggler", "GPU_STRAGGLER", kinds=("lagging", "slower"))


@check(STRAGGLER, "No GPU lags behind the others")
def straggler(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    busy = working(a)
    if len(busy) < 2:
        raise SkipCheck("fewer than two working GPUs in the recording: nothing to compare")
    out: List[Finding] = []
    seen = set()
    for e in a.lags:
        if e.gpu in seen or e.gpu not in {g.index for g in busy}:
            continue
        seen.add(e.gpu)
        drop = (f"; meanwhile the other GPUs' power fell {e.others_power_drop_pct:g}% at 'full' utilisation: they "
                "were waiting for it in a collective") if e.others_power_drop_pct and e.others_power_drop_pct > 25 \
            else ""
        n = sum(1 for x in a.lags if x.gpu == e.gpu)
        total = round(sum(x.duration_s for x in a.lags if x.gpu == e.gpu), 1)
        out.append(STRAGGLER.warning(
            "lagging", f"GPU {e.gpu} stood idle for {total:g} s ({n} episode{'s' if n > 1 else ''}, the longest "
            f"{max(x.duration_s for x in a.lags if x.gpu == e.gpu):g} s from t={e.start_s:g} s) while the others "
            f"worked{drop}",
            evidence=[Evidence(f"watch.summary.lags[{a.lags.index(e)}].duration_s", e.duration_s)],
            confidence=confidence(a, direct=False),
            detail="One rank doing extra work stops them all at the next collective. Periodic episodes on rank 0 "
                   "are usually rank-0-only work: saving a checkpoint, evaluation, logging; otherwise a slower GPU "
                   "(clocks, throttling) or an uneven batch. " + (unseen_text(w) or ""),
            fix=Fix("Make rank-0 work asynchronous or shared (torch.distributed.checkpoint.async_save, save less "
                    "often, evaluate on every rank); if the same GPU always lags, compare its clocks "
                    "(nvidia-smi -q -d CLOCK,PERFORMANCE)")))
    med = pct([g.util_p50 for g in busy], 0.5) or 0.0
    for g in busy:
        if g.index in seen:
            continue
        others = pct([x.util_p50 for x in busy if x is not g], 0.5) or 0.0
        if others - (g.util_p50 or 0) >= STRAGGLER_GAP and others >= 50:
            hot = f"; it runs at {g.temperature_max_c:g} °C" if g.temperature_max_c else ""
            out.append(STRAGGLER.warning(
                "slower", f"GPU {g.index} works at p50 {g.util_p50:g}% while the others reach {others:g}% "
                f"(median of all {med:g}%){hot}",
                evidence=[Evidence(f"watch.summary.gpus[{g.index}].util_p50", g.util_p50, f">= {others - 30:g}")],
                confidence=confidence(a, direct=False),
                detail="An uneven split (nn.DataParallel gathers on GPU 0 and gives the others less), a slower or "
                       "throttled GPU, or a rank with more work. The recording cannot tell which without clocks "
                       "and throttle reasons. " + (unseen_text(w) or ""),
                fix=Fix("Use DistributedDataParallel (one process per GPU) rather than nn.DataParallel; compare the "
                        "GPUs' clocks and throttle reasons (nvidia-smi -q -d CLOCK,PERFORMANCE)")))
    return out


# --------------------------------------------------------------------------- stalls, memory, clocks

@check(STALLS, "The GPUs do not stop together mid-run",
       categories=("CHECKPOINT_STALL", "GPU_UNDERFED", "EVALUATION_STALL", "LOOP_PAUSED", "INPUT_BOUND"))
def stalls(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    if not working(a):
        return _timer_stalls(w, a)
    if not a.stalls:
        return []
    total = round(sum(e.duration_s for e in a.stalls), 1)
    share = total / max(a.duration_s, 1e-9)
    longest = max(e.duration_s for e in a.stalls)
    ev = [Evidence(f"watch.summary.stalls[{i}].duration_s", e.duration_s) for i, e in enumerate(a.stalls[:5])]
    named = name_gaps(w, a, [(e.start_s, e.duration_s) for e in a.stalls]) if main_of(a).get("share") else {}
    if named and "unknown" not in named:
        # what the training process did while the GPUs idled names each gap (issue 41)
        found = named_findings(w, a, named, max(a.duration_s, 1e-9), ev, "All GPUs stopped together")
        if found or waited_most(named):
            return found
    writes = [e.disk_write_mbps for e in a.stalls if e.disk_write_mbps is not None]
    text = (f"All GPUs stopped together {len(a.stalls)} time{'s' if len(a.stalls) > 1 else ''} for {total:g} s "
            f"({100 * share:.0f}% of the run, the longest {longest:g} s)")
    if writes and max(writes) >= 50:
        return [STALLS.warning(
            "checkpoint", f"{text} while the disk wrote {max(writes):g} MB/s: checkpoint saves", evidence=ev,
            confidence=confidence(a, direct=False), detail=unseen_text(w), fix=SAVE_FIX)]
    return [STALLS.warning(
        "stall", f"{text}: the pattern of a checkpoint save, an evaluation pass or a synchronisation"
        + ("" if writes else "; no disk samples to tell a checkpoint write"),
        category="GPU_UNDERFED", evidence=ev, confidence="low" if not writes else "medium",
        detail=unseen_text(w),
        fix=Fix("Find what runs at those times (checkpoint, eval, logging): save asynchronously, evaluate less often"))]


def _timer_stalls(w: Watch, a: Analysis) -> List[Finding]:
    """Without GPU samples: the step timer's stalls (steps that stood out from the run's own steps: 2.5 typical
    steps, eight typical deviations above it and 0.1 s, envdoctor.watch.timer.STALL_X, of their own work), each
    named by what the training process did meanwhile; without a timer, its write bursts (a save)."""
    summ = w.summary if isinstance(w.summary, dict) else {}
    share = summ.get("step_stall_fraction")
    if not isinstance(share, (int, float)):
        return _burst_stalls(w, a)
    brief = summ.get("step_brief_fraction")
    brief = brief if isinstance(brief, (int, float)) else 0.0
    if share + brief < STALL_SHARE:
        return []
    count, total = summ.get("step_stall_count") or 0, summ.get("step_stall_s") or 0.0
    ev = [Evidence("watch.summary.step_stall_fraction", share, f"< {STALL_SHARE:g}"),
          Evidence("watch.summary.step_stall_count", count)]
    if brief:  # steps that stood out but took under the timer's STALL_MIN_S each: named only by their I/O
        ev.append(Evidence("watch.summary.step_brief_fraction", brief))
    gaps = [(g["start_s"], g["duration_s"], bool(g.get("brief"))) for g in summ.get("step_gaps") or []
            if isinstance(g, dict)]
    if gaps and main_of(a).get("share"):
        named = name_gaps(w, a, gaps)
        run_s = total / share if share else (summ.get("step_brief_s") or 0.0) / brief
        found = named_findings(w, a, named, max(run_s, 1e-9), ev, "The step loop stopped")
        if found or waited_most(named):
            return found
    if share < STALL_SHARE:
        return []  # brief stalls that no writes or reads named: as long as a loaded box's preemptions
    writes = [d.get("write_mbps_p90") for d in a.disks.values() if d.get("write_mbps_p90")]
    text = (f"The step loop stopped {count} time{'s' if count != 1 else ''} for {total:g} s in all "
            f"({100 * share:.0f}% of its time): steps far longer than the run's typical step")
    if writes and max(writes) >= 50:
        return [STALLS.warning(
            "checkpoint", f"{text}, while the disk wrote up to {max(writes):g} MB/s (p90): checkpoint saves",
            evidence=ev, confidence=confidence(a, direct=True), detail=unseen_text(w), fix=SAVE_FIX)]
    return [STALLS.warning(
        "stall", f"{text}: the pattern of a checkpoint save, an evaluation pass or a synchronisation"
        + ("" if a.disks else "; no disk samples to tell a checkpoint write"),
        category="CHECKPOINT_STALL", evidence=ev, confidence="medium", detail=unseen_text(w),
        fix=Fix("Find what runs at those steps (checkpoint, eval, logging): save asynchronously, evaluate less "
                "often"))]


def _burst_stalls(w: Watch, a: Analysis) -> List[Finding]:
    """Neither GPU samples nor a step timer: the training process's own write bursts (a tick with BURST_BYTES
    written, and the flush after it in uninterruptible I/O) are the saves, with their share of the run."""
    if not main_of(a).get("share"):
        raise SkipCheck(f"{no_gpu_reason(w)}, and no step timer that counts stalls (timed(loader)): whether "
                        "the loop stopped mid-run cannot be told")
    spans = write_bursts(w, a, BURST_BYTES)
    run_s = max(a.duration_s - a.warmup_s, 1e-9)
    total = round(sum(d for _, d in spans), 2)
    if not spans or total / run_s < STALL_SHARE:
        return _lull_stalls(w, a, run_s)
    wrote = sum(int(((s.get("procs") or {}).get("main") or {}).get("wchar") or 0) for s in w.samples
                if isinstance(s.get("procs"), dict) and isinstance(s["procs"].get("main"), dict)
                and (s["procs"]["main"].get("wchar") or 0) >= BURST_BYTES)
    return [STALLS.warning(
        "checkpoint", f"The training process stopped to write {len(spans)} time{'s' if len(spans) != 1 else ''}, "
        f"about {total:g} s in all ({100 * total / run_s:.0f}% of the run), {mb_text(wrote)} written in those "
        "bursts: checkpoint saves",
        evidence=[Evidence("watch.summary.processes.main.write_burst_ticks",
                           main_of(a).get("write_burst_ticks")),
                  Evidence("watch.summary.processes.main.share", main_of(a).get("share"))],
        confidence="medium",
        detail="Read from the training process's own writes (/proc/PID/io) tick by tick, without a step timer: the "
               "length of each save is known to a tick (" + f"{a.interval_s or 0.5:g} s). " + (unseen_text(w) or ""),
        fix=SAVE_FIX)]


def _lull_stalls(w: Watch, a: Analysis, run_s: float) -> List[Finding]:
    """No saves that stopped the loop, no timer, no GPU: the spans in which the loader workers stood idle while
    they otherwise worked (the loop took no batches) named by what the training process did meanwhile; without
    workers nothing tells a pass of computing (an evaluation) from the training's own: said unknown."""
    lulls = worker_lulls(w, a)
    if lulls:
        named = name_gaps(w, a, lulls)
        ev = [Evidence("watch.summary.processes.worker_cpu_pct_p50", (a.procs or {}).get("worker_cpu_pct_p50")),
              Evidence("watch.summary.processes.main.share", main_of(a).get("share"))]
        return named_findings(w, a, named, run_s, ev, "The loop took no batches (its loader workers stood idle)")
    if not (a.procs or {}).get("workers_max"):
        raise SkipCheck(f"{no_gpu_reason(w)}, no step timer (timed(loader)) and no loader workers: the training "
                        "process saved nothing that stopped it, and whether it stopped to compute something else "
                        "(an evaluation pass looks like the training itself to /proc) is unknown")
    return []


MEMORY = Findings("watch.gpu-memory", "GPU_MEMORY_PRESSURE", kinds=("nearly-full", "reported-shared"))


@check(MEMORY, "GPU memory has headroom")
def gpu_memory(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    known = [g for g in a.gpus if g.mem_used_pct_p90 is not None]
    if not known:
        said = words_memory(MEMORY, w)  # a paste: a slowdown on Windows said with a memory-heavy load
        if said is not None:
            return [said]
        raise SkipCheck("GPU memory used against total unknown in the recording" if a.gpus else no_gpu_reason(w))
    full = [g for g in known if g.mem_used_pct_p90 >= MEM_PRESSURE_PCT]
    if isinstance(w.summary, dict) and w.summary.get("snapshots"):
        # a pasted table's idle GPU with its memory taken: memory reserved up front (TensorFlow maps nearly all
        # of it by default; torch's caching allocator keeps what it freed), not pressure on a working run
        full = [g for g in full if g.util_p90 is not None and g.util_p90 >= IDLE_P90]
    if not full:
        return []
    return [MEMORY.warning(
        "nearly-full", "GPU memory nearly full: " + ", ".join(
            f"GPU {g.index} {g.mem_used_pct_p90:g}% of {g.mem_total_mib:g} MiB (p90)" for g in full),
        evidence=[Evidence(f"watch.summary.gpus[{g.index}].mem_used_pct_p90", g.mem_used_pct_p90,
                           f"< {MEM_PRESSURE_PCT:g}") for g in full],
        confidence=confidence(a, direct=False),
        detail="At the edge of memory PyTorch's caching allocator frees and retries (torch.cuda.memory_stats()"
               "['num_alloc_retries'] counts it), each retry a synchronisation, and the next larger batch fails "
               "with out-of-memory. High utilisation with full memory is a truly compute-bound run.",
        fix=Fix("Cut memory per sample: mixed precision (bf16), activation checkpointing, a smaller batch with "
                "gradient accumulation; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation"))]


THROTTLE = Findings("watch.throttle", "GPU_THROTTLED", kinds=("during-run",))


@check(THROTTLE, "GPU clocks are not held back during the run")
def throttle(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    judged = [g for g in a.gpus if g.throttled_fraction is not None]
    if not judged:
        raise SkipCheck("no clock-event (throttle) readings in the recording" if a.gpus else no_gpu_reason(w))
    hit = [g for g in judged if g.throttled_fraction >= THROTTLED_SHARE]
    if not hit:
        return []
    return [THROTTLE.warning(
        "during-run", "Clocks held back during the run: " + ", ".join(
            f"GPU {g.index} {100 * g.throttled_fraction:.0f}% of steady samples ({', '.join(g.throttle_reasons)}"
            + (f", up to {g.temperature_max_c:g} °C" if g.temperature_max_c else "") + ")" for g in hit),
        evidence=[Evidence(f"watch.summary.gpus[{g.index}].throttled_fraction", g.throttled_fraction,
                           f"< {THROTTLED_SHARE:g}") for g in hit],
        confidence=confidence(a, direct=True),
        detail="Power or thermal limits lower the SM clock under load; every step takes longer by about the clock "
               "ratio. " + (unseen_text(w) or ""),
        fix=Fix("Check cooling (fans, airflow, ambient) and the power limit (nvidia-smi -q -d POWER; restore it "
                "with sudo nvidia-smi -pl <default>)"))]


