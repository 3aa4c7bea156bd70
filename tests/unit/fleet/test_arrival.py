"""The arrival board and the supervisor (envdoctor/fleet/arrival.py) without torch: a store that keeps its keys in
a dict (or a file, across the supervisor's fork), with TCPStore's calls (set, get, check, add)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types

import pytest

from envdoctor.fleet import arrival, testing

pytestmark = pytest.mark.timeout(60)


class DictStore:
    def __init__(self) -> None:
        self.data: dict = {}

    def set(self, key, value):
        self.data[key] = value.encode() if isinstance(value, str) else value

    def get(self, key):
        return self.data[key]

    def check(self, keys):
        return all(k in self.data for k in keys)

    def add(self, key, n):
        self.data[key] = str(int(self.data.get(key, b"0")) + n).encode()
        return int(self.data[key])


class BrokenStore(DictStore):
    def set(self, key, value):
        raise RuntimeError("Connection reset by peer")

    def add(self, key, n):
        raise RuntimeError("Connection reset by peer")


def _place(rank=1, world=4, lws=2, node=0, host="node-a"):
    return types.SimpleNamespace(rank=rank, world_size=world, local_rank=rank % (lws or 1), local_world_size=lws,
                                 node_rank=node, hostname=host)


def test_each_rank_writes_its_stages_and_rank_0_reads_them_without_waiting():
    store = DictStore()
    key = arrival.run_key({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "2"})
    assert key == "envdoctor-fleet/job7/2"
    one = arrival.Board(store, 1, key, arrival.identity(_place(1)))
    one.announce("started")
    one.announce("pg-formed")
    store.set(f"{key}/3/exit", json.dumps({"signal": "SIGKILL", "signum": 9, "stage": "started", "pid": 42}))
    zero = arrival.Board(store, 0, key, arrival.identity(_place(0)))
    read = zero.read(4)
    assert [a["rank"] for a in read] == [1, 3]  # rank 2 wrote nothing: not on the board
    assert read[0]["stage"] == "pg-formed" and set(read[0]["stages"]) == {"started", "pg-formed"}
    assert read[0]["hostname"] == "node-a" and read[0]["pid"] == os.getpid() and read[0]["local_rank"] == 1
    assert read[1] == {"rank": 3, "exit": {"signal": "SIGKILL", "signum": 9, "stage": "started", "pid": 42}}
    assert zero.counts() == {"done": 0, "exited": 0}
    one.announce("done")
    assert zero.counts()["done"] == 1


def test_wait_settled_returns_when_every_rank_is_done_or_dead_and_at_the_deadline_otherwise():
    store = DictStore()
    board = arrival.Board(store, 0, "k", {})
    store.add("k/done", 1)
    store.add("k/exited", 1)
    t = time.monotonic()
    board.wait_settled(2, t + 30)
    assert time.monotonic() - t < 5  # returned on the counts, not at the 30 s deadline
    board.wait_settled(3, time.monotonic() + 0.3)  # one rank neither done nor dead: bounded by the deadline


def test_a_store_that_fails_is_an_error_on_the_board_never_an_exception():
    board = arrival.Board(BrokenStore(), 1, "k", {})
    board.announce("started")
    assert "could not write to the store: Connection reset by peer" in board.error
    assert board.counts() == {"done": 0, "exited": 0}


def test_a_rank_that_never_wrote_is_placed_by_torchruns_blocks_of_local_world_size():
    me = _place(rank=0, world=6, lws=2, node=0, host="node-a")
    came = [{"rank": 4, "hostname": "node-c"}]
    assert arrival.placement(1, me, came) == {"node_rank": 0, "local_rank": 1, "host_from": "placement",
                                              "hostname": "node-a"}  # rank 0's own node
    assert arrival.placement(5, me, came)["hostname"] == "node-c"  # rank 4 arrived from that node
    assert "hostname" not in arrival.placement(3, me, came)  # node 1: nobody of it arrived
    assert arrival.placement(3, _place(rank=0, lws=None), came) == {}  # the launcher does not say


def test_an_exit_status_is_said_as_the_launcher_says_it():
    assert arrival.describe_exit(9) == {"signal": "SIGKILL", "signum": 9}  # killed by signal 9
    assert arrival.describe_exit(3 << 8) == {"code": 3}
    assert arrival.describe_exit(0) == {"code": 0}


def test_the_new_hooks_parse_and_a_kill_is_a_sigkill():
    env = {testing.ENABLE: "1", testing.EXIT: "1:during-start:kill;2:at-launch:1;3:before-start:late=2"}
    assert testing.exit_at(env, 1, "during-start") == testing.KILL
    assert testing.exit_at(env, 2, "at-launch") == 1
    assert testing.late_at(env, 3, "before-start") == 2.0 and testing.exit_at(env, 3, "before-start") is None
    with pytest.raises(testing.HookError):
        testing.exit_at({testing.ENABLE: "1", testing.EXIT: "1:mid-run:kill"}, 1, "after-report")


SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, types
    from envdoctor.fleet import arrival

    class FileStore:  # the board across the fork: the parent records into the same file
        def __init__(self, path): self.path = path
        def _d(self):
            return json.load(open(self.path)) if os.path.exists(self.path) else {}
        def _w(self, d): json.dump(d, open(self.path, "w"))
        def set(self, k, v): d = self._d(); d[k] = v; self._w(d)
        def get(self, k): return self._d()[k].encode()
        def check(self, keys): return all(k in self._d() for k in keys)
        def add(self, k, n): d = self._d(); d[k] = str(int(d.get(k, "0")) + n); self._w(d); return int(d[k])

    arrival.connect = lambda *a, **k: FileStore(sys.argv[1])
    place = types.SimpleNamespace(rank=1, world_size=2, local_rank=1, local_world_size=2, node_rank=0,
                                  hostname="node-a")
    env = {"TORCHELASTIC_RUN_ID": "r"}
    arrival.supervise(place, env)
    board = arrival.Board(arrival.connect(), 1, arrival.run_key(env), arrival.identity(place))
    board.announce("started")
    print(os.getpid(), flush=True)
    how = sys.argv[2]
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(int(how))
""")


