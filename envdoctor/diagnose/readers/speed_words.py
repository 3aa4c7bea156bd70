"""Speed symptoms a person says in words, and a throughput log's stops (issue 42): the part of a paste that is no
recording, read into ``summary.reported_symptoms`` of the watch recording (readers/speed.py) for the watch checks
to judge as the weak evidence it is (checks/_watch_words.py).

Each entry keeps the words it was read from. What is read, sentence by sentence (a sentence that is a table's line
is not prose):

- ``bursty``: the GPU's utilisation comes and goes ("the volatile gpu-util is very low and fluctuant", "unstable
  (sometime 100%, sometime 0%)", "periodicaly used gpu, but not constantly", "very low ... for large periods of
  time, then a spike"): the pattern watch.bottleneck calls input-pattern on samples;
- ``gpu_low``: the GPU said idle or underused ("there is no GPU usage", "GPU-Util is always shown zero");
- ``cpu_busy``: the CPUs said busy with a figure of 80% and more, or said to be the slow side ("CPU usage
  skyrockets to ~87%", "only 8 cpu processes 100% working", "the cpu is slow");
- ``gpu_works``: the model said to run on the GPU at other times ("Training runs on GPU normally", "gpu is fast"),
  or the GPU stack said to work with another model ("my GPU configuration works well with an MNIST pipeline"):
  what tells a run whose GPU waits from one that computes on the CPU (a CPU-only build shows CPU 100%, GPU 0%);
- ``cpu_work``: the reporter suspects the CPU's part of the input ("a bottleneck in the decoding of the audio
  files"; "the data input pipeline is slower than the training on GPU" where the paste says augmentation runs on
  the CPU), judged with the GPU said idle or bursty;
- ``context``: what the paste names around the input: no loader workers (``num_workers`` 0), an evaluation or
  validation pass, the input pipeline (a DataLoader, decoding, augmentation, prefetching);
- ``stalls``: the run said to stop for long spans ("the training process get stunned for a long time"), with the
  GPU said to drop to 0% meanwhile (``stall_gpu_zero``) and the speed said to fall after a fast start; beside them
  what tells the time-shape apart (round 15): the fast start (``fast_start``), the run over several machines
  (``machines``), a slowdown said to creep (``gradual``), a checkpoint or evaluation named (``saving``);
- ``others_idle``: the other GPUs said to stay idle while one works ("The other 3 gpus remain idle"), or one GPU
  said to work where the paste gives the run several ("only one gpu working while requesting 4");
- ``split``: one model split over several GPUs (issue 42, round 10): a tensor-parallel size of 2 or more
  (``--tensor-parallel-size 4``, ``tensor_parallel_size=2``), or an LLM inference server (vLLM, SGLang, TGI,
  TensorRT-LLM) named with several GPUs ("8xA100-40G", "4 GPUs"); ``split_slow`` its words: the split run no better
  than one card ("not as good as running on a single card") or its GPUs' utilisation said at or below half
  ("GPU-UTIL is constantly below 50%"): the pattern watch.bottleneck calls communication on samples;
- ``throughput``: a tf_cnn_benchmarks log (``1010  images/sec: 186.6 +/- 0.5 (jitter = 14.8)  6.983``): its
  figure is batch_size / mean(step time) over the steps so far (get_perf_timing_str in the
  tensorflow/benchmarks repository's tf_cnn_benchmarks, benchmark_cnn.py), so two lines give the time of the steps
  between them in units of the batch: a mean that falls is a span of steps far slower than the run's own;
- ``workers_over``: DataLoader workers far beyond the CPUs: a launcher's processes per node (``--nproc_per_node
  8``, MMDetection's ``dist_train.sh CONFIG 8``) times each process's workers (``--num_workers 32``,
  ``workers_per_gpu=20``), OVER_X times the CPUs the paste says the machine has ("We use 32 cpu and 8 gpu");
- ``spill``: a run several times slower than the machine's own speed, on Windows, with a memory-heavy load and no
  out-of-memory error: the Windows driver's shared-memory fallback (see spill()).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from .base import Paste

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])|[;\n]")
_TABLE = ("|", "+")

# a sentence about the GPU's utilisation (not its memory alone)
_UTIL = re.compile(r"\b(?:gpu[- ]?(?:(?:memory/)?(?:core |compute )?(?:util\w*|usage|load|capacity|activity))|"
                   r"utili[sz]ation|volatile|(?:used|uses|using) (?:the )?gpus?|gpus? (?:is |are )?(?:used|busy)|"
                   r"\d ?% of (?:the )?gpus?)\b", re.I)
_BURSTY = re.compile(r"\bfluctua\w*|\bunstable\b|\berratic\b|\boscillat\w*|\bup and down\b|\bjumps? (?:between|from)\b|"
                     r"\bnot constant\w*|\bsometimes? \d{1,3} ?%[^.\n]{0,25}\bsometimes? \d{1,3} ?%|"
                     r"\bbetween 0 ?%? and 100 ?%|\bfrom 0 ?%? to 100 ?%|"
                     r"\b(?:low|idle|zero|0 ?%)\b[^.\n]{0,80}\bthen (?:a |an )?(?:spike|burst|jump)|"
                     # "the big part of the time only 1% ... and sometimes 29%": low most of the time, now and then more
                     r"\b(?:most|(?:the )?(?:big|large|greater) part|majority) of the time\b[^.\n]{0,40}?\d{1,2} ?%"
                     r"[^.\n]{0,40}?\b(?:sometimes?|occasionally|briefly|(?:spikes?|jumps?|peaks?) (?:up )?to)\b"
                     r"[^.\n]{0,10}?\d{1,3} ?%", re.I)
_LOW = re.compile(r"\bno gpu (?:usage|utili[sz]ation|activity|load)\b|"
                  r"\bgpu[- ]?(?:util\w*|usage|load)\b[^.\n]{0,50}?\b(?:too low|very low|(?:is|are|was|stays?|"
                  r"remains?) (?:very |quite |really )?low|(?:always|shown|stays?|is) +zero|none|nothing)\b|"
                  r"\bgpu[- ]?(?:util\w*|usage|load)\b[^.\n%]{0,20}?(?<![\d.])0 ?%", re.I)
_CPU_BUSY = re.compile(r"\bcpus?\b[^.\n%]{0,40}?(?:(?<![\d.])(?:[89]\d|100)(?:\.\d+)? ?%|\bskyrocket\w*|\bmax(?:ed)? out\b|"
                       r"\bpegged\b|\bfully? (?:loaded|used|utili[sz]ed)\b)|\bcpu is (?:slow|the bottleneck|the limit)\b",
                       re.I)
_GPU_WORKS = re.compile(r"\b(?:runs?|running|trains?|training|works?|working)\b[^.\n]{0,20}\bon (?:the )?gpus?\b"
                        r"[^.\n]{0,15}\b(?:normal(?:ly)?|fine|as expected)\b|\bgpus? (?:is|are) fast\b|"
                        # the GPU stack said to work with another model ("my GPU configuration works well with an MNIST
                        # pipeline"): the build and the driver are not what keeps this run off the GPU
                        r"\bgpu (?:configuration|config|setup|installation|install) (?:works|is working|worked)\b"
                        r"[^.\n]{0,20}?\b(?:well|fine|normally)\b", re.I)
# the reporter names CPU-side work on the input as what they suspect is slow ("a bottleneck in the decoding of the
# audio files", "the data input pipeline is slower than the training on GPU"); the pipeline alone is the input side,
# decoding, augmenting and preprocessing are the CPU's part of it (or the pipeline where the paste says that work is
# done on the CPU: _ON_CPU)
_SUSPECT = re.compile(r"\b(?:bottleneck\w*|slower than|(?:is|are|was|be) (?:too |very |so |really )?slow|"
                      r"can(?:no|')t keep up|cannot keep up)\b", re.I)
_CPU_WORK = re.compile(r"\b(?:decod(?:e|es|ed|ing)|augment\w*|pre-?process\w*)\b", re.I)
_INPUT_SIDE = re.compile(r"\b(?:data|input) (?:input )?pip\w*line\b", re.I)
_ON_CPU = re.compile(r"\b(?:decod\w*|augment\w*|pre-?process\w*)\b[^.\n]{0,40}\bon (?:the )?cpus?\b", re.I)
_WORKERS0 = re.compile(r"\bnum_workers\b[^.\n\d]{0,20}?(?:(?:set )?(?:to|=|:)\s*)0\b", re.I)
_PHASE = re.compile(r"\b(?:evaluat\w*|validat\w*|val(?:idation)?[_ ](?:data)?loader)\b", re.I)
_PIPELINE = re.compile(r"\b(?:data ?loaders?|input pipeline|data pipeline|data feeding|input generator|data loading|"
                       r"(?:loading|load) (?:the )?(?:data|batches|images)|batches (?:are |are getting |getting )?loaded|"
                       r"prefetch\w*|decod(?:e|es|ed|ing)|augment\w*|image processing|pre-?processing)\b", re.I)
_STUCK = re.compile(r"\b(?:stuck|stunned|frozen|freezes?|hangs?|hung|paused?|pauses|stalls?|stalled|stops?|stopped)\b"
                    r"[^.\n]{0,15}\bfor (?:a |an )?(?:(?:very )?long|several|few|many|\d+)\b", re.I)
_GPU_ZERO = re.compile(r"\bgpu\b[^.\n]{0,40}\b(?:drops?|dropped|falls?|fell|goes|went|is|stays?)\b[^.\n]{0,10}\b(?:to )?0 ?%",
                       re.I)
# a throughput figure said to fall ("images/sec drops from 200 to 20")
_FELL = re.compile(r"\b(?:speed|throughput|(?:images?|img|samples?|examples?|tokens?|batch(?:es)?|it)/s(?:ec)?)\b[^.\n]{0,30}?"
                   r"\b(?:drops?|dropped|falls?|fell|decreas\w*|goes down|went down|slows? down)\b[^.\n]{0,20}?\bfrom "
                   r"~?(\d+(?:\.\d+)?)[^.\n\d]{0,20}?\bto ~?(\d+(?:\.\d+)?)", re.I)
_FAST_START = re.compile(r"\bat first\b|\bat the (?:beginning|start)\b|\binitially\b|\bafter (?:several|a few|some|\d+) "
                         r"(?:steps|iterations|epochs|minutes)\b", re.I)
_SUDDENLY = re.compile(r"\bsuddenly\b", re.I)  # a fast start said less plainly: read where none of those is
# a slowdown that creeps ("longer and longer", "deteriorates when the steps increase"): no stop after a full-speed
# start but a run that wears down (a GPU heating up, other programs taking the CPU: tensorflow-025, centernet-001)
_GRADUAL = re.compile(r"\b(?:longer and longer|slower and slower|gradual\w*|deteriorat\w*|little by little|"
                      r"(?:gets?|getting|becomes?|becoming) (?:slower|longer)\b)", re.I)
# the run spread over several machines ("8 GPUs on 2 servers", "two nodes"): each reads the one data set, which is
# then usually on a filesystem they share
_MACHINES = re.compile(r"\b(?:[2-9]|[1-9]\d|two|three|four|several|multiple) (?:servers|nodes|machines|hosts)\b", re.I)
# what else stops every GPU mid-run: a checkpoint written, an evaluation pass (CHECKPOINT_STALL, EVALUATION_STALL)
_SAVING = re.compile(r"\b(?:checkpoint\w*|sav(?:e|es|ed|ing) (?:the )?(?:model|weights|checkpoints?)|evaluat\w*|"
                     r"validat\w*)\b", re.I)
_OTHERS_IDLE = re.compile(r"\b(?:the )?(?:other|remaining|rest of the) (?:(?P<n>\d+|two|three|four|five|six|seven) )?gpus?\b"
                          r"[^.\n]{0,25}?\b(?:remain|remains|stay|stays|are|sit|sits|were|is|left)\s+(?:completely |"
                          r"totally |still )?(?:idle|unused|at 0 ?%|not used|doing nothing)\b", re.I)
# one GPU said to work where several were given ("only one gpu working while requesting 4", "tune will only run on 1
# GPU"): the others idle (adaface-001, ray-006); a GPU count seen ("only one gpu is visible", "device_count() shows
# only one gpu") is another story, visibility, not use
_ONLY_ONE = re.compile(r"\bonly (?:(?:run|runs|running|train|trains|training|work|works|working|uses?|using)\b[^.\n]{0,12}?"
                       r"\b(?:on )?(?:one|1|a single|the first) gpu\b|(?:one|1|a single) gpu (?:is |was )?(?:being )?"
                       r"(?:working|running|used|busy|utili[sz]ed|in use)\b)", re.I)
# ... and how many were given: asked of the scheduler or the framework, or the machine's count said
_GIVEN = re.compile(r"\b(?:request(?:ing|ed|s)?|asking for|ask for|allocat\w*|(?:the )?-*gpus\s*(?:argument |flag )?(?:to|=)|"
                    r"there (?:are|were))\s*(\d+)\b|\b(\d+) (?:gpus|cards)\b", re.I)
_COMPLAINT = re.compile(r"\bbottleneck\b|\bslow(?:er|ly|s)?\b|\bspeed (?:it |this (?:process )?)?up\b|"
                        r"\btakes? (?:a |so )?(?:very )?long\b", re.I)
_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
# one model split over GPUs: its tensor-parallel size, or an LLM server named with several GPUs (issue 42, round 10)
_TP = re.compile(r"--tensor[-_]parallel[-_]size[= ](\d+)|\btensor_parallel_size\s*=\s*(\d+)|(?:^|\s)(?:-tp|--tp(?:-size)?)[= ](\d+)",
                 re.I)
_SERVER = re.compile(r"\b(?:vllm|sglang|text-generation-inference|tensorrt[-_]llm|lmdeploy)\b", re.I)
_MANY = re.compile(r"\b([2-9]|1[0-6]) ?[x\u00d7] ?(?:A100|H100|H200|H800|A800|A10G?|L40S?|L4|V100|A6000|GPUs?)\b|"
                   r"\b([2-9]|1[0-6]) (?:GPUs|cards)\b", re.I)
_NO_GAIN = re.compile(r"\b(?:not as good as|no better than|slower than|worse than|no faster than)\s+(?:running |it is |it was )?"
                      r"(?:on |with )?(?:a |one )?(?:single|one|1) (?:card|gpu)\b", re.I)
_HALF = re.compile(r"\bgpu[- ]?util\w*\b[^.\n]{0,40}?\b(?:below|under|less than|at most|around|about|only)\s*~?([1-5]?\d) ?%",
                   re.I)

_KEYS = ["slow", "bottleneck", "speed", "/sec", "/s ", "throughput", "drop", "long", "gpu", "util", "cpu", "num_workers",
         "stuck", "stunned", "frozen", "freez", "hang", "hung", "paus", "stall", "stop", "idle", "volatile", "decod",
         "augment", "preprocess", "pre-process", "deteriorat", "gradual", "server", "node", "machine", "host",
         "checkpoint", "sav", "evaluat", "validat"]


def _sentences(paste: Paste) -> List[str]:
    out: List[str] = []
    for i in paste.with_any(_KEYS)[:600]:
        line = paste.lines[i]
        if line.lstrip().startswith(_TABLE) or len(line) > 2000:
            continue
        out.extend(s.strip() for s in _SENT.split(line) if s.strip())
    return out


def _first(pattern: re.Pattern[str], sentences: List[str], need: Optional[re.Pattern[str]] = None) -> Optional[str]:
    for s in sentences:
        if need is not None and not need.search(s):
            continue
        m = pattern.search(s)
        if m:
            return _around(s, m)
    return None


def _around(text: str, m: re.Match[str]) -> str:
    """The words matched with some of the sentence around them (what a finding quotes)."""
    a, b = max(0, m.start() - 30), min(len(text), m.end() + 30)  # a quote, not the paragraph: the reply fits a screen
    return ("…" if a else "") + text[a:b].strip() + ("…" if b < len(text) else "")


# tf_cnn_benchmarks' step line: step, images/sec: mean +/- uncertainty (jitter = ...), loss
_TF_BENCH = re.compile(r"^\s*(\d+)\s+images/sec: (\d+(?:\.\d+)?) \+/- \d+(?:\.\d+)? \(jitter = ")
SLOW_X = 2.5  # a span of steps this many times slower than the run's mean before it: a stop (watch.timer's STALL_X)


def throughput(paste: Paste) -> Optional[Dict[str, Any]]:
    """The slowest span of a tf_cnn_benchmarks log: the steps between two of its lines against the mean before
    them (the figure is batch_size / mean step time, so steps / figure is the time in units of the batch). None
    without three distinct steps or without a span SLOW_X times slower."""
    points: Dict[int, float] = {}
    for i in paste.with_any(["images/sec: "], case=True)[:5000]:
        m = _TF_BENCH.match(paste.lines[i])
        if m and float(m.group(2)) > 0:
            points.setdefault(int(m.group(1)), float(m.group(2)))  # each rank prints the line: the first is kept
    steps = sorted(points)
    if len(steps) < 3:
        return None
    worst = None
    for a, b in zip(steps, steps[1:]):
        took = b / points[b] - a / points[a]  # in units of the batch
        usual = (b - a) / points[a]
        if usual > 0 and took / usual >= SLOW_X and (worst is None or took / usual > worst[0]):
            worst = (took / usual, a, b)
    if worst is None:
        return None
    x, a, b = worst
    return {"slowdown_x": round(x, 1), "from_step": a, "to_step": b, "rate_before": points[a], "rate_after": points[b],
            "line": f"{a} images/sec: {points[a]:g} ... {b} images/sec: {points[b]:g}",
            "source": "tf_cnn_benchmarks log"}


def said_symptoms(paste: Paste) -> Optional[Dict[str, Any]]:
    """What the paste says in words about the run's speed (see the module's docstring); None when it says nothing
    the watch checks judge."""
    sents = _sentences(paste)
    out: Dict[str, Any] = {}

    def said(key: str, pattern: re.Pattern[str], need: Optional[re.Pattern[str]] = None) -> None:
        got = _first(pattern, sents, need)
        if got:
            out[key] = got

    said("bursty", _BURSTY, _UTIL)
    said("gpu_low", _LOW)
    said("cpu_busy", _CPU_BUSY)
    said("gpu_works", _GPU_WORKS)
    said("stalls", _STUCK)
    work = _cpu_work(sents)
    if work:
        out["cpu_work"] = work
    stuck = out.get("stalls")
    for s in sents:
        m = _FELL.search(s)
        if m and float(m.group(2)) < float(m.group(1)):
            out["speed_fell"] = {"said": _around(s, m), "from": float(m.group(1)), "to": float(m.group(2))}
            break
    if stuck or out.get("speed_fell"):
        said("stall_gpu_zero", _GPU_ZERO)
        said("fast_start", _FAST_START)
        if not out.get("fast_start"):
            said("fast_start", _SUDDENLY)
        said("gradual", _GRADUAL)
        said("machines", _MACHINES)
        said("saving", _SAVING)
    said("complaint", _COMPLAINT)
    idle = None
    for s in sents:
        m = _OTHERS_IDLE.search(s)
        if m:
            n = m.group("n")
            idle = {"said": _around(s, m), "count": int(n) if n and n.isdigit() else _WORDS.get((n or "").lower())}
            break
    if idle is None:
        idle = _only_one(sents)
    if idle:
        out["others_idle"] = idle
    tp = throughput(paste)
    if tp:
        out["throughput"] = tp
    split = _split(paste, sents)
    if split:
        out.update(split)
    over = workers_over(paste)
    if over:
        out["workers_over"] = over
    sp = spill(paste, bool(out.get("complaint")))
    if sp:
        out["spill"] = sp
    if not out:
        return None
    context: Dict[str, str] = {}
    for name, pat in (("no_workers", _WORKERS0), ("evaluation", _PHASE), ("pipeline", _PIPELINE)):
        for i in paste.with_any(["num_workers"] if name == "no_workers" else
                                ["evaluat", "validat", "val_", "val "] if name == "evaluation" else
                                ["load", "pipeline", "feeding", "generator", "prefetch", "decod", "augment",
                                 "processing"])[:300]:
            line = paste.lines[i]
            m = pat.search(line) if not line.lstrip().startswith(_TABLE) else None
            if m:
                context[name] = _around(line.strip(), pat.search(line.strip()) or m)
                break
    if context:
        out["context"] = context
    return out if judged(out) else None


def _only_one(sents: List[str]) -> Optional[Dict[str, Any]]:
    """One GPU said to work while the paste gives the run several: the others idle, ``count`` of them."""
    one = _first(_ONLY_ONE, sents)
    if one is None:
        return None
    given = [int(n) for s in sents for m in _GIVEN.finditer(s) for n in m.groups() if n and 2 <= int(n) <= 16]
    return {"said": one, "count": max(given) - 1} if given else None


# DataLoader workers are per process (each DDP process builds its own DataLoader): a launcher's processes per node
# times the workers each asks for is the loader processes a node runs, beside the CPUs the paste says it has
# (MMDetection's tools/dist_train.sh takes the config then the GPUs, one process each; its workers_per_gpu is
# each process's num_workers: open-mmlab/mmdetection#353)
_PROCS = re.compile(r"--nproc[-_]per[-_]node[= ](\d+)\b|--ntasks-per-node[= ](\d+)\b|dist_train\.sh \S+ (\d+)\b")
_WORKERS_N = re.compile(r"(?:--num[-_]workers|--workers|\bnum_workers\s*=|\bworkers_per_gpu\s*=)[= ]?\s*(\d+)\b")
_CPUS_SAID = re.compile(r"\b(\d{1,3}) ?(?:v?cpus?|cpu cores|(?:physical |logical )?cores)\b", re.I)
OVER_X = 2.0  # loader processes at least this many times the CPUs: oversubscribed whatever each worker does


def workers_over(paste: Paste) -> Optional[Dict[str, Any]]:
    """Loader worker processes far beyond the CPUs the paste says the node has: the launcher's processes per node
    times each one's workers, both read from the command line; None without all three or below OVER_X."""
    procs = workers = None
    for i in paste.with_any(["nproc", "ntasks-per-node", "workers", "dist_train"])[:300]:
        line = paste.lines[i]
        m = _PROCS.search(line)
        if m and procs is None:
            procs = (int(next(g for g in m.groups() if g)), line.strip()[:120])
        w = _WORKERS_N.search(line)
        if w and workers is None:
            workers = (int(w.group(1)), line.strip()[:120])
    if procs is None or workers is None or procs[0] < 2:
        return None
    cpus = next(((int(m.group(1)), paste.lines[i].strip()[:120]) for i in paste.with_any(["cpu", "core"])[:200]
                 if not paste.lines[i].lstrip().startswith(_TABLE) for m in [_CPUS_SAID.search(paste.lines[i])]
                 if m and int(m.group(1)) >= 2), None)
    if cpus is None or procs[0] * workers[0] < OVER_X * cpus[0]:
        return None
    return {"processes": procs[0], "workers": workers[0], "cpus": cpus[0], "loaders": procs[0] * workers[0],
            "said": list(dict.fromkeys([procs[1], workers[1], cpus[1]]))}


