"""The watch verdicts on a paste's words (issue 42): speed symptoms a reporter says rather than records
(``summary.reported_symptoms``, read by diagnose/readers/speed_words.py), judged by the rules the watch checks
apply to samples, each at low confidence and with the measurement that would settle it. Words are weaker than
samples: these run only where the recording has no working GPU's samples and no step timer."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch_host import SETTLE_IO
from ._watch_moment import SETTLE_UTIL
from .base import Findings

# fix commands parse in bash as they stand (tests/unit/remedies): placeholders are example words, not <...>
SETTLE_WATCH = "envdoctor watch -- python train.py   # your training command: GPU, CPUs, disk and loader workers sampled together"
SETTLE_DF = "df -hT /path/to/data   # where the data lives: local SSD/NVMe, a hard disk, NFS or another network share"
_EV = "watch.summary.reported_symptoms"


def said(w: Watch) -> Dict[str, Any]:
    s = w.summary.get("reported_symptoms") if isinstance(w.summary, dict) else None
    return s if isinstance(s, dict) else {}


def _ev(s: Dict[str, Any], *keys: str) -> List[Evidence]:
    return [Evidence(f"{_EV}.{k}", s[k] if k != "others_idle" else s[k].get("said")) for k in keys if s.get(k)]


def _settle(*commands: str) -> List[Evidence]:
    return [Evidence("paste.settle", c) for c in commands]


def _q(text: str) -> str:
    return f"“{text}”"


def _also(quote: str, said_before: str) -> str:
    """`` (“quote”)``, or nothing where the words quoted already hold it (one sentence said both)."""
    core = quote.strip("…")[-40:]
    return "" if core and core in said_before else f" ({_q(quote)})"


def words_bottleneck(bottleneck: Findings, w: Watch, notseen: Optional[str]) -> Optional[Finding]:
    """What limits the run, from the reporter's words: the CPUs said busy while the GPU, which works at other
    times, waits (INPUT_CPU_BOUND); utilisation said to come and go (INPUT_BOUND, the input-pattern rule); long
    stops with the GPU at 0% after a fast start (INPUT_BOUND, storage the first suspect). None otherwise."""
    s = said(w)
    if not s:
        return None
    if s.get("split") and s.get("split_slow"):
        return _words_split(bottleneck, s, notseen)
    if s.get("workers_over"):
        return _workers_over(bottleneck, s["workers_over"], notseen)
    ctx = s.get("context") or {}
    waits = s.get("gpu_low") or s.get("bursty") or s.get("complaint")
    phase = ctx.get("evaluation") or ctx.get("pipeline") or ctx.get("no_workers")
    if s.get("cpu_busy") and s.get("gpu_works") and (phase and waits or s.get("gpu_low")):
        where = ("no DataLoader workers (num_workers=0)" if ctx.get("no_workers") else
                 "an evaluation or validation pass" if ctx.get("evaluation") else "the input pipeline" if phase else
                 "no phase or input step (the GPU said idle)")
        return bottleneck.warning(
            "reported-cpu", f"Input-bound on the CPU, by the reporter's account: the CPUs are busy ({_q(s['cpu_busy'])}) "
            f"while the GPU, which the paste shows at work{_also(s['gpu_works'], s['cpu_busy'])}, waits"
            + (_also(s.get("gpu_low") or s["bursty"], s["cpu_busy"]) if s.get("gpu_low") or s.get("bursty") else "")
            + f"; the paste names {where}", category="INPUT_CPU_BOUND", confidence="low",
            evidence=_ev(s, "cpu_busy", "gpu_works", "gpu_low", "bursty") + [Evidence(f"{_EV}.context", ctx)]
            + _settle(SETTLE_WATCH, SETTLE_UTIL),
            detail="A GPU that computes in one phase and idles in another while the CPUs are busy is waiting on "
                   "CPU work: batches decoded and augmented in too few processes (a validation DataLoader left at "
                   "num_workers=0 is the usual one), or a step done on the CPU (an evaluation metric). A run "
                   "that computes on the CPU altogether (a CPU-only build) shows the same figures, which is why "
                   "the GPU's working phase matters. These are words, not samples: the asks below settle it. "
                   + (notseen or ""),
            fix=Fix("Give the slow phase's DataLoader worker processes (num_workers of a few, up to the CPUs per "
                    "training process minus one, pin_memory=True); keep per-sample CPU work out of the loop",
                    commands=["DataLoader(val_dataset, batch_size=..., num_workers=4, pin_memory=True, "
                              "persistent_workers=True)   # size num_workers to the CPUs per process minus one"]))
    if s.get("cpu_work") and (s.get("gpu_low") or s.get("bursty")):
        return _cpu_work(bottleneck, s, notseen)
    if s.get("bursty"):
        named = (" with no loader workers (num_workers=0)" if ctx.get("no_workers") else
                 f"; the paste names the input side ({_q(ctx['pipeline'])})" if ctx.get("pipeline") else "")
        return bottleneck.warning(
            "reported-input", f"The GPU's utilisation comes and goes, by the reporter's account ({_q(s['bursty'])})"
            f": the pattern of an input pipeline that cannot keep up{named}",
            category="INPUT_BOUND", confidence="low",
            evidence=_ev(s, "bursty") + ([Evidence(f"{_EV}.context", ctx)] if ctx else [])
            + _settle(SETTLE_UTIL, SETTLE_IO, SETTLE_WATCH),
            detail="A GPU that computes in bursts and idles between them waits for its next batch: loading, "
                   "decoding and augmenting it in too few workers or without prefetching, or reading it from a slow "
                   "disk or a network share. Steady low utilisation is another story (small batches, syncs). Words, "
                   "not samples: utilisation, CPU and disk sampled together (the asks below) tell the disk from the "
                   "CPU. "
                   + (notseen or ""),
            fix=Fix("Overlap loading with compute: DataLoader workers (num_workers up to the CPUs per process minus "
                    "one), pin_memory=True and prefetching (tf.data's prefetch, an input generator that prefetches); "
                    "the data on local SSD/NVMe",
                    commands=["DataLoader(dataset, batch_size=..., num_workers=4, pin_memory=True, "
                              "persistent_workers=True, prefetch_factor=4)   # size num_workers to the CPUs per "
                              "process minus one", SETTLE_IO]))
    tp = s.get("throughput")
    fell = s.get("speed_fell") if isinstance(s.get("speed_fell"), dict) else None
    if (s.get("stalls") or fell) and s.get("stall_gpu_zero") or s.get("stalls") and tp:
        if drained(s):  # the time-shape that names the storage (round 15)
            return _drained(bottleneck, s, fell, tp)
        stops = (f"The run stops for long spans, by the reporter's account ({_q(s['stalls'])})" if s.get("stalls") else
                 f"The run's speed fell from {fell['from']:g} to {fell['to']:g}, by the reporter's account "  # type: ignore[index]
                 f"({_q(fell['said'])})")  # type: ignore[index]
        log = (f"; its {tp['source']} agrees: between steps {tp['from_step']} and {tp['to_step']} the mean fell "
               f"from {tp['rate_before']:g} to {tp['rate_after']:g} images/sec, so those steps took about "
               f"{tp['slowdown_x']:g}x the run's usual time (the figure is the batch over the mean step time so far)"
               if isinstance(tp, dict) else "")
        return bottleneck.warning(
            "reported-stalls", stops
            + (f", the GPU at 0% meanwhile{_also(s['stall_gpu_zero'], stops)}" if s.get("stall_gpu_zero") else "")
            + log
            + ": the GPU waits on something outside it, most often its input", category="INPUT_BOUND",
            confidence="low",
            evidence=_ev(s, "stalls", "stall_gpu_zero", "fast_start")
            + ([Evidence(f"{_EV}.speed_fell", fell["said"])] if fell else []) + ([Evidence(f"{_EV}.throughput", tp)] if tp
                                                                        else [])
            + _settle(SETTLE_DF, SETTLE_IO, SETTLE_WATCH),
            detail="A run that starts at full speed and then stops for long spans with its GPUs idle has run out of "
                   "something it was fed: its data, once the page cache and the loader's prefetch buffers are "
                   "drained and every batch comes from the storage itself (a network share or a hard disk serves "
                   "a fraction of what the first, cached steps read), or, in a run over several machines, a "
                   "slower peer the others wait for. The paste does not say where the data lives; `df -hT <data "
                   "dir>` says it, and `iostat -x 1` during a stop (%util near 100, a long await, or nothing read "
                   "at all from a network mount) tells the storage from the network. " + (notseen or ""),
            fix=Fix("Find where the data lives and watch the storage during a stop; if it is a network share or a "
                    "hard disk, copy the data set to local SSD/NVMe (or cache it in RAM) before training",
                    commands=[SETTLE_DF, SETTLE_IO, SETTLE_WATCH]))
    return None


def drained(s: Dict[str, Any]) -> bool:
    """The time-shape of a run over several machines whose input ran dry: full speed first (said, or a throughput
    log's slow span after steps at the run's rate), then long stops with the GPU at 0%, and nothing said that points
    elsewhere: no slowdown said to creep (a GPU heating up, programs taking the CPU wear a run down rather than
    stop it: tensorflow-025, centernet-001), no busy CPUs, no checkpoint or evaluation beside the stops, no GPU
    said idle while others work. On one machine where the data lives is anyone's guess (reported-stalls)."""
    return bool((s.get("stalls") or s.get("speed_fell")) and s.get("stall_gpu_zero") and s.get("machines")
                and (s.get("fast_start") or s.get("throughput"))
                and not (s.get("gradual") or s.get("cpu_busy") or s.get("cpu_work") or s.get("saving")
                         or s.get("others_idle") or (s.get("context") or {}).get("evaluation")))