@pytest.mark.parametrize("how, returncode, exit_record", [
    ("kill", -signal.SIGKILL, {"signal": "SIGKILL", "signum": 9}),
    ("3", 3, {"code": 3}),
    ("0", 0, None),  # a clean end leaves no exit record
])
def test_the_supervisor_records_how_its_child_ended_and_leaves_the_same_way(tmp_path, how, returncode,
                                                                             exit_record):
    script = tmp_path / "rank.py"
    script.write_text(SCRIPT)
    board = tmp_path / "board.json"
    proc = subprocess.run([sys.executable, str(script), str(board), how], capture_output=True, text=True,
                          timeout=50)
    assert proc.returncode == returncode, proc.stderr[-2000:]
    child = int(proc.stdout.split()[0])
    assert child > 0
    data = json.loads(board.read_text())
    assert json.loads(data["envdoctor-fleet/r/0/1"])["stage"] == "started"
    if exit_record is None:
        assert "envdoctor-fleet/r/0/1/exit" not in data
        return
    rec = json.loads(data["envdoctor-fleet/r/0/1/exit"])
    assert {k: rec[k] for k in exit_record} == exit_record
    assert rec["stage"] == "started" and rec["hostname"] == "node-a" and rec["pid"] == child
    assert data["envdoctor-fleet/r/0/exited"] == "1"


def test_a_child_whose_supervisor_is_gone_records_that_once_and_only_then(monkeypatch):
    store = DictStore()
    board = arrival.Board(store, 1, "k", {"hostname": "node-a"})
    board.announce("reported")
    monkeypatch.setattr(arrival, "PARENT", [None])
    assert board.record_lost_parent() is False  # not supervised (rank 0, or ENVDOCTOR_FLEET_SUPERVISE=0)
    monkeypatch.setattr(arrival, "PARENT", [os.getppid()])
    assert board.record_lost_parent() is False  # its supervisor is still there
    monkeypatch.setattr(arrival, "PARENT", [999999999])  # reparented: the supervisor is gone
    assert board.record_lost_parent() is True
    assert board.record_lost_parent() is False  # once
    rec = json.loads(store.data["k/1/exit"])
    assert rec["lost_parent"] is True and rec["pid"] == 999999999 and rec["stage"] == "reported"
    assert board.counts()["exited"] == 1
    from envdoctor.model.fleet import exit_words

    assert exit_words(rec) == "the process the launcher started (pid 999999999) was killed from outside"


