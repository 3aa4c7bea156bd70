"""Reading a watch recording: phases (warm-up, steady state, stalls, cool-down) and robust statistics.

Pure functions over ``Watch.samples``: the verdict checks (envdoctor/checks/watch.py) and ``watch.summary``
both come from here, so a recording judged later (`check --facts rec.json`) reads exactly as it did live.
Statistics are percentiles over the steady state, never one sample: a single dip or spike moves p10/p90 of a
long series by at most one rank.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .fastclass import dataclass

ACTIVE_PCT = 20.0  # a GPU at or above this is doing work (ends the warm-up)
IDLE_PCT = 10.0  # every GPU at or below this at once: a stall
LAG_PCT = 15.0  # one GPU at or below this while the others work: it lags
STALL_MIN_S = 2.0
STALL_MIN_SAMPLES = 3


def pct(values: Sequence[float], q: float) -> Optional[float]:
    """The q-quantile (0-1) with linear interpolation; None for no values."""
    vals = sorted(v for v in values if isinstance(v, (int, float)))
    if not vals:
        return None
    k = (len(vals) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(vals) - 1)
    return round(vals[lo] + (vals[hi] - vals[lo]) * (k - lo), 2)


def _num(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass
class Episode:
    start_s: float
    end_s: float
    samples: int
    gpu: Optional[int] = None  # the lagging GPU (None: all GPUs stalled together)
    disk_write_mbps: Optional[float] = None  # the busiest watched disk's mean write rate during it
    others_power_drop_pct: Optional[float] = None  # lag: how far the other GPUs' power fell against steady

    @property
    def duration_s(self) -> float:
        return round(self.end_s - self.start_s, 2)

    def to_dict(self) -> Dict[str, Any]:
        d = {"start_s": self.start_s, "duration_s": self.duration_s, "samples": self.samples}
        for k in ("gpu", "disk_write_mbps", "others_power_drop_pct"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d


@dataclass
class GpuStats:
    index: int
    samples: int
    util_p10: Optional[float] = None
    util_p50: Optional[float] = None
    util_p90: Optional[float] = None
    util_mean: Optional[float] = None
    dips_fraction: Optional[float] = None  # steady samples below 70 %
    sm_active_p50: Optional[float] = None  # DCGM SMACT, in percent
    mem_used_mib_max: Optional[float] = None
    mem_total_mib: Optional[float] = None
    mem_used_pct_p90: Optional[float] = None
    power_p50_w: Optional[float] = None
    power_p90_w: Optional[float] = None
    temperature_max_c: Optional[float] = None
    sm_clock_p50_mhz: Optional[float] = None
    throttled_fraction: Optional[float] = None  # steady samples with a limiting clock-event reason
    throttle_reasons: List[str] = field(default_factory=list)
    pcie_rx_p90_mbps: Optional[float] = None
    processes_max: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != []}


@dataclass
class Analysis:
    duration_s: float
    sample_count: int
    interval_s: Optional[float]
    warmup_s: float
    cooldown_s: float
    gpus: List[GpuStats]
    stalls: List[Episode]
    lags: List[Episode]
    steady_count: int
    host: Dict[str, Any]
    disks: Dict[str, Dict[str, Any]]
    procs: Dict[str, Any]
    has_host: bool
    has_disks: bool
    has_procs: bool


LIMITING = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
            "power_violation", "thermal_violation")


def _gpu_rows(samples: List[Dict[str, Any]]) -> Dict[int, List[Tuple[float, Dict[str, Any]]]]:
    rows: Dict[int, List[Tuple[float, Dict[str, Any]]]] = {}
    for s in samples:
        t = _num(s.get("t_s")) or 0.0
        for g in s.get("gpus") or []:
            if isinstance(g, dict) and isinstance(g.get("index"), int):
                rows.setdefault(g["index"], []).append((t, g))
    return rows


def _util_at(s: Dict[str, Any]) -> Dict[int, float]:
    out = {}
    for g in s.get("gpus") or []:
        if isinstance(g, dict) and isinstance(g.get("index"), int) and _num(g.get("util_pct")) is not None:
            out[g["index"]] = float(g["util_pct"])
    return out


def _runs(flags: List[bool]) -> List[Tuple[int, int]]:
    out, start = [], None
    for i, f in enumerate(flags + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def _long_enough(ts: List[float], a: int, b: int, interval: Optional[float]) -> bool:
    span = ts[b] - ts[a] + (interval or 0.0)
    return b - a + 1 >= STALL_MIN_SAMPLES and span >= STALL_MIN_S


def _disk_write(samples: List[Dict[str, Any]]) -> Optional[float]:
    per: Dict[str, List[float]] = {}
    for s in samples:
        for name, d in ((s.get("host") or {}).get("disks") or {}).items():
            w = _num((d or {}).get("write_mbps"))
            if w is not None:
                per.setdefault(name, []).append(w)
    if not per:
        return None
    return round(max(sum(v) / len(v) for v in per.values()), 1)


def interval_of(samples: List[Dict[str, Any]]) -> Optional[float]:
    ts = [float(s["t_s"]) for s in samples if _num(s.get("t_s")) is not None]
    gaps = [b - a for a, b in zip(ts, ts[1:]) if b > a]
    return pct(gaps, 0.5) if gaps else None


def analyze(samples: List[Dict[str, Any]], interval_s: Optional[float] = None,
            steps_started_s: Optional[float] = None) -> Analysis:
    """``steps_started_s``: when the step timer's first loop began, seconds into the recording; without GPU
    samples it ends the warm-up (the import and set-up before the first batch are not the run)."""
    samples = sorted((s for s in samples if isinstance(s, dict)), key=lambda s: _num(s.get("t_s")) or 0.0)
    ts = [_num(s.get("t_s")) or 0.0 for s in samples]
    interval = interval_s or interval_of(samples)
    duration = round(ts[-1] - ts[0] + (interval or 0.0), 2) if ts else 0.0
    utils = [_util_at(s) for s in samples]
    has_gpu_util = any(utils)
    # warm-up: until some GPU first works; cool-down: after the last sample where one did
    active = [bool(u) and max(u.values()) >= ACTIVE_PCT for u in utils]
    first = next((i for i, a in enumerate(active) if a), None)
    last = max((i for i, a in enumerate(active) if a), default=None)
    lo = first if first is not None else 0
    hi = last if last is not None else len(samples) - 1
    if not has_gpu_util and len(samples) > 2:
        lo = 1  # host only: the first tick's deltas cover the process start
        if steps_started_s is not None:
            lo = max(1, next((i for i, t in enumerate(ts) if t >= steps_started_s), len(samples) - 1))
        else:
            lo = max(1, _grown(samples))
    if last is not None and len(samples) - 1 - last < STALL_MIN_SAMPLES:
        hi = len(samples) - 1  # a short tail is still the run
    warmup_s = round(ts[lo] - ts[0], 2) if samples else 0.0
    cooldown_s = round(ts[-1] - ts[hi], 2) if samples else 0.0
    window = list(range(lo, hi + 1)) if samples else []

    # stalls: every GPU idle at once, long enough, inside the steady window
    stalls: List[Episode] = []
    excluded = set()
    if has_gpu_util:
        flags = [bool(utils[i]) and max(utils[i].values()) <= IDLE_PCT for i in window]
        for a, b in _runs(flags):
            ia, ib = window[a], window[b]
            if a == 0 or b == len(window) - 1:
                continue  # at the edge of the window: warm-up or cool-down, not a stall between steps
            if _long_enough(ts, ia, ib, interval) and len(utils[ia]) >= 1:
                stalls.append(Episode(ts[ia], ts[ib] + (interval or 0.0), ib - ia + 1,
                                      disk_write_mbps=_disk_write(samples[ia:ib + 1])))
                excluded.update(range(ia, ib + 1))
    steady = [i for i in window if i not in excluded]

    rows = _gpu_rows([samples[i] for i in steady])
    # lags: one GPU idle while the median of the others works
    lags: List[Episode] = []
    gpu_ids = sorted({k for u in utils for k in u})
    if len(gpu_ids) >= 2:
        for g in gpu_ids:
            flags = []
            for i in steady:
                u = utils[i]
                others = [v for k, v in u.items() if k != g]
                flags.append(g in u and bool(others) and u[g] <= LAG_PCT and (pct(others, 0.5) or 0) >= 50)
            for a, b in _runs(flags):
                ia, ib = steady[a], steady[b]
                if _long_enough(ts, ia, ib, interval):
                    lags.append(Episode(ts[ia], ts[ib] + (interval or 0.0), ib - ia + 1, gpu=g,
                                        others_power_drop_pct=_power_drop(samples, steady, ia, ib, g)))

    gpus = [_gpu_stats(idx, [r for _, r in rows.get(idx, [])]) for idx in sorted(set(rows) | set(gpu_ids))]
    steady_samples = [samples[i] for i in steady]
    host, disks = _host_stats(steady_samples)
    procs = _proc_stats(samples)
    main = main_stats(steady_samples, interval)
    if main and procs:
        procs["main"] = main
    reads = front_reads([samples[i] for i in window], interval)
    if reads and procs:
        procs["reads"] = reads
    return Analysis(duration, len(samples), interval, warmup_s, cooldown_s, gpus, stalls, lags, len(steady),
                    host, disks, procs, has_host=bool(host), has_disks=bool(disks), has_procs=bool(procs))


def _grown(samples: List[Dict[str, Any]]) -> int:
    """Without GPU samples or a step timer: the first sample at which the watched processes' memory (RSS) has
    reached 95 % of its median over the second half of the recording, the end of the start-up (``import torch``
    and the set-up grow a training process by hundreds of MB over seconds, then the loop holds it about level);
    0 without memory samples."""
    rss = [_num((s.get("procs") or {}).get("rss_bytes")) if isinstance(s.get("procs"), dict) else None
           for s in samples]
    later = [r for r in rss[len(rss) // 2:] if r is not None]
    if len(later) < 2:
        return 0
    target = 0.95 * (pct(later, 0.5) or 0.0)
    return next((i for i, r in enumerate(rss) if r is not None and r >= target), 0)


def _power_drop(samples, steady, ia, ib, lagging) -> Optional[float]:
    """How far the other GPUs' power fell during a lag, against their steady median (a collective's wait)."""
    def others_power(idx):
        return [float(g["power_w"]) for g in samples[idx].get("gpus") or []
                if g.get("index") != lagging and _num(g.get("power_w")) is not None]
    during = [p for i in range(ia, ib + 1) for p in others_power(i)]
    base = [p for i in steady if not ia <= i <= ib for p in others_power(i)]
    d, b = pct(during, 0.5), pct(base, 0.5)
    if d is None or not b:
        return None
    return max(0.0, round(100.0 * (b - d) / b, 1))  # a rise is no drop (and _pct facts are never negative)


def _gpu_stats(index: int, rows: List[Dict[str, Any]]) -> GpuStats:
    def col(name):
        return [float(r[name]) for r in rows if _num(r.get(name)) is not None]
    util = col("util_pct")
    st = GpuStats(index, len(rows))
    if util:
        st.util_p10, st.util_p50, st.util_p90 = pct(util, 0.1), pct(util, 0.5), pct(util, 0.9)
        st.util_mean = round(sum(util) / len(util), 1)
        st.dips_fraction = round(sum(1 for u in util if u < 70) / len(util), 3)
    sm = col("sm_active_pct")
    st.sm_active_p50 = pct(sm, 0.5)
    used, total = col("mem_used_mib"), col("mem_total_mib")
    if used:
        st.mem_used_mib_max = max(used)
    if total:
        st.mem_total_mib = max(total)
        fr = [100.0 * float(r["mem_used_mib"]) / float(r["mem_total_mib"]) for r in rows
              if _num(r.get("mem_used_mib")) is not None and _num(r.get("mem_total_mib"))]
        st.mem_used_pct_p90 = pct(fr, 0.9)
    power = col("power_w")
    st.power_p50_w, st.power_p90_w = pct(power, 0.5), pct(power, 0.9)
    temps = col("temperature_c")
    st.temperature_max_c = max(temps) if temps else None
    st.sm_clock_p50_mhz = pct(col("sm_clock_mhz"), 0.5)
    judged = [r for r in rows if r.get("throttle_reasons") is not None]
    if judged:
        lim = [r for r in judged if set(r.get("throttle_reasons") or []) & set(LIMITING)]
        st.throttled_fraction = round(len(lim) / len(judged), 3)
        st.throttle_reasons = sorted({x for r in lim for x in r["throttle_reasons"] if x in LIMITING})
    st.pcie_rx_p90_mbps = pct(col("pcie_rx_mbps"), 0.9)
    nprocs = [len(r["pids"]) for r in rows if isinstance(r.get("pids"), list)]
    nprocs += [int(r["processes"]) for r in rows if isinstance(r.get("processes"), int)]
    st.processes_max = max(nprocs) if nprocs else None
    return st


def _host_stats(samples: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]]]:
    host: Dict[str, Any] = {}
    hs = [s.get("host") or {} for s in samples]
    for key in ("cpu_busy_pct", "cpu_iowait_pct", "cgroup_cpu_used", "mem_used_pct", "swap_used_pct",
                "shm_used_bytes", "net_rx_mbps", "run_queue"):
        vals = [float(h[key]) for h in hs if _num(h.get(key)) is not None]
        if vals:
            host[key] = {"p50": pct(vals, 0.5), "p90": pct(vals, 0.9), "max": max(vals), "n": len(vals)}
    disks: Dict[str, Dict[str, Any]] = {}
    names = sorted({n for h in hs for n in (h.get("disks") or {})})
    for n in names:
        rows = [h["disks"][n] for h in hs if n in (h.get("disks") or {}) and isinstance(h["disks"][n], dict)]
        d: Dict[str, Any] = {"n": len(rows)}
        for key in ("read_mbps", "write_mbps", "iops", "util_pct", "queue"):
            vals = [float(r[key]) for r in rows if _num(r.get(key)) is not None]
            if vals:
                d[f"{key}_p50"], d[f"{key}_p90"] = pct(vals, 0.5), pct(vals, 0.9)
        waits = [float(r["await_ms"]) for r in rows if _num(r.get("await_ms")) is not None and (_num(r.get("iops")) or 0) > 0]
        if waits:
            d["await_ms_p50"], d["await_ms_p90"] = pct(waits, 0.5), pct(waits, 0.9)
        disks[n] = d
    return host, disks


def _proc_stats(samples: List[Dict[str, Any]]) -> Dict[str, Any]:
    ps = [s.get("procs") for s in samples if isinstance(s.get("procs"), dict)]
    if not ps:
        return {}
    workers = [int(p.get("workers") or 0) for p in ps]
    out: Dict[str, Any] = {"samples": len(ps), "workers_max": max(workers), "workers_p50": pct(workers, 0.5),
                           "torch_seen": any((p.get("torch_trainers") or 0) > 0 for p in ps),
                           "torch_samples": sum(1 for p in ps if (p.get("torch_trainers") or 0) > 0),
                           "trainers_max": max(int(p.get("trainers") or 0) for p in ps),
                           "count_max": max(int(p.get("count") or 0) for p in ps)}
    main = [float(p["main_cpu_pct"]) for p in ps[1:] if _num(p.get("main_cpu_pct")) is not None]
    if main:
        out["main_cpu_pct_p50"], out["main_cpu_pct_p90"] = pct(main, 0.5), pct(main, 0.9)
    wk = [float(x) for p in ps[1:] for x in (p.get("worker_cpu_pct") or []) if _num(x) is not None]
    if wk:
        out["worker_cpu_pct_p50"] = pct(wk, 0.5)
    ws = [p.get("worker_states") for p in ps[1:] if isinstance(p.get("worker_states"), dict)]
    seen = sum(int(n) for w in ws for n in w.values() if isinstance(n, int))
    if seen:
        # the share of worker observations blocked in the kernel on I/O (state D, psutil's "disk-sleep")
        out["worker_disk_sleep_share"] = round(sum(int(w.get("disk-sleep") or 0) for w in ws) / seen, 3)
        # ... and running or waiting for a core (state R, psutil's "running"): workers with work to compute
        out["worker_running_share"] = round(sum(int(w.get("running") or 0) for w in ws) / seen, 3)
    th = [int(p["threads"]) for p in ps[1:] if isinstance(p.get("threads"), int)]
    if th:
        out["threads_p50"] = pct([float(t) for t in th], 0.5)
    # the samples while the run trains, not its start-up (the interpreter and `import torch`, seconds on a busy
    # box, are one thread): with loader workers, while they exist; without, once torch's thread pool is up
    # (the tree holds at least half the threads it ever held)
    live = [p for p in ps[1:] if isinstance(p.get("threads_running"), int) and (p.get("torch_trainers") or 0) > 0]
    if out["workers_max"]:
        live = [p for p in live if (p.get("workers") or 0) > 0]
    elif th:
        live = [p for p in live if isinstance(p.get("threads"), int) and p["threads"] >= max(th) / 2]
    tr = [int(p["threads_running"]) for p in live]
    if tr:
        out["threads_running_p50"] = pct([float(t) for t in tr], 0.5)
    rss = [int(p["rss_bytes"]) for p in ps if isinstance(p.get("rss_bytes"), int)]
    if rss:
        out["rss_bytes_max"] = max(rss)
    cg = [p["cgroup"] for p in ps[1:] if isinstance(p.get("cgroup"), dict)]
    thr = [float(c["throttled_pct"]) for c in cg if _num(c.get("throttled_pct")) is not None]
    if thr:
        out["cgroup_throttled_pct_p50"] = pct(thr, 0.5)
    quota = [float(c["quota_cpus"]) for c in cg if _num(c.get("quota_cpus")) is not None]
    if quota:
        out["cgroup_quota_cpus"] = min(quota)
    return out


# the main thread's state letters (envdoctor.watch.sample.main_state): R running or ready, D in uninterruptible
# I/O, N in a sleep, F on a futex (a lock, a thread's queue), P on a pipe, poll or socket, S other sleeps
STATE_NAMES = {"R": "running", "D": "disk", "N": "sleep", "F": "lock", "P": "peer", "S": "other"}


def _mains(samples: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [s["procs"]["main"] for s in samples
            if isinstance(s.get("procs"), dict) and isinstance(s["procs"].get("main"), dict)]


def main_stats(samples: List[Dict[str, Any]], interval: Optional[float]) -> Dict[str, Any]:
    """The training process's own time over ``samples`` (the steady part): the share of its main thread's
    sub-samples in each state (``share``), of those running the part on a CPU and the part waiting for one
    (/proc/PID/schedstat), and its I/O rates. {} for a recording without them (older ones, replays)."""
    ms = _mains(samples)
    letters = "".join(m.get("states") or "" for m in ms if isinstance(m.get("states"), str))
    if not ms or not letters:
        return {}
    n = len(letters)
    out: Dict[str, Any] = {"samples": n,
                           "share": {name: round(letters.count(k) / n, 3) for k, name in STATE_NAMES.items()}}
    span_s = len(ms) * (interval or 0.5)
    run = [float(m["run_ms"]) for m in ms if _num(m.get("run_ms")) is not None]
    wait = [float(m["cpu_wait_ms"]) for m in ms if _num(m.get("cpu_wait_ms")) is not None]
    if run and wait and span_s > 0:
        out["on_cpu_share"] = round(min(1.0, sum(run) / 1000.0 / (len(run) * (interval or 0.5))), 3)
        out["cpu_wait_share"] = round(min(1.0, sum(wait) / 1000.0 / (len(wait) * (interval or 0.5))), 3)
    for k in ("wchar", "write_bytes", "rchar", "read_bytes", "syscw", "syscr"):
        vals = [float(m[k]) for m in ms if _num(m.get(k)) is not None]
        if vals:
            out[f"{k}_per_s"] = round(sum(vals) / (len(vals) * (interval or 0.5)), 1)
            if k in ("wchar", "rchar"):  # the typical tick's rate, which a few bursts do not move
                out[f"{k}_p50_per_s"] = round((pct(vals, 0.5) or 0.0) / (interval or 0.5), 1)
    calls = [m for m in ms if _num(m.get("syscw")) is not None]
    if calls:
        out["write_tick_share"] = round(sum(1 for m in calls if m["syscw"] > 0) / len(calls), 3)
    # writes each forced out to the disk (a page per small write, not the bytes written: fsync, O_SYNC), over the
    # span from the first such tick to the last (the loop that logs, not the start-up before it)
    synced = [i for i, m in enumerate(ms) if (_num(m.get("write_bytes")) or 0) > 0
              and (_num(m.get("write_bytes")) or 0) >= SYNC_AMPLIFY * (_num(m.get("wchar")) or 0)
              and (_num(m.get("wchar")) or 0) < BURST_BYTES]
    if len(synced) >= 3:
        span = ms[synced[0]:synced[-1] + 1]
        st = "".join(m.get("states") or "" for m in span if isinstance(m.get("states"), str))
        out["synced_writes"] = {"ticks": len(span), "tick_share": round(len(synced) / len(span), 3),
                                "disk_share": round(st.count("D") / len(st), 3) if st else None,
                                "write_bytes_per_s": round(sum(_num(m.get("write_bytes")) or 0 for m in span)
                                                           / (len(span) * (interval or 0.5)), 1),
                                "wchar_per_s": round(sum(_num(m.get("wchar")) or 0 for m in span)
                                                     / (len(span) * (interval or 0.5)), 1),
                                "syscw_per_s": round(sum(_num(m.get("syscw")) or 0 for m in span)
                                                     / (len(span) * (interval or 0.5)), 1)}
        # ticks where the writes were a burst (a checkpoint), not a trickle (a log line)
        out["write_burst_ticks"] = sum(1 for m in calls if (_num(m.get("wchar")) or 0) >= BURST_BYTES)
    cpu = [float(m["cpu_pct"]) for m in ms if _num(m.get("cpu_pct")) is not None]
    if cpu:
        out["cpu_pct_p50"] = pct(cpu, 0.5)
    return out


SYNC_AMPLIFY = 2.0  # bytes reaching the disk per byte written in a tick: each small write was forced out
BURST_BYTES = 8 << 20  # a tick in which the training process wrote this much was a burst (a checkpoint), not a log


def front_reads(samples: List[Dict[str, Any]], interval: Optional[float]) -> Dict[str, Any]:
    """When the watched processes' reads from the disk (bytes that reached the storage layer, not the page cache)
    happened: ``front_s``, seconds into the window by which 80 % of them were done, against ``window_s``."""
    rows = [(float(s.get("t_s") or 0.0), float(s["procs"]["io"]["read_bytes"])) for s in samples
            if isinstance(s.get("procs"), dict) and isinstance(s["procs"].get("io"), dict)
            and _num(s["procs"]["io"].get("read_bytes")) is not None]
    if len(rows) < 4:
        return {}
    total = sum(b for _, b in rows)
    t0 = rows[0][0] - (interval or 0.5)
    done, front = 0.0, None
    for t, b in rows:
        done += b
        if front is None and total > 0 and done >= 0.8 * total:
            front = round(t - t0, 2)
    return {"total_mb": round(total / 1e6, 1), "front_s": front, "window_s": round(rows[-1][0] - t0, 2)}


def io_windows(samples: List[Dict[str, Any]], interval: Optional[float]) -> List[Tuple[float, float, Dict[str, float]]]:
    """The training process's I/O tick by tick with the real time window it happened in: (from s, to s, counters).
    A tick's counters were read at its ``io_t_s`` (after the GPU, host and tree reads: later than its ``t_s``, by
    seconds on a loaded box) and cover the time since the read before; a recording without ``io_t_s`` (older, a
    replay) has the tick's nominal window, ``interval`` before its ``t_s``."""
    iv = interval or interval_of(samples) or 0.5
    out: List[Tuple[float, float, Dict[str, float]]] = []
    last: Dict[Any, float] = {}
    for s in samples:
        m = (s.get("procs") or {}).get("main") if isinstance(s.get("procs"), dict) else None
        t = _num(s.get("t_s"))
        if not isinstance(m, dict) or t is None:
            continue
        at = _num(m.get("io_t_s"))
        pid = m.get("pid")
        if at is None:
            a, b = t - iv, t
        else:
            a, b = last.get(pid, at - iv), at
            last[pid] = at
        counters = {k: float(v) for k in ("wchar", "rchar", "write_bytes", "read_bytes")
                    if (v := _num(m.get(k))) is not None}
        if b > a and counters:
            out.append((a, b, counters))
    return out


