"""Recordings from other tools, read into watch samples: `nvidia-smi dmon` (any -s), `nvidia-smi --query-gpu ...
--format=csv -l/-lms` (with or without its header), `dcgmi dmon`, gpustat loops, `iostat -x` and `vmstat`, alone
or together in one text (a paste often holds two terminals' worth).

Each reader picks only the lines of its own format (a header, then rows that fit it), so the others and any prose
around them are ignored; columns a reader does not know are skipped, never fatal. A series without timestamps is
spaced by the tool's interval (``interval_s``, 1 s unless told: the default of dmon, dcgmi, gpustat -i and the
usual `iostat -x 1` / `vmstat 1`), and that guess is listed in ``notes``. The first report of iostat and vmstat
averages since boot and is dropped when later ones follow.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import field
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import ProbeStatus, Watch


class ReplayError(ValueError):
    """Nothing in the text is a recording envdoctor reads."""


@dataclass
class Series:
    tool: str
    kind: str  # "gpu" (rows are per GPU) or "host"
    rows: List[Tuple[Optional[float], Dict[str, Any]]] = field(default_factory=list)  # (absolute time or None, row)
    notes: List[str] = field(default_factory=list)


def _num(text: str) -> Optional[float]:
    text = text.strip().rstrip("%").strip()
    if not text or text in ("-", "N/A", "[N/A]", "[Not Supported]", "[Unknown Error]", "nan"):
        return None
    m = re.match(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text)
    return float(m.group(0)) if m else None


def _strip_quote(line: str) -> str:
    """A Markdown quote ("> ") or a leading "$ " prompt is not part of the output."""
    return re.sub(r"^\s*>\s?", "", line.rstrip("\r\n"))


# --------------------------------------------------------------------------- nvidia-smi dmon

_DMON_MAP = {"sm": "util_pct", "mem": "mem_util_pct", "fb": "mem_used_mib", "pwr": "power_w", "gtemp": "temperature_c",
             "temp": "temperature_c", "pclk": "sm_clock_mhz", "pviol": "power_violation_pct",
             "tviol": "thermal_violation", "rxpci": "pcie_rx_mbps", "txpci": "pcie_tx_mbps"}


def read_dmon(lines: List[str]) -> Optional[Series]:
    s = Series("nvidia-smi dmon", "gpu")
    cols: Optional[List[str]] = None
    for raw in lines:
        line = _strip_quote(raw)
        if re.match(r"^#\s*(Date\s+Time\s+)?gpu\b", line, re.I):
            cols = [c.lower() for c in line.lstrip("#").split()]
            continue
        if line.startswith("#"):
            continue  # the units line ("# Idx W C % ..."), or a repeated header
        if cols is None:
            continue
        parts = line.split()
        if len(parts) != len(cols):
            cols = None if parts else cols  # another format: this block ended
            continue
        row = dict(zip(cols, parts))
        if not re.fullmatch(r"\d+", row.get("gpu", "")):
            cols = None
            continue
        t = None
        if "date" in row and "time" in row:
            try:
                t = datetime.strptime(f"{row['date']} {row['time']}", "%Y%m%d %H:%M:%S").timestamp()
            except ValueError:
                t = None
        g: Dict[str, Any] = {"index": int(row["gpu"])}
        for c, key in _DMON_MAP.items():
            if c in row:
                g[key] = _num(row[c])
        if g.get("power_violation_pct") or g.get("thermal_violation"):
            g["throttle_reasons"] = [n for n, v in (("power_violation", g.get("power_violation_pct")),
                                                    ("thermal_violation", g.get("thermal_violation"))) if v]
        elif "pviol" in row or "tviol" in row:
            g["throttle_reasons"] = []
        s.rows.append((t, g))
    return s if s.rows else None


# --------------------------------------------------------------------------- nvidia-smi --query-gpu csv

_CSV_MAP = {"index": "index", "utilization.gpu": "util_pct", "utilization.memory": "mem_util_pct",
            "memory.used": "mem_used_mib", "memory.total": "mem_total_mib", "power.draw": "power_w",
            "power.draw.instant": "power_w", "temperature.gpu": "temperature_c", "clocks.sm": "sm_clock_mhz",
            "clocks.current.sm": "sm_clock_mhz", "pci.bus_id": "bus", "name": "name"}
_CSV_REASON = ("clocks_throttle_reasons.active", "clocks_event_reasons.active", "clocks_throttle_reasons.active ")
TIMESTAMP_ROW = _TS = re.compile(r"^\s*(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?)\s*,")


def _ts(text: str) -> Optional[float]:
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), fmt).timestamp()
        except ValueError:
            continue
    return None


def _unit_columns(values: List[str]) -> List[str]:
    """A headerless row (a block cut from the middle of a log): columns told by their units."""
    names: List[str] = []
    pcts = mibs = 0
    mib_total = sum(1 for v in values if v.strip().endswith("MiB"))
    for v in values:
        v = v.strip()
        if _TS.match(v + ","):
            names.append("timestamp")
        elif v.endswith(" W"):
            names.append("power.draw")
        elif v.endswith("%"):
            names.append(("utilization.gpu", "utilization.memory")[pcts] if pcts < 2 else "?")
            pcts += 1
        elif v.endswith("MiB"):
            order = ("memory.used",) if mib_total == 1 else ("memory.total", "memory.used", "memory.free")
            names.append(order[mibs] if mibs < len(order) else "?")
            mibs += 1
        elif v.endswith("MHz"):
            names.append("clocks.sm")
        else:
            names.append("?")
    return names


def _decode_reason(text: str) -> Optional[List[str]]:
    from ..probes.nvml import decode_reasons

    t = text.strip()
    if not t.lower().startswith("0x"):
        return None
    try:
        return decode_reasons(int(t, 16))
    except ValueError:
        return None


def read_query_csv(lines: List[str]) -> Optional[Series]:
    s = Series("nvidia-smi --query-gpu (csv)", "gpu")
    header: Optional[List[str]] = None
    inferred = False
    for raw in lines:
        line = _strip_quote(raw)
        if "," in line and re.search(r"\b(utilization\.gpu|memory\.used|power\.draw|temperature\.gpu)\b", line):
            header = [re.sub(r"\s*\[.*?\]\s*$", "", c.strip()).lower() for c in line.split(",")]
            continue
        if "," not in line:
            continue
        values = [v.strip() for v in line.split(",")]
        cols = header
        if cols is not None and len(cols) != len(values) and (_TS.match(line) or _num(values[0]) is not None):
            # a data row with a column missing (or one too many): its values would slide into the neighbouring
            # columns (memory.total read as memory.used), so the recording is refused rather than misread
            raise ReplayError(f"nvidia-smi CSV: a row has {len(values)} values for the header's {len(cols)} columns "
                              f"(a column is missing or extra): {line.strip()[:80]}")
        if cols is None or len(cols) != len(values):
            if not _TS.match(line) and not (cols and len(cols) == len(values)):
                continue
            cols = _unit_columns(values)
            inferred = True
        row = dict(zip(cols, values))
        if "timestamp" not in row and "index" not in row and "utilization.gpu" not in row:
            continue
        if not any(k in row for k in ("utilization.gpu", "memory.used", "power.draw", "temperature.gpu")):
            continue
        g: Dict[str, Any] = {}
        for c, key in _CSV_MAP.items():
            if c in row:
                g[key] = row[c] if key in ("bus", "name") else _num(row[c])
        if isinstance(g.get("index"), float):
            g["index"] = int(g["index"])
        for c in _CSV_REASON:
            if c.strip() in row:
                g["throttle_reasons"] = _decode_reason(row[c.strip()])
        s.rows.append((_ts(row["timestamp"]) if "timestamp" in row else None, g))
    if inferred:
        s.notes.append("nvidia-smi CSV rows without their header: columns told by their units "
                       "(W: power.draw, first %: utilization.gpu, MiB: memory.used)")
    return s if s.rows else None


# --------------------------------------------------------------------------- dcgmi dmon

_DCGM_MAP = {"gputl": ("util_pct", 1.0), "smact": ("sm_active_pct", 100.0), "drama": ("mem_util_pct", 100.0),
             "mcutl": ("mem_util_pct", 1.0), "fbusd": ("mem_used_mib", 1.0), "fbttl": ("mem_total_mib", 1.0),
             "power": ("power_w", 1.0), "powr": ("power_w", 1.0), "gputmp": ("temperature_c", 1.0),
             "tmptr": ("temperature_c", 1.0), "smclk": ("sm_clock_mhz", 1.0),
             "pcirx": ("pcie_rx_mbps", 1e-6), "pcitx": ("pcie_tx_mbps", 1e-6)}


def read_dcgmi(lines: List[str]) -> Optional[Series]:
    s = Series("dcgmi dmon", "gpu")
    cols: Optional[List[str]] = None
    for raw in lines:
        line = _strip_quote(raw)
        if re.match(r"^#\s*Entity\b", line, re.I):
            cols = [c.lower() for c in line.lstrip("#").split()[1:]]
            continue
        if cols is None:
            continue
        m = re.match(r"^\s*GPU\s+(\d+)\s+(.*)$", line)
        if not m:
            if line.strip().startswith("ID") or not line.strip():
                continue  # the units line dcgmi prints under the header
            cols = None
            continue
        parts = m.group(2).split()
        g: Dict[str, Any] = {"index": int(m.group(1))}
        for c, v in zip(cols, parts):
            if c in _DCGM_MAP:
                key, scale = _DCGM_MAP[c]
                n = _num(v)
                g[key] = round(n * scale, 3) if n is not None else None
        s.rows.append((None, g))
    return s if s.rows else None


# --------------------------------------------------------------------------- gpustat

_GPUSTAT = re.compile(r"^\s*\[(\d+)\]\s+(.+?)\s*\|\s*(\d+)'C,\s*(.*?)\|\s*(\d+)\s*/\s*(\d+)\s*MB(.*)$")


def read_gpustat(lines: List[str]) -> Optional[Series]:
    s = Series("gpustat", "gpu")
    for raw in lines:
        m = _GPUSTAT.match(_strip_quote(raw))
        if not m:
            continue
        pcts = re.findall(r"(\d+)\s*%", m.group(4))
        power = re.search(r"(\d+)\s*/\s*(\d+)\s*W", m.group(4))
        g: Dict[str, Any] = {"index": int(m.group(1)), "name": m.group(2).strip(),
                             "temperature_c": float(m.group(3)),
                             "util_pct": float(pcts[-1]) if pcts else None,  # with -F the fan % comes first
                             "mem_used_mib": float(m.group(5)), "mem_total_mib": float(m.group(6))}
        if power:
            g["power_w"] = float(power.group(1))
        procs = re.findall(r"\((\d+)M\)", m.group(7))
        if m.group(7).strip():
            g["processes"] = len(procs) or len(m.group(7).split()) - 1
        s.rows.append((None, g))
    return s if s.rows else None


# --------------------------------------------------------------------------- iostat -x

def read_iostat(lines: List[str]) -> Optional[Series]:
    s = Series("iostat -x", "host")
    reports: List[Dict[str, Any]] = []
    cur: Optional[Dict[str, Any]] = None
    cpu_cols: Optional[List[str]] = None
    dev_cols: Optional[List[str]] = None
    for raw in lines:
        line = _strip_quote(raw)
        if line.startswith("avg-cpu:"):
            cpu_cols = line.split()[1:]
            cur = {"disks": {}}
            reports.append(cur)
            dev_cols = None
            continue
        if cpu_cols is not None and cur is not None and "cpu" not in cur:
            vals = [_num(v) for v in line.split()]
            if len(vals) == len(cpu_cols) and all(v is not None for v in vals):
                c = dict(zip(cpu_cols, vals))
                cur["cpu"] = c
                continue
        if re.match(r"^Device:?\s", line):
            dev_cols = line.split()[1:]
            if cur is None or cur.get("disks"):
                cur = {"disks": {}}
                reports.append(cur)
            continue
        if dev_cols is not None and cur is not None:
            parts = line.split()
            if len(parts) == len(dev_cols) + 1 and all(_num(p) is not None for p in parts[1:]):
                cur["disks"][parts[0]] = _iostat_disk(dict(zip(dev_cols, (float(_num(p) or 0) for p in parts[1:]))))
            elif not parts:
                dev_cols = None
    reports = [r for r in reports if r.get("cpu") or r.get("disks")]
    if len(reports) > 1:
        reports = reports[1:]
        s.notes.append("iostat: the first report (averages since boot) left out")
    for r in reports:
        host: Dict[str, Any] = {"disks": r["disks"]}
        c = r.get("cpu")
        if c:
            idle, iow = c.get("%idle"), c.get("%iowait")
            if idle is not None and iow is not None:
                host["cpu_busy_pct"] = round(100.0 - idle - iow, 1)
                host["cpu_iowait_pct"] = iow
        s.rows.append((None, host))
    return s if s.rows else None


def _iostat_disk(c: Dict[str, float]) -> Dict[str, Any]:
    rmb = c.get("rMB/s", c["rkB/s"] / 1024.0 if "rkB/s" in c else None)
    wmb = c.get("wMB/s", c["wkB/s"] / 1024.0 if "wkB/s" in c else None)
    r, w = c.get("r/s"), c.get("w/s")
    iops = (r or 0.0) + (w or 0.0) if r is not None or w is not None else None
    aw = c.get("await")
    if aw is None and (c.get("r_await") is not None or c.get("w_await") is not None) and iops:
        aw = ((r or 0) * c.get("r_await", 0.0) + (w or 0) * c.get("w_await", 0.0)) / iops
    return {"read_mbps": round(rmb, 2) if rmb is not None else None,
            "write_mbps": round(wmb, 2) if wmb is not None else None,
            "iops": round(iops, 1) if iops is not None else None,
            "await_ms": round(aw, 2) if aw is not None else None,
            "util_pct": c.get("%util"), "queue": c.get("aqu-sz", c.get("avgqu-sz"))}


# --------------------------------------------------------------------------- vmstat

def read_vmstat(lines: List[str]) -> Optional[Series]:
    s = Series("vmstat", "host")
    cols: Optional[List[str]] = None
    rows = []
    for raw in lines:
        line = _strip_quote(raw)
        parts = line.split()
        if parts[:2] == ["r", "b"] and "us" in parts and "id" in parts:
            cols = parts
            continue
        if cols is None:
            continue
        if line.lstrip().startswith("procs"):
            continue
        if len(parts) != len(cols) or not all(re.fullmatch(r"-?\d+", p) for p in parts):
            cols = None
            continue
        rows.append(dict(zip(cols, (int(p) for p in parts))))
    if not rows:
        return None
    if len(rows) > 1:
        rows = rows[1:]
        s.notes.append("vmstat: the first line (averages since boot) left out")
    for r in rows:
        busy, iowait = _vmstat_cpu(r)
        s.rows.append((None, {"cpu_busy_pct": busy,
                              "cpu_iowait_pct": iowait, "run_queue": float(r["r"]),
                              "blocked": float(r.get("b", 0)),
                              "swap_in_kbps": float(r.get("si", 0)), "read_kbps": float(r.get("bi", 0))}))
    return s


# vmstat's CPU columns: shares of CPU time, each rounded to a whole percent on its own, so a row sums to 100 give
# or take half a point per column: a busy 2-core box printed "86 15 0 0 0" (101) in a real `vmstat 1` capture
# (tests/fixtures/timeseries/vmstat-busy-2core.txt). "gu" (guest time) is counted where a vmstat prints it.
_VMSTAT_CPU = ("us", "sy", "id", "wa", "st", "gu")


def _vmstat_cpu(r: Dict[str, int]) -> Tuple[float, float]:
    """(busy %, iowait %) of one vmstat row: scaled back to a total of 100 when the columns' own rounding
    moved it (within half a point per column); a row further off is left as it is, for check_plausible."""
    busy = float(r.get("us", 0) + r.get("sy", 0) + r.get("st", 0))
    iowait = float(r.get("wa", 0))
    cols = [c for c in _VMSTAT_CPU if c in r]
    total = sum(r[c] for c in cols)
    if total > 0 and total != 100 and abs(total - 100) <= len(cols) / 2:
        busy, iowait = round(busy * 100 / total, 2), round(iowait * 100 / total, 2)
    return busy, iowait


READERS = (read_dmon, read_query_csv, read_dcgmi, read_gpustat, read_iostat, read_vmstat)


# --------------------------------------------------------------------------- into samples


def _gpu_samples(series: Series, interval: float) -> List[Tuple[float, List[Dict[str, Any]]]]:
    """Per-GPU rows grouped into ticks: a new tick when a GPU index repeats, or (no index) when the timestamp
    moves on by more than a fifth of the interval."""
    ticks: List[Tuple[Optional[float], List[Dict[str, Any]]]] = []
    if series.rows and all("index" not in g for _, g in series.rows) and all(t is not None for t, _ in series.rows):
        # no index column: each tick is N consecutive rows in GPU order (nvidia-smi prints every GPU per tick);
        # N is the usual size of a burst of rows a few milliseconds apart
        sizes: Dict[int, int] = {}
        run = 1
        for (a, _), (b, _) in zip(series.rows, series.rows[1:]):
            if b - a > min(0.02, interval / 5):  # type: ignore[operator]
                sizes[run] = sizes.get(run, 0) + 1
                run = 1
            else:
                run += 1
        sizes[run] = sizes.get(run, 0) + 1
        n = max(sizes, key=lambda k: (sizes[k], k))
        for i in range(0, len(series.rows), n):
            chunk = series.rows[i:i + n]
            ticks.append((chunk[0][0], [dict(g, index=j) for j, (_, g) in enumerate(chunk)]))
        series = Series(series.tool, series.kind)  # consumed
    for t, g in series.rows:
        cur = ticks[-1] if ticks else None
        new = cur is None
        if cur is not None:
            if "index" in g:
                new = any(x.get("index") == g["index"] for x in cur[1])
            elif t is not None and cur[0] is not None:
                new = t - cur[0] > min(0.05, interval / 5)
            else:
                new = True
        if new:
            ticks.append((t, []))
        ticks[-1][1].append(g)
    out = []
    t0 = next((t for t, _ in ticks if t is not None), None)
    for i, (t, gs) in enumerate(ticks):
        for j, g in enumerate(gs):
            g.setdefault("index", j)
        out.append((round(t - t0, 3) if t is not None and t0 is not None else round(i * interval, 3), gs))
    return out


# What a sample's field can be at all, whatever the GPU or host: outside these, the text is not what its header
# says (a shifted column, a unit misread, a corrupted paste), and a verdict built on it would be wrong.
# Percentages may exceed 100 by rounding only; 3000 W is above any single GPU board (GB200's superchip is 2700 W).
_BOUNDS = {"util_pct": (0.0, 100.5), "mem_util_pct": (0.0, 100.5), "sm_active_pct": (0.0, 100.5),
           "power_w": (0.0, 3000.0), "temperature_c": (-40.0, 150.0), "sm_clock_mhz": (0.0, 10000.0),
           "mem_used_mib": (0.0, 4.0e6), "mem_total_mib": (0.0, 4.0e6),
           "cpu_busy_pct": (0.0, 100.5), "cpu_iowait_pct": (0.0, 100.5), "util_pct_disk": (0.0, 100.5),
           "await_ms": (0.0, 1.0e7)}


def check_plausible(samples: List[Dict[str, Any]], tool: str) -> None:
    """ReplayError, in one line, on the first value no real recording can hold: utilisation of 99999 %, memory
    used above the memory total, a negative await."""
    def bad(name: str, value: Any, where: str, rule: str) -> ReplayError:
        return ReplayError(f"{tool}: {name} {value:g} at {where} is impossible ({rule}): the columns do not hold "
                           "what their header says, or the text was damaged; nothing was judged")

    for smp in samples:
        t = smp.get("t_s")
        for g in smp.get("gpus") or []:
            where = f"t={t:g} s, GPU {g.get('index')}"
            for key, (lo, hi) in _BOUNDS.items():
                v = g.get(key)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and not lo <= v <= hi:
                    raise bad(key, v, where, f"{lo:g} to {hi:g}")
            used, total = g.get("mem_used_mib"), g.get("mem_total_mib")
            if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total > 0 and used > total * 1.01:
                raise bad("mem_used_mib", used, where, f"above the memory total {total:g} MiB")
        host = smp.get("host") or {}
        for key in ("cpu_busy_pct", "cpu_iowait_pct"):
            v = host.get(key)
            lo, hi = _BOUNDS[key]
            if isinstance(v, (int, float)) and not lo <= v <= hi:
                raise bad(key, v, f"t={t:g} s", f"{lo:g} to {hi:g}")
        for dev, d in (host.get("disks") or {}).items():
            for name, key in (("util_pct", "util_pct_disk"), ("await_ms", "await_ms")):
                v = d.get(name)
                lo, hi = _BOUNDS[key]
                if isinstance(v, (int, float)) and not lo <= v <= hi:
                    raise bad(f"{dev} {name}", v, f"t={t:g} s", f"{lo:g} to {hi:g}")


def _nearest(times: List[float], t: float) -> int:
    """Index of the value of the sorted ``times`` nearest to ``t`` (the earlier one on a tie)."""
    k = bisect.bisect_left(times, t)
    if k == 0:
        return 0
    if k == len(times):
        return k - 1
    return k if times[k] - t < t - times[k - 1] else k - 1


def replay(text: str, interval_s: Optional[float] = None, name: Optional[str] = None) -> Watch:
    """The recording(s) in ``text`` as a Watch section; ReplayError when none is there."""
    lines = text.splitlines()
    found = [s for s in (r(lines) for r in READERS) if s]
    if not found:
        raise ReplayError("no recording found: expected nvidia-smi dmon, nvidia-smi --query-gpu CSV, dcgmi dmon, "
                          "gpustat, iostat -x or vmstat output")
    interval = interval_s or 1.0
    notes: List[str] = []
    gpu_series = [s for s in found if s.kind == "gpu"]
    host_series = [s for s in found if s.kind == "host"]
    # the GPU series with most rows is the timeline; a second GPU tool's rows are not merged into it
    timeline: List[Tuple[float, List[Dict[str, Any]]]] = []
    if gpu_series:
        main = max(gpu_series, key=lambda s: len(s.rows))
        gi = interval
        if all(t is not None for t, _ in main.rows):
            ts = sorted({round(t, 3) for t, _ in main.rows})
            gaps = sorted(b - a for a, b in zip(ts, ts[1:]) if b - a > 0.02)
            gi = gaps[len(gaps) // 2] if gaps else interval
        elif not interval_s:
            notes.append(f"{main.tool}: no timestamps; samples taken as {interval:g} s apart (--interval to say)")
        timeline = _gpu_samples(main, gi)
        interval = gi
        for s in gpu_series:
            if s is not main:
                notes.append(f"{s.tool}: a second GPU recording in the same text, not merged ({len(s.rows)} rows)")
    samples: List[Dict[str, Any]] = [{"t_s": t, "gpus": gs} for t, gs in timeline]
    for hs in host_series:
        if not interval_s:
            notes.append(f"{hs.tool}: no timestamps; reports taken as {interval_s or 1.0:g} s apart "
                         "and aligned with the start of the other series")
        step = interval_s or 1.0
        # the GPU ticks' times, sorted (a paste of two captures may go back in time): the nearest one is found by bisection,
        # so a long recording replays in n log n, not n x m (400k lines took minutes before)
        order = sorted(range(len(samples)), key=lambda j: samples[j]["t_s"]) if gpu_series else []
        ticks = [samples[j]["t_s"] for j in order]
        for i, (_, h) in enumerate(hs.rows):
            t = round(i * step, 3)
            if samples and gpu_series:
                # the GPU tick nearest in time takes the host report
                k = order[_nearest(ticks, t)]
                if abs(samples[k]["t_s"] - t) <= max(step, interval):
                    samples[k].setdefault("host", {}).update({k2: v for k2, v in h.items() if k2 != "disks"})
                    if h.get("disks"):
                        samples[k]["host"].setdefault("disks", {}).update(h["disks"])
                continue
            if i < len(samples) and not gpu_series:
                samples[i].setdefault("host", {}).update(h)
            else:
                samples.append({"t_s": t, "host": dict(h)})
    check_plausible(samples, ", ".join(s.tool for s in found))
    for s in found:
        notes.extend(s.notes)
    unseen = []
    if not gpu_series:
        unseen.append("no GPU samples in the recording: GPU-side verdicts cannot be made")
    if not host_series:
        unseen.append("no host samples (CPU, disk) in the recording: whether the input pipeline is disk- or "
                      "CPU-bound cannot be told")
    unseen.append("no process tree in a recording: DataLoader worker count unknown")
    from ..domain.recording import summarize

    summary = summarize(samples, interval)
    summary["notes"] = notes
    return Watch(status=ProbeStatus.OK, source=", ".join(s.tool for s in found)
                 + (f" ({name})" if name else ""), interval_s=interval, samples=samples, summary=summary,
                 unseen=unseen)
