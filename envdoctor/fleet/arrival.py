"""Every rank's arrival and departure, tracked from its launch in the launcher's own store (issue 41).

Before this, a rank was known to rank 0 only once the process group had formed and only when gloo noticed it
gone: a rank that died before or during start-up was never named, and one killed after sending its report was
listed like the healthy ones while rank 0, stopped by torchrun, took the blame.

Two parts, both over torch.distributed's own TCPStore (no transport of envdoctor's):

- **the board**: each rank writes one key (``envdoctor-fleet/<run>/<rank>``) with its host, pid, local and node
  rank and the time of each stage it reached: ``started`` (torch imported, before ``init_process_group``),
  ``pg-formed``, ``reported`` (its record sent to rank 0) and ``done``. Under torchrun the store is the agent's
  (``TORCHELASTIC_USE_AGENT_STORE=True``: torch/distributed/rendezvous.py ``_create_c10d_store`` connects every
  worker as a client to MASTER_ADDR:MASTER_PORT, which the agent hosts before it starts any worker), so a rank
  can write before any process group exists (the c10d rendezvous shares its store the same way:
  dynamic_rendezvous.py ``use_agent_store``, unless TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1); elsewhere (srun, a PyTorchJob) rank 0 hosts it as
  ``init_process_group`` would (``multi_tenant``: the same port in the same process). Rank 0 reads every key
  without waiting (``check`` then ``get``) whenever it must say who is missing.
- **the exit record**: ``supervise`` forks the rank once torch is imported (one thread then, so the fork is
  safe; the parent needs torch's TCPStore the moment its child dies, and shares its pages): the parent (the pid the launcher
  started and watches) only waits, and when its child ends other than cleanly it writes the exit code or the
  signal (``envdoctor-fleet/<run>/<rank>/exit``) and then leaves the same way (the same code, or the same signal
  raised on itself), so torchrun's agent sees exactly what it would have seen and reacts only after the death
  is on the board. Rank 0 is supervised too: when it dies before its report is written (``report_written``
  sets a byte of memory the two share), its supervisor writes the report instead (``supervise``'s ``orphan``:
  rank 0 named as dead, the others as the board had them, none blamed), then leaves the same way. torchrun
  signals a worker's whole process group (torch/distributed/elastic/multiprocessing/
  subprocess_handler/subprocess_handler.py: ``start_new_session=True`` and ``os.killpg`` in ``close``), so its
  SIGTERM reaches the child directly; the parent ignores it and records no exit for a stop it was told of. A
  `kill -9` aimed at the parent itself leaves the child to record it (``watch_parent``, ``record_lost_parent``).
  The child asks its parent whether it is there (``parent_alive``: a pipe the parent answers) before it writes
  ``done``: a process that took SIGKILL runs none of its own code afterwards, so an answer proves the parent
  outlived the question, and no answer (end of file) proves it is gone, however late the kernel reparents the
  child (``os.getppid`` changes only once the killed parent has finished exiting: on a loaded box, after the
  child wrote ``done`` and rank 0 its report).

A rank with no key at all never started envdoctor (its interpreter failed, or it was not launched yet); it is
named by the launcher's placement (torchrun gives each node a block of LOCAL_WORLD_SIZE consecutive ranks,
torch/distributed/elastic/agent/server/api.py ``_assign_worker_ranks``), with the host of its node where any
rank of that node arrived.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import select
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

PREFIX = "envdoctor-fleet"
PARENT: List[Optional[int]] = [None]  # in a supervised rank's child: the pid of its supervisor (the launched one)
CHANNEL: List[Optional[Channel]] = [None]  # in a supervised rank's child: its line to the supervisor
ANSWER_S = 10.0  # how long a child waits for its living supervisor's answer (a loaded box schedules it late)
STAGES = ("started", "pg-formed", "reported", "done")
CONNECT_S = 10.0  # the supervisor's connection to the store after its child died (the store is up: it was used)


def run_key(env: Mapping[str, str]) -> str:
    """This launch's keys: torchrun's run id and restart count (a restarted worker group writes afresh)."""
    return f"{PREFIX}/{env.get('TORCHELASTIC_RUN_ID') or 'job'}/{env.get('TORCHELASTIC_RESTART_COUNT') or '0'}"


def connect(env: Mapping[str, str], rank: int, world_size: int, timeout_s: float, host_store: bool = True) -> Any:
    """A TCPStore on the launcher's rendezvous address (see the module's docstring); raises what TCPStore raises."""
    from torch.distributed import TCPStore

    timeout = _dt.timedelta(seconds=max(1.0, timeout_s))
    addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    if env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" or rank != 0 or not host_store:
        return TCPStore(addr, port, world_size, False, timeout)
    return TCPStore(addr, port, world_size, True, timeout, multi_tenant=True)


class Board:
    """This rank's key on the board, and rank 0's reading of everyone's. Never raises: a store that fails is
    ``self.error`` (what the report says instead of the arrivals)."""

    def __init__(self, store: Any, rank: int, key: str, me: Dict[str, Any]):
        self.store = store
        self.rank = rank
        self.key = key
        self.me = dict(me, stages={})
        self.error: Optional[str] = None

    def announce(self, stage: str, **extra: Any) -> None:
        self.me["stages"][stage] = round(time.time(), 3)
        self.me["stage"] = stage
        self.me.update(extra)
        try:
            self.store.set(f"{self.key}/{self.rank}", json.dumps(self.me, sort_keys=True))
            if stage == "done":
                self.store.add(f"{self.key}/done", 1)
        except Exception as e:  # noqa: BLE001 - the board is a help: the run goes on without it
            self.error = f"rank {self.rank} could not write to the store: {_short(e)}"

    def record_lost_parent(self) -> bool:
        """When this rank's supervisor is gone (a `kill -9` aimed at the pid the launcher started), the child
        records that on the supervisor's behalf, once: its exit is then on the board although nobody waited for
        it. True when it wrote the record."""
        parent = PARENT[0]
        if parent is None or self.me.get("lost_parent"):
            return False
        alive = parent_alive()
        if alive is None:  # no answer either way in time: the kernel's word (late, never wrong)
            alive = os.getppid() == parent
        if alive:
            return False
        self.me["lost_parent"] = True
        record = {"lost_parent": True, "pid": parent, "hostname": self.me.get("hostname"),
                  "stage": self.me.get("stage") or "launched", "at": round(time.time(), 3)}
        try:
            if not self.store.check([f"{self.key}/{self.rank}/exit"]):
                self.store.set(f"{self.key}/{self.rank}/exit", json.dumps(record, sort_keys=True))
                self.store.add(f"{self.key}/exited", 1)
        except Exception as e:  # noqa: BLE001
            self.error = f"rank {self.rank} could not write to the store: {_short(e)}"
            return False
        return True

    def wait_exit(self, deadline: float) -> None:
        """Wait (until ``deadline``, time.monotonic) for any exit record: rank 0, stopped by the launcher, gives
        a rank whose exit its child records on the supervisor's behalf the moment that takes."""
        while time.monotonic() < deadline and not self.error and not self.counts()["exited"]:
            time.sleep(0.1)

    def counts(self) -> Dict[str, int]:
        """How many ranks wrote ``done``, and how many exit records there are (add 0: a read that never waits)."""
        try:
            return {"done": int(self.store.add(f"{self.key}/done", 0)),
                    "exited": int(self.store.add(f"{self.key}/exited", 0))}
        except Exception as e:  # noqa: BLE001
            self.error = f"the store could not be read: {_short(e)}"
            return {"done": 0, "exited": 0}

    def read(self, world_size: int) -> List[Dict[str, Any]]:
        """Every rank's key and exit record as they are now (no wait): one entry per rank that wrote either."""
        out = []
        for r in range(world_size):
            entry: Dict[str, Any] = {}
            try:
                if self.store.check([f"{self.key}/{r}"]):
                    entry = _load(self.store.get(f"{self.key}/{r}"))
                if self.store.check([f"{self.key}/{r}/exit"]):
                    entry["exit"] = _load(self.store.get(f"{self.key}/{r}/exit"))
            except Exception as e:  # noqa: BLE001
                self.error = f"the store could not be read: {_short(e)}"
                break
            if entry:
                entry["rank"] = r
                out.append(entry)
        return out

    def wait_settled(self, expected: int, deadline: float) -> None:
        """Wait (until ``deadline``, time.monotonic) until ``expected`` ranks wrote ``done`` or an exit record:
        a rank that dies right after its report is on the board a moment later, before rank 0 reads it."""
        while time.monotonic() < deadline:
            c = self.counts()
            if self.error or c["done"] + c["exited"] >= expected:
                return
            time.sleep(0.1)