def activity(samples: List[Dict[str, Any]], start_s: float, end_s: float,
             interval: Optional[float]) -> Dict[str, Any]:
    """What the training process did between ``start_s`` and ``end_s`` (seconds into the recording): the main
    thread's state letters taken inside (at their real times where the recording has them, ``states_t_s``; else a
    tick's letters spread evenly over the tick before it), the share of that time it spent on a CPU (``oncpu``,
    from the letters' digits), and its I/O in the ticks whose real windows overlap, weighted by the overlap."""
    iv = interval or interval_of(samples) or 0.5
    letters: List[str] = []
    digits: List[int] = []
    for s in samples:
        m = (s.get("procs") or {}).get("main") if isinstance(s.get("procs"), dict) else None
        t = _num(s.get("t_s"))
        if not isinstance(m, dict) or t is None:
            continue
        st = m.get("states") if isinstance(m.get("states"), str) else ""
        if not st:
            continue
        oc = m.get("oncpu") if isinstance(m.get("oncpu"), str) and len(m["oncpu"]) == len(st) else ""
        span = m.get("states_t_s")
        real = isinstance(span, list) and len(span) == 2 and all(_num(x) is not None for x in span) \
            and span[1] >= span[0]
        for i, c in enumerate(st):
            if real:
                at = span[0] + (i * (span[1] - span[0]) / (len(st) - 1) if len(st) > 1 else 0.0)
            else:
                at = t - iv + (i + 0.5) * iv / len(st)
            if start_s <= at <= end_s:
                letters.append(c)
                if oc and oc[i].isdigit():
                    digits.append(int(oc[i]))
    io: Dict[str, float] = {"wchar": 0.0, "rchar": 0.0, "write_bytes": 0.0, "read_bytes": 0.0}
    for a, b, counters in io_windows(samples, iv):
        overlap = max(0.0, min(b, end_s) - max(a, start_s))
        if overlap > 0:
            for k, v in counters.items():
                io[k] += v * overlap / (b - a)
    text = "".join(letters)
    out: Dict[str, Any] = {"letters": len(text), "duration_s": round(end_s - start_s, 3),
                           **{k: round(v) for k, v in io.items()}}
    if text:
        out["share"] = {name: round(text.count(k) / len(text), 3) for k, name in STATE_NAMES.items()}
    if digits:
        out["oncpu"] = round(sum((d + 0.5) / 10 for d in digits) / len(digits), 3)
    return out