def _split(paste: Paste, sents: List[str]) -> Optional[Dict[str, Any]]:
    """``split`` (how the model is split over GPUs, in the paste's words) and ``split_slow`` (the words that say the
    split run is slow), or None unless both are said."""
    slow = _first(_NO_GAIN, sents)
    if slow is None:
        for sent in sents:
            m = _HALF.search(sent)
            if m and int(m.group(1)) <= 50:
                slow = _around(sent, m)
                break
    if slow is None:
        return None
    for i in paste.with_any(["tensor", "-tp", "--tp"])[:300]:
        m = _TP.search(paste.lines[i])
        if m and int(next(g for g in m.groups() if g)) >= 2:
            return {"split": m.group(0).strip(), "split_slow": slow, "split_by": "tensor-parallel size"}
    if any(_SERVER.search(s) for s in sents) or paste.with_any(["vllm", "sglang", "tensorrt", "lmdeploy",
                                                               "text-generation-inference"])[:1]:
        for sent in sents:
            m = _MANY.search(sent)
            if m:
                return {"split": _around(sent, m), "split_slow": slow, "split_by": "an LLM server on several GPUs"}
    return None


# ---------------------------------------------------------------------------- Windows' shared GPU memory

# NVIDIA's Windows driver from 536.40 lets a CUDA program that has filled the GPU's memory go on in shared system
# memory "albeit at lower speeds" instead of failing with out-of-memory; from 546.01 the NVIDIA Control Panel's
# "CUDA - Sysmem Fallback Policy" turns it off (https://nvidia.custhelp.com/app/answers/detail/a_id/5490). What a
# paste shows of it: Windows, a run several times slower than the same machine's own speed, and a memory-heavy
# load (a GPU memory size, SDXL, an adapter added); an out-of-memory error in the paste is the fallback not taken
_WINDOWS = re.compile(r"\bwindows\b|\.bat\b|\bbat files?\b|\bC:\\", re.I)
_RATE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)(?:\s?-\s?\d+(?:\.\d+)?)?\s?(it/s|s/it)\b", re.I)
_CONTRAST = re.compile(r"\b(?:but|while|whereas|vs\.?|versus|compared|instead|slower|down to|dropped|drops)\b", re.I)
_FAST_THEN_MINUTES = re.compile(r"\b(?:very |really |quite |pretty )?fast\b[^.\n]{0,40}?\bbut\b[^.\n]{0,80}?"
                                r"\b(?:takes?|took|taking)\b[^.\n]{0,15}?\b(\d+(?:\.\d+)?) ?(?:minutes?|mins?|hours?)\b",
                                re.I)
