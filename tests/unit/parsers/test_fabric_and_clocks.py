"""nvidia-smi's Fabric State/Status and default application clocks, read from real captures and judged."""

from __future__ import annotations

import dataclasses

from envdoctor.model.facts import Facts
from envdoctor.model.findings import Severity
from envdoctor.parsers.nvidia_smi_fields import to_fabric_state, to_fabric_status
from envdoctor.parsers.nvidia_smi_q import parse_nvidia_smi_q
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

FIX = FIXTURES


def test_fabric_state_from_a_real_h100_nvidia_smi_q():
    d = parse_nvidia_smi_q((FIX / "perf-throttle/h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt").read_text())
    assert {(g.fabric_state, g.fabric_status) for g in d.gpus} == {("completed", "SUCCESS")}
    f = Facts(driver=dataclasses.replace(d, status="ok"))
    assert not [x for x in judge(f, only=["interconnect.fabric-manager"]).findings]
    stuck = [dataclasses.replace(g, fabric_state="in_progress") if g.index == 3 else g for g in d.gpus]
    got = judge(Facts(driver=dataclasses.replace(d, status="ok", gpus=stuck)),
                only=["interconnect.fabric-manager"]).findings
    assert [(x.code, x.severity) for x in got] == [("interconnect.fabric-manager/not-ready", Severity.ERROR)]
    assert "GPU 3: in_progress" in got[0].summary


def test_fabric_na_and_default_application_clocks_from_xml():
    d = parse_nvidia_smi_xml((FIX / "nvidia-smi-xml/a100-sxm4-80gb_535.54.03.xml").read_text())
    g = d.gpus[0]
    assert (g.fabric_state, g.fabric_status) == (None, None)  # "N/A" on Ampere
    assert (g.clocks_sm_app_mhz, g.clocks_sm_app_default_mhz) == (1275, 1275)
    assert (to_fabric_state("Not Started"), to_fabric_status("N/A")) == ("not_started", None)
    assert (to_fabric_state("[N/A]"), to_fabric_status("Success")) == (None, "SUCCESS")
    assert to_fabric_status("In Progress") == "IN_PROGRESS"


def test_hw_slowdown_with_power_brake_is_one_error_not_also_a_warning():
    d = parse_nvidia_smi_q((FIX / "perf-throttle/h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt").read_text())
    codes = [x.code for x in judge(Facts(driver=dataclasses.replace(d, status="ok")), only=["gpu.throttle"]).findings]
    assert "gpu.throttle/hw-slowdown" in codes and "gpu.throttle/hw-slowdown-seen" not in codes