def summarize(samples: List[Dict[str, Any]], interval_s: Optional[float] = None,
              steps: Optional[List[Dict[str, Any]]] = None, t0_epoch: Optional[float] = None) -> Dict[str, Any]:
    """``watch.summary``: duration, sample count, per-GPU utilisation statistics, dataloader_workers, phases and,
    from the step timer, data_wait_fraction and step_count."""
    started = steps_started_at(steps or [], t0_epoch)
    a = analyze(samples, interval_s, started)
    out: Dict[str, Any] = {
        "duration_s": a.duration_s, "sample_count": a.sample_count, "interval_s": a.interval_s,
        "warmup_s": a.warmup_s, "cooldown_s": a.cooldown_s, "steady_samples": a.steady_count,
        "gpus": [g.to_dict() for g in a.gpus],
        "dataloader_workers": a.procs.get("workers_max") if a.has_procs else None,
        "stalls": [e.to_dict() for e in a.stalls], "lags": [e.to_dict() for e in a.lags],
    }
    if a.host:
        out["host"] = a.host
    if a.disks:
        out["disks"] = a.disks
    if a.procs:
        out["processes"] = a.procs
    out.update(step_summary(steps or []))
    if started is not None:
        out["steps_started_s"] = started
    gaps = step_gaps(steps or [], t0_epoch)
    if gaps:
        out["step_gaps"] = gaps
    return out