def _drained(bottleneck: Findings, s: Dict[str, Any], fell: Optional[Dict[str, Any]], tp: Any) -> Finding:
    """Full speed, then long stops with the GPUs at 0%, in a run over several machines: the data's storage named
    as the likely limit (reports-batch5/414, horovod#824: an NFS share both servers read).

    Why SLOW_STORAGE and not INPUT_STORAGE_BOUND: the catalogue's INPUT_STORAGE_BOUND is a measurement of the run
    (the disk under the data seen busy or slow: %util, await, iowait), which words and a throughput log do not
    hold. The shape says something of where the data lives: input CPUs that cannot keep up give a steady lower
    rate, while a run that goes at full speed and then stops with every GPU idle has used up what was read ahead
    (the page cache, the loader's prefetch) and waits on reads; machines that train on one data set usually read it
    from a filesystem they share over the network. The data path on a network filesystem (or a hard disk) is
    SLOW_STORAGE's meaning, and its fix, the data on local SSD/NVMe, is what settles and cures it."""
    said = _q(s["stalls"]) if s.get("stalls") else _q(fell["said"]) if fell else ""
    span = (f"; its {tp['source']} agrees: steps {tp['from_step']}-{tp['to_step']} took about {tp['slowdown_x']:g}x "
            "the run's usual time" if isinstance(tp, dict) else "")
    return bottleneck.warning(
        "reported-drained", f"Full speed at first, then long stops with the GPU at 0%, by the reporter's account "
        f"({said}){span}, in a run over several machines ({_q(s['machines'])}): the input ran dry once what was "
        "read ahead was used up, and the storage the machines share is the likely limit",
        category="SLOW_STORAGE", confidence="low",
        evidence=_ev(s, "stalls", "stall_gpu_zero", "fast_start", "machines")
        + ([Evidence(f"{_EV}.speed_fell", fell["said"])] if fell else [])
        + ([Evidence(f"{_EV}.throughput", tp)] if isinstance(tp, dict) else [])
        + _settle(SETTLE_DF, SETTLE_IO, SETTLE_WATCH),
        detail="Input CPUs that cannot keep up slow every step alike; a run that goes at full speed and then stops "
               "with its GPUs idle has used up what was read ahead (page cache, prefetch) and waits on reads, and "
               "machines training on one data set usually share it over a network filesystem. Not a measurement: "
               "where the data lives and `iostat -x 1` during a stop settle it; a slower peer is the other reading.",
        fix=Fix("Copy the data set to local SSD/NVMe on each machine (or cache it in RAM when it fits) before "
                "training, or move it to a faster shared filesystem"))


