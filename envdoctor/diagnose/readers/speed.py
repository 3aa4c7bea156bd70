"""Speed symptoms in a paste (issue 42), read into the watch recording the watch.* checks judge (a paste is one more
recording), next to what readers/recording.py reads from dmon, --query-gpu CSV, dcgmi, gpustat, iostat and vmstat:

- nvidia-smi tables: each table one sample of every GPU's utilisation and memory (several tables, a series; the
  date line nvidia-smi prints above its table gives the times). A table shows one moment: utilization.gpu is "the
  percent of time over the past sample period during which one or more kernels was executing on the GPU", a period
  "between 1 second and 1/6 second, depending on the product" (NVML API reference, nvmlUtilization_t:
  https://docs.nvidia.com/deploy/nvml-api/structnvmlUtilization__t.html). So one table is a
  recording only where it shows the symptom itself, a GPU at <= 5% that a process holds (half its memory or more),
  and several only where some GPU is held: an idle machine's table says nothing of a run's speed.
- a training log's own data-wait measurement: MMEngine/MMCV's ``time: ... data_time: ...`` (IterTimerHook: data_time
  is the time from the end of the last iteration to the start of this one, time the whole iteration including it;
  open-mmlab/mmengine mmengine/hooks/iter_timer_hook.py) and detectron2's (SimpleTrainer.run_step times
  ``next(data_loader_iter)`` as data_time inside the iteration IterationTimer times): data_time / time is the share
  of each step spent waiting for the batch, what envdoctor's step timer measures (summary.data_wait_fraction).
- PyTorch Lightning's warning that a DataLoader "does not have many workers which may be a bottleneck": Lightning
  prints it when ``num_workers <= 2 < num_cpus`` and the strategy is not spawn (Lightning-AI/pytorch-lightning,
  trainer/connectors/data_connector.py, the worker check), with the machine's CPU count in the advice; kept in
  ``summary.loader_warning`` (the run has at most 2 workers per loader).
- a person's sentence giving a GPU utilisation figure ("Volatile GPU-Util indicates 0%"): one reported sample,
  marked as such (``summary.reported``), never a measurement's confidence; and where they say the data is (on an
  HDD, on NFS, another network share or a cloud bucket: ``summary.data_storage``), with their words that the GPU is
  underused (``summary.reported_low_util``), that loading is slow, or that the run is (``summary.reported_slow``),
  read only where the paste speaks of speed.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

from ...parsers.nvidia_smi_table import parse_nvidia_smi_table
from .base import Acc, Paste

_MIB = 1024 * 1024
IDLE_PCT = 5.0  # a snapshot's GPU at or below this is not computing at that moment
HELD_SHARE = 0.5  # memory used at or above this share of the total: a process holds the GPU

_HEADER = re.compile(r"NVIDIA-SMI\s+\d+(?:\.\d+)+")
# the date line nvidia-smi prints above its table ("Mon Dec  7 08:02:31 2026"), also after `watch`'s header
_STAMP = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ((?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
                    r"\d\d:\d\d:\d\d \d{4})\b")


def _stamp(lines: List[str], i: int) -> Optional[float]:
    for line in lines[max(0, i - 3):i]:
        m = _STAMP.search(line) if len(line) < 160 else None
        if m:
            try:
                return datetime.strptime(" ".join(m.group(1).split()), "%b %d %H:%M:%S %Y").timestamp()
            except ValueError:
                return None
    return None


def _table_lines(lines: List[str], i: int, end: int) -> List[str]:
    """The table under the header on line ``i``: its box lines (and the blank line before the processes box)."""
    out = [lines[i]]
    blanks = 0
    for line in lines[i + 1:min(end, i + 400)]:
        s = line.strip()
        if not s:
            blanks += 1
            if blanks > 2:
                break
            continue
        if s[0] not in "|+=-" and not s.startswith("No running processes"):
            break
        blanks = 0
        out.append(line)
    return out


def smi_snapshots(paste: Paste) -> List[Tuple[Optional[float], List[Dict[str, Any]]]]:
    """Each nvidia-smi table of the paste as (time or None, one sample row per GPU)."""
    lines = paste.lines
    heads = [i for i in paste.with_any(["NVIDIA-SMI "], case=True) if _HEADER.search(lines[i])]
    out: List[Tuple[Optional[float], List[Dict[str, Any]]]] = []
    for k, i in enumerate(heads[:500]):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        t = parse_nvidia_smi_table("\n".join(_table_lines(lines, i, end)))
        if t is None or not t.gpus:
            continue
        rows = []
        for g in t.gpus:
            if g.utilization_gpu_pct is None:
                continue
            row: Dict[str, Any] = {"index": g.index, "name": g.name, "util_pct": g.utilization_gpu_pct}
            if g.memory_used_bytes is not None and g.memory_total_bytes:
                row["mem_used_mib"] = float(g.memory_used_bytes // _MIB)
                row["mem_total_mib"] = float(g.memory_total_bytes // _MIB)
            if g.power_draw_w is not None:
                row["power_w"] = g.power_draw_w
            if g.temperature_c is not None:
                row["temperature_c"] = g.temperature_c
            if g.processes is not None:
                row["processes"] = len(g.processes)
            rows.append(row)
        if rows:
            out.append((_stamp(lines, i), rows))
    return out


# a person's words about speed, outside a table's lines: the context in which a table is about the run's speed
_SPEED_TALK = re.compile(r"\b(?:slow(?:er|ly|s)?|speed|bottleneck|util(?:i[sz]ation)?|idle|throughput|"
                         r"faster|under-?utili[sz]ed|stall(?:s|ed|ing)?)\b", re.I)


_TALK_KEYS = ["slow", "speed", "bottleneck", "util", "idle", "throughput", "faster", "stall"]


def speed_talk(paste: Paste) -> bool:
    return any(_SPEED_TALK.search(paste.lines[i]) for i in paste.with_any(_TALK_KEYS)[:2000]
               if not paste.lines[i].lstrip().startswith(("|", "+")))


def _held(row: Dict[str, Any]) -> bool:
    used, total = row.get("mem_used_mib"), row.get("mem_total_mib")
    return bool(total) and used is not None and used >= HELD_SHARE * total


def _snapshot_samples(snaps) -> Tuple[List[Dict[str, Any]], float, List[str]]:
    times = [t for t, _ in snaps]
    notes: List[str] = []
    if all(t is not None for t in times) and all(b > a for a, b in zip(times, times[1:])):
        t0 = times[0]
        samples = [{"t_s": round(t - t0, 3), "gpus": rows} for t, rows in snaps]  # type: ignore[operator]
        gaps = sorted(b - a for a, b in zip(times, times[1:]))  # type: ignore[operator]
        interval = gaps[len(gaps) // 2] if gaps else 1.0
    else:
        samples = [{"t_s": float(k), "gpus": rows} for k, (_, rows) in enumerate(snaps)]
        interval = 1.0
        if len(snaps) > 1:
            notes.append("nvidia-smi tables without their date lines: taken as 1 s apart (durations are counts)")
    return samples, interval, notes


# ---------------------------------------------------------------------------- a training log's data wait

# YOLOX's trainer logs "iter_time: 1.397s, data_time: 0.003s" (its after_iter: iter_time from the iteration's start
# to its end, data_time from the start to the batch's arrival; Megvii-BaseDetection/YOLOX yolox/core/trainer.py)
_DATA_TIME = re.compile(r"(?:^|[\s,(])data_time:\s*(\d+(?:\.\d+)?)s?\b")
_TIME = re.compile(r"(?:^|[\s,(])(?:iter_)?time:\s*(\d+(?:\.\d+)?)s?\b")


def step_log(paste: Paste) -> Optional[Dict[str, Any]]:
    """The data-wait share of an MMEngine/MMCV or detectron2 log: three lines or more with both figures."""
    rows: List[Tuple[float, float]] = []
    for i in paste.with_any(["data_time:"])[:5000]:
        line = paste.lines[i]
        d, t = _DATA_TIME.search(line), _TIME.search(line)
        if not d or not t:
            continue
        dv, tv = float(d.group(1)), float(t.group(1))
        if tv <= 0 or dv > tv * 1.05:
            continue  # not the format this reads (data_time is part of time)
        rows.append((dv, tv))
    if len(rows) < 3:
        return None
    if len(rows) >= 4:
        rows = rows[1:]  # the first logged interval holds the loader's start (workers spawning, first batches)
    wait, step = sum(d for d, _ in rows), sum(t for _, t in rows)
    waits = sorted(d for d, _ in rows)
    steps = sorted(t for _, t in rows)
    return {"data_wait_fraction": round(min(1.0, wait / step), 4), "step_log_lines": len(rows), "step_loops": 1,
            "wait_p50_ms": round(1000 * waits[len(waits) // 2], 1), "step_p50_ms": round(1000 * steps[len(steps) // 2], 1),
            "step_source": "the training log's time / data_time (MMEngine/MMCV, detectron2 or YOLOX)"}


# ---------------------------------------------------------------------------- a progress bar's stops

# tqdm's bar: "  780/7800 [05:04<45:36,  2.57it/s" (n/total [elapsed<remaining, rate]); the elapsed time is whole
# seconds (H:MM:SS or MM:SS), so a stop shorter than a second or two is not seen
_TQDM = re.compile(r"(?<![\d/])(\d+)/(\d+) \[(?:(\d+):)?(\d+):(\d\d)<")
TQDM_POINTS = 6  # updates of one bar needed to tell its typical pace from its stops


def progress_stalls(paste: Paste) -> Optional[Dict[str, Any]]:
    """Stops of the step loop a pasted tqdm bar shows: intervals between its updates that took far longer than
    their iterations' typical time (watch.timer's rule: STALL_X times the typical step and more), as the step
    timer's stall counts (watch.stalls judges them). Needs TQDM_POINTS updates of one bar."""
    from ...watch.timer import STALL_X

    # runs of one bar in the order printed, its count and elapsed time rising (a new epoch's bar starts a new run)
    runs: List[List[Tuple[int, float]]] = []
    last: Dict[int, List[Tuple[int, float]]] = {}
    for i in paste.with_any(["it/s", "s/it"])[:20000]:
        for m in _TQDM.finditer(paste.lines[i]):
            n, total = int(m.group(1)), int(m.group(2))
            t = float(int(m.group(3) or 0) * 3600 + int(m.group(4)) * 60 + int(m.group(5)))
            run = last.get(total)
            if run is not None and run[-1][0] == n:
                continue  # the same count refreshed
            if run is None or n < run[-1][0] or t < run[-1][1]:
                run = []
                runs.append(run)
                last[total] = run
            run.append((n, t))
    pts = max(runs, key=len) if runs else []
    if len(pts) < TQDM_POINTS:
        return None
    steps = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(pts, pts[1:])]
    paces = sorted(dt / dn for dn, dt in steps if dn > 0)
    if not paces:
        return None
    typical = paces[len(paces) // 2]
    total_t = pts[-1][1] - pts[0][1]
    if total_t <= 0:
        return None
    count, stalled = 0, 0.0
    for dn, dt in steps:
        expected = dn * typical
        # a stop: the interval took STALL_X times what its iterations take, by more than the clock's 1 s grain
        if dt >= STALL_X * max(expected, 1.0) and dt - expected >= 2.0:
            count += 1
            stalled += dt - expected
    return {"step_stall_count": count, "step_stall_s": round(stalled, 1),
            "step_stall_fraction": round(stalled / total_t, 4), "step_count": pts[-1][0] - pts[0][0],
            "step_source": "a tqdm progress bar's updates (elapsed time in whole seconds)"}


# ---------------------------------------------------------------------------- Lightning's worker warning

_FEW_WORKERS = re.compile(r"The (?:dataloader, (?P<old>[\w ]+?),|'(?P<new>\w+)') does not have many workers which may "
                          r"be a bottleneck")
_CPUS = re.compile(r"\(try (\d+) which is the number of cpus|to `num_workers=(\d+)`")


def loader_warning(paste: Paste) -> Optional[Dict[str, Any]]:
    for i in paste.with_any(["does not have many workers"])[:50]:
        m = _FEW_WORKERS.search(paste.lines[i])
        if not m:
            continue
        near = " ".join(paste.lines[i:i + 3])
        c = _CPUS.search(near)
        cpus = int(c.group(1) or c.group(2)) if c else None
        return {"framework": "PyTorch Lightning", "loader": (m.group("old") or m.group("new")).strip(),
                "cpus": cpus, "line": paste.lines[i].strip()[:300]}
    return None


# ---------------------------------------------------------------------------- a person's figure

# the figure follows the phrase within a few words ("GPU-Util indicates 0%", "gpu utilization stays at 3 %"); a
# share of time ("near maximum for 5% of the time") is not a utilisation
_SAID_UTIL = re.compile(r"\b(?:volatile\s+)?gpu[- ]?util(?:i[sz]ation)?\b(?P<gap>[^.\n%]{0,40}?)(?<![\d.])(\d{1,3})\s?%"
                        r"(?!\s*of\b)", re.I)
_NOT_A_READING = re.compile(r"\b(?:max(?:imum)?|min(?:imum)?|time|when|if|above|over|below|under|than)\b", re.I)


def said_util(paste: Paste) -> Optional[Tuple[float, str]]:
    """A GPU utilisation figure a person wrote in a sentence ("the Volatile GPU-util indicates 0%"), not a table."""
    for i in paste.with_any(["gpu-util", "gpu util", "gpu utili"])[:50]:
        line = paste.lines[i]
        if line.lstrip().startswith(("|", "+")):
            continue  # a table's line
        m = _SAID_UTIL.search(line)
        if m and float(m.group(2)) <= 100 and not _NOT_A_READING.search(m.group("gap")):
            return float(m.group(2)), line.strip()[:200]
    return None


# a person saying the GPU is underused without a figure ("GPU-Util too low", "the gpu usage is ... less than 10%")
_SAID_LOW = re.compile(r"\bgpu[- ]?(?:util(?:i[sz]ation)?|usage|load)\b[^.\n]{0,50}?\b(?:too low|very low|(?:is|are|was|stays?|"
                       r"remains?) (?:very |quite |really )?low|low\b|(?:always|shown|stays?|is) +zero|less than \d{1,2}\s?%|"
                       r"not above \d{1,2}\s?%)", re.I)
# where a person says the data is: on a rotational disk or a network filesystem (the storage the seeds' storage-bound
# verdict is about); "not SSD" and the like are left to the words before them
_WHERE = (r"(?:HDDs?|hard (?:disk|drive)s?|spinning (?:disk|drive)s?|NFS|network (?:share|drive|storage|file ?system)|"
          r"CIFS|SMB share|sshfs|NAS|cloud (?:storage|bucket)|(?:mounted |S3 |GCS )bucket|s3fs|gcsfuse)")
# ... or a verb that puts a named file there ("I store mv_images.h5 on HDD not SSD": a file name, its dot kept, not
# the word data; issue 42 round 10, 3dlg-hcvc/DuoduoCLIP#9)
_SAID_STORAGE = re.compile(
    r"\b(?:data(?:set)?s?|images|files|samples)\b[^.\n]{0,40}?\b(?:on|in|from)\s+(?:an?\s+|the\s+|my\s+|our\s+)?"
    r"(?P<what>" + _WHERE + r")\b|\b(?P<what2>NFS|HDD)\b[^.\n]{0,30}?\b(?:to (?:share|store|hold)|for) (?:the )?data\b|"
    r"\b(?:stor(?:e|es|ed|ing)|keep(?:s|ing)?|kept|put(?:ting)?|plac(?:e|ed|ing)|locat(?:e|ed)|sav(?:e|ed|ing)|"
    r"(?:lives?|sits?|resides?))\b(?:[^.\n]|\.(?=\w)){0,40}?\b(?:on|in|from)\s+(?:an?\s+|the\s+|my\s+|our\s+)?"
    r"(?P<what3>" + _WHERE + r")\b", re.I)
_NOT = re.compile(r"\b(?:not|never|no longer)\b|n't\b", re.I)  # "the data is not on NFS": said elsewhere, not here
_NETWORK = ("nfs", "network", "cifs", "smb", "sshfs", "nas", "cloud", "mounted", "s3", "gcs")


_SLOW_LOAD = re.compile(r"\b(?:(?:takes?|taking|took) (?:a )?(?:very )?long(?: time)? to (?:load|read)|(?:loading|reading) "
                        r"(?:the )?(?:data|images|files|batches)?[^.\n]{0,20}?\b(?:is |are |very |so |too )*slow|slow to load)\b",
                        re.I)


def said_slow_load(paste: Paste) -> Optional[str]:
    for i in paste.with_any(["long", "slow"])[:200]:
        m = _SLOW_LOAD.search(paste.lines[i])
        if m:
            return m.group(0)
    return None


def said_low_util(paste: Paste) -> Optional[str]:
    for i in paste.with_any(["gpu"])[:400]:
        line = paste.lines[i]
        m = _SAID_LOW.search(line) if not line.lstrip().startswith(("|", "+")) else None
        if m:
            return m.group(0)
    return None


# the run said slow in words ("I found it pretty slow", "takes a long time"): with the storage said, the reporter's
# own suspicion that the storage is what limits it (torch-downstream-041, duoduoclip-001)
_SLOW_RUN = re.compile(r"\b(?:too |very |pretty |quite |really |so |extremely )?slow(?:er|ly)?\b|"
                       r"\btak(?:es?|ing|en) (?:a |so |too )?(?:very |really )?long\b", re.I)


# ... not an install, a download or a build said slow
_NOT_A_RUN = re.compile(r"\b(?:install\w*|download\w*|upload\w*|compil\w*|build(?:s|ing)?|pip|conda|clon\w*|boot\w*)\b",
                        re.I)


def said_slow_run(paste: Paste) -> Optional[str]:
    for i in paste.with_any(["slow", "long"])[:200]:
        line = paste.lines[i]
        if line.lstrip().startswith(("|", "+")):
            continue
        for sent in re.split(r"(?<=[.!?])\s+", line):
            m = _SLOW_RUN.search(sent)
            if m and not _NOT_A_RUN.search(sent):
                return m.group(0)
    return None


def said_storage(paste: Paste) -> Optional[Dict[str, Any]]:
    for i in paste.with_any(["hdd", "hard d", "spinning", "nfs", "network", "cifs", "smb", "sshfs", "nas", "cloud",
                             "bucket", "s3fs", "gcsfuse"])[:200]:
        line = paste.lines[i]
        m = next((m for m in _SAID_STORAGE.finditer(line) if not _NOT.search(m.group(0))), None)
        if m:
            what = (m.group("what") or m.group("what2") or m.group("what3")).lower()
            return {"kind": "network" if what.startswith(_NETWORK) else "rotational", "said": m.group(0).strip(),
                    "line": line.strip()[:200]}
    return None


# ---------------------------------------------------------------------------- the data's mount (df -T, mount)

# `df -T`: "Filesystem Type 1K-blocks Used Available Use% Mounted on" rows (a long source on a line of its own);
# `mount`: "server:/export on /data type nfs4 (rw,...)"
_DF_ROW = re.compile(r"^\s*(?P<src>\S+)?\s+(?P<fs>[\w.]+)\s+\d[\d.]*[KMGTP]?\s+\d[\d.]*[KMGTP]?\s+\d[\d.]*[KMGTP]?\s+"
                     r"\d{1,3}%\s+(?P<mp>/\S*)\s*$")
_MOUNT_ROW = re.compile(r"^\s*(?P<src>\S+) on (?P<mp>/\S*) type (?P<fs>[\w.]+) \(")
# a data path the paste names: an argument or a config key, or the path a `df -T` was asked about
_DATA_PATH = re.compile(r"(?:--?data[-_]?(?:path|dir|root|set|_dir)?|\bdata_?(?:root|dir|path|set_dir)|"
                        r"\bdataset[_-]?(?:dir|path|root)|\$ df -T?h?T?)\s*[=:]?\s*['\"]?(/[^\s'\",)]+)")
# parallel filesystems built for this (storage.data-path treats them as fast when the cluster's storage is)
_PARALLEL = ("lustre", "gpfs", "beegfs", "wekafs", "panfs", "ceph", "cephfs", "glusterfs")


def data_mount(paste: Paste) -> Optional[Dict[str, Any]]:
    """The network or FUSE mount a data path the paste names lies on, from a pasted `df -T` or `mount`."""
    from ...parsers.mounts import MountEntry, classify_fstype, find_mount

    mounts: List[Any] = []
    lines = paste.lines
    for i in paste.with_any([" on /", "% /", "%  /"])[:2000]:
        line = lines[i]
        m = _MOUNT_ROW.match(line) or _DF_ROW.match(line)
        if not m:
            continue
        src = m.group("src") or (lines[i - 1].strip() if i and len(lines[i - 1].split()) == 1 else None)
        mounts.append((MountEntry(mount_point=m.group("mp"), fstype=m.group("fs"), source=src), line.strip()))
    if not mounts:
        return None
    paths = [m.group(1) for i in paste.with_any(["data", "df "])[:500] for m in _DATA_PATH.finditer(paste.lines[i])]
    for path in paths:
        hit = find_mount([e for e, _ in mounts], path)
        if hit is None or hit.fstype.lower().split(".")[-1] in _PARALLEL:
            continue
        kind = classify_fstype(hit.fstype)
        if kind in ("network", "fuse"):
            row = next(r for e, r in mounts if e is hit)
            return {"kind": "network" if kind == "network" else "fuse", "from": "mounts", "path": path,
                    "said": f"{path} on {hit.mount_point}, {hit.fstype}" + (f" from {hit.source}" if hit.source else ""),
                    "line": row[:200]}
    return None


# ---------------------------------------------------------------------------- into the recording


def _storage(paste: Paste, have_samples: bool, summary_extra: Dict[str, Any],
             words: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """Where the data is (a pasted mount, or the reporter's words) into ``summary_extra``, when the paste also shows
    the GPU side (samples) or the reporter says the GPU is underused, comes and goes or stops at 0%, or loading is
    slow, or the run is (``reported_slow``); None otherwise."""
    told = data_mount(paste) or said_storage(paste)
    if told is None:
        return None
    low = said_low_util(paste) if not have_samples else None
    slow_load = said_slow_load(paste) if not have_samples and not low else None
    slow = said_slow_run(paste) if not (have_samples or low or slow_load) else None
    pattern = bool(words and (words.get("bursty") or words.get("stall_gpu_zero")))
    if not (have_samples or low or slow_load or slow or pattern):
        return None
    summary_extra["data_storage"] = told
    if low:
        summary_extra["reported_low_util"] = low
    if slow_load:
        summary_extra["reported_slow_load"] = slow_load
    if slow:
        summary_extra["reported_slow"] = slow
    return told


def read_speed(paste: Paste, acc: Acc) -> None:
    from ...domain.recording import summarize
    from ...model.facts import ProbeStatus, Watch
    from .speed_words import said_symptoms

    existing = getattr(acc, "watch", None)
    steps = step_log(paste) or progress_stalls(paste)
    warn = loader_warning(paste)
    samples: List[Dict[str, Any]] = []
    interval = 1.0
    notes: List[str] = []
    unseen: List[str] = []
    source = ""
    summary_extra: Dict[str, Any] = {}
    words = said_symptoms(paste)
    if words:
        summary_extra["reported_symptoms"] = words
    if existing is None:
        snaps = smi_snapshots(paste)
        idle_held = any(_held(r) and r["util_pct"] <= IDLE_PCT for _, rows in snaps for r in rows)
        held = any(_held(r) for _, rows in snaps for r in rows)
        # tables pasted for another reason (an install problem, an out-of-memory error, host and container) are
        # about the run's speed only where the paste says so, or where they are a series (three or more)
        about_speed = len(snaps) >= 3 or (bool(snaps) and speed_talk(paste))
        if about_speed and ((len(snaps) == 1 and idle_held) or (len(snaps) > 1 and held)):
            samples, interval, notes = _snapshot_samples(snaps)
            source = f"nvidia-smi table ({len(snaps)} snapshot{'s' if len(snaps) > 1 else ''})"
            summary_extra["snapshots"] = len(snaps)
            if len(snaps) == 1:
                unseen.append("one nvidia-smi table: one moment of the run")
        else:
            said = said_util(paste)
            if said is not None and said[0] <= IDLE_PCT:
                samples = [{"t_s": 0.0, "gpus": [{"index": 0, "util_pct": said[0]}]}]
                source = "the reporter's words (no recording)"
                summary_extra["reported"] = said[1]
                unseen.append("a figure from the reporter's sentence, not a recording")
        told = _storage(paste, bool(samples), summary_extra, words)
        if not samples and not steps and not warn and not told and not words:
            return
        if samples:
            unseen.append("no host samples (CPU, disk) in the paste: whether the input pipeline is disk- or "
                          "CPU-bound cannot be told")
        else:
            unseen.append("no GPU samples in the paste: GPU-side verdicts cannot be made")
        unseen.append("no process tree in a paste: DataLoader worker count unknown")
        summary = summarize(samples, interval) if samples else {}
        summary["notes"] = notes
        w = Watch(status=ProbeStatus.OK, source=source, interval_s=interval if samples else None,
                  samples=samples, summary=summary, unseen=unseen)
    else:
        # a recording read already (dmon, CSV, iostat ...): what the paste adds to it
        told = _storage(paste, True, summary_extra)
        if not steps and not warn and not told and not words:
            return
        w = existing
    summary = dict(w.summary)
    summary.update(summary_extra)
    if steps:
        summary.update(steps)
    if warn:
        summary["loader_warning"] = warn
    parts = [w.source] if w.source else []
    if steps:
        parts.append("step log (time / data_time)" if "data_wait_fraction" in steps else "progress bar")
    if warn:
        parts.append("PyTorch Lightning's loader warning")
    if words:
        parts.append("the reporter's words on the run's speed")
    if summary_extra.get("data_storage"):
        parts.append("the data's mount (df -T / mount)" if summary_extra["data_storage"].get("from") == "mounts"
                     else "the reporter's words on the data's storage")
    told_path = (summary.get("data_storage") or {}).get("path")
    acc.watch = dataclasses.replace(  # type: ignore[attr-defined]
        w, summary=summary, source=", ".join(p for p in parts if p),
        data_paths=w.data_paths or ([told_path] if told_path else None))
    if existing is None:
        what = (f"{len(samples)} sample{'s' if len(samples) != 1 else ''} from {source}" if samples else "")
        acc.add_found("speed symptoms (" + ", ".join(x for x in (
            what, ("a step log's data_time" if "data_wait_fraction" in steps else "a progress bar's updates")
            if steps else "", "Lightning's loader warning" if warn else "",
            "where the data is stored" if summary.get("data_storage") else "",
            "the reporter's words on the run's speed" if words else "") if x) + ")")