def step_gaps(loops: List[Dict[str, Any]], t0_epoch: Optional[float]) -> List[Dict[str, Any]]:
    """The step timer's stalls (steps far longer than the run's own) as spans of the recording: start and length
    in seconds, the loop they stopped, in time order (the first ``STALLS_KEPT`` of each loop)."""
    if t0_epoch is None:
        return []
    out = []
    for x in loops:
        if not isinstance(x, dict):
            continue
        for at, each, brief in (("stall_at", "stall_each_s", False), ("brief_at", "brief_each_s", True)):
            for end, dur in zip(x.get(at) or [], x.get(each) or []):
                if _num(end) is None or _num(dur) is None:
                    continue
                gap = {"start_s": round(float(end) - float(dur) - t0_epoch, 3), "duration_s": round(float(dur), 4),
                       "loop": str(x.get("name") or "")}
                if brief:  # under the timer's STALL_MIN_S: named only by the process's writes or reads
                    gap["brief"] = True
                out.append(gap)
    return sorted(out, key=lambda g: g["start_s"])[:512]


def steps_started_at(loops: List[Dict[str, Any]], t0_epoch: Optional[float]) -> Optional[float]:
    """Seconds after the recording began that the first timed loop started (its wall-clock ``started``)."""
    starts = [float(x["started"]) for x in loops if isinstance(x, dict) and _num(x.get("started")) is not None]
    if not starts or t0_epoch is None:
        return None
    return round(max(0.0, min(starts) - t0_epoch), 2)


