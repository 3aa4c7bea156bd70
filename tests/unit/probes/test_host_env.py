"""The host probe records every variable of compat_data/env_vars.json and the network interfaces' names, through a
fake environment and a temporary /sys; the facts round-trip through JSON."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from envdoctor.compat import bundled_dir, datadir, load_compat
from envdoctor.model.facts import Facts
from envdoctor.probes.host import ENV_OF_INTEREST, probe_host
from tests.fakes.runner import FakeRunner


def _root(tmp_path: Path, ifaces=("lo", "eth0", "ib0")) -> Path:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc/cpuinfo").write_text("processor\t: 0\n")
    (root / "sys/class").mkdir(parents=True)
    for name in ifaces:
        (root / "sys/class/net" / name).mkdir(parents=True)
    return root


def test_every_table_variable_is_recorded_set_or_unset(tmp_path):
    env = {"CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "999", "UNRELATED": "x"}
    h = probe_host(FakeRunner(strict=False), root=str(_root(tmp_path)), env=env)
    names = load_compat().env_vars.names()
    assert set(names) <= set(h.env) and set(ENV_OF_INTEREST) <= set(h.env)
    assert h.env["CUDA_LAUNCH_BLOCKING"] == "1" and h.env["OMP_NUM_THREADS"] == "999"
    assert h.env["NCCL_SOCKET_IFNAME"] is None and h.env["PYTORCH_ALLOC_CONF"] is None  # recorded unset
    assert "UNRELATED" not in h.env
    assert h.network_interfaces == ["eth0", "ib0", "lo"]


def test_no_sys_class_net_is_unknown(tmp_path):
    root = tmp_path / "bare"
    root.mkdir()
    assert probe_host(FakeRunner(strict=False), root=str(root), env={}).network_interfaces is None


def test_a_row_of_an_installed_update_is_recorded_without_a_code_change(tmp_path, monkeypatch):
    data = tmp_path / "data-2027.1"
    data.mkdir()
    doc = json.loads((bundled_dir() / "env_vars.json").read_text(encoding="utf-8"))
    row = copy.deepcopy(doc["rows"][0])
    row.update(id="new-variable", variable="SOME_NEW_CUDA_SWITCH")
    doc["rows"].append(row)
    (data / "env_vars.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setattr(datadir, "installed_update", lambda: datadir.InstalledUpdate(
        data, "2027.1", "2027-01-01", None, None))
    h = probe_host(FakeRunner(strict=False), root=str(_root(tmp_path)), env={"SOME_NEW_CUDA_SWITCH": "1"})
    assert h.env["SOME_NEW_CUDA_SWITCH"] == "1" and h.env["CUDA_LAUNCH_BLOCKING"] is None


def test_a_missing_table_leaves_the_built_in_list_and_says_so(tmp_path, monkeypatch):
    empty = tmp_path / "no-data"
    empty.mkdir()
    monkeypatch.setattr(datadir, "bundled_dir", lambda: empty)  # where env_vars reads it from
    h = probe_host(FakeRunner(strict=False), root=str(_root(tmp_path)), env={"CUDA_LAUNCH_BLOCKING": "1"})
    assert set(h.env) == set(ENV_OF_INTEREST) and "CUDA_LAUNCH_BLOCKING" not in h.env
    assert "environment-variable table not read (no " in h.reason and "only the built-in list" in h.reason


def test_the_environment_round_trips_through_json(tmp_path):
    h = probe_host(FakeRunner(strict=False), root=str(_root(tmp_path)), env={"CUDA_LAUNCH_BLOCKING": "1"})
    back = Facts.from_json(Facts(host=h).to_json())
    assert back.host.env == h.env and back.host.env["NCCL_DEBUG"] is None
    assert back.host.network_interfaces == ["eth0", "ib0", "lo"]
    # an older snapshot without the field still loads: unknown, not empty
    old = json.loads(Facts(host=h).to_json())
    del old["host"]["network_interfaces"]
    assert Facts.from_dict(old).host.network_interfaces is None
