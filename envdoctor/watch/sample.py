"""Live sampling for `envdoctor watch`: the GPUs (NVML, through probes/nvml.py), the watched process tree and
the host (psutil, /sys/fs/cgroup). Every reader is best effort: a field it cannot read is None, and the reason
goes into ``unseen`` once. Nothing here signals, ptraces or otherwise touches the watched processes: it reads
/proc (through psutil) and NVML, both of which only observe.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Dict, List, Optional, Set, Tuple

import psutil

# multiprocessing helpers that are not workers of the training loop
_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver", "multiprocessing.resource_sharer")
_SPAWNED = ("multiprocessing.spawn", "spawn_main")
# block devices whose counters are partitions or stacked views of a disk the list has already
_DISK_NAMES = ("nvme", "sd", "vd", "xvd", "hd", "md", "dm-", "mmcblk")


class Unseen:
    """What could not be seen, each reason once, in the order met."""

    def __init__(self) -> None:
        self.lines: List[str] = []

    def add(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)


# --------------------------------------------------------------------------- GPUs


class GpuReader:
    """NVML, opened once; ``read()`` gives one sample per GPU. Without NVML it reads nothing and says why."""

    # nvmlDeviceGetPcieThroughput "is querying a byte counter over a 20ms interval" (NVML API reference): each
    # read blocks that long, per direction and GPU, so it is read every 2 s, not every tick
    PCIE_EVERY_S = 2.0

    def __init__(self, unseen: Unseen, nvml: Any = None, host_pids: Optional[bool] = None) -> None:
        self.unseen = unseen
        self.nvml = nvml
        # in a container's PID namespace NVML reports the host's PIDs, which name no process here (or the wrong
        # one): the same rule as `check` (probes/nvml.py in_child_pid_namespace); None: told from /proc/self/ns/pid
        self.host_pids = host_pids
        self.handles: List[Tuple[int, str, Any]] = []
        self.names: Dict[int, Optional[str]] = {}
        self._last_pcie = 0.0
        self._pcie: Dict[int, Tuple[Any, Any]] = {}
        self._open()

    def _open(self) -> None:
        from ..domain.pci import bus_key
        from ..probes import nvml as nvml_probe

        def _text(v: Any) -> Optional[str]:
            return v.decode("ascii", "replace") if isinstance(v, bytes) else (str(v) if v is not None else None)

        def _err(nvml: Any, e: BaseException) -> str:
            known = getattr(nvml, "NVMLError", None)
            if isinstance(known, type) and isinstance(e, known):
                return nvml_probe.error_name(nvml, e)
            return f"{type(e).__name__}: {e}"

        if self.nvml is None:
            try:
                self.nvml = nvml_probe.import_pynvml()
            except ImportError:
                self.unseen.add("no GPU samples: pynvml (nvidia-ml-py) is not installed")
                return
            problem = nvml_probe.binding_problem(self.nvml)
            if problem:
                self.unseen.add(f"no GPU samples: {problem}")
                self.nvml = None
                return
        try:
            self.nvml.nvmlInit()
        except Exception as e:  # noqa: BLE001 - NVMLError (no driver) or a broken binding
            self.unseen.add(f"no GPU samples: NVML init failed ({_err(self.nvml, e)})")
            self.nvml = None
            return
        try:
            for i in range(int(self.nvml.nvmlDeviceGetCount())):
                h = self.nvml.nvmlDeviceGetHandleByIndex(i)
                bus = bus_key(_text(getattr(self.nvml.nvmlDeviceGetPciInfo(h), "busId", None))) or f"index:{i}"
                self.handles.append((i, bus, h))
                try:
                    self.names[i] = _text(self.nvml.nvmlDeviceGetName(h))
                except Exception:  # noqa: BLE001
                    self.names[i] = None
        except Exception as e:  # noqa: BLE001
            self.unseen.add(f"GPU list incomplete: {_err(self.nvml, e)}")
        if not self.handles:
            self.unseen.add("no GPU samples: NVML sees no GPU")
        if self.host_pids is None:
            self.host_pids = nvml_probe.in_child_pid_namespace()

    def read(self) -> List[Dict[str, Any]]:
        from ..probes.nvml import read_sample, read_watch_fields

        if self.nvml is None:
            return []
        now = time.monotonic()
        pcie = now - self._last_pcie >= self.PCIE_EVERY_S
        if pcie:
            self._last_pcie = now
        out = []
        for i, bus, h in self.handles:
            try:
                s = read_sample(self.nvml, h)
                w = read_watch_fields(self.nvml, h, pcie=pcie)
            except Exception as e:  # noqa: BLE001 - a GPU that fell off the bus: its sample is the error
                out.append({"index": i, "bus": bus, "error": f"{type(e).__name__}: {e}"})
                continue
            if pcie:
                self._pcie[i] = (w.get("pcie_rx_mbps"), w.get("pcie_tx_mbps"))
            rx, tx = self._pcie.get(i, (None, None))
            out.append({
                "index": i, "bus": bus, "util_pct": s.get("utilization_pct"), "mem_util_pct": w.get("mem_util_pct"),
                "mem_used_mib": w.get("mem_used_mib"), "mem_total_mib": w.get("mem_total_mib"),
                "sm_clock_mhz": s.get("sm_clock_mhz"), "power_w": s.get("power_w"),
                "temperature_c": s.get("temperature_c"), "throttle_reasons": s.get("throttle_reasons"),
                "pcie_rx_mbps": rx, "pcie_tx_mbps": tx, "pids": w.get("pids"),
                **({"pids_are_host": True} if self.host_pids else {}),
            })
            if self.host_pids and w.get("pids"):
                self.unseen.add("GPU process IDs are the host's (this runs in a container's PID namespace): they "
                                "are counted, not matched to processes here; name the command or --pid to watch it")
        return out

    def local_pids(self, samples: List[Dict[str, Any]]) -> Set[int]:
        """The GPUs' process IDs as this PID namespace numbers them: none when NVML's are the host's."""
        if self.host_pids:
            return set()
        return {p for g in samples for p in (g.get("pids") or [])}

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass


# --------------------------------------------------------------------------- the watched process tree


class ProcessTree:
    """The watched processes: a root pid and its descendants (or, bare `watch`, the processes on the GPUs).

    Per tick: how many, which are DataLoader-style workers, CPU use per process (from /proc CPU time deltas),
    RSS and state. A worker is a child of a Python process in the tree that is a fork of it (same command
    line) or a multiprocessing spawn child; the resource tracker and the forkserver itself are not workers.
    """

    TORCH_RECHECK_S = 3.0

    def __init__(self, unseen: Unseen, root: Optional[int] = None) -> None:
        self.unseen = unseen
        self.root = root
        self._cpu: Dict[int, Tuple[float, float]] = {}  # pid -> (cpu seconds, when)
        self._cmd: Dict[int, Tuple[Optional[str], Tuple[str, ...]]] = {}  # pid -> (its name then, command line)
        self._torch: Dict[int, bool] = {}
        self._torch_checked: Dict[int, float] = {}
        self.pids_seen: Set[int] = set()
        self.torch_seen = False
        self._procs: Dict[int, psutil.Process] = {}
        # the training process's own state (issue 41): its main thread sampled between ticks (``wait_until``)
        self.main_pid: Optional[int] = None
        self._states: List[str] = []
        # ... with, per letter, when it was taken (time.monotonic) and the share of the time since the sub-sample
        # before it that the thread spent on a CPU (a digit 0-9, "?" unknown): a thread ready to run that got no
        # core (another tenant's time) is told from one that computed
        self._sub_t: List[float] = []
        self._oncpu: List[str] = []
        self._sub_sched: Optional[Tuple[int, int, float]] = None  # (pid, run ns, when) at the last sub-sample
        self.t0: Optional[float] = None  # time.monotonic() of the recording's start: times as its t_s
        self._main_io: Dict[int, Dict[str, int]] = {}  # pid -> its /proc/PID/io counters at the last read
        self._main_sched: Dict[int, Tuple[int, int]] = {}  # pid -> (run ns, run-queue wait ns) at the last read
        self._tree_io: Dict[int, Tuple[int, int, int, int]] = {}  # pid -> (read_bytes, write_bytes, rchar, wchar)
        self._quota = CgroupQuota()

    def processes(self, gpu_pids: Optional[Set[int]] = None) -> List[psutil.Process]:
        if self.root is None:
            procs = []
            for pid in sorted(gpu_pids or ()):
                try:
                    p = psutil.Process(pid)
                    procs.append(p)
                    procs.extend(p.children(recursive=True))
                except (psutil.Error, OSError):
                    self.unseen.add("a GPU process is not visible from here (another container or PID namespace)")
            return procs
        pids = _descendants(self.root)
        if pids is None:  # no /proc/PID/task/*/children here: psutil scans every process instead
            try:
                root = psutil.Process(self.root)
                return [root] + root.children(recursive=True)
            except (psutil.Error, OSError):
                return []
        out = []
        for pid in pids:
            p = self._procs.get(pid)
            if p is None:
                try:
                    p = self._procs[pid] = psutil.Process(pid)
                except (psutil.Error, OSError):
                    continue
            out.append(p)
        for gone in set(self._procs) - set(pids):
            del self._procs[gone]
        return out

    def _uses_torch(self, pid: int, now: float) -> bool:
        if self._torch.get(pid):
            return True
        if now - self._torch_checked.get(pid, 0.0) < self.TORCH_RECHECK_S:
            return False
        self._torch_checked[pid] = now
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
                found = any("libtorch" in line for line in fh)
        except OSError:
            found = False
        self._torch[pid] = found
        return found

    def read(self, gpu_pids: Optional[Set[int]] = None) -> Optional[Dict[str, Any]]:
        procs = self.processes(gpu_pids)
        if not procs:
            return None if self.root is None and not gpu_pids else {"count": 0, "workers": 0, "trainers": 0}
        now = time.monotonic()
        info: Dict[int, Dict[str, Any]] = {}
        for p in procs:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    info[p.pid] = {"ppid": p.ppid(), "state": p.status(), "rss": p.memory_info().rss,
                                   "cpu_s": t.user + t.system, "name": p.name(), "threads": p.num_threads()}
            except (psutil.Error, OSError):
                continue
        for pid, d in info.items():
            prev = self._cpu.get(pid)
            d["cpu_pct"] = round(max(0.0, 100.0 * (d["cpu_s"] - prev[0]) / (now - prev[1])), 1) \
                if prev and now > prev[1] else None
            self._cpu[pid] = (d["cpu_s"], now)
        self.pids_seen.update(info)
        workers, trainers = [], []
        for pid, d in info.items():
            cmd = self._cmd_of(pid, d["name"])
            if any(h in " ".join(cmd) for h in _HELPERS):
                continue
            parent = info.get(d["ppid"])
            is_python = "python" in (d["name"] or "").lower() or any("python" in c for c in cmd[:1])
            if parent is not None and is_python and (
                    (cmd and cmd == self._cmd_of(d["ppid"], parent["name"])) or any(s in " ".join(cmd) for s in _SPAWNED)):
                workers.append(pid)
            elif is_python:
                trainers.append(pid)
        for gone in set(self._cmd) - set(info):  # exited: its pid may come back as another program
            del self._cmd[gone]
        torch_trainers = [pid for pid in trainers if self._uses_torch(pid, now)]
        if torch_trainers:
            self.torch_seen = True
        main = max(trainers, key=lambda pid: info[pid].get("cpu_pct") or 0.0, default=None)
        states: Dict[str, int] = {}
        for d in info.values():
            states[d["state"]] = states.get(d["state"], 0) + 1
        known = [d["cpu_pct"] for d in info.values() if d["cpu_pct"] is not None]
        worker_states: Dict[str, int] = {}
        for w in workers:
            worker_states[info[w]["state"]] = worker_states.get(info[w]["state"], 0) + 1
        out: Dict[str, Any] = {
            "count": len(info), "trainers": len(trainers), "torch_trainers": len(torch_trainers),
            "workers": len(workers),
            "cpu_pct": round(sum(known), 1) if known else None,
            "main_cpu_pct": info[main]["cpu_pct"] if main is not None else None,
            "worker_cpu_pct": sorted((info[w]["cpu_pct"] for w in workers if info[w]["cpu_pct"] is not None),
                                     reverse=True)[:64],
            "rss_bytes": sum(d["rss"] for d in info.values()),
            "states": states,
            # what the workers are doing: "disk-sleep" (D) is a worker blocked in a read
            "worker_states": worker_states,
            # threads of the training processes and their workers (intra-op pools, loader threads)
            "threads": sum(int(info[pid].get("threads") or 0) for pid in trainers + workers),
            # of them, those running or ready to run (state R): this run's own demand for cores, whatever other
            # tenants of the machine add to the host's run queue
            "threads_running": _running_threads(trainers + workers),
        }
        io = self._tree_io_delta(list(info))
        if io is not None:
            out["io"] = io
        chosen = self._choose_main(torch_trainers or trainers, info)
        if chosen is not None:
            out["main"] = self._main_facts(chosen, info[chosen])
        self.main_pid = chosen
        quota = self._quota.read(self.root if self.root in info else chosen)
        if quota:
            out["cgroup"] = quota
        return out

    def _choose_main(self, candidates: List[int], info: Dict[int, Dict[str, Any]]) -> Optional[int]:
        """The training process whose state is sampled: the one chosen before while it lives (its series stays one
        process's), else the candidate with the most CPU time so far (a launcher such as torchrun uses little)."""
        if self.main_pid in info and self.main_pid in candidates:
            return self.main_pid
        return max(candidates, key=lambda pid: info[pid].get("cpu_s") or 0.0, default=None)

    def _main_facts(self, pid: int, d: Dict[str, Any]) -> Dict[str, Any]:
        """The training process's own state since the last tick: its main thread's state at each sub-sample
        (``states``, one letter each: see ``main_state``), the time that thread ran and waited for a core
        (/proc/PID/schedstat), and its I/O (/proc/PID/io: bytes asked to read and write, bytes that reached the
        disk, read and write calls)."""
        states = "".join(self._states[-MAX_STATES:]) if pid == self.main_pid else ""
        oncpu = "".join(self._oncpu[-MAX_STATES:]) if states else ""
        when = self._sub_t[-MAX_STATES:] if states else []
        self._states, self._oncpu, self._sub_t = [], [], []
        out: Dict[str, Any] = {"pid": pid, "cpu_pct": d.get("cpu_pct")}
        if states:
            out["states"] = states
            if len(oncpu) == len(states) and oncpu.strip("?"):
                out["oncpu"] = oncpu
            if self.t0 is not None and len(when) == len(states):
                # when the first and the last letter were taken: the letters' real span, not the tick's
                out["states_t_s"] = [round(when[0] - self.t0, 3), round(when[-1] - self.t0, 3)]
        sched = _schedstat(pid)
        prev = self._main_sched.get(pid)
        if sched is not None:
            if prev is not None:
                out["run_ms"] = round(max(0, sched[0] - prev[0]) / 1e6, 1)
                out["cpu_wait_ms"] = round(max(0, sched[1] - prev[1]) / 1e6, 1)
            self._main_sched = {pid: sched}
        io = _proc_io(pid)
        previo = self._main_io.get(pid)
        if io is not None and self.t0 is not None:
            # when the counters were read (later than the tick's t_s by the GPU, host and tree reads, more on a
            # loaded box): this tick's I/O happened between the last read and this one
            out["io_t_s"] = round(time.monotonic() - self.t0, 3)
        if io is not None:
            if previo is not None:
                for k in ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes"):
                    if k in io and k in previo:
                        out[k] = max(0, io[k] - previo[k])
            self._main_io = {pid: io}
        elif previo is None:
            self.unseen.add("the training process's I/O counters (/proc/PID/io) not readable")
        return out

    def _tree_io_delta(self, pids: List[int]) -> Optional[Dict[str, int]]:
        """The watched processes' I/O since the last tick, summed (a process seen for the first time counts from
        then on): bytes that reached the disk (read_bytes, write_bytes) and bytes asked for (rchar, wchar)."""
        now: Dict[int, Tuple[int, int, int, int]] = {}
        for pid in pids:
            io = _proc_io(pid)
            if io is not None:
                now[pid] = (io.get("read_bytes", 0), io.get("write_bytes", 0), io.get("rchar", 0), io.get("wchar", 0))
        if not now:
            return None
        tot = [0, 0, 0, 0]
        for pid, v in now.items():
            prev = self._tree_io.get(pid)
            if prev is not None:
                for i in range(4):
                    tot[i] += max(0, v[i] - prev[i])
        first = not self._tree_io
        self._tree_io = now
        if first:
            return None
        return {"read_bytes": tot[0], "write_bytes": tot[1], "rchar": tot[2], "wchar": tot[3]}

    def sample_main(self) -> None:
        """One sub-sample of the training process's main thread (between ticks): a letter for its state."""
        pid = self.main_pid
        if pid is not None and len(self._states) < 4 * MAX_STATES:
            letter = main_state(pid)
            if letter:
                now = time.monotonic()
                sched = _schedstat(pid)
                prev, digit = self._sub_sched, "?"
                if sched is not None and prev is not None and prev[0] == pid and now > prev[2]:
                    share = (sched[0] - prev[1]) / 1e9 / (now - prev[2])
                    digit = str(min(9, max(0, int(10 * share))))
                self._sub_sched = (pid, sched[0], now) if sched is not None else None
                self._states.append(letter)
                self._oncpu.append(digit)
                self._sub_t.append(now)

    def wait_until(self, deadline: float, every: float = 0.0) -> None:
        """Sleep until ``deadline`` (time.monotonic), sampling the main thread's state ``SUBSAMPLES`` times on the
        way: a tick's one look would say little about a step of a few milliseconds; ten give its share of time."""
        step = every or None
        while True:
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return
            if step is None:
                step = max(0.02, left / SUBSAMPLES)
            self.sample_main()
            time.sleep(min(step, max(0.0, deadline - time.monotonic())))

    def _cmd_of(self, pid: int, name: Optional[str] = None) -> Tuple[str, ...]:
        """``pid``'s command line, read once per program it runs: read again after a failed or empty read (a
        process still starting or exiting, a /proc read that failed) and when its name changed (an exec since: a
        shell that became python). Cached for good, the first failed read made a trainer's command line () for
        the whole run, so that its fork workers, whose command line is its own, were never counted (issue 40)."""
        cached = self._cmd.get(pid)
        if cached is not None and cached[1] and cached[0] == name:
            return cached[1]
        try:
            cmd = tuple(psutil.Process(pid).cmdline())
        except (psutil.Error, OSError):
            cmd = ()
        self._cmd[pid] = (name, cmd)
        return cmd