_MEMORY_LOAD = re.compile(r"\b(?:vram|sdxl|flux|ip[- ]?adapters?|controlnets?|refiner|1024 ?x ?1024)\b", re.I)
_OOM = re.compile(r"out of memory|OutOfMemoryError|\bOOM\b", re.I)
SPILL_X = 3.0  # the same work this many times slower than the machine's own speed


def _rates(sentence: str) -> List[float]:
    return [float(v) if unit.lower() == "it/s" else 1.0 / float(v) for v, unit in _RATE.findall(sentence)
            if float(v) > 0]


# the spill said outright: Task Manager's "Shared GPU memory" in use, the fallback named; unless it is said off
_SHARED_SAID = re.compile(r"\bshared gpu memory\b|\b(?:sysmem|system memory) fallback\b", re.I)
_FALLBACK_OFF = re.compile(r"\bno (?:sysmem|system memory) fallback\b|\b(?:disabl|turn)\w*(?: off)? (?:the )?(?:cuda )?"
                           r"(?:sysmem|system memory) fallback\b|\b(?:sysmem|system memory) fallback\b[^.\n]{0,20}?"
                           r"\b(?:off|disabled)\b", re.I)

# ... said not in use: a negation before it, or an amount under 1 GB beside it ("shared GPU memory 0.1/8.0 GB")
_UNDER_1GB = r"(?<![\d.])(?:(?:0(?:\.\d+)?|0?\.\d+)(?:\s?/\s?\d+(?:\.\d+)?)?\s?GB|\d{1,3}(?:\.\d+)?(?:\s?/\s?[\d.]+)?\s?MB)\b"
_SHARED_NOT = re.compile(r"\b(?:not|no|never|zero|doesn't|does not|isn't|is not)\b[^.\n]{0,30}\bshared gpu memory\b|"
                         r"\bshared gpu memory\b[^.\n\d]{0,30}" + _UNDER_1GB + "|" + _UNDER_1GB
                         + r" (?:of )?shared gpu memory\b", re.I)


