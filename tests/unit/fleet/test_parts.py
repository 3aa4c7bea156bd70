"""The fleet's parts that need no process group: the launcher's environment, the test hooks, the NCCL log
reader, the saved report read back, and the command's usage errors."""

from __future__ import annotations

import json

import pytest

from envdoctor.cli import main
from envdoctor.fleet import testing
from envdoctor.fleet.launch import NotLaunched, place_from_env
from envdoctor.fleet.measure import parse_nccl_log
from envdoctor.judging.fleet import judge_fleet
from envdoctor.model.fleet import FleetReportError, fleet_from_report
from envdoctor.report.fleet import render_console, render_markdown, to_dict
from tests.unit.checks.test_fleet import _fleet, _node_facts

TORCHRUN_ENV = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
                "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def test_the_place_comes_from_what_torchrun_sets():
    p = place_from_env(TORCHRUN_ENV)
    assert (p.rank, p.world_size, p.local_rank, p.local_world_size, p.node_rank) == (5, 8, 1, 4, 1)
    assert p.master == "10.0.0.1:29500"
    slurm = {"RANK": "0", "WORLD_SIZE": "2", "SLURM_LOCALID": "0", "SLURM_NODEID": "3",
             "MASTER_ADDR": "a", "MASTER_PORT": "1"}
    assert place_from_env(slurm).node_rank == 3