SUBSAMPLES = 10  # looks at the main thread's state per tick
MAX_STATES = 64  # letters kept per tick

# what a sleeping thread waits in (/proc/PID/wchan, the kernel function it sleeps in; "0" when it runs or when the
# kernel does not say): a sleep, a futex (a lock, a condition, queue.Queue, a thread join), or another process or
# a socket (a pipe, poll/select/epoll: a DataLoader worker's queue, a remote). Names as Linux 6.x shows them.
_SLEEP_WCHAN = ("nanosleep", "hrtimer")
_FUTEX_WCHAN = ("futex",)
_PEER_WCHAN = ("pipe", "poll", "select", "epoll", "sk_wait", "unix_stream", "wait_woken", "inet_", "tcp_", "sock")


def main_state(pid: int) -> Optional[str]:
    """One letter for what ``pid``'s main thread is doing now: R running or ready to run, D waiting on I/O
    (uninterruptible: a disk read, fsync, writeback), N in a sleep (time.sleep), F on a futex (a lock, a queue of
    threads), P on another process or a socket (a pipe, poll), S sleeping otherwise (or where wchan is hidden), T
    stopped, Z exiting. None when the process cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3].decode("ascii", "replace")
    if state in ("R", "D"):
        return state
    if state in ("T", "t"):
        return "T"
    if state in ("Z", "X"):
        return "Z"
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii", errors="replace") as fh:
            wchan = fh.read().strip()
    except OSError:
        wchan = ""
    if any(k in wchan for k in _SLEEP_WCHAN):
        return "N"
    if any(k in wchan for k in _FUTEX_WCHAN):
        return "F"
    if any(k in wchan for k in _PEER_WCHAN):
        return "P"
    return "S"


def _schedstat(pid: int) -> Optional[Tuple[int, int]]:
    """(ns ``pid``'s main thread ran on a CPU, ns it waited on a run queue for one) from /proc/PID/schedstat."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as fh:
            parts = fh.read().split()
        return int(parts[0]), int(parts[1])
    except (OSError, ValueError, IndexError):
        return None


def _proc_io(pid: int) -> Optional[Dict[str, int]]:
    """/proc/PID/io: rchar/wchar (bytes passed to read and write calls), syscr/syscw (the calls), read_bytes/
    write_bytes (bytes fetched from or sent to the storage layer)."""
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as fh:
            out = {}
            for line in fh:
                k, _, v = line.partition(":")
                out[k.strip()] = int(v)
            return out
    except (OSError, ValueError):
        return None


def _running_threads(pids: List[int], cap: int = 4096) -> Optional[int]:
    """Threads of ``pids`` in state R (running or runnable) from /proc/PID/task/TID/stat; None where unreadable."""
    n, read = 0, 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids[:cap]:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            # "pid (comm) S ...": the state follows the last ')' (a comm may hold spaces and parentheses)
            state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]
            read += 1
            n += state == b"R"
    return n if read else None


