"""What each rank does, in rounds, every round with a deadline:

1. ``init_process_group`` (the launcher's rendezvous; ``timeout`` bounds every collective). With NCCL, a gloo
   group of the same ranks carries the messages (CPU tensors; gloo names the peer that went away).
2. hello: every rank tells rank 0 who it is (host, rank, local rank, its device: GPU name, UUID, bus id).
3. its own part: a node's local rank 0 collects the node's facts (``app.collect``, the probes of `check`);
   with --bench every rank runs its matmul and host-to-device copy.
4. report: every rank sends rank 0 its record; rank 0 waits until one deadline, then names who is missing.
5. go: rank 0 tells every rank that answered whether the all-reduce sweep runs (only when all answered: a
   collective with a rank missing would only time out) and how the nodes are grouped.
6. the sweep (--bench): all ranks, then within each node and across nodes where both exist; with NCCL, each
   rank then reads NCCL's own INFO log of this run for the transport it chose and sends it to rank 0.

Rank 0 alone writes the report; the other ranks print nothing on stdout.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .. import __version__
from ..model.fleet import FleetData, group_nodes
from . import arrival, comm, testing
from .arrival import release_stop_signals
from .launch import Place


def _utc(t: Optional[float]) -> Optional[str]:
    if t is None:
        return None
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _gpu(torch: Any, index: int) -> Dict[str, Any]:
    p = torch.cuda.get_device_properties(index)
    uuid = getattr(p, "uuid", None)
    uuid = f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith("GPU-") else (str(uuid) if uuid else None)
    bus = None
    if hasattr(p, "pci_bus_id"):
        bus = f"{p.pci_domain_id:08X}:{p.pci_bus_id:02X}:{p.pci_device_id:02X}.0"
    return {"name": p.name, "uuid": uuid, "pci_bus_id": bus, "index": index,
            "capability": f"{p.major}.{p.minor}", "memory_total_bytes": int(p.total_memory)}


# what each rank's own environment must agree on (checks/fleet.py compares them): thread counts, how many GPUs
# each rank may see, and NCCL's settings; secrets never travel (only these names, whatever else is set)
RANK_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
            "CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_NCCL_ASYNC_ERROR_HANDLING")


def rank_env(env: Dict[str, str]) -> Dict[str, Optional[str]]:
    """The variables of RANK_ENV and every NCCL_* one, as this rank's process sees them (None: unset)."""
    out: Dict[str, Optional[str]] = {k: env.get(k) for k in RANK_ENV}
    out.update({k: v for k, v in env.items() if k.startswith("NCCL_")})
    return out


