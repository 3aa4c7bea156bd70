"""`envdoctor fleet` under a real torchrun on this machine: gloo on loopback, torch 2.13.0 CPU venv
(ENVDOCTOR_TEST_CPU_VENV), envdoctor from this worktree on PYTHONPATH (nothing installed into that venv)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from envdoctor.cli import main
from envdoctor.model.fleet import fleet_from_report
from tests.paths import REPO

pytestmark = pytest.mark.slow

# envdoctor's own dependencies, taken from the test runner's environment (pure Python) for the launched ranks
DEPS = ("rich", "pygments", "markdown_it", "mdurl", "packaging", "distro", "pynvml")


def _deps(tmp: Path) -> Path:
    out = tmp / "deps"
    out.mkdir(exist_ok=True)
    for name in DEPS:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        src = Path(spec.origin)
        src = src.parent if src.name == "__init__.py" else src
        link = out / src.name
        if not link.exists():
            link.symlink_to(src)
    return out


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENVDOCTOR_FLEET", "RANK", "WORLD_SIZE"))}
    env.update(PYTHONPATH=f"{REPO}{os.pathsep}{_deps(tmp)}", ENVDOCTOR_FLEET_TESTING="1", OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def _torchrun(python: str, *args: str) -> list:
    return [python, "-m", "torch.distributed.run", *args, "-m", "envdoctor", "fleet"]


def _left_behind(sid: int) -> list:
    ps = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True).stdout
    return [ln for ln in ps.splitlines() if ln.split()[1:2] == [str(sid)]]


def _two_ranks(python: str, tmp: Path, hook: str, timeout_s: int):
    """`torchrun --nproc-per-node 2 envdoctor fleet` with the test hook ENVDOCTOR_FLEET_TEST_EXIT=``hook`` and
    ``--timeout timeout_s``, in its own session; (the process, its stdout, its stderr), once it failed as expected
    (not 0, not the outer timeout)."""
    env = _env(tmp, ENVDOCTOR_FLEET_TEST_EXIT=hook)
    argv = ["timeout", "200"] + _torchrun(python, "--nproc-per-node", "2", "--master-port", str(_port())) + \
        ["--timeout", str(timeout_s), "--format", "json", "--no-redact"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, cwd=tmp,
                            start_new_session=True)
    out, err = proc.communicate(timeout=250)
    assert proc.returncode not in (0, 124), err[-3000:]
    return proc, out, err


def test_two_nodes_one_with_another_torch_and_a_small_shm(cpu_venv, tmp_path):
    """Two torchrun agents (--nnodes 2, one rank each): node 1's facts say torch 2.12.0 and a 64 MiB /dev/shm."""
    port = _port()
    env = _env(tmp_path, ENVDOCTOR_FLEET_TEST_OVERRIDE="1:pythons[0].torch.version=2.12.0+cpu;"
                                                       "1:host.shm_total_bytes=67108864")
    procs = [subprocess.Popen(_torchrun(cpu_venv.python, "--nnodes", "2", "--node-rank", str(n), "--nproc-per-node",
                                        "1", "--master-addr", "127.0.0.1", "--master-port", str(port))
                              + ["--format", "json", "--timeout", "30", "--bench", "--bench-budget", "0.5",
                                 "--sizes", "64K,256K"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, cwd=tmp_path)
             for n in (0, 1)]
    outs = [p.communicate(timeout=150) for p in procs]
    assert outs[1][0] == "", "only rank 0 writes on stdout"
    report = json.loads(outs[0][0])  # one JSON document
    assert procs[0].returncode == 1, outs[0][1][-2000:]
    torch = [f for f in report["fleet_findings"] if f["code"] == "fleet.consistency/node-facts"
             and f["summary"].startswith("torch version differs")]
    assert torch and "node 1" in torch[0]["summary"] and "rank 1: 2.12.0+cpu" in torch[0]["summary"]
    assert "2.13.0+cpu" in torch[0]["summary"] and torch[0]["category"] == "FLEET_INCONSISTENT"
    shm = [f for f in report["fleet_findings"] if f["category"] == "SHM_TOO_SMALL"]
    assert shm and shm[0]["summary"].startswith("1 of 2 nodes: SHM_TOO_SMALL") and "node 1" in shm[0]["summary"]
    assert [n["ranks"] for n in report["nodes"]] == [[0], [1]]
    assert report["nodes"][1]["summary"]["torch version"] == "2.12.0+cpu"
    (sweep,) = report["fleet"]["collectives"]
    assert [s["bytes"] for s in sweep["sweep"]] == [65536, 262144]
    assert all(s["busbw_gbs"] == pytest.approx(s["algbw_gbs"], rel=0.01) for s in sweep["sweep"])  # 2(n-1)/n = 1
    assert all(r["bench"][0]["name"] == "matmul_fp32" for r in report["fleet"]["ranks"])
    # the saved report, judged again offline, says the same
    saved = tmp_path / "fleet.json"
    saved.write_text(outs[0][0])
    assert main(["fleet", "--report", str(saved), "--format", "json", "-o", str(tmp_path / "again.json")]) == 1
    again = json.loads((tmp_path / "again.json").read_text())
    assert [f["code"] for f in again["fleet_findings"]] == [f["code"] for f in report["fleet_findings"]]


def _four_ranks_one_leaves(python: str, tmp: Path, code, rank: int = 3, timeout: int = 20,
                           stage: str = "before-gather"):
    env = _env(tmp, ENVDOCTOR_FLEET_TEST_EXIT=f"{rank}:{stage}:{code}")
    argv = ["timeout", str(120 + timeout)] + _torchrun(python, "--nproc-per-node", "4", "--master-port", str(_port())) + \
        ["--timeout", str(timeout)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, cwd=tmp,
                            start_new_session=True)
    out, err = proc.communicate(timeout=150 + timeout)
    left = _left_behind(proc.pid)
    end = time.monotonic() + 60  # a loaded kernel reaps late: wait for the session to empty, fail only if it never does
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = _left_behind(proc.pid)
    return proc, out, err, left


def _named_in_findings(text: str) -> set:
    """The ranks the console report's findings name as "rank N (...)" (issue 41: a report on one rank's fault
    names that rank and never blames another)."""
    findings = text.split("\nFindings\n", 1)[1] if "\nFindings\n" in text else text.split(" Findings ", 1)[1]
    return {int(n) for n in re.findall(r"\brank (\d+) \(", findings.split(" Not judged ", 1)[0])}


def test_a_rank_that_exits_before_the_gather_is_named_within_the_timeout(cpu_venv, tmp_path):
    proc, out, err, left = _four_ranks_one_leaves(cpu_venv.python, tmp_path, 0)
    # non-zero, and not 124: the outer `timeout` never fired, so the report came within it (no timer here)
    assert proc.returncode not in (0, 124), err[-2000:]
    text = " ".join(out.split())  # the console wraps prose to the terminal (a long hostname moves the breaks)
    assert "rank 3 (node 0, host" in text and "did not send its report: its process exited or crashed" in text
    assert "3 of 4 ranks reported" in text
    assert _named_in_findings(text) == {3}, text
    assert max(map(len, out.splitlines())) <= 80, out  # the fix commands too (wrapped, never cut)
    assert left == [], f"processes left behind: {left}"


def test_a_rank_that_crashes_gets_the_report_written_when_torchrun_stops_rank_0(cpu_venv, tmp_path):
    """Exit code 1: torchrun sends SIGTERM to every other worker; rank 0 writes what it has before it goes."""
    proc, out, err, left = _four_ranks_one_leaves(cpu_venv.python, tmp_path, 1)
    assert proc.returncode not in (0, 124), err[-2000:]
    text = " ".join(out.split())
    assert "PARTIAL: rank 0 was stopped (SIGTERM" in text
    # rank 3 is named: its exit is on the launcher's store (issue 41), with its host and where it was
    assert re.search(r"rank 3 \(node 0, host [^;]*?\) died [^;]*?: exited with code 1", text), out
    # ranks 1 and 2, stopped with the run, are not named as causes (a loaded box can stop them before their hello)
    assert "rank 1 (" not in text.split("Findings", 1)[1] and "after rank 3 failed" in text, out
    assert _named_in_findings(text) == {3}, text  # nor rank 0 or 2
    assert left == [], f"processes left behind: {left}"


def test_a_rank_that_hangs_is_named_at_the_deadline_and_the_others_still_count(cpu_venv, tmp_path):
    """Rank 1 hangs: gloo's timeout on it closes the group's pairs, so rank 0 waits for every rank at once and
    ranks 2 and 3, which answered in time, are in the report."""
    # --timeout 45: ranks 2 and 3 collect their facts beside three other torch processes; on a loaded 2-core
    # machine that can take longer than 15 s, and they must answer within it (the hang costs the whole of it)
    proc, out, err, left = _four_ranks_one_leaves(cpu_venv.python, tmp_path, "hang", rank=1, timeout=45)
    assert proc.returncode not in (0, 124), err[-2000:]
    text = " ".join(out.split())
    assert "rank 1 (node 0, host" in text and "no answer within the deadline" in text
    assert "3 of 4 ranks reported" in text
    assert _named_in_findings(text) == {1}, text
    assert left == [], f"processes left behind: {left}"


@pytest.mark.parametrize("stage", ["after-init", "before-gather"])
def test_a_rank_that_comes_after_the_deadline_is_named_and_the_others_still_count(cpu_venv, tmp_path, stage):
    """Rank 3 waits 25 s (then carries on) where the deadline is 12 s: before its hello, or before its report.
    Rank 0's report has the three ranks that came and names rank 3 as missing at that stage."""
    proc, out, err, left = _four_ranks_one_leaves(cpu_venv.python, tmp_path, "late=25", rank=3, timeout=12,
                                                  stage=stage)
    assert proc.returncode not in (0, 124), err[-2000:]
    text = " ".join(out.split())
    assert "3 of 4 ranks reported" in text, (text[-3000:], err[-2000:])
    assert "rank 3 (node 0, host" in text and "no answer within the deadline" in text, text[-3000:]
    assert _named_in_findings(text) == {3}, text
    assert left == [], f"processes left behind: {left}"


def test_sixteen_ranks_hold_sockets_to_rank_0_only(cpu_venv, tmp_path):
    """16 real gloo ranks, small payloads: each rank counts its sockets (/proc/self/fd) as it reports, rank 0
    after hearing from all. gloo's full mesh would give every rank 15 pairs; with pairs only where messages go,
    rank 0 holds one per other rank and the rest a constant (envdoctor/fleet/comm.py states the bound)."""
    n = 16
    env = _env(tmp_path)
    argv = ["timeout", "400"] + _torchrun(cpu_venv.python, "--nproc-per-node", str(n), "--master-port",
                                          str(_port())) + ["--timeout", "120", "--format", "json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, cwd=tmp_path,
                            start_new_session=True)
    out, err = proc.communicate(timeout=450)
    assert proc.returncode != 124, err[-2000:]
    report = json.loads(out)
    ranks = {r["rank"]: r for r in report["fleet"]["ranks"]}
    assert sorted(ranks) == list(range(n)) and report["fleet"]["missing"] == [], err[-2000:]
    others = [ranks[r]["sockets"] for r in range(1, n)]
    assert all(isinstance(s, int) for s in others + [ranks[0]["sockets"]]), ranks[1]
    assert max(others) <= 4, others  # rank 0's pair, the rendezvous store, one more: not n - 1 pairs
    assert n - 1 <= ranks[0]["sockets"] <= n + 3, ranks[0]["sockets"]  # one pair per rank it heard from
    assert ranks[1]["env"].get("OMP_NUM_THREADS") == "1"


# issue 41: rank 1 of two dies at each point of its life; the report names it, with its host, and never rank 0.
# "at-launch" exits before envdoctor tracks the rank (an interpreter that fails in its start-up: no exit record,
# named by torchrun's placement), 4 s after its launch: a rank that fails within rank 0's own first second stops
# rank 0 before envdoctor's command runs (torchrun's summary names it then); the others SIGKILL the rank, as the
# OOM killer or a `kill -9` would.
KILLS = [("at-launch", "late=4;1:at-launch:1", "fleet.ranks/not-arrived", "never arrived"),
         ("before-start", "kill", "fleet.ranks/died", "died before start-up (before it announced itself): killed "
                                                      "by SIGKILL"),
         ("during-start", "kill", "fleet.ranks/died", "died during start-up (before the process group formed): "
                                                      "killed by SIGKILL"),
         ("after-report", "kill", "fleet.ranks/died", "died mid-run (after it sent its report): killed by SIGKILL")]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("stage, code, finding, says", KILLS, ids=[k[0] for k in KILLS])
def test_rank_1_killed_is_named_with_its_host_and_rank_0_is_never_blamed(cpu_venv, tmp_path, stage, code, finding,
                                                                        says):
    proc, out, err = _two_ranks(cpu_venv.python, tmp_path, f"1:{stage}:{code}", 60)
    assert out.strip(), f"rank 0 wrote no report: {err[-3000:]}"
    report = json.loads(out)
    host = socket.gethostname()
    ranks = [f for f in report["fleet_findings"] if f["code"].startswith("fleet.ranks/")]
    (named,) = [f for f in ranks if f["code"] == finding]
    assert named["summary"].startswith(f"rank 1 (node 0, host {host}"), named["summary"]
    assert says in named["summary"], named["summary"]
    for f in ranks:  # nothing about the ranks blames rank 0: the only other one is the stop, naming rank 1
        assert f["summary"].startswith("rank 1 ") or (
            f["code"] == "fleet.ranks/interrupted" and f["severity"] == "warning"
            and "after rank 1 failed" in f["summary"]), f["summary"]
    assert not any(f["summary"].startswith("rank 0") for f in report["fleet_findings"])
    # the table's cell for rank 1 is not the healthy ranks' "yes"
    again = fleet_from_report(report)
    cell = again.reported_cell(1)
    assert cell.startswith("MISSING: never arrived" if stage == "at-launch" else ("yes, then died" if stage == "after-report"
                                                                         else "MISSING: died")), cell
    assert again.reported_cell(0) == "yes"


# issue 41: rank 0, the rank that gathers and writes the report, dies at each point of its life (SIGKILL). Its
# launched process (the supervisor, fleet/arrival.py) writes the report in its place from the launcher's store:
# rank 0 named as dead with its host and where it was, rank 1 (which lost the rank it reports to) never blamed.
KILLS_0 = [("before-start", "died before start-up (before it announced itself): killed by SIGKILL"),
           ("during-start", "died during start-up (before the process group formed): killed by SIGKILL"),
           ("before-gather", "died mid-run (after the process group formed, before its report): killed by SIGKILL")]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("stage, says", KILLS_0, ids=[k[0] for k in KILLS_0])
def test_rank_0_killed_is_named_with_its_host_and_rank_1_is_never_blamed(cpu_venv, tmp_path, stage, says):
    proc, out, err = _two_ranks(cpu_venv.python, tmp_path, f"0:{stage}:kill", 60)
    assert out.strip(), f"nobody wrote a report: {err[-3000:]}"
    report = json.loads(out)  # one JSON document: rank 0's launched process wrote it, rank 0 could not
    host = socket.gethostname()
    ranks = [f for f in report["fleet_findings"] if f["code"].startswith("fleet.ranks/")]
    (named,) = [f for f in ranks if f["code"] == "fleet.ranks/died"]
    assert named["summary"].startswith(f"rank 0 (node 0, host {host}"), named["summary"]
    assert says in named["summary"], named["summary"]
    assert [f["code"] for f in ranks] == ["fleet.ranks/died"], ranks
    assert not any(f["summary"].startswith("rank 1") for f in report["fleet_findings"]), report["fleet_findings"]
    assert report["fleet"]["orphaned"].startswith("rank 0 died "), report["fleet"]["orphaned"]
    again = fleet_from_report(report)
    assert again.reported_cell(0).startswith("MISSING: died"), again.reported_cell(0)
    assert again.reported_cell(1) == "MISSING: rank 0 died first"
    left, end = _left_behind(proc.pid), time.monotonic() + 60
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = _left_behind(proc.pid)
    assert left == [], f"processes left behind: {left}"


@pytest.mark.timeout(300)
def test_rank_1_that_starts_after_the_deadline_is_named_late_with_its_host_and_rank_0_reports_at_the_deadline(
        cpu_venv, tmp_path):
    """Rank 1 waits 60 s before it announces itself; rank 0 stops waiting at its 10 s deadline and names it by
    torchrun's placement as not arrived within it."""
    proc, out, err = _two_ranks(cpu_venv.python, tmp_path, "1:before-start:late=60", 10)
    report = json.loads(out)
    ranks = [f for f in report["fleet_findings"] if f["code"].startswith("fleet.ranks/")]
    assert [f["code"] for f in ranks] == ["fleet.ranks/not-arrived"], ranks
    summary = ranks[0]["summary"]
    assert summary.startswith(f"rank 1 (node 0, host {socket.gethostname()} by the launcher's placement, "
                              "local rank 1) never arrived"), summary
    assert "within the 10 s deadline; it starts late" in summary, summary
    # gloo's init_process_group returns on rank 0 alone (pairs are made on demand): rank 0 stops at its hello
    # round's deadline; with a backend whose init waits for every rank, at the start-up deadline instead
    assert report["fleet"]["missing"][0]["stage"] in ("hello", "start-up")
    left, end = _left_behind(proc.pid), time.monotonic() + 60  # the sleeping rank is stopped when rank 0 leaves
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = _left_behind(proc.pid)
    assert left == [], f"processes left behind: {left}"


@pytest.mark.timeout(300)
def test_a_kill_aimed_at_the_process_torchrun_started_is_still_named(cpu_venv, tmp_path):
    """`kill -9` of the pid torchrun prints for rank 1 (its supervisor, not the rank's work): the work notices its
    parent gone, records that on the board and stops; rank 0 names rank 1, not itself. The work asks its parent
    before it writes "done" (a pipe the parent answers while it lives): the kernel reparents it only once the
    killed parent has finished exiting, which on a loaded box came after rank 0's report (issue 41, once xfail)."""
    proc, out, err = _two_ranks(cpu_venv.python, tmp_path, "1:after-report:kill-parent", 60)
    report = json.loads(out)
    ranks = [f for f in report["fleet_findings"] if f["code"].startswith("fleet.ranks/")]
    died = [f for f in ranks if f["code"] == "fleet.ranks/died"]
    assert died and died[0]["summary"].startswith(f"rank 1 (node 0, host {socket.gethostname()}"), ranks
    assert "was killed from outside" in died[0]["summary"], died[0]["summary"]
    assert not any(f["summary"].startswith("rank 0") for f in report["fleet_findings"])
    for f in ranks:  # the only other one: the launcher's stop of rank 0, naming rank 1 as its cause
        assert f["summary"].startswith("rank 1 ") or (
            f["code"] == "fleet.ranks/interrupted" and "after rank 1 failed" in f["summary"]), f["summary"]
    assert fleet_from_report(report).reported_cell(1).startswith("yes, then died mid-run"), ranks
