"""The fleet checks are pure functions over nodes' facts and ranks' records: judged here without processes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks
from envdoctor.checks.fleet import STRAGGLER_FRACTION, outliers
from envdoctor.judging.fleet import judge_fleet
from envdoctor.model.fleet import FleetData, group_nodes
from tests import machines as m

FLEET_CHECKS = [c for c in all_checks() if c.area == "fleet"]


def _node_facts(torch="2.5.1+cu124", nccl="2.21.5", shm=16 * m.GiB, ib=None, driver="550.54.14", gpus=8):
    env = m.torch_env(torch, "12.4", m.ARCH_2_1_TO_2_7, nccl_version=nccl)
    return m.facts(m.driver(driver, "12.4", [m.gpu(i, "NVIDIA H100 80GB HBM3", "9.0") for i in range(gpus)]),
                   [env], host=m.host(shm_total_bytes=shm, hostname="h", infiniband_devices=ib))


def _fleet(node_facts, per_node=1, bench=None, backend="nccl", missing=(), collectives=(), transport=None):
    ranks, facts_by_rank = [], {}
    for n, f in enumerate(node_facts):
        for lr in range(per_node):
            r = n * per_node + lr
            rec = {"rank": r, "local_rank": lr, "node_rank": n, "hostname": f"gpu-{n}", "payload": True,
                   "local_world_size": per_node, "torch_version": "2.5.1+cu124", "python_version": "3.10.12",
                   "nccl_version": "2.21.5", "torch_cuda": "12.4", "envdoctor_version": "test",
                   "device": f"cuda:{lr}", "gpu": {"name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{r:04d}",
                                                   "pci_bus_id": f"00000000:{0x18 + lr:02X}:00.0"}}
            if bench is not None:
                rec["bench"] = [{"name": "matmul_bf16", "status": "ok", "value": bench[r], "unit": "TFLOP/s",
                                 "device": f"cuda:{lr}"}]
            if transport is not None:
                rec["nccl_transport"] = transport
            ranks.append(rec)
            if lr == 0:
                facts_by_rank[r] = f.to_dict()
    fleet = FleetData(backend=backend, world_size=len(ranks) + len(missing), timeout_s=30, ranks=ranks,
                      missing=list(missing), collectives=list(collectives))
    fleet.nodes = group_nodes(ranks, facts_by_rank)
    return fleet


def _found(rep, prefix):
    return [f for f in rep.findings if f.code.startswith(prefix)]


def test_the_checks_are_declared_with_their_categories():
    ids = [c.id for c in FLEET_CHECKS]
    assert len(ids) == len(set(ids))
    from envdoctor.model.catalogue import CATEGORIES

    for c in FLEET_CHECKS:
        assert all(cat in CATEGORIES for cat in c.categories), c.id


def test_outliers_take_the_majority_and_name_the_others():
    assert outliers({"a": "1", "b": "1", "c": "2"}) == ("1", ["c"], True)
    assert outliers({"a": "1", "b": "2"}) == ("1", ["b"], False)  # no majority: the first (rank 0's) is the reference
    assert outliers({"a": "1", "b": None}) is None  # unknown is not a difference
    assert outliers({"a": "1", "b": "1"}) is None


def test_one_node_with_another_torch_is_named_with_the_majority_value():
    rep = judge_fleet(_fleet([_node_facts(), _node_facts(), _node_facts(torch="2.4.0+cu121")]))
    (f,) = [f for f in _found(rep, "fleet.consistency/node-facts") if "torch version" in f.summary]
    assert f.category == "FLEET_INCONSISTENT" and f.severity == "error"
    assert "node 2 (gpu-2), rank 2: 2.4.0+cu121" in f.summary
    assert "2 of 3 nodes have 2.5.1+cu124" in f.summary
    assert f.evidence[0].value == "2.4.0+cu121" and f.evidence[0].expected == "2.5.1+cu124"


def test_nccl_driver_and_gpu_count_differences_are_each_reported():
    rep = judge_fleet(_fleet([_node_facts(), _node_facts(nccl="2.18.1", driver="535.104.05", gpus=7),
                              _node_facts()]))
    text = " | ".join(f.summary for f in _found(rep, "fleet.consistency"))
    assert "NCCL version differs: node 1 (gpu-1), rank 1: 2.18.1" in text
    assert "NVIDIA driver differs: node 1 (gpu-1), rank 1: 535.104.05" in text
    assert "GPU models differs: node 1 (gpu-1), rank 1: 7 x NVIDIA H100 80GB HBM3" in text


def test_each_nodes_findings_are_merged_and_counted():
    small = 64 * 1024 * 1024
    rep = judge_fleet(_fleet([_node_facts(shm=small), _node_facts(), _node_facts(shm=small)]))
    (f,) = _found(rep, "host.shm/")
    assert f.category == "SHM_TOO_SMALL"
    assert f.summary.startswith("2 of 3 nodes: SHM_TOO_SMALL: /dev/shm is 64 MiB")
    assert "node 0 (gpu-0)" in f.summary and "node 2 (gpu-2)" in f.summary and "node 1" not in f.summary
    (diff,) = [x for x in _found(rep, "fleet.consistency") if "problems found" in x.summary]
    assert "node 1 (gpu-1), rank 1: none" in diff.summary or "SHM_TOO_SMALL" in diff.summary


def test_a_straggler_is_the_slowest_rank_well_below_the_median():
    values = [700.0, 705.0, 698.0, 702.0, 701.0, 699.0, 703.0, 420.0]
    rep = judge_fleet(_fleet([_node_facts(), _node_facts()], per_node=4, bench=values))
    (f,) = _found(rep, "fleet.stragglers/")
    assert f.category == "FLEET_STRAGGLER" and f.code == "fleet.stragglers/matmul-bf16"
    assert f.summary.startswith("rank 7 (node 1, host gpu-1, local rank 3) is a straggler: matmul_bf16 420")
    assert "GPU-0007" in f.summary and "00000000:1B:00.0" in f.summary
    even = judge_fleet(_fleet([_node_facts(), _node_facts()], per_node=4,
                              bench=[700.0 * (STRAGGLER_FRACTION + 0.05)] + values[1:7] + [700.0]))
    assert not _found(even, "fleet.stragglers/")


def test_cpu_ranks_sharing_a_host_are_not_compared():
    fleet = _fleet([_node_facts(), _node_facts()], bench=[0.05, 0.01])
    for rec in fleet.ranks:
        rec["hostname"] = "same-box"
        rec["bench"][0]["device"] = "cpu"
    rep = judge_fleet(fleet)
    assert not _found(rep, "fleet.stragglers/")
    (res,) = [c for c in rep.checks if c.id == "fleet.stragglers"]
    assert res.status == "skipped" and "share its CPUs" in res.reason


def test_a_missing_rank_is_an_error_naming_it_and_when_it_was_last_heard():
    fleet = _fleet([_node_facts()], per_node=3,
                   missing=[{"rank": 3, "stage": "report", "reason": "its process exited or crashed",
                             "last_heard": "2026-12-01 20:00:00 UTC"}])
    fleet.ranks.append({"rank": 3, "local_rank": 3, "node_rank": 0, "hostname": "gpu-0"})
    fleet.nodes = group_nodes(fleet.ranks, {0: _node_facts().to_dict()})
    rep = judge_fleet(fleet)
    (f,) = _found(rep, "fleet.ranks/")
    assert f.severity == "error" and f.category == "FLEET_RANK_UNREACHABLE"
    assert f.summary == ("rank 3 (node 0, host gpu-0, local rank 3) did not send its report: its process exited "
                         "or crashed; last heard from at 2026-12-01 20:00:00 UTC")
    assert rep.has_at_least("error")


def test_socket_fallback_between_nodes_with_infiniband_is_an_interconnect_error():
    socket = {"network": "Socket", "channels": {"NET/Socket": 4}, "devices": {"Socket": "[0]eth0"}, "nvls": False}
    rep = judge_fleet(_fleet([_node_facts(ib=["mlx5_0"]), _node_facts(ib=["mlx5_0"])], transport=socket))
    found = _found(rep, "fleet.transport/socket-fallback")
    assert found and found[0].category == "INTERCONNECT" and found[0].severity == "error"
    ib = {"network": "IB", "channels": {"NET/IB": 4}, "devices": {}, "nvls": False}
    assert not _found(judge_fleet(_fleet([_node_facts(ib=["mlx5_0"])] * 2, transport=ib)), "fleet.transport/")
    # sockets with no IB device on any node: nothing better to use
    assert not _found(judge_fleet(_fleet([_node_facts(), _node_facts()], transport=socket)), "fleet.transport/")


def test_a_failed_all_reduce_is_an_error_and_a_sweep_a_note():
    sweep = [{"bytes": 1 << 20, "iters": 10, "time_us": 100.0, "algbw_gbs": 10.49, "busbw_gbs": 15.73}]
    rep = judge_fleet(_fleet([_node_facts()] * 2, collectives=[
        {"scope": "all ranks", "ranks": [0, 1], "sweep": sweep},
        {"scope": "inter-node", "ranks": [0, 1], "error": "Connection closed by peer"}]))
    (bad,) = _found(rep, "fleet.collectives/failed")
    assert bad.severity == "error" and "Connection closed by peer" in bad.summary
    (note,) = _found(rep, "fleet.collectives/busbw")
    assert note.severity == "info" and "best busbw 15.73 GB/s (algbw 10.49 GB/s) at 1 MiB" in note.summary


def test_a_node_whose_facts_do_not_load_is_reported_not_crashed_on():
    ranks = [{"rank": 0, "local_rank": 0, "node_rank": 0, "hostname": "a", "payload": True},
             {"rank": 1, "local_rank": 0, "node_rank": 1, "hostname": "b", "payload": True}]
    nodes = group_nodes(ranks, {0: _node_facts().to_dict(), 1: {"schema_version": 1, "host": "not an object"}})
    assert nodes[0].facts is not None
    assert nodes[1].facts is None and "rank 1's facts do not load" in nodes[1].facts_error


@pytest.mark.parametrize("newer", [True, False])
def test_a_rank_from_another_envdoctor_is_compared_not_crashed_on(newer):
    f = _node_facts()
    other = replace(f, envdoctor_version="9.9.9" if newer else "0.0.1")
    rep = judge_fleet(_fleet([f, f, other]))
    (diff,) = [x for x in _found(rep, "fleet.consistency") if "envdoctor version" in x.summary]
    assert "node 2 (gpu-2), rank 2" in diff.summary


def test_a_sweep_not_run_because_a_rank_is_missing_says_so():
    fleet = _fleet([_node_facts()], collectives=[{"scope": "all ranks", "ranks": [0, 1],
                                                  "skipped": "not run: a collective with a rank missing would only time out"}])
    (res,) = [c for c in judge_fleet(fleet).checks if c.id == "fleet.collectives"]
    assert res.status == "skipped" and "a rank missing" in res.reason


def test_per_rank_environment_that_matters_is_compared():
    fleet = _fleet([_node_facts(), _node_facts()], per_node=2)
    for r in fleet.ranks:
        r["env"] = {"OMP_NUM_THREADS": "8", "CUDA_VISIBLE_DEVICES": str(r["local_rank"]), "NCCL_IB_DISABLE": None,
                    "NCCL_DEBUG": "WARN"}
    fleet.ranks[3]["env"] = dict(fleet.ranks[3]["env"], OMP_NUM_THREADS="64", NCCL_IB_DISABLE="1")
    found = _found(judge_fleet(fleet), "fleet.consistency/rank-env")
    texts = sorted(f.summary.split(" differs")[0] for f in found)
    # each rank names its own GPU (CUDA_VISIBLE_DEVICES differs by design): only how many GPUs is compared
    assert texts == ["NCCL_IB_DISABLE", "OMP_NUM_THREADS"], [f.summary for f in found]
    omp = next(f for f in found if f.summary.startswith("OMP_NUM_THREADS"))
    assert omp.severity == "warning" and "64" in omp.summary and omp.evidence[0].path == "ranks[3].env.OMP_NUM_THREADS"
    fleet.ranks[1]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    found = _found(judge_fleet(fleet), "fleet.consistency/rank-env")
    assert any(f.summary.startswith("CUDA_VISIBLE_DEVICES") and "2 GPU(s)" in f.summary for f in found)


def test_rank_env_reads_only_the_variables_that_matter():
    from envdoctor.fleet.rank import rank_env

    env = rank_env({"OMP_NUM_THREADS": "4", "NCCL_P2P_DISABLE": "1", "HF_TOKEN": "secret", "HOME": "/root"})
    assert env["OMP_NUM_THREADS"] == "4" and env["NCCL_P2P_DISABLE"] == "1" and env["CUDA_VISIBLE_DEVICES"] is None
    assert "HF_TOKEN" not in env and "HOME" not in env


# ------------------------------------------------------------------ issue 41: arrivals on the launcher's store

KILLED = {"signal": "SIGKILL", "signum": 9, "pid": 4242, "hostname": "gpu-1", "at": 1796630000.0}


def _two_ranks(missing=(), arrivals=(), interrupted=None):
    fleet = _fleet([_node_facts()], per_node=1, missing=list(missing))
    fleet.arrivals = list(arrivals)
    fleet.interrupted = interrupted
    return fleet


def test_a_rank_that_died_during_start_up_is_named_with_its_host_and_exit_and_rank_0_is_not_blamed():
    fleet = _two_ranks(
        missing=[{"rank": 1, "stage": "hello", "reason": "no hello before rank 0 was stopped (during hello)",
                  "last_heard": None}],
        arrivals=[{"rank": 0, "stage": "pg-formed", "hostname": "gpu-0"},
                  {"rank": 1, "stage": "started", "hostname": "gpu-1", "node_rank": 1, "local_rank": 0,
                   "exit": dict(KILLED, stage="started")}],
        interrupted="SIGTERM at 2026-12-07 08:16:59 UTC, during hello")
    rep = judge_fleet(fleet)
    died, stop = _found(rep, "fleet.ranks/")
    assert died.code == "fleet.ranks/died" and died.severity == "error" and died.category == "FLEET_RANK_UNREACHABLE"
    assert died.summary == ("rank 1 (node 1, host gpu-1, local rank 0) died during start-up (before the process "
                            "group formed): killed by SIGKILL (pid 4242)")
    assert died.fix.commands == ["dmesg -T | grep -iE 'killed process|out of memory'"] and "on gpu-1" in died.fix.summary
    assert stop.code == "fleet.ranks/interrupted" and stop.severity == "warning"
    assert stop.summary.startswith("the run was cut short after rank 1 failed: the launcher stopped")
    assert fleet.reported_cell(1) == ("MISSING: died during start-up (before the process group formed): killed by "
                                      "SIGKILL (pid 4242)")
    assert fleet.reported_cell(0) == "yes"


def test_a_rank_killed_after_its_report_is_not_listed_like_the_healthy_ones():
    fleet = _fleet([_node_facts()], per_node=2)
    fleet.arrivals = [{"rank": 0, "stage": "reported", "hostname": "gpu-0"},
                      {"rank": 1, "stage": "reported", "hostname": "gpu-0", "exit": dict(KILLED, stage="reported")}]
    rep = judge_fleet(fleet)
    (died,) = _found(rep, "fleet.ranks/")
    assert died.summary == ("rank 1 (node 0, host gpu-0, local rank 1) died mid-run (after it sent its report): "
                            "killed by SIGKILL (pid 4242); its report had arrived, the rest of the run had not")
    assert fleet.reported_cell(1).startswith("yes, then died mid-run") and fleet.reported_cell(0) == "yes"


def test_a_rank_that_never_arrived_is_named_by_the_launchers_placement():
    fleet = _two_ranks(
        missing=[{"rank": 1, "stage": "start-up", "reason": "the process group had not formed within the deadline",
                  "last_heard": None}],
        arrivals=[{"rank": 0, "stage": "pg-formed", "hostname": "gpu-0"},
                  {"rank": 1, "stage": None, "hostname": "gpu-0", "node_rank": 0, "local_rank": 1,
                   "host_from": "placement"}])
    rep = judge_fleet(fleet)
    (f,) = _found(rep, "fleet.ranks/")
    assert f.code == "fleet.ranks/not-arrived" and f.severity == "error"
    assert f.summary == ("rank 1 (node 0, host gpu-0 by the launcher's placement, local rank 1) never arrived: it "
                         "did not announce itself on the launcher's store within the 30 s deadline; it starts late, "
                         "or its process failed before envdoctor ran in it")
    assert fleet.reported_cell(1) == "MISSING: never arrived"


def test_a_rank_that_came_after_the_deadline_is_late_by_how_long_and_the_waiting_ranks_are_not_blamed():
    fleet = _fleet([_node_facts()], per_node=1, missing=[
        {"rank": r, "stage": "start-up", "reason": "the process group had not formed within the deadline",
         "last_heard": None} for r in (1, 2)])
    fleet.deadline_at = 1000.0  # rank 0 began to wait at 970 (timeout 30)
    fleet.arrivals = [{"rank": 0, "stage": "started", "stages": {"started": 970.5}, "hostname": "gpu-0"},
                      {"rank": 1, "stage": "started", "stages": {"started": 971.0}, "hostname": "gpu-0"},
                      {"rank": 2, "stage": "started", "stages": {"started": 1012.0}, "hostname": "gpu-9"}]
    rep = judge_fleet(fleet)
    (f,) = _found(rep, "fleet.ranks/")  # rank 1 arrived in time and waited: not a finding of its own
    assert f.code == "fleet.ranks/late"
    assert f.summary == ("rank 2 (host gpu-9) came late: it announced itself 42 s after rank 0 began to wait, past "
                         "the 30 s deadline")
    assert fleet.reported_cell(1) == "MISSING: it arrived and waited for the group"


def test_ranks_that_all_arrived_and_still_formed_no_group_are_each_named():
    fleet = _fleet([_node_facts()], per_node=1, missing=[
        {"rank": 1, "stage": "start-up", "reason": "the process group had not formed within the deadline",
         "last_heard": None}])
    fleet.arrivals = [{"rank": 0, "stage": "started", "hostname": "gpu-0"},
                      {"rank": 1, "stage": "started", "hostname": "gpu-1"}]
    (f,) = _found(judge_fleet(fleet), "fleet.ranks/")
    assert f.code == "fleet.ranks/missing"
    assert f.summary == ("rank 1 (host gpu-1) arrived but the process group did not form: the process group had "
                         "not formed within the deadline")


def test_a_stop_with_no_recorded_cause_is_still_an_error_of_the_run():
    fleet = _fleet([_node_facts()], per_node=1)
    fleet.interrupted = "SIGTERM at 2026-12-07 08:00:00 UTC, during report"
    (f,) = _found(judge_fleet(fleet), "fleet.ranks/")
    assert f.code == "fleet.ranks/interrupted" and f.severity == "error"
    assert f.summary == "rank 0 was stopped before the end of the run: SIGTERM at 2026-12-07 08:00:00 UTC, during report"


def test_every_rank_arrived_and_finished_is_a_pass():
    fleet = _fleet([_node_facts()], per_node=2)
    fleet.arrivals = [{"rank": r, "stage": "done", "hostname": "gpu-0"} for r in (0, 1)]
    rep = judge_fleet(fleet)
    assert not _found(rep, "fleet.ranks/")
    (res,) = [c for c in rep.checks if c.id == "fleet.ranks"]
    assert res.status == "passed"


def test_ranks_stopped_with_the_run_are_not_named_as_causes_when_a_rank_died():
    fleet = _fleet([_node_facts()], per_node=1, missing=[
        {"rank": 1, "stage": "report", "reason": "had not sent its report when rank 0 was stopped",
         "last_heard": "2026-12-07 08:23:38 UTC", "cut_short": True},
        {"rank": 2, "stage": "report", "reason": "its process exited or crashed (gloo: Connection closed by peer)",
         "last_heard": "2026-12-07 08:23:38 UTC"}])
    fleet.interrupted = "SIGTERM at 2026-12-07 08:23:50 UTC, during its own part"
    fleet.arrivals = [{"rank": 1, "stage": "pg-formed", "hostname": "gpu-0"},
                      {"rank": 2, "stage": "pg-formed", "hostname": "gpu-0",
                       "exit": {"code": 1, "pid": 7, "stage": "pg-formed"}}]
    found = _found(judge_fleet(fleet), "fleet.ranks/")
    assert [f.code for f in found] == ["fleet.ranks/died", "fleet.ranks/interrupted"]
    assert found[0].summary.startswith("rank 2 (host gpu-0) died mid-run (after the process group formed, before "
                                       "its report): exited with code 1 (pid 7)")
    assert "after rank 2 failed" in found[1].summary and found[1].severity == "warning"
    assert fleet.reported_cell(1) == "MISSING: the run was stopped first"
    # with no recorded cause, the same rank is named missing, as before the board
    fleet.arrivals = [{"rank": 1, "stage": "pg-formed", "hostname": "gpu-0"}]
    fleet.missing = fleet.missing[:1]
    codes = sorted(f.code for f in _found(judge_fleet(fleet), "fleet.ranks/"))
    assert codes == ["fleet.ranks/interrupted", "fleet.ranks/missing"]


def test_a_rank_that_reported_and_then_neither_finished_nor_died_on_the_board_is_named_as_of_unknown_end():
    """issue 41: rank 0 waits (bounded) for every rank's "done" or exit record; one that has neither when it stops
    waiting is named, never silently left out nor listed like the healthy ones."""
    fleet = _fleet([_node_facts()], per_node=2)
    fleet.arrivals = [{"rank": 0, "stage": "reported", "hostname": "gpu-0"},
                      {"rank": 1, "stage": "reported", "hostname": "gpu-0"}]
    (f,) = _found(judge_fleet(fleet), "fleet.ranks/")
    assert f.code == "fleet.ranks/unsettled" and f.severity == "warning"
    assert f.summary == ("rank 1 (node 0, host gpu-0, local rank 1) sent its report, then neither finished nor had "
                         "its exit recorded on the launcher's store before rank 0 stopped waiting (last on the "
                         "board: 'reported'): whether it ended cleanly is unknown")
    assert fleet.reported_cell(1) == "yes, then its end is unknown (last on the board: 'reported')"
    assert fleet.reported_cell(0) == "yes"  # rank 0 writes the report: its own end is not in question
    fleet.arrivals[1]["stage"] = "done"
    assert not _found(judge_fleet(fleet), "fleet.ranks/") and fleet.reported_cell(1) == "yes"
    fleet.arrivals[1]["stage"] = "reported"
    fleet.interrupted = "SIGTERM at 2026-12-07 08:00:00 UTC, during the end of the run"  # every rank was cut short
    assert "fleet.ranks/unsettled" not in [f.code for f in _found(judge_fleet(fleet), "fleet.ranks/")]