def spill(paste: Paste, complaint: bool = False) -> Optional[Dict[str, Any]]:
    """A slowdown on Windows with a memory-heavy load, or shared GPU memory said in use beside a slow run
    (``complaint``): the driver's shared-memory fallback, the words it was read from and the slowdown (a ratio
    where two rates are given); None otherwise, and where the fallback is said off or the paste shows an OOM."""
    oom = paste.with_any(["out of memory", "outofmemory", "oom"])[:200]
    if any(_OOM.search(paste.lines[i]) for i in oom):
        return None
    told = [paste.lines[i] for i in paste.with_any(["shared gpu memory", "fallback"])[:50]]
    if any(_FALLBACK_OFF.search(line) for line in told):
        return None
    said_outright = next((_around(line.strip(), m) for line in told for m in [_SHARED_SAID.search(line.strip())]
                          if m and not _SHARED_NOT.search(line)), None)
    if said_outright and complaint:
        return {"said": said_outright, "slowdown_x": None, "outright": True}
    win = next((paste.lines[i].strip()[:80] for i in paste.with_any(["windows", ".bat", "bat file", "c:\\"])[:50]
                if _WINDOWS.search(paste.lines[i])), None)
    if win is None:
        return None
    load = next((m.group(0) for i in paste.with_any(["vram", "sdxl", "flux", "adapter", "controlnet", "refiner",
                                                    "1024"])[:200]
                 for m in [_MEMORY_LOAD.search(paste.lines[i])] if m), None)
    if load is None:
        return None
    # its own lines (a progress bar's many it/s lines would crowd the prose out of _sentences' first lines)
    sents = [s.strip() for i in paste.with_any(["it/s", "s/it", "fast"])[:300] for s in _SENT.split(paste.lines[i])
             if not paste.lines[i].lstrip().startswith(_TABLE) and len(paste.lines[i]) <= 2000 and s.strip()]
    for s in sents:
        rates = _rates(s) if _CONTRAST.search(s) else []
        if len(rates) >= 2 and max(rates) / min(rates) >= SPILL_X:
            return {"said": s[:200], "slowdown_x": round(max(rates) / min(rates), 1), "windows": win, "load": load}
        m = _FAST_THEN_MINUTES.search(s)
        if m:
            return {"said": _around(s, m), "slowdown_x": None, "windows": win, "load": load}
    return None