def step_summary(loops: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The step timer's loops folded into one: total steps, data-wait fraction over all of them."""
    loops = [x for x in loops if isinstance(x, dict)]
    if not loops:
        return {}
    wait = sum(_num(x.get("wait_s")) or 0.0 for x in loops)
    step = sum(_num(x.get("step_s")) or 0.0 for x in loops)
    out: Dict[str, Any] = {"step_count": sum(int(x.get("steps") or 0) for x in loops),
                           "data_wait_fraction": round(wait / step, 4) if step > 0 else None,
                           "step_loops": len(loops)}
    for k in ("wait_p50_ms", "wait_p90_ms", "step_p50_ms", "step_p90_ms"):
        vals = [float(x[k]) for x in loops if _num(x.get(k)) is not None]
        if vals:
            out[k] = max(vals)
    phases = [{"loop": str(x.get("name") or ""), "steps": int(x.get("steps") or 0),
               "step_p50_ms": x.get("step_p50_ms"), "step_s": _num(x.get("step_s")),
               **({"epochs": x["epochs"]} if isinstance(x.get("epochs"), list) and len(x["epochs"]) > 1 else {})}
              for x in loops]
    if len(phases) > 1 or any("epochs" in p for p in phases):
        out["step_loops_detail"] = phases
    if any("stall_count" in x for x in loops):  # a timer that counts stalls (steps that stopped the loop)
        out["step_stall_count"] = sum(int(_num(x.get("stall_count")) or 0) for x in loops)
        out["step_stall_s"] = round(sum(_num(x.get("stall_s")) or 0.0 for x in loops), 3)
        out["step_stall_fraction"] = round(out["step_stall_s"] / step, 4) if step > 0 else None
    if any("brief_count" in x for x in loops):  # ... and its brief stalls (under its STALL_MIN_S each)
        out["step_brief_count"] = sum(int(_num(x.get("brief_count")) or 0) for x in loops)
        out["step_brief_s"] = round(sum(_num(x.get("brief_s")) or 0.0 for x in loops), 3)
        out["step_brief_fraction"] = round(out["step_brief_s"] / step, 4) if step > 0 else None
    return out