LOST = SCRIPT.split("arrival.supervise(place, env)")[0] + textwrap.dedent("""
    ballast = b"x" * (int(sys.argv[3]) << 20)  # pages the killed parent must free before the kernel reparents
    arrival.supervise(place, env)
    board = arrival.Board(arrival.connect(), 1, arrival.run_key(env), arrival.identity(place))
    board.announce("reported")
    if sys.argv[2] == "no-pipe":
        arrival.CHANNEL[0] = None  # the kernel's word alone (os.getppid), as before the pipe
    os.kill(arrival.PARENT[0], signal.SIGKILL)
    print(board.record_lost_parent(), flush=True)
    os._exit(0)
""")


def test_a_child_that_asks_right_after_its_supervisor_was_killed_is_told_it_is_gone(tmp_path):
    """The race of issue 41's kill-parent test: the kill is sent, then the child asks at once. os.getppid changes
    only once the killed parent has finished exiting (its pages freed: a real rank's parent holds torch's), so the
    child asking the kernel often still sees its parent and writes "done"; the pipe's answer never lies: a
    process that took SIGKILL runs none of its own code, and its end closes when it is gone."""
    script = tmp_path / "rank.py"
    script.write_text(LOST)
    for i in range(5):
        board = tmp_path / f"board{i}.json"
        proc = subprocess.run([sys.executable, str(script), str(board), "pipe", "16"], capture_output=True,
                              text=True, timeout=50)
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        assert proc.stdout.split() == ["True"], (proc.stdout, proc.stderr[-2000:])
        rec = json.loads(json.loads(board.read_text())["envdoctor-fleet/r/0/1/exit"])
        assert rec["lost_parent"] is True and rec["stage"] == "reported"


def _orphan(monkeypatch, board_keys, end, stopped):
    from envdoctor.fleet.orphan import orphan_fleet

    store = DictStore()
    for k, v in board_keys.items():
        store.set(f"envdoctor-fleet/r/0/{k}", json.dumps(v))
    if any(k.endswith("/exit") for k in board_keys):
        store.add("envdoctor-fleet/r/0/exited", 1)
    monkeypatch.setattr(arrival, "connect", lambda *a, **k: store)
    place = _place(rank=0, world=3, lws=3, host="node-a")
    return orphan_fleet(place, {"TORCHELASTIC_RUN_ID": "r"}, end, stopped, 30.0, None)


def test_rank_0_dead_is_named_by_its_supervisors_report_and_the_others_are_not_blamed(monkeypatch):
    """Rank 0 killed after the group formed: rank 1 had reported to it, rank 2 was not on the board yet. The
    report its launched process writes names rank 0 alone; rank 2 is not said to have "never arrived"."""
    from envdoctor.judging.fleet import judge_fleet
    from envdoctor.model.fleet import fleet_from_report
    from envdoctor.report.fleet import render_json

    end = {"signal": "SIGKILL", "signum": 9, "pid": 4242, "stage": "pg-formed", "hostname": "node-a", "at": 1.0}
    fleet = _orphan(monkeypatch, {"0": {"rank": 0, "stage": "pg-formed", "stages": {"started": 100.0},
                                        "hostname": "node-a", "backend": "gloo"},
                                  "1": {"rank": 1, "stage": "reported", "hostname": "node-a"}}, end, False)
    rep = judge_fleet(fleet)
    found = [f for f in rep.findings if f.code.startswith("fleet.ranks/")]
    assert [f.code for f in found] == ["fleet.ranks/died"]
    assert found[0].summary == ("rank 0 (node 0, host node-a, local rank 0) died mid-run (after the process group "
                                "formed, before its report): killed by SIGKILL (pid 4242)")
    assert "written by rank 0's launched process" in found[0].detail
    assert not any(f.summary.startswith(("rank 1", "rank 2")) for f in rep.findings)
    assert fleet.orphaned.startswith("rank 0 died mid-run (after the process group formed, before its report): "
                                     "killed by SIGKILL (pid 4242) before its report was written")
    assert fleet.backend == "gloo"  # as rank 0 wrote it on the board
    from envdoctor.report.fleet import render_console

    assert "\nPARTIAL: rank 0 died mid-run" in render_console(rep, width=200)
    again = fleet_from_report(json.loads(render_json(rep)))  # the saved report says the same
    assert again.orphaned == fleet.orphaned
    assert [again.reported_cell(r) for r in range(3)] == [
        "MISSING: died mid-run (after the process group formed, before its report): killed by SIGKILL (pid 4242)",
        "MISSING: rank 0 died first", "MISSING: rank 0 died first"]