class CgroupQuota:
    """The CPU quota of the watched process's own cgroup (it may differ from the watch's: a job step, a container
    the watch is outside of) and how often the quota held it back: the share of the quota's periods in which the
    cgroup was throttled (cpu.stat nr_throttled / nr_periods; v2 cpu.max and cpu.stat, v1 cpu.cfs_quota_us and
    cpu.stat, the Linux scheduler's CFS bandwidth control, Documentation/scheduler/sched-bwc.rst). The tightest
    quota up the cgroup's path is reported; throttling is read where that quota is set."""

    def __init__(self, base: str = "/sys/fs/cgroup") -> None:
        self.base = base
        self._dirs: Dict[int, List[str]] = {}
        self._prev: Dict[str, Tuple[int, int]] = {}
        self._read_at = 0.0

    REREAD_S = 2.0

    def _paths(self, pid: int) -> List[str]:
        now = time.monotonic()
        if pid in self._dirs and now - self._read_at < self.REREAD_S:
            return self._dirs[pid]
        self._read_at = now  # read again now and then: a process may be moved into another cgroup
        out: List[str] = []
        try:
            with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            parts = line.split(":", 2)
            if len(parts) != 3:
                continue
            _, ctrls, path = parts
            if ctrls == "" and os.path.exists(f"{self.base}/cgroup.controllers"):
                roots = [self.base]
            elif "cpu" in ctrls.split(","):
                roots = [d for d in (f"{self.base}/{ctrls}", f"{self.base}/cpu,cpuacct", f"{self.base}/cpu")
                         if os.path.isdir(d)][:1]
            else:
                continue
            for root in roots:
                p = path or "/"
                while True:
                    out.append((root + p).rstrip("/") or root)
                    if p in ("/", ""):
                        break
                    p = os.path.dirname(p.rstrip("/")) or "/"
        self._dirs = {pid: out}
        return out

    @staticmethod
    def _quota_of(d: str) -> Optional[float]:
        try:
            with open(f"{d}/cpu.max", encoding="ascii") as fh:
                q, per = fh.read().split()[:2]
            return None if q == "max" else int(q) / int(per)
        except (OSError, ValueError):
            pass
        try:
            with open(f"{d}/cpu.cfs_quota_us", encoding="ascii") as fh:
                q = int(fh.read())
            with open(f"{d}/cpu.cfs_period_us", encoding="ascii") as fh:
                per = int(fh.read())
            return q / per if q > 0 and per > 0 else None
        except (OSError, ValueError):
            return None

    @staticmethod
    def _periods(d: str) -> Optional[Tuple[int, int]]:
        try:
            with open(f"{d}/cpu.stat", encoding="ascii") as fh:
                kv = dict(line.split()[:2] for line in fh if len(line.split()) >= 2)
            return int(kv["nr_periods"]), int(kv["nr_throttled"])
        except (OSError, ValueError, KeyError):
            return None

    def read(self, pid: Optional[int]) -> Optional[Dict[str, Any]]:
        if pid is None:
            return None
        best: Optional[Tuple[float, str]] = None
        for d in self._paths(pid):
            q = self._quota_of(d)
            if q is not None and (best is None or q < best[0]):
                best = (q, d)
        if best is None:
            return None
        q, d = best
        out: Dict[str, Any] = {"quota_cpus": round(q, 2)}
        now = self._periods(d)
        prev = self._prev.get(d)
        if now is not None:
            self._prev = {d: now}
            if prev is not None and now[0] > prev[0]:
                out["throttled_pct"] = round(100.0 * max(0, now[1] - prev[1]) / (now[0] - prev[0]), 1)
        return out