@pytest.mark.parametrize("env, says", [
    ({}, "RANK and WORLD_SIZE"),
    ({"RANK": "4", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, "0 <= RANK < WORLD_SIZE"),
    ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR and MASTER_PORT"),
])
def test_a_process_not_started_by_a_launcher_is_told_how(env, says):
    with pytest.raises(NotLaunched, match=says):
        place_from_env(env)


def test_the_hooks_are_read_only_under_the_test_flag():
    env = {testing.OVERRIDE: "1:pythons[0].torch.version=2.12.0+cpu;2:host.shm_total_bytes=67108864",
           testing.EXIT: "3:before-gather:0"}
    assert testing.overrides(env, 1) == [] and testing.exit_at(env, 3, "before-gather") is None
    env[testing.ENABLE] = "1"
    assert testing.overrides(env, 1) == [("pythons[0].torch.version", "2.12.0+cpu")]
    assert testing.overrides(env, 2) == [("host.shm_total_bytes", 67108864)]
    assert testing.exit_at(env, 3, "before-gather") == 0 and testing.exit_at(env, 3, "after-init") is None
    record = {"facts": _node_facts().to_dict(), "torch_version": "2.5.1"}
    testing.apply(env, 1, record)
    assert record["facts"]["pythons"][0]["torch"]["version"] == "2.12.0+cpu"


@pytest.mark.parametrize("var, value", [(testing.OVERRIDE, "rank1:host=1"), (testing.EXIT, "3:later:0")])
def test_a_malformed_hook_is_an_error_not_ignored(var, value):
    env = {testing.ENABLE: "1", var: value}
    with pytest.raises(testing.HookError):
        testing.overrides(env, 1)
        testing.exit_at(env, 3, "after-init")


def test_a_hook_path_that_is_not_there_is_an_error():
    with pytest.raises(testing.HookError, match="no 'nothing'"):
        testing.set_path({"host": {}}, "nothing.here", 1)
    with pytest.raises(testing.HookError, match="no item 3"):
        testing.set_path({"pythons": []}, "pythons[3].python_version", "3.9")


# Real NCCL_DEBUG=INFO lines (host names as posted): NVIDIA/nccl-tests#228 (IB, "Using network IB"),
# NVIDIA/nccl#952 (a socket fallback between nodes: "via NET/Socket", intra-node "via P2P/IPC/read"),
# NVIDIA/nccl#1814 (a net plugin's IB: "via NET/IBext_v8").
IB_LOG = """\
user:5181:5232 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/IB [RO]; OOB ibs85f0:192.168.1.10<0>
user:5181:5232 [2] NCCL INFO Using network IB
"""
SOCKET_LOG = """\
<cluster_name>:919:1150 [0] NCCL INFO Channel 01/0 : 8[0] -> 15[7] via P2P/IPC/read
<cluster_name>:919:1150 [0] NCCL INFO Channel 02/0 : 8[0] -> 15[7] via P2P/IPC/read
<cluster_name>:926:1151 [7] NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3
<cluster_name>:926:1151 [7] NCCL INFO Channel 07/0 : 15[7] -> 6[6] [send] via NET/Socket/3
"""
PLUGIN_LOG = "hostname-test:987:1260 [7] NCCL INFO Channel 03/0 : 47[7] -> 39[7] [receive] via NET/IBext_v8/2\n"


def test_the_nccl_log_says_which_transport_was_chosen():
    ib = parse_nccl_log(IB_LOG)
    assert ib["network"] == "IB" and ib["devices"]["IB"].startswith("[0]mlx5_0:1/IB")
    sock = parse_nccl_log(SOCKET_LOG)
    assert sock["channels"] == {"P2P/IPC": 2, "NET/Socket": 2} and sock["network"] is None
    assert parse_nccl_log(PLUGIN_LOG)["channels"] == {"NET/IB": 1}
    assert parse_nccl_log("no nccl here\n") == {}


def test_a_saved_report_is_judged_again_offline_with_the_same_findings(tmp_path, capsys):
    small = 64 * 1024 * 1024
    rep = judge_fleet(_fleet([_node_facts(), _node_facts(torch="2.4.0+cu121", shm=small), _node_facts()]))
    data = to_dict(rep, redact=False)
    assert [n["node"] for n in data["nodes"]] == ["node 0", "node 1", "node 2"]
    assert data["nodes"][1]["summary"]["torch version"] == "2.4.0+cu121"
    again = judge_fleet(fleet_from_report(json.loads(json.dumps(data))))
    assert [f.code for f in again.findings] == [f.code for f in rep.findings]
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(data))
    assert main(["fleet", "--report", str(path), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert any("2.4.0+cu121" in f["summary"] for f in out["fleet_findings"])
    # each node's facts are a snapshot `check --facts` judges on its own
    snap = tmp_path / "node1.json"
    snap.write_text(json.dumps(out["nodes"][1]["facts"]))
    assert main(["check", "--facts", str(snap), "--format", "json", "--fail-on", "warning"]) == 1
    judged = json.loads(capsys.readouterr().out)
    assert "SHM_TOO_SMALL" in {f["category"] for f in judged["findings"]}


def test_the_text_renderers_name_ranks_nodes_and_findings():
    rep = judge_fleet(_fleet([_node_facts(), _node_facts(torch="2.4.0+cu121")]))
    console = render_console(rep)
    assert "GPU-0001" in console and "node 1 (gpu-1)" in console and "torch version differs" in console
    md = render_markdown(rep)
    assert "| rank | node |" in md and "GPU-0001" not in md and "gpu-1" not in md  # redacted


@pytest.mark.parametrize("text, says", [("{}", "not an envdoctor fleet report"), ("[1", "Expecting"),
                                         ('{"kind": "envdoctor-fleet-report", "schema_version": 99}', "reads 1")])
def test_a_file_that_is_no_fleet_report_is_a_usage_error(tmp_path, capsys, text, says):
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert main(["fleet", "--report", str(path)]) == 2
    assert says in capsys.readouterr().err


def test_fleet_outside_a_launcher_is_a_usage_error(monkeypatch, capsys):
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert main(["fleet"]) == 2
    assert "torchrun" in capsys.readouterr().err


def test_fleet_report_errors_name_the_problem():
    with pytest.raises(FleetReportError):
        fleet_from_report({"kind": "envdoctor-fleet-report", "schema_version": 1, "fleet": {}, "nodes": []})


def test_a_redacted_report_still_tells_its_nodes_apart(tmp_path):
    """Without a launcher's node rank (srun alone), nodes are "host 0", "host 1" ... by their lowest rank: the
    key holds no host name, so the redacted JSON judged again has the same nodes."""
    fleet = _fleet([_node_facts(), _node_facts(torch="2.4.0+cu121")])
    for rec in fleet.ranks:
        rec["node_rank"] = None
        rec.pop("node", None)
    from envdoctor.model.fleet import group_nodes

    fleet.nodes = group_nodes(fleet.ranks, {0: _node_facts().to_dict(), 1: _node_facts(torch="2.4.0+cu121").to_dict()})
    assert [n.key for n in fleet.nodes] == ["host 0", "host 1"]
    data = to_dict(judge_fleet(fleet), redact=True)
    assert "gpu-1" not in json.dumps(data)
    again = judge_fleet(fleet_from_report(data))
    assert [n.key for n in again.fleet.nodes] == ["host 0", "host 1"]
    (f,) = [f for f in again.findings if f.summary.startswith("torch version differs")]
    assert "host 1 (<redacted>), rank 1: 2.4.0+cu121" in f.summary


@pytest.mark.parametrize("code", ["fleet.consistency/node-facts", "fleet.ranks/missing", "fleet.ranks/died",
                                  "fleet.ranks/not-arrived", "fleet.ranks/late", "fleet.ranks/unsettled",
                                  pytest.param("fleet.stragglers/h2d-pinned"),
                                  "fleet.transport/socket-fallback", "FLEET_INCONSISTENT", "fleet.collectives"])
def test_every_fleet_code_can_be_explained(code, capsys):
    assert main(["explain", code]) == 0
    assert capsys.readouterr().out.strip()


def test_an_unknown_fleet_kind_is_not_explained(capsys):
    assert main(["explain", "fleet.ranks/nope"]) == 2