def _cpu_work(sents: List[str]) -> Optional[str]:
    """The reporter's sentence suspecting the CPU's part of the input (decoding, augmenting, preprocessing; or the
    input pipeline where another sentence says that work runs on the CPU), with the words on the CPU if apart."""
    on_cpu = _first(_ON_CPU, sents)
    for s in sents:
        m = _SUSPECT.search(s)
        if not m:
            continue
        if _CPU_WORK.search(s):
            return _around(s, _CPU_WORK.search(s) or m)
        side = _INPUT_SIDE.search(s)
        if side and on_cpu:
            here = _around(s, side)
            return here if on_cpu.strip("…") in s else f"{here} {on_cpu}"
    return None


def judged(said: Dict[str, Any]) -> bool:
    """Whether what was said is one of the patterns the watch checks judge (checks/_watch_words.py): a paste that
    only mentions speed, a busy CPU or a stop is not a recording of anything."""
    ctx = said.get("context") or {}
    return bool(said.get("bursty") or said.get("others_idle") or said.get("split") or said.get("spill")
                or said.get("workers_over")
                or (said.get("cpu_busy") and said.get("gpu_works") and ctx.keys() & {"evaluation", "pipeline",
                                                                                    "no_workers"})
                or (said.get("cpu_busy") and said.get("gpu_works") and said.get("gpu_low"))
                or (said.get("cpu_work") and (said.get("gpu_low") or said.get("bursty")))
                or (ctx.get("no_workers") and (said.get("complaint") or said.get("gpu_low")))
                or ((said.get("stalls") or said.get("speed_fell")) and said.get("stall_gpu_zero"))
                or (said.get("stalls") and said.get("throughput")))