def identity(torch: Any, place: Place, device: Any) -> Dict[str, Any]:
    rec: Dict[str, Any] = {
        "rank": place.rank, "local_rank": place.local_rank, "node_rank": place.node_rank,
        "world_size": place.world_size, "local_world_size": place.local_world_size, "hostname": place.hostname,
        "pid": os.getpid(), "envdoctor_version": __version__, "python_version": platform.python_version(),
        "python": sys.executable, "torch_version": str(torch.__version__), "torch_cuda": torch.version.cuda,
        "nccl_version": None, "cudnn_version": None, "device": str(device), "gpu": None,
        "env": rank_env(os.environ),
    }
    if device.type == "cuda":
        try:
            rec["gpu"] = _gpu(torch, device.index)
        except Exception as e:  # noqa: BLE001
            rec["gpu"] = {"error": comm.short_error(e)}
        try:
            v = torch.cuda.nccl.version()
            rec["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # noqa: BLE001 - a build without NCCL
            pass
        try:
            rec["cudnn_version"] = torch.backends.cudnn.version()
        except Exception:  # noqa: BLE001
            pass
    return rec


class Options:
    def __init__(self, backend: Optional[str], timeout_s: float, bench: bool, sizes: Optional[List[int]],
                 bench_budget_s: float, collect: Callable[[], Dict[str, Any]], collect_timeout_s: float):
        self.backend = backend
        self.timeout_s = timeout_s
        self.bench = bench
        self.sizes = sizes
        self.bench_budget_s = bench_budget_s
        # the node's facts as a dict: handed in by services/fleet.py (services.collect with this interpreter), so
        # that the fleet package, a source of facts, never imports the services above it
        self.collect = collect
        self.collect_timeout_s = collect_timeout_s  # how long that collection may wait for the interpreter


def run_rank(place: Place, options: Options, env: Dict[str, str]) -> Optional[FleetData]:
    """This rank's part; rank 0 returns the fleet's data (partial when interrupted: see FleetData.interrupted),
    the others None. A rank that cannot take part raises (its message goes to stderr)."""
    import torch
    import torch.distributed as dist

    from ..probes.runner import INTERRUPT, Interrupted

    started = time.time()
    cuda = bool(torch.cuda.is_available())
    backend = options.backend or ("nccl" if cuda else "gloo")
    nccl_file = None
    if backend == "nccl" and "NCCL_DEBUG" not in env and "NCCL_DEBUG_FILE" not in env:
        # NCCL writes its INFO lines (the transport it chose) to this file: this run's own log, read after the sweep
        nccl_file = os.path.join(tempfile.gettempdir(), f"envdoctor-nccl-{os.getpid()}.log")
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ["NCCL_DEBUG_FILE"] = nccl_file
    if cuda and backend == "nccl":
        device = torch.device("cuda", place.local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    elif cuda:
        device = torch.device("cuda", place.local_rank % torch.cuda.device_count())
    else:
        device = torch.device("cpu")
    timeout = _dt.timedelta(seconds=options.timeout_s)
    # gloo pairs only where messages go (rank 0 and each rank), not gloo's default full mesh: see comm.py
    os.environ.setdefault("TORCH_GLOO_LAZY_INIT", "1")
    fd_note = comm.ensure_fds(comm.fds_needed(place.rank, place.world_size))
    if fd_note:
        sys.stderr.write(f"envdoctor fleet: rank {place.rank}: {fd_note}\n")
    me = identity(torch, place, device)
    others = list(range(1, place.world_size))
    fleet = FleetData(backend=backend, world_size=place.world_size, timeout_s=options.timeout_s, ranks=[],
                      started_at=_utc(started))
    hellos: Dict[int, comm.Arrival] = {}
    payloads: Dict[int, comm.Arrival] = {}
    gather: Optional[comm.Gatherer] = None
    stage = "start-up"
    record = dict(me)
    up = _StartUp(dist, place, options, env, backend, timeout)
    arrival.watch_parent(lambda: up.board)  # every rank is supervised (rank 0 too: its supervisor reports for it)
    try:
        release_stop_signals()  # held since before `import torch` (cli/fleet.py): a stop that came then lands here
        testing.at(env, place.rank, "before-start")
        if not up.wait(started + options.timeout_s if place.rank == 0 else None):
            # rank 0 stops waiting: a rank died before the group formed, or did not come by the deadline; the
            # group can never form, and the board says who (the others are stopped when rank 0 leaves)
            fleet.deadline_at = round(time.time(), 3)
            for r in others:
                hellos[r] = comm.Arrival(error=up.why_not())
            _assemble(fleet, hellos, {0: comm.Arrival(value=record, at=time.time())}, me)
            for m in fleet.missing:
                m["stage"] = "start-up"
            _read_board(fleet, up.board, place)
            fleet.duration_s = round(time.time() - started, 3)
            return fleet
        ctrl = up.ctrl
        stage = "hello"
        testing.at(env, place.rank, "after-init")
        if place.rank == 0:
            gather = comm.Gatherer(torch, dist, ctrl, comm.TAG_HELLO, others,
                                   time.monotonic() + options.timeout_s).start()
            hellos = gather.wait()
        else:
            comm.send(torch, dist, me, 0, ctrl, comm.TAG_HELLO, 2 * options.timeout_s)
        stage = "its own part"
        if place.local_rank == 0:
            record["facts"] = options.collect()
        if options.bench:
            from .measure import rank_kernels

            record["bench"] = rank_kernels(torch, device, options.bench_budget_s)
        testing.apply(env, place.rank, record)
        record["sockets"] = comm.open_sockets()  # what this rank holds as it reports (see comm.py)
        testing.at(env, place.rank, "before-gather")
        stage = "report"
        if place.rank != 0:
            # rank 0 may still be collecting its own node's facts: a send waits as long as a go does
            patience = 2 * options.timeout_s + options.collect_timeout_s + 60
            comm.send(torch, dist, record, 0, ctrl, comm.TAG_PAYLOAD, patience)
            _announce(up.board, "reported")
            testing.at(env, place.rank, "after-report")
            # from here on rank 0 has this rank's part: whatever fails now is rank 0's to report
            try:
                go = comm.recv(torch, dist, 0, ctrl, comm.TAG_GO, patience)
                if go.get("sweep"):
                    _sweep_and_after(torch, dist, place, options, device, go, ctrl, nccl_file, record)
            except Exception as e:  # noqa: BLE001
                sys.stderr.write(f"envdoctor fleet: rank {place.rank}: sent its report; then: {comm.short_error(e)}\n")
            INTERRUPT.check()  # a stop during the go or the sweep (C++ waits: the handler only recorded it)
            if up.board is not None:
                up.board.record_lost_parent()  # its launched process killed meanwhile: the launcher saw a death
            _announce(up.board, "done")
            return None
        said_hello = [r for r in others if hellos.get(r) and hellos[r].value is not None]
        gather = comm.Gatherer(torch, dist, ctrl, comm.TAG_PAYLOAD, said_hello,
                               time.monotonic() + options.timeout_s).start()
        payloads = gather.wait()
        gather = None
        record["sockets"] = comm.open_sockets()  # rank 0 after hearing from every rank
        payloads[0] = comm.Arrival(value=record, at=time.time())
        _announce(up.board, "reported")
        _assemble(fleet, hellos, payloads, me)
        answered = [r for r in said_hello if payloads.get(r) and payloads[r].value is not None]
        sweep = options.bench and not fleet.missing and place.world_size > 1
        if options.bench and fleet.missing:
            fleet.collectives.append({"scope": "all ranks", "ranks": list(range(place.world_size)),
                                      "skipped": "not run: a collective with a rank missing would only time out"})
        go = {"sweep": sweep, "nodes": [n.ranks for n in fleet.nodes], "sizes": options.sizes}
        for r in answered:
            try:
                comm.send(torch, dist, go, r, ctrl, comm.TAG_GO, options.timeout_s)
            except Exception:  # noqa: BLE001, S110 - after a timeout gloo has closed the group's pairs: that rank
                pass  # leaves when rank 0 does; who was missing is already in fleet.missing
        if sweep:
            stage = "all-reduce sweep"
            after = _sweep_and_after(torch, dist, place, options, device, go, ctrl, nccl_file, record, fleet)
            for r, a in after.items():
                rec = fleet.rank(r)
                if rec is not None and a.value is not None:
                    rec["nccl_transport"] = a.value.get("nccl_transport")
        stage = "the end of the run"
        if up.board is not None:
            # a rank that died after its report is on the board a moment later: wait for every rank that
            # answered to be done or to have died (bounded), then read
            # (a rank still neither then is named as of unknown end: checks/fleet.py, never left out)
            # (a go that could not be sent is no reason not to wait: a rank that died is recorded a moment later)
            up.board.wait_settled(len(answered), time.monotonic() + min(SETTLE_S, options.timeout_s))
        INTERRUPT.check()  # a stop while the sweep or the board was waited for: the report says it was stopped
        _read_board(fleet, up.board, place)
        fleet.duration_s = round(time.time() - started, 3)
        return fleet
    except Interrupted as e:
        if place.rank != 0:
            if up.board is not None:
                up.board.record_lost_parent()  # a stop because its supervisor was killed: said before it goes
            raise
        if gather is not None:
            (payloads if stage == "report" else hellos).update(gather.so_far())
        if stage in ("start-up", "hello"):
            for r in others:
                hellos.setdefault(r, comm.Arrival(error=f"{_STOPPED_HELLO} (during {stage})"))
        fleet.interrupted = f"{e.signal_name} at {_utc(time.time())}, during {stage}"
        mine = record
        if place.local_rank == 0 and "facts" not in mine and e.facts is not None:
            mine["facts"] = e.facts.to_dict()  # what collect() had read when the signal came
        payloads.setdefault(0, comm.Arrival(value=mine, at=time.time()))
        _assemble(fleet, hellos, payloads, me, stopped=True)
        if up.board is None and env.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            up.board = _board_now(place, env)  # stopped before the start-up thread reached the store
        if up.board is not None:
            up.board.record_lost_parent()  # rank 0's own launched process killed: that was the stop
            up.board.wait_exit(time.monotonic() + 5.0)  # the cause of the stop, if a child records it now
        if stage == "start-up":
            for m in fleet.missing:
                m["stage"] = "start-up"
        _read_board(fleet, up.board, place)
        fleet.duration_s = round(time.time() - started, 3)
        return fleet


def _board_now(place: Place, env: Dict[str, str]) -> Any:
    from . import arrival

    try:
        store = arrival.connect(env, place.rank, place.world_size, 5.0, host_store=False)
        return arrival.Board(store, place.rank, arrival.run_key(env), arrival.identity(place))
    except Exception:  # noqa: BLE001 - no board: the report says what rank 0 had
        return None


_STOPPED_HELLO = "no hello before rank 0 was stopped"
SETTLE_S = 30.0  # at most this long (and at most --timeout) rank 0 waits for every rank's "done" or exit record


def _announce(board: Any, stage: str) -> None:
    if board is not None:
        board.announce(stage)


class _StartUp:
    """The board, then ``init_process_group``, in a thread: the main thread stays in Python, so the launcher's
    SIGTERM is taken at once (a C++ wait in the main thread would hold it until the group's timeout), and rank 0
    can stop waiting when a rank has died (its exit record is on the board) or at the deadline."""

    def __init__(self, dist: Any, place: Place, options: Options, env: Dict[str, str], backend: str,
                 timeout: _dt.timedelta):
        self.board: Any = None
        self.ctrl: Any = None
        self.error: Optional[BaseException] = None
        self.gave_up: Optional[str] = None
        self._args = (dist, place, options, env, backend, timeout)
        self._thread = threading.Thread(target=self._run, name="envdoctor-fleet-start-up", daemon=True)

    def _run(self) -> None:
        from . import arrival

        dist, place, options, env, backend, timeout = self._args
        try:
            try:
                store = arrival.connect(env, place.rank, place.world_size, options.timeout_s)
                # the backend too: should rank 0 die, its launched process's report says which it was (orphan.py)
                self.board = arrival.Board(store, place.rank, arrival.run_key(env),
                                           dict(arrival.identity(place), backend=backend))
                self.board.announce("started")
            except Exception as e:  # noqa: BLE001 - no board: the run goes on as before it existed
                sys.stderr.write(f"envdoctor fleet: rank {place.rank}: no arrival board: {comm.short_error(e)}\n")
            testing.at(env, place.rank, "during-start")
            dist.init_process_group(backend, timeout=timeout)
            self.ctrl = None if backend == "gloo" else dist.new_group(backend="gloo", timeout=timeout)
            _announce(self.board, "pg-formed")
        except Exception as e:  # noqa: BLE001 - raised again in the main thread
            self.error = e

    def wait(self, deadline: Optional[float]) -> bool:
        """True once the group formed; raises what init_process_group raised (any rank but rank 0, whose report
        says it); False when rank 0 stops waiting: past ``deadline`` (time.time) or a rank's exit recorded."""
        from ..probes.runner import INTERRUPT

        self._thread.start()
        checked = 0.0
        while self._thread.is_alive():
            self._thread.join(0.2)
            INTERRUPT.check()  # a stop (the launcher's SIGTERM, Ctrl-C): the rank's run unwinds with Interrupted
            if deadline is None or not self._thread.is_alive():
                continue
            if time.time() >= deadline:
                self.gave_up = "deadline"
                return False
            if self.board is not None and time.monotonic() - checked >= 1.0:
                checked = time.monotonic()
                if self.board.counts()["exited"]:
                    self.gave_up = "exit"
                    return False
        if self.error is not None:
            if deadline is None:
                raise self.error
            self.gave_up = f"init_process_group failed: {comm.short_error(self.error)}"
            return False
        return True

    def why_not(self) -> str:
        if self.gave_up == "deadline":
            return "the process group had not formed within the deadline"
        if self.gave_up == "exit":
            return "the process group cannot form: a rank died during start-up"
        return f"the process group did not form ({self.gave_up})"


def _read_board(fleet: FleetData, board: Any, place: Place) -> None:
    """The board as it is now, into ``fleet.arrivals``: every rank's key and exit record, and for a missing rank
    that never wrote, the host the launcher placed it on."""
    from .arrival import placement

    if board is None:
        return
    came = {a["rank"]: a for a in board.read(fleet.world_size)}
    for r, a in came.items():  # a rank that died before it announced itself: its exit record says where
        if a.get("stage"):
            continue
        a["stage"] = None
        where = placement(r, place, list(came.values()))
        if (a.get("exit") or {}).get("hostname"):
            where.update(hostname=a["exit"]["hostname"])
            where.pop("host_from", None)
        for k, v in where.items():
            a.setdefault(k, v)
    for m in fleet.missing:
        r = m.get("rank")
        if isinstance(r, int) and r not in came:
            came[r] = dict(placement(r, place, list(came.values())), rank=r, stage=None)
    fleet.arrivals = [came[r] for r in sorted(came)]
    if board.error:
        sys.stderr.write(f"envdoctor fleet: rank {place.rank}: {board.error}\n")


def _assemble(fleet: FleetData, hellos: Dict[int, comm.Arrival], payloads: Dict[int, comm.Arrival],
              me: Dict[str, Any], stopped: bool = False) -> None:
    """Records and nodes from the rounds; the missing ranks with what happened and when they were last heard."""
    ranks: Dict[int, Dict[str, Any]] = {0: dict(me)}
    facts_by_rank: Dict[int, Dict[str, Any]] = {}
    missing = []
    for r in range(1, fleet.world_size):
        h = hellos.get(r)
        if h is not None and h.value is not None:
            ranks[r] = dict(h.value)
            ranks[r]["heard_at"] = _utc(h.at)
        else:
            entry = {"rank": r, "stage": "hello", "last_heard": None,
                     "reason": (h.error if h is not None else "not heard from before rank 0 was stopped")}
            if stopped and (h is None or (h.error or "").startswith(_STOPPED_HELLO)):
                entry["cut_short"] = True  # nothing of its own: rank 0 was stopped first (issue 41)
            missing.append(entry)
    for r, a in sorted(payloads.items()):
        if a.value is not None:
            rec = dict(a.value)
            facts = rec.pop("facts", None)
            if isinstance(facts, dict):
                facts_by_rank[r] = facts
            rec["payload"] = True
            rec["heard_at"] = _utc(a.at)
            ranks[r] = rec
    for r in sorted(ranks):
        if r != 0 and not ranks[r].get("payload") and not any(m["rank"] == r for m in missing):
            a = payloads.get(r)
            reason = a.error if a is not None and a.error else (
                "had not sent its report when rank 0 was stopped" if stopped else "no report")
            entry = {"rank": r, "stage": "report", "reason": reason, "last_heard": ranks[r].get("heard_at")}
            if stopped and not (a is not None and a.error):
                entry["cut_short"] = True
            missing.append(entry)
    fleet.ranks = [ranks[r] for r in sorted(ranks)]
    fleet.missing = sorted(missing, key=lambda m: m["rank"])
    fleet.nodes = group_nodes(fleet.ranks, facts_by_rank)


def _sweep_and_after(torch: Any, dist: Any, place: Place, options: Options, device: Any, go: Dict[str, Any],
                     ctrl: Any, nccl_file: Optional[str], record: Dict[str, Any],
                     fleet: Optional[FleetData] = None) -> Dict[int, comm.Arrival]:
    """The all-reduce sweep on every rank (the same calls in the same order everywhere), then each rank's NCCL
    transport to rank 0. Rank 0 records the results in ``fleet``."""
    from .measure import DEFAULT_SIZES_CPU, DEFAULT_SIZES_GPU, allreduce_sweep, parse_nccl_log

    nodes: List[List[int]] = go.get("nodes") or []
    sizes = go.get("sizes") or (DEFAULT_SIZES_GPU if device.type == "cuda" else DEFAULT_SIZES_CPU)
    n = place.world_size
    scopes = [("all ranks", None, list(range(n)))]
    many_nodes = len(nodes) > 1
    if many_nodes and any(len(ranks) > 1 for ranks in nodes):
        # new_group is collective: every rank creates every group, in the same order
        for ranks in nodes:
            g = dist.new_group(ranks=ranks, timeout=_dt.timedelta(seconds=options.timeout_s))
            if place.rank in ranks and len(ranks) > 1:
                scopes.append((f"intra-node (ranks {','.join(map(str, ranks))})", g, ranks))
        leaders = [ranks[0] for ranks in nodes]
        g = dist.new_group(ranks=leaders, timeout=_dt.timedelta(seconds=options.timeout_s))
        if place.rank in leaders:
            scopes.append((f"inter-node (one rank per node, {len(leaders)} nodes)", g, leaders))
    elif many_nodes:
        scopes[0] = ("all ranks (one per node: inter-node)", None, list(range(n)))
    budget = options.bench_budget_s
    for scope, group, ranks in scopes:
        entry: Dict[str, Any] = {"scope": scope, "ranks": ranks, "backend": dist.get_backend()}
        try:
            entry["sweep"] = allreduce_sweep(torch, dist, group, len(ranks), device, sizes, budget)
        except Exception as e:  # noqa: BLE001 - a failed collective is the finding
            entry["error"] = comm.short_error(e)
        if fleet is not None and (place.rank == 0 or scope.startswith("all")):
            if place.rank == 0:
                fleet.collectives.append(entry)
        if entry.get("error"):
            break
    transport = None
    if nccl_file:
        try:
            with open(nccl_file, encoding="utf-8", errors="replace") as fh:
                transport = parse_nccl_log(fh.read()) or None
            os.unlink(nccl_file)
        except OSError:
            transport = None
    if place.rank != 0:
        comm.send(torch, dist, {"nccl_transport": transport}, 0, ctrl, comm.TAG_GO + 1, options.timeout_s)
        return {}
    record["nccl_transport"] = transport
    if fleet is not None:
        fleet.ranks[0]["nccl_transport"] = transport
    gather = comm.Gatherer(torch, dist, ctrl, comm.TAG_GO + 1, list(range(1, n)),
                           time.monotonic() + options.timeout_s).start()
    return gather.wait()