def _workers_over(bottleneck: Findings, o: Dict[str, Any], notseen: Optional[str]) -> Finding:
    """A launcher's processes per node times each one's DataLoader workers, far beyond the CPUs the paste gives the
    node: INPUT_CPU_BOUND, low (whether the run waits on it is not measured)."""
    per = max(1, o["cpus"] // o["processes"] - 1)
    return bottleneck.warning(
        "reported-workers", f"The command line starts {o['processes']} processes per node with {o['workers']} "
        f"DataLoader workers each: {o['loaders']} loader processes for the {o['cpus']} CPUs the paste gives the "
        f"machine ({o['loaders'] / o['cpus']:g} per CPU), so the input pipeline fights over the CPUs",
        category="INPUT_CPU_BOUND", confidence="low",
        evidence=[Evidence(f"{_EV}.workers_over", o)] + _settle("nproc", SETTLE_WATCH),
        detail="num_workers is per DataLoader, and every process of a distributed launch builds its own, so the node "
               "runs processes x num_workers workers (plus each one's threads) besides the training processes "
               "themselves. Far more of them than CPUs decode and augment no faster: they queue for the cores, "
               "switch among them and take the training processes' CPU time too, so the GPUs wait for batches. "
               "Whether this run waits on it is not measured: `envdoctor watch` samples the workers and the CPUs. "
               + (notseen or ""),
        fix=Fix(f"Size num_workers to the CPUs per process: {o['cpus']} CPUs / {o['processes']} processes, one kept "
                "for the training process", commands=[f"--num_workers {per}   # {o['cpus']} CPUs for "
                                                      f"{o['processes']} processes per node"]))


def _words_split(bottleneck: Findings, s: Dict[str, Any], notseen: Optional[str]) -> Finding:
    """One model split over several GPUs (tensor parallelism, an LLM server on several GPUs) that the reporter
    says is no faster than one GPU, or keeps its GPUs at half their utilisation: COMMUNICATION_BOUND, low."""
    return bottleneck.warning(
        "reported-split", (f"The model is split over several GPUs ({_q(s['split'])})" if s.get("split_by") ==
                           "tensor-parallel size" else f"An LLM server runs on several GPUs ({_q(s['split'])}), "
                           "usually one model split over them (tensor parallelism)")
        + f", and by the reporter's account, the split run does not use them{_also(s['split_slow'], s['split'])}: "
        "the GPUs wait on each other",
        category="COMMUNICATION_BOUND", confidence="low",
        evidence=_ev(s, "split", "split_slow") + _settle("nvidia-smi topo -m", SETTLE_UTIL),
        detail="Tensor parallelism exchanges activations between the GPUs in every layer of every step; for a "
               "model that fits on fewer GPUs, or GPUs joined by PCIe through the CPU rather than NVLink, that "
               "exchange takes longer than the compute it divides, and each GPU idles while it waits (utilisation "
               "at half, no gain over one card). These are words, not samples: `nvidia-smi topo -m` shows the "
               "links, and the same load on fewer GPUs settles it. " + (notseen or ""),
        fix=Fix("Split the model over as few GPUs as hold it (the smallest tensor-parallel size that fits), and "
                "serve more requests with one replica per GPU group (data parallelism) instead of a wider split; "
                "keep the split on GPUs joined by NVLink",
                commands=["nvidia-smi topo -m   # NV#: NVLink; PIX/PXB: one PCIe switch; NODE/SYS: through the CPU"]))


def _cpu_work(bottleneck: Findings, s: Dict[str, Any], notseen: Optional[str]) -> Finding:
    """The GPU said idle or coming and going, and the reporter suspects the CPU's part of the input."""
    gpu = s.get("gpu_low") or s["bursty"]
    return bottleneck.warning(
        "reported-cpu", f"Input-bound on the CPU, by the reporter's account: the GPU waits ({_q(gpu)}) and the "
        f"reporter suspects the CPU's work on the input{_also(s['cpu_work'], gpu)}", category="INPUT_CPU_BOUND",
        confidence="low",
        evidence=_ev(s, "gpu_low", "bursty", "cpu_work") + _settle(SETTLE_WATCH, SETTLE_UTIL, SETTLE_IO),
        detail="A GPU that idles, or computes in bursts between long waits, while each batch is decoded, augmented or "
               "preprocessed on the CPU is waiting on that work: done serially (one file after another at the "
               "start of each batch) or in too few processes it takes longer than the GPU's step. The reporter's "
               "suspicion is not a measurement: the CPUs near 100% while the GPU waits settle it (a disk at %util "
               "100 would make it storage instead). A GPU idle throughout is also what a run that never reaches "
               "it shows (a CPU-only build): the process holding GPU memory tells them apart. " + (notseen or ""),
        fix=Fix("Do the input's CPU work in parallel and ahead of the GPU: DataLoader workers (num_workers up to the "
                "CPUs per process minus one) or a multi-process reader, prefetching the next batches, decoding or "
                "augmenting once offline (or on the GPU)",
                commands=["DataLoader(dataset, batch_size=..., num_workers=4, pin_memory=True, "
                          "persistent_workers=True, prefetch_factor=4)   # size num_workers to the CPUs per process "
                          "minus one"]))


def words_loader(loader: Findings, w: Watch) -> Optional[Finding]:
    """The reporter says the DataLoader has no workers (num_workers 0) and the run is slow or the GPU underused:
    DATALOADER_IN_MAIN_PROCESS at low confidence (a process tree would count the workers). None otherwise."""
    s = said(w)
    ctx = s.get("context") or {}
    slow = s.get("complaint") or s.get("gpu_low") or s.get("bursty")
    if not ctx.get("no_workers") or not slow:
        return None
    return loader.warning(
        "reported", f"Every batch is loaded in the training process, by the reporter's account ({_q(ctx['no_workers'])}"
        f"), and the run is slow ({_q(slow)})", confidence="low",
        evidence=[Evidence(f"{_EV}.context.no_workers", ctx["no_workers"])] + _ev(s, "complaint", "gpu_low", "bursty")
        + _settle(SETTLE_WATCH, SETTLE_UTIL),
        detail="With num_workers=0 the training loop stops to read, decode and augment each batch while the GPU "
               "waits; worker processes do it in parallel with the step. (On Windows and macOS the workers are "
               "spawned: the training script needs its `if __name__ == \"__main__\":` guard.) Whether this is what "
               "limits the run is not measured: `envdoctor watch -- <your command>` counts the workers and times "
               "the wait.",
        fix=Fix("Load in worker processes", commands=[
            "DataLoader(dataset, batch_size=..., num_workers=4, pin_memory=True, persistent_workers=True)   "
            "# size num_workers to the CPUs per process minus one"]))


SETTLE_SHARED = ("nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv   # during a "
                 "slow step (Task Manager: 'Shared GPU memory' in use)")


def words_memory(memory: Findings, w: Watch) -> Optional[Finding]:
    """A run several times slower on Windows with a memory-heavy load, by the reporter's account: the driver's
    shared-memory fallback (GPU_MEMORY_PRESSURE, low confidence). None otherwise."""
    sp = said(w).get("spill")
    if not isinstance(sp, dict):
        return None
    x = sp.get("slowdown_x")
    summary = (f"The run is slow and the reporter sees the GPU's memory spill into shared system memory "
               f"({_q(sp['said'])}): the GPU's memory is full and the driver goes on in system RAM over PCIe"
               if sp.get("outright") else
               f"The run is {f'{x:g}x' if x else 'many times'} slower than the machine's own speed, by the reporter's "
               f"account ({_q(sp['said'])}), on Windows with a memory-heavy load ({_q(sp['load'])}): the likeliest "
               "cause is the GPU's memory filling and the driver going on in shared system memory")
    return memory.warning(
        "reported-shared", summary,
        confidence="low", evidence=[Evidence(f"{_EV}.spill", sp)] + _settle(SETTLE_SHARED),
        detail="NVIDIA's Windows driver (536.40 and later) goes on in shared system memory, at a fraction of the "
               "speed, where it would have failed with out-of-memory. Words, not samples: the memory used during "
               "a slow step settles it.",
        fix=Fix("Keep the work inside the GPU's memory (--medvram/--lowvram or offloading, fewer models at once, a "
                "lower resolution), or from driver 546.01 set NVIDIA Control Panel > CUDA - Sysmem Fallback Policy "
                "to 'Prefer No Sysmem Fallback' for python.exe (an out-of-memory error instead)"))


def words_idle(idle: Findings, w: Watch) -> Optional[Finding]:
    """The reporter says the other GPUs stay idle while one works: GPU_IDLE_UNUSED at low confidence."""
    s = said(w)
    o = s.get("others_idle")
    if not isinstance(o, dict):
        return None
    n = o.get("count")
    return idle.warning(
        "reported-unused", f"{n if n else 'Some'} GPU{'s' if n != 1 else ''} given to the run do no work while one "
        f"does, by the reporter's account ({_q(o['said'])})", confidence="low",
        evidence=_ev(s, "others_idle") + _settle(SETTLE_UTIL),
        detail="The code runs on one device: one process with a hard-coded cuda:0 or no DataParallel/DDP, or a "
               "scheduler that gives one task all the GPUs while its code uses one (Ray Tune's resources per trial "
               "are per trial: {'gpu': 4} runs one trial at a time on four GPUs; under Slurm, PyTorch Lightning takes its "
               "processes from Slurm's tasks, so a job with one task trains on one of the GPUs it was given: "
               "Lightning-AI/pytorch-lightning#20391). `nvidia-smi dmon -s u` while it runs shows which GPUs work.",
        fix=Fix("Launch one process per GPU (torchrun --nproc_per_node=<GPUs> with DistributedDataParallel), or ask "
                "the scheduler for one GPU per task so that several run at once (Ray Tune: resources_per_trial="
                "{'gpu': 1}; Slurm: srun with --ntasks-per-node equal to the GPUs per node); hide GPUs nobody uses "
                "(CUDA_VISIBLE_DEVICES)"))
