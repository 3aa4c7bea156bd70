"""Driver fixes respect which GPUs a branch supports (compat_data/driver_gpu_support.json).

NVIDIA's CUDA Toolkit, Driver, and Architecture Matrix: Kepler's last driver is R470, Maxwell/Pascal/Volta's
R580; Blackwell (CC 10.0/12.0) starts with CUDA 12.8 and R570.
"""

from __future__ import annotations

import json
from typing import List, Optional

import pytest

from envdoctor.compat import CompatDataError, load_compat, validate_file
from envdoctor.compat.driver_gpu import driver_gpu_table, parse_driver_gpu_support
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.remedies import driver_branch
from envdoctor.services.collect import judge
from tests import machines as m
from tests.paths import REPO

DATA = REPO / "compat_data" / "driver_gpu_support.json"
ARCH_2_1_CU121 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
ARCH_2_8_CU128 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _facts(driver: str, ceiling: str, gpus, torch: str, cuda: str, arch: Optional[List[str]]):
    return m.facts(m.driver(driver, ceiling, [m.gpu(i, name, cc) for i, (name, cc) in enumerate(gpus)]),
                   [m.torch_env(torch, cuda, arch)])


def _findings(facts, check_id: str):
    (check,) = judge(facts, only=[check_id]).checks
    assert check.status != CheckStatus.ERRORED, check.reason
    return check.findings


def _all_text(f) -> str:
    return " ".join([f.summary, f.fix.summary if f.fix else ""] + (f.fix.commands if f.fix else []))


# --------------------------------------------------------------------------- the data


def test_loader_validates_the_file(compat):
    doc = validate_file(DATA)
    table = parse_driver_gpu_support(doc)
    assert driver_gpu_table(compat).rows == table.rows
    ids = {s["id"] for s in doc["sources"]}
    for row in doc["rows"]:
        assert row["source"] and row.get("confidence") in ("high", "medium", "low", "unverified")
        cited = row["source"] if isinstance(row["source"], list) else [row["source"]]
        assert all(c in ids or c.startswith("http") for c in cited), row["architecture"]


def test_values(compat):
    t = driver_gpu_table(compat)
    assert (t.for_cc("3.7").architecture, t.for_cc("3.7").last_branch) == ("Kepler", 470)
    assert t.for_cc("3.5").last_branch == 470
    for cc in ("5.0", "5.2", "6.0", "6.1", "7.0"):
        assert t.for_cc(cc).last_branch == 580, cc
    for cc in ("7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"):
        assert t.for_cc(cc).last_branch is None, cc
    assert t.for_cc("12.0").first_branch == 570 and t.for_cc("10.0").first_branch == 570
    assert t.for_cc("7.5").first_branch == 410
    # unconfirmed first branches stay null; Jetson CCs are not covered
    assert t.for_cc("9.0").first_branch is None and t.for_cc("8.9").first_branch is None
    assert t.for_cc("7.2") is None and t.for_cc("8.7") is None and t.for_cc("11.0") is None
    # Fermi ends at R390 (Debian's nvidia-legacy-390xx: the last release for the GF1xx chips)
    assert t.for_cc("2.0").last_branch == 390 and t.for_cc("2.1").last_branch == 390
    assert t.for_cc("1.3") is None and t.for_cc(None) is None and t.for_cc("x") is None


def test_parser_rejects_bad_rows(tmp_path):
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    bad = dict(doc, rows=doc["rows"] + [dict(doc["rows"][0], cc_min="3.5", cc_max="3.5")])
    with pytest.raises(CompatDataError, match="overlaps"):
        parse_driver_gpu_support(bad)
    with pytest.raises(CompatDataError, match="first_branch"):
        parse_driver_gpu_support(dict(doc, rows=[dict(doc["rows"][0], first_branch=500)]))
    with pytest.raises(CompatDataError, match="cc_min"):
        parse_driver_gpu_support(dict(doc, rows=[dict(doc["rows"][0], cc_min="9.0")]))
    with pytest.raises(CompatDataError, match="branch number"):
        parse_driver_gpu_support(dict(doc, rows=[dict(doc["rows"][0], last_branch="470")]))


# --------------------------------------------------------------------------- the fixes