def _descendants(root: int) -> Optional[List[int]]:
    """``root`` and its descendants from /proc/PID/task/TID/children (Linux 3.5+, CONFIG_PROC_CHILDREN): reads
    the watched tree only, where psutil's children() reads every process on the machine. None where the file
    does not exist; [] when ``root`` is gone."""
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        return None if os.path.exists(f"/proc/{root}") else []
    out, todo = [], [root]
    while todo and len(out) < 4096:
        pid = todo.pop()
        out.append(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                    todo.extend(int(x) for x in fh.read().split())
            except (OSError, ValueError):
                continue
    return out


# --------------------------------------------------------------------------- the host


def _procs_running() -> Optional[int]:
    """Threads running or ready to run right now, machine-wide (/proc/stat procs_running, less this reader),
    vmstat's "r" column: above the CPUs available, threads queue for a core."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("procs_running "):
                    return max(0, int(line.split()[1]) - 1)
    except (OSError, ValueError):
        pass
    return None


def _cgroup_usage_s() -> Optional[float]:
    """CPU seconds the cgroup used (v2 cpu.stat usage_usec, v1 cpuacct.usage)."""
    try:
        with open("/sys/fs/cgroup/cpu.stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    except (OSError, ValueError):
        pass
    for path in ("/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage"):
        try:
            with open(path, encoding="ascii") as fh:
                return int(fh.read().strip()) / 1e9
        except (OSError, ValueError):
            continue
    return None


def data_devices(paths: List[str]) -> Dict[str, str]:
    """Data path -> the block device name its filesystem sits on ("nvme0n1p2" -> counters), when local."""
    out: Dict[str, str] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        major, minor = os.major(st.st_dev), os.minor(st.st_dev)
        try:
            link = os.path.realpath(f"/sys/dev/block/{major}:{minor}")
        except OSError:
            continue
        name = os.path.basename(link)
        if os.path.exists(f"/sys/dev/block/{major}:{minor}"):
            out[path] = name
    return out


class HostReader:
    """Host CPU (busy, iowait), the cgroup's CPU use, memory and swap, /dev/shm, disks and network receive."""

    def __init__(self, unseen: Unseen, data_paths: Optional[List[str]] = None) -> None:
        self.unseen = unseen
        self.devices = data_devices(data_paths or [])
        for p in data_paths or []:
            if p not in self.devices:
                self.unseen.add(f"{p}: no local block device (a network or virtual filesystem): disk counters "
                                "not read; network receive stands in")
        self._cpu = psutil.cpu_times()
        self._disk = self._disks()
        self._net = self._net_rx()
        self._cg = _cgroup_usage_s()
        self._t = time.monotonic()
        if self._cg is None:
            self.unseen.add("cgroup CPU use not readable (no cpu.stat / cpuacct.usage)")

    def _disks(self) -> Dict[str, Any]:
        try:
            return psutil.disk_io_counters(perdisk=True) or {}
        except (OSError, RuntimeError):
            self.unseen.add("disk counters not readable (/proc/diskstats)")
            return {}

    @staticmethod
    def _net_rx() -> Optional[int]:
        try:
            c = psutil.net_io_counters()
            return c.bytes_recv if c else None
        except (OSError, RuntimeError):
            return None

    def _watched_disks(self, now: Dict[str, Any]) -> List[str]:
        if self.devices:
            return sorted({d for d in self.devices.values() if d in now})
        # no --data: the whole disks (not partitions) that did any I/O
        disks = [n for n in now if n.startswith(_DISK_NAMES) and os.path.exists(f"/sys/block/{n}")]
        return sorted(disks)

    def read(self) -> Dict[str, Any]:
        now_t = time.monotonic()
        dt = max(now_t - self._t, 1e-6)
        cpu = psutil.cpu_times()
        prev = self._cpu
        total = sum(cpu) - sum(prev)
        idle = (cpu.idle - prev.idle) + (getattr(cpu, "iowait", 0.0) - getattr(prev, "iowait", 0.0))
        iowait = getattr(cpu, "iowait", 0.0) - getattr(prev, "iowait", 0.0)
        out: Dict[str, Any] = {
            "cpu_busy_pct": round(100.0 * (total - idle) / total, 1) if total > 0 else None,
            "cpu_iowait_pct": round(100.0 * iowait / total, 1) if total > 0 else None,
        }
        rq = _procs_running()
        if rq is not None:
            out["run_queue"] = rq
        cg = _cgroup_usage_s()
        out["cgroup_cpu_used"] = round((cg - self._cg) / dt, 2) if cg is not None and self._cg is not None else None
        self._cg = cg
        try:
            vm, sw = psutil.virtual_memory(), psutil.swap_memory()
            out["mem_used_pct"] = round(vm.percent, 1)
            out["swap_used_pct"] = round(sw.percent, 1) if sw.total else 0.0
        except (OSError, RuntimeError):
            pass
        try:
            out["shm_used_bytes"] = shutil.disk_usage("/dev/shm").used
        except OSError:
            out["shm_used_bytes"] = None
        disks = self._disks()
        watched = {}
        for name in self._watched_disks(disks):
            a, b = self._disk.get(name), disks.get(name)
            if a is None or b is None:
                continue
            ios = (b.read_count - a.read_count) + (b.write_count - a.write_count)
            io_ms = (b.read_time - a.read_time) + (b.write_time - a.write_time)
            watched[name] = {
                "read_mbps": round((b.read_bytes - a.read_bytes) / dt / 1e6, 2),
                "write_mbps": round((b.write_bytes - a.write_bytes) / dt / 1e6, 2),
                "iops": round(ios / dt, 1),
                "await_ms": round(io_ms / ios, 2) if ios > 0 else None,
                "util_pct": round(min(100.0, max(0.0, 100.0 * (getattr(b, "busy_time", 0) - getattr(a, "busy_time", 0))
                                                  / (dt * 1000.0))), 1) if hasattr(b, "busy_time") else None,
            }
        out["disks"] = watched
        self._disk = disks
        rx = self._net_rx()
        out["net_rx_mbps"] = round((rx - self._net) / dt / 1e6, 2) if rx is not None and self._net is not None else None
        self._net = rx
        self._cpu = cpu
        self._t = now_t
        return out


def cpus_available(pid: Optional[int] = None) -> Tuple[Optional[float], str]:
    """CPUs the watched process may use: its affinity, capped by the cgroup quota; and how that was told."""
    from ..probes.host import read_cgroup_limits

    try:
        n: Optional[float] = float(len(os.sched_getaffinity(pid or 0)))
        how = "CPU affinity"
    except (AttributeError, OSError):
        n, how = float(os.cpu_count() or 0) or None, "os.cpu_count()"
    try:
        _, quota, _ = read_cgroup_limits("/")
    except Exception:  # noqa: BLE001 - a cgroup layout the reader does not know: the affinity stands
        quota = None
    if quota and n and quota < n:
        return round(quota, 2), "cgroup CPU quota"
    return n, how