def test_rank_0_stopped_before_its_report_names_the_rank_that_died_and_not_rank_0(monkeypatch):
    from envdoctor.judging.fleet import judge_fleet

    end = {"signal": "SIGTERM", "signum": 15, "pid": 4242}
    fleet = _orphan(monkeypatch, {"1": {"rank": 1, "stage": "started", "hostname": "node-a"},
                                  "1/exit": {"code": 3, "pid": 7, "stage": "started", "hostname": "node-a"}},
                    end, True)
    found = [f for f in judge_fleet(fleet).findings if f.code.startswith("fleet.ranks/")]
    assert [f.code for f in found] == ["fleet.ranks/died", "fleet.ranks/interrupted"]
    assert found[0].summary.startswith("rank 1 (") and "exited with code 3" in found[0].summary
    assert "after rank 1 failed" in found[1].summary and found[1].severity == "warning"
    assert fleet.arrival(0).get("exit") is None  # a stop is no death of rank 0's own


RANK0 = SCRIPT.split("arrival.supervise(place, env)")[0].replace("rank=1,", "rank=0,") + textwrap.dedent("""
    def orphan(end, stopped):
        print("ORPHAN", json.dumps(end, sort_keys=True), stopped, flush=True)

    arrival.supervise(place, env, orphan=orphan)
    how = sys.argv[2]
    if how.startswith("written"):
        arrival.report_written()
        how = how[len("written-"):]
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(int(how))
""")


@pytest.mark.parametrize("how, returncode, orphan", [
    ("kill", -signal.SIGKILL, True),  # died before its report: the supervisor writes one
    ("1", 1, True),  # a crash (an uncaught exception ends with 1 too) before its report
    ("written-1", 1, False),  # its report is out, with findings: nothing to add
    ("written-0", 0, False),
    ("2", 2, False),  # the command's own "could not take part" (said on stderr): no report, as before
])
def test_rank_0s_supervisor_writes_the_report_only_when_rank_0_could_not(tmp_path, how, returncode, orphan):
    script = tmp_path / "rank0.py"
    script.write_text(RANK0)
    board = tmp_path / "board.json"
    proc = subprocess.run([sys.executable, str(script), str(board), how], capture_output=True, text=True,
                          timeout=50)
    assert proc.returncode == returncode, proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ORPHAN")]
    assert len(lines) == (1 if orphan else 0), proc.stdout
    if orphan:
        end = json.loads(lines[0].split(" ", 1)[1].rsplit(" ", 1)[0])
        assert end["stage"] == "launched" and end["hostname"] == "node-a" and lines[0].endswith("False")
        data = json.loads(board.read_text())  # the death is on the board too, for the other ranks' sake
        assert json.loads(data["envdoctor-fleet/r/0/0/exit"])["pid"] == end["pid"]


HELD = SCRIPT.split("arrival.supervise(place, env)")[0] + textwrap.dedent("""
    import time
    arrival.hold_stop_signals()  # as the command line does while torch imports
    os.kill(os.getpid(), signal.SIGTERM)  # the launcher's stop comes then: pending, not delivered
    arrival.supervise(place, env)
    signal.signal(signal.SIGTERM, lambda *a: (print("child stopped", flush=True), os._exit(0)))
    arrival.release_stop_signals()  # the rank's run begins
    time.sleep(2)
    print("child never heard the stop", flush=True)
    os._exit(3)
""")


def test_a_stop_that_came_while_torch_imported_reaches_the_forked_work(tmp_path):
    """A fork's child starts with no pending signal: the supervisor sends the held stop on, so the rank's work
    (rank 0's: its report) takes it instead of running on until the launcher's SIGKILL."""
    script = tmp_path / "held.py"
    script.write_text(HELD)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "board.json"), "0"], capture_output=True,
                          text=True, timeout=50)
    assert proc.stdout.split("\n")[0] == "child stopped", (proc.stdout, proc.stderr[-2000:])
    assert proc.returncode == 0  # told to stop: the child's clean end, and no exit record
    assert not (tmp_path / "board.json").exists()  # nothing recorded for a stop the launcher sent