def _load(raw: Any) -> Dict[str, Any]:
    try:
        value = json.loads(bytes(raw).decode("utf-8"))
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text[:200]


def identity(place: Any) -> Dict[str, Any]:
    return {"rank": place.rank, "hostname": place.hostname, "pid": os.getpid(), "local_rank": place.local_rank,
            "node_rank": place.node_rank, "parent_pid": os.getppid()}


def placement(rank: int, place: Any, arrivals: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Where the launcher put a rank that never wrote its key: torchrun gives each node a block of
    LOCAL_WORLD_SIZE consecutive ranks (the same --nproc-per-node on every node), so its node rank is
    rank // LOCAL_WORLD_SIZE and its host this node's, or that of any rank of its node that arrived. Empty when
    the launcher does not say (no LOCAL_WORLD_SIZE)."""
    lws = place.local_world_size
    if not lws:
        return {}
    node = rank // lws
    host = place.hostname if place.node_rank is not None and node == place.node_rank else next(
        (a.get("hostname") for a in arrivals if isinstance(a.get("rank"), int) and a["rank"] // lws == node
         and a.get("hostname")), None)
    out: Dict[str, Any] = {"node_rank": node, "local_rank": rank % lws, "host_from": "placement"}
    if host:
        out["hostname"] = host
    return out


def describe_exit(status: int) -> Dict[str, Any]:
    """A waitpid status as the record says it: {"code": N} or {"signal": "SIGKILL", "signum": 9}."""
    if os.WIFSIGNALED(status):
        num = os.WTERMSIG(status)
        try:
            name = signal.Signals(num).name
        except ValueError:
            name = f"signal {num}"
        return {"signal": name, "signum": num}
    return {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}


# ------------------------------------------------------------------ the start-up's signals
# Besides cli/signals.py (the command line's one signal runtime), the only place that touches signals, allowed by
# tests/unit/test_layers.py: the mask below is a rank's own start-up (before the runtime's handler can do anything
# useful: an import cut by a stop leaves no torch to read the board with), and ``supervise``'s handler is that of
# another process role, the forked parent that only waits for the rank and records how it ended.

STOP = tuple(s for s in (getattr(signal, n, None) for n in ("SIGTERM", "SIGINT", "SIGHUP")) if s is not None)


def hold_stop_signals() -> None:
    """Block the stop signals while torch imports: when a rank dies at once, the launcher's SIGTERM reaches
    rank 0 while it is still importing, and an import cut there leaves no torch to read the board with. The
    signal stays pending until ``release_stop_signals`` (the start of the rank's run, inside its handler)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP)


def _pending() -> set:
    return set(signal.sigpending()) if hasattr(signal, "sigpending") else set()


def release_stop_signals() -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP)


# ------------------------------------------------------------------ the supervisor


class Channel:
    """A supervised child's line to its supervisor, made before the fork: a question the parent answers while
    it lives (``parent_alive``), and one byte of shared memory the child sets once rank 0's report is written
    (``report_written``)."""

    def __init__(self) -> None:
        import mmap

        self.ask_r, self.ask_w = os.pipe()
        self.ans_r, self.ans_w = os.pipe()
        self.flag = mmap.mmap(-1, 1)  # MAP_SHARED | MAP_ANONYMOUS: the same page in both processes
        self.lock = threading.Lock()

    def child_side(self) -> None:
        for fd in (self.ask_r, self.ans_w):
            os.close(fd)

    def parent_side(self) -> None:
        for fd in (self.ask_w, self.ans_r):
            os.close(fd)
        threading.Thread(target=self._answer, name="envdoctor-fleet-answer", daemon=True).start()

    def _answer(self) -> None:
        while True:
            try:
                if not os.read(self.ask_r, 1):
                    return  # the child (and every holder of its end) is gone
                os.write(self.ans_w, b"y")
            except OSError:
                return

    def written(self) -> bool:
        return self.flag[0] == 1


def parent_alive(timeout_s: float = ANSWER_S) -> Optional[bool]:
    """In a supervised child: True when the supervisor answered (it was alive after the question), False when
    its end of the pipe closed (it is gone), None when not supervised or no answer came within ``timeout_s``."""
    ch = CHANNEL[0]
    if ch is None:
        return None
    with ch.lock:
        try:
            poll = select.poll()  # not select(): a rank of a large job may hold fds past FD_SETSIZE
            poll.register(ch.ans_r, select.POLLIN)
            while poll.poll(0):  # an answer that came after an earlier timeout
                if not os.read(ch.ans_r, 1):
                    return False
            os.write(ch.ask_w, b"?")
            if not poll.poll(timeout_s * 1000):
                return None
            return os.read(ch.ans_r, 1) == b"y"
        except BrokenPipeError:  # its reading end closed: the parent exited
            return False
        except OSError:
            return None


def report_written() -> None:
    """Rank 0's child: its report is out (stdout or -o), so its supervisor writes none when it ends."""
    ch = CHANNEL[0]
    if ch is not None:
        ch.flag[0] = 1


def supervise(place: Any, env: Mapping[str, str], orphan: Optional[Callable[[Dict[str, Any], bool], None]] = None
              ) -> None:
    """Fork: the child returns and does the rank's work; the parent waits for it, records an unclean end on the
    board, and leaves the way its child did (it never returns). Rank 0 only with ``orphan``: when its child ends
    before its report is written (other than with exit code 2, the command's own "could not take part", said on
    stderr), the parent records the end (unless the launcher stopped it: then rank 0 died of nothing of its own)
    and calls ``orphan(end, stopped)``, which writes the report. Not where fork is not there, nor with
    ENVDOCTOR_FLEET_SUPERVISE=0."""
    if (place.rank == 0 and orphan is None) or not hasattr(os, "fork") or \
            env.get("ENVDOCTOR_FLEET_SUPERVISE") == "0":
        return
    sys.stdout.flush()
    sys.stderr.flush()
    stopped: List[int] = []

    def told(signum: int, _frame: Any) -> None:  # the launcher stops the group: the child got it too
        stopped.append(signum)

    parent = os.getpid()
    channel = Channel()
    # a stop that came while torch imported is pending here (held: hold_stop_signals), and a fork's child starts
    # with no pending signal: it is sent on to the child below, which takes it once it releases its own hold (a
    # rank that dies in rank 0's first seconds: rank 0's work would otherwise never hear the launcher's stop)
    held = [s for s in STOP if s in _pending()]
    pid = os.fork()
    if pid == 0:
        PARENT[0] = parent
        channel.child_side()
        CHANNEL[0] = channel
        return
    for sig in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            try:
                signal.signal(sig, told)
            except (ValueError, OSError):
                pass
    for sig in held:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    release_stop_signals()  # held while torch imported (cli/fleet.py); the child releases its own
    channel.parent_side()
    end: Dict[str, Any] = {"code": 1}
    try:
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:  # reaped elsewhere: nothing to report
                status = 0
                break
        end = describe_exit(status)
        if place.rank == 0 and orphan is not None:
            if not channel.written() and end.get("code") != 2:
                record = end if stopped else _record_exit(place, env, pid, end)
                try:
                    orphan(dict(record or end, pid=pid), bool(stopped))
                except Exception as e:  # noqa: BLE001 - the launcher still sees the exit
                    sys.stderr.write(f"envdoctor fleet: rank 0 ended ({end}) and its report could not be written "
                                     f"in its place: {type(e).__name__}: {_short(e)}\n")
        elif end.get("code") != 0 and not stopped:
            _record_exit(place, env, pid, end)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        if "signum" in end:  # the same death for the launcher: the signal on itself, by its default action
            try:
                signal.signal(end["signum"], signal.SIG_DFL)
            except (ValueError, OSError):  # SIGKILL and SIGSTOP have no handler to reset
                pass
            try:
                os.kill(os.getpid(), end["signum"])
                time.sleep(1.0)  # the signal is delivered at once; os._exit below only if it was not fatal
            except OSError:
                pass
        os._exit(end.get("code", 128 + end.get("signum", 0)))


def _record_exit(place: Any, env: Mapping[str, str], child: int, end: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The exit record, and the last stage the child wrote (what it was doing when it died); the record as
    written, or None when the store could not take it."""
    try:
        store = connect(env, place.rank, place.world_size, CONNECT_S, host_store=False)
        key = run_key(env)
        last = {}
        if store.check([f"{key}/{place.rank}"]):
            last = _load(store.get(f"{key}/{place.rank}"))
        record = dict(end, pid=child, hostname=place.hostname, at=round(time.time(), 3),
                      stage=last.get("stage") or "launched")
        store.set(f"{key}/{place.rank}/exit", json.dumps(record, sort_keys=True))
        store.add(f"{key}/exited", 1)
        return record
    except Exception as e:  # noqa: BLE001 - the launcher still sees the exit; only the board misses it
        sys.stderr.write(f"envdoctor fleet: rank {place.rank}: its exit ({end}) could not be recorded: {_short(e)}\n")
        return None


def watch_parent(board: Any, interval_s: float = 0.2) -> None:
    """In a supervised rank's child: a thread that notices the supervisor gone (its parent pid changes), records
    it on the board (``board()`` gives the board once the start-up made it) and ends this process with SIGTERM,
    so the rank's work does not outlive the process the launcher watches. The main thread may sit in a C++ wait
    then: this thread runs regardless."""
    if PARENT[0] is None:
        return

    def watch() -> None:
        while os.getppid() == PARENT[0]:
            time.sleep(interval_s)
        b = board()
        if b is not None:
            b.record_lost_parent()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="envdoctor-fleet-parent", daemon=True).start()