def test_k80_cu121_on_470_is_never_told_to_install_r580():
    f = _facts("470.256.02", "11.4", [("Tesla K80", "3.7")], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    (x,) = _findings(f, "driver.cuda-compat")
    assert x.code == "driver.cuda-compat/too-old" and x.severity == Severity.ERROR
    text = _all_text(x)
    assert "580" not in text and "535" not in text and "cuda-compat" not in text
    assert "Kepler" in x.fix.summary and "R470" in x.fix.summary and "CUDA 11.4" in x.fix.summary
    # torch 2.1 has a cu118 build with sm_37 kernels, which R470 runs (minor-version compatibility)
    assert any("torch==2.1.2" in c and "/cu118" in c for c in x.fix.commands)


def test_k80_on_a_torch_without_kepler_builds_gets_the_last_one():
    # torch 2.8 has no cu118 build: the newest torch R470 runs with sm_37 kernels is 2.7 (cu118)
    f = _facts("470.256.02", "11.4", [("Tesla K80", "3.7")], "2.8.0+cu128", "12.8", ARCH_2_8_CU128)
    (x,) = _findings(f, "driver.cuda-compat")
    text = _all_text(x)
    assert "580" not in text and "570" not in text.replace("570.26", "")
    assert "torch 2.7" in x.fix.summary and "cu118" in x.fix.summary and "newer GPU" in x.fix.summary
    assert any("torch==2.7" in c and "/cu118" in c for c in x.fix.commands)
    assert not any("nvidia-driver" in c for c in x.fix.commands)  # already on R470
    # on an older driver the last branch is suggested too
    f = _facts("460.32.03", "11.2", [("Tesla K80", "3.7")], "2.8.0+cu128", "12.8", ARCH_2_8_CU128)
    (x,) = _findings(f, "driver.cuda-compat")
    assert any("nvidia-driver-470" in c for c in x.fix.commands)


def test_v100_on_an_old_driver_is_told_r580_at_most(compat):
    f = _facts("450.51.06", "11.0", [("Tesla V100-SXM2-16GB", "7.0")], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    (x,) = _findings(f, "driver.cuda-compat")
    assert "R580" in x.fix.summary and any("nvidia-driver-580" in c for c in x.fix.commands)
    assert driver_branch.target_branch(f, compat, "530.30.02") == 580
    # R595 and R620 are still supported but dropped Volta; after R580's end of life its legacy branch remains
    late = m.facts(f.driver, f.pythons, collected_at="2029-01-01T00:00:00Z")
    assert driver_branch.target_branch(late, compat, "530.30.02") == 580
    # a CUDA 13.1 build needs more than R580 gives: no branch runs it on a V100
    assert driver_branch.branch_plan(f, compat, "590.44.01")[0] is None
    # the lifecycle check's upgrade list leaves out branches that dropped Volta
    (lc,) = [y for y in _findings(m.facts(m.driver("535.54.03", "12.2", f.driver.gpus), f.pythons),
                                  "driver.lifecycle") if y.code == "driver.lifecycle/past-eol"]
    assert "R580" in lc.fix.summary and "R595" not in lc.fix.summary and "R620" not in lc.fix.summary


def test_h100_gets_r580(compat):
    f = _facts("450.51.06", "11.0", [("NVIDIA H100 80GB HBM3", "9.0")], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    (x,) = _findings(f, "driver.cuda-compat")
    assert "R580" in x.fix.summary and "cuda-compat" in x.fix.summary
    assert driver_branch.target_branch(f, compat, "530.30.02") == 580
    assert not [y for y in _findings(f, "driver.lifecycle") if y.code == "driver.lifecycle/gpu-newer-than-driver"]


def test_a_mixed_machine_needs_a_branch_for_both(compat):
    # a K80 next to an RTX 5090: R470 drops nothing the K80 needs but predates the 5090 - no branch fits both
    f = _facts("470.256.02", "11.4", [("Tesla K80", "3.7"), ("NVIDIA GeForce RTX 5090", "12.0")],
               "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    branch, why = driver_branch.branch_plan(f, compat, "530.30.02")
    assert branch is None and "Kepler" in why


def test_rtx5090_on_r550_is_a_driver_outdated_finding():
    f = _facts("550.54.14", "12.4", [("NVIDIA GeForce RTX 5090", "12.0")], "2.8.0+cu128", "12.8", ARCH_2_8_CU128)
    xs = [y for y in _findings(f, "driver.lifecycle") if y.code == "driver.lifecycle/gpu-newer-than-driver"]
    (x,) = xs
    assert (x.category, x.severity) == ("DRIVER_OUTDATED", Severity.ERROR)
    assert "R570" in x.summary and "RTX 5090" in x.summary and "Blackwell" in x.summary
    assert x.evidence[0].source and "R580" in x.fix.summary
    # on R570 and later: nothing to say about the GPU
    ok = _facts("570.172.08", "12.8", [("NVIDIA GeForce RTX 5090", "12.0")], "2.8.0+cu128", "12.8", ARCH_2_8_CU128)
    assert not [y for y in _findings(ok, "driver.lifecycle") if y.code == "driver.lifecycle/gpu-newer-than-driver"]


def test_name_only_gpus_use_the_gpu_table():
    # no compute capability in the facts: the GPU table's name lookup supplies it
    f = _facts("470.256.02", "11.4", [("Tesla K80", "")], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    (x,) = _findings(f, "driver.cuda-compat")
    assert "Kepler" in x.fix.summary and "580" not in _all_text(x)


def test_k80_lifecycle_does_not_suggest_a_branch_that_dropped_it():
    f = _facts("470.256.02", "11.4", [("Tesla K80", "3.7")], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    (x,) = [y for y in _findings(f, "driver.lifecycle") if y.code == "driver.lifecycle/past-eol"]
    # the summary may say which branches are supported; the fix must not send a K80 there
    assert "580" not in x.fix.summary + " ".join(x.fix.commands) and "R470 is the last branch" in x.fix.summary


def test_a_branch_past_the_gpus_last_is_a_driver_dropped_gpu_finding(compat):
    # R580 on a Tesla K80: Kepler ends at R470 (the same table and query recommend uses)
    f = _facts("580.65.06", "13.0", [("Tesla K80", "3.7")], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
    (x,) = [y for y in _findings(f, "driver.lifecycle") if y.code == "driver.lifecycle/gpu-older-than-driver"]
    assert (x.category, x.severity) == ("DRIVER_DROPPED_GPU", Severity.ERROR)
    assert "R580" in x.summary and "Tesla K80" in x.summary and "R470 is the last branch for Kepler" in x.summary
    assert (x.evidence[0].path, x.evidence[0].value, x.evidence[0].expected) == \
        ("driver.version", "580.65.06", "<= R470 for Kepler")
    assert x.evidence[0].source and x.evidence[1].value == "3.7"
    assert x.fix.summary.startswith("No supported branch drives Tesla K80") and "Install the newest R470" in x.fix.summary
    assert any("470" in c for c in x.fix.commands) and "580" not in " ".join(x.fix.commands)
    from envdoctor.model.targets import resolve_gpu
    from envdoctor.services.recommend import recommend

    said = recommend(compat, "580.65.06", [resolve_gpu(compat, "K80")], "3.10")["driver_cannot_drive_gpu"]
    assert said and "R580 does not drive" in said  # the same verdict in both commands


def test_a_branch_within_the_gpus_range_is_not_dropped():
    for driver, ceiling, gpu in [("470.256.02", "11.4", ("Tesla K80", "3.7")),  # Kepler's last branch itself
                                 ("580.65.06", "13.0", ("Tesla V100-SXM2-16GB", "7.0")),  # Volta's last
                                 ("580.65.06", "13.0", ("NVIDIA H100 80GB HBM3", "9.0"))]:  # still supported
        f = _facts(driver, ceiling, [gpu], "2.1.2+cu121", "12.1", ARCH_2_1_CU121)
        assert not [y for y in _findings(f, "driver.lifecycle")
                    if y.code == "driver.lifecycle/gpu-older-than-driver"], (driver, gpu)


def test_assert_says_r580_cannot_drive_a_k80(capsys):
    from envdoctor.cli import main

    code = main(["assert", "--target-driver", "580.65.06", "--target-gpus", "K80", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    codes = [(f["code"], f["category"]) for f in out["findings"]]
    assert ("driver.lifecycle/gpu-older-than-driver", "DRIVER_DROPPED_GPU") in codes and code == 1, codes
