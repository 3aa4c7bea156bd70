"""An action per finding (issue 43): every finding code a check declares resolves to an action of the vocabulary,
NVIDIA's Xid buckets and NVML's recovery actions map onto it, and the JSON, explain, node-health's line and JSON
and the OpenMetrics output carry it."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks.catalog import explain_lines
from envdoctor.checks.registry import finding_codes
from envdoctor.compat import load_compat
from envdoctor.judging import Selection, judge
from envdoctor.model import actions as A
from envdoctor.model.catalogue import CATEGORIES, CATEGORY_ACTIONS, CODE_ACTIONS, action_for
from envdoctor.model.findings import Finding
from envdoctor.services import node_health as nh
from tests import machines


def test_every_category_has_a_default_action_of_the_vocabulary() -> None:
    assert sorted(set(CATEGORIES) - set(CATEGORY_ACTIONS)) == []  # a new category needs its default action
    assert sorted(set(CATEGORY_ACTIONS) - set(CATEGORIES)) == []
    assert {a for a in CATEGORY_ACTIONS.values()} <= set(A.ACTIONS)


def test_every_override_names_a_declared_code_and_an_action() -> None:
    declared = finding_codes()
    for code, action in CODE_ACTIONS.items():
        assert code in declared, f"CODE_ACTIONS[{code!r}]: no check declares that code"
        assert action in A.ACTIONS, code


def test_every_declared_finding_code_has_an_action_in_each_category_it_can_carry() -> None:
    codes = finding_codes()
    assert len(codes) > 200
    missing = []
    for code, fc in codes.items():
        cats = {fc.builder.category_of(fc.kind)} | set(fc.builder.categories or ())
        if code.startswith(("messages.signature/", "messages.status-codes/", "host.environment/")):
            cats = set(CATEGORIES)  # the category comes from a data row: any of the catalogue's
        for cat in cats:
            if cat not in CATEGORY_ACTIONS and code not in CODE_ACTIONS:
                missing.append((code, cat))
            else:
                assert action_for(code, cat) in A.ACTIONS
    assert missing == []


def test_a_finding_carries_its_action_and_a_note_none() -> None:
    f = Finding("gpu.memory-errors/remap-failed", "GPU_MEMORY_ERRORS", "error", "remap failed")
    assert f.action == A.DRAIN_NODE and f.to_dict()["action"] == "drain-node"
    assert Finding("gpu.memory-errors/remap-pending", "GPU_MEMORY_ERRORS", "error", "x").action == A.RESET_GPU
    assert Finding("gpu.xid/79", "GPU_XID_ERRORS", "error", "x").action == A.RESET_GPU  # the template's override
    assert Finding("storage.data-path/network", "SLOW_STORAGE", "info", "x").action == A.NONE
    assert Finding("gpu.xid/79", "GPU_XID_ERRORS", "error", "x", action="reboot-node").action == A.REBOOT_NODE
    with pytest.raises(ValueError, match="drain-node"):
        Finding("gpu.xid/79", "GPU_XID_ERRORS", "error", "x", action="rma")


@pytest.mark.parametrize("bucket,action", [
    ("RESTART_APP", "restart-process"), ("RESET_GPU", "reset-gpu"), ("RESTART_BM", "reboot-node"),
    ("RESTART_VM", "reboot-node"), ("CONTACT_SUPPORT", "drain-node"), ("CHECK_MECHANICALS", "drain-node"),
    ("UPDATE_SWFW", "reconfigure"), ("IGNORE", "none"), (" reset_gpu ", "reset-gpu"),
    ("WORKFLOW_XID_48", None), ("XID_154", None), ("CHECK_UVM", None), ("SOMETHING_NEW", None),
])
def test_xid_resolution_buckets(bucket, action) -> None:
    assert A.nvidia_action(bucket=bucket) == action


def test_nvml_recovery_actions_by_value_and_name() -> None:
    assert [A.nvidia_action(nvml_recovery=v) for v in range(8)] == [
        "none", "reset-gpu", "reboot-node", "restart-process", "reset-gpu", "drain-node", "reset-gpu", "reboot-node"]
    assert A.nvidia_action(nvml_recovery="NVML_GPU_RECOVERY_ACTION_NODE_REBOOT") == "reboot-node"
    assert A.nvidia_action(nvml_recovery="drain_and_reset") == "reset-gpu"
    # as the Gpu.recovery_action fact and nvidia-smi spell them
    assert [A.nvidia_action(nvml_recovery=w) for w in ("none", "gpu_reset", "node_reboot", "drain_p2p",
                                                       "recover_imex_domain", "unknown_6", "unknown_42")] == [
        "none", "reset-gpu", "reboot-node", "restart-process", "drain-node", "reset-gpu", None]
    assert A.nvidia_action(nvml_recovery="GPU Reset Required") == "reset-gpu"
    assert A.nvidia_action(nvml_recovery="Node Reboot Required") == "reboot-node"
    assert A.nvidia_action(nvml_recovery="unknown: Flash the moon") is None
    assert A.nvidia_action(nvml_recovery=99) is None and A.nvidia_action(nvml_recovery=True) is None
    assert A.nvidia_action() is None
    # both: the stronger wins (NVML read now says reboot, the Xid's bucket said restart the application)
    assert A.nvidia_action(bucket="RESTART_APP", nvml_recovery=2) == "reboot-node"
    assert A.nvidia_action(bucket="WORKFLOW_XID_13", nvml_recovery=0) == "none"


def test_nvml_names_and_values_are_nvidias_own_binding() -> None:
    pynvml = pytest.importorskip("pynvml")
    for value, (name, _action) in A.NVML_RECOVERY.items():
        if hasattr(pynvml, name):  # an older nvidia-ml-py may lack the newest values
            assert getattr(pynvml, name) == value, name
    assert getattr(pynvml, "NVML_GPU_RECOVERY_ACTION_GPU_RESET", 1) == 1


def test_strongest_orders_the_vocabulary() -> None:
    assert A.strongest(["reconfigure", "drain-node", "reset-gpu"]) == "drain-node"
    assert A.strongest([]) == "none" and list(A.ACTIONS)[0] == "none" and list(A.ACTIONS)[-1] == "drain-node"


def test_explain_shows_the_action() -> None:
    text = "\n".join(explain_lines("gpu.memory-errors/remap-failed", load_compat))
    assert "Action (for a scheduler, as a warning or error): drain-node" in text
    assert "Action (for a scheduler, the category's default; an info note's is none): restart-process" in \
        "\n".join(explain_lines("GPU_BUSY", load_compat))
    lines = explain_lines("drain-node", load_compat)
    assert lines[0].startswith("drain-node: an action for a scheduler")
    assert "NVIDIA's Xid resolution buckets: CONTACT_SUPPORT, CHECK_MECHANICALS" in lines
    assert any(line.startswith("Also: ") and "gpu.memory-errors/remap-failed" in line for line in lines)


def _failed_remap():
    f = machines.healthy_a100()
    gpus = [dataclasses.replace(g, remapped_rows_failure=True, remapped_rows_uncorrectable=3) for g in f.driver.gpus]
    return dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=gpus))


def test_node_health_line_json_and_metrics_carry_the_action() -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from envdoctor.report.openmetrics import render_openmetrics

    report = judge(_failed_remap(), load_compat(), Selection(only=nh.preset()["only"]))
    health = nh.verdict(report, env={}, scheduler="none")
    assert health.action == "drain-node"
    assert health.line.startswith("envdoctor FAIL GPU_MEMORY_ERRORS action=drain-node")
    doc = health.to_dict()
    assert doc["action"] == "drain-node" and doc["problems"][0]["action"] == "drain-node"
    families = {f.name: f for f in text_string_to_metric_families(render_openmetrics(report))}
    acting = {s.labels["check"]: (s.labels["action"], s.value) for s in families["envdoctor_check_action"].samples}
    status = {s.labels["check"]: s.value for s in families["envdoctor_check_status"].samples}
    assert acting["gpu.memory-errors"] == ("drain-node", 2.0)
    assert {c: v for c, (_a, v) in acting.items()} == status  # the same series and values as check_status
    counts = {s.labels["action"]: s.value for s in families["envdoctor_actions"].samples}
    assert set(counts) == set(A.ACTIONS) and counts["drain-node"] >= 1
    assert sum(counts.values()) == sum(1 for f in report.all_findings if f.severity in ("error", "warning"))


def test_every_bucket_and_recovery_action_the_xid_table_knows_is_mapped_or_named_unmappable() -> None:
    # compat/xid.py's lists (issue 39's Xid catalog), where this tree has them: a bucket either maps to an action
    # or is one of those that name a procedure rather than an action (nvidia_action then answers None)
    from envdoctor.compat import xid

    buckets = getattr(xid, "RESOLUTION_BUCKETS", None)
    recovery = getattr(xid, "RECOVERY_ACTIONS", None)
    if buckets is None and recovery is None:
        pytest.skip("compat/xid.py has no RESOLUTION_BUCKETS or RECOVERY_ACTIONS in this tree")
    for bucket in buckets or ():
        if bucket.startswith("WORKFLOW_") or bucket in ("XID_154", "CHECK_UVM"):
            assert A.nvidia_action(bucket=bucket) is None, bucket
        else:
            assert A.nvidia_action(bucket=bucket) in A.ACTIONS, bucket
    for value, name in (recovery or {}).items():
        assert A.nvidia_action(nvml_recovery=value) == A.nvidia_action(nvml_recovery=name) is not None, name
