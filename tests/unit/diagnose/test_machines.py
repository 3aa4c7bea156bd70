"""Two machines' reports in one paste (a thread, "before"/"after", several files) are never combined."""

from __future__ import annotations

import json

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.diagnose.machines import compatible
from envdoctor.report.json_report import render_json
from envdoctor.report.markdown import render_markdown
from envdoctor.services.diagnose import diagnose_report
from tests.paths import SHARED, TESTS

HERE = TESTS
REPORTS = SHARED / "examples" / "reports"
LABELS = json.loads((REPORTS / "labels.json").read_text()) if (REPORTS / "labels.json").exists() else []
TABLE = (HERE / "fixtures" / "nvidia-smi-table" / "geforce-24gb_525.125.06_fan-err.txt").read_text()
MIXING = {"COMPANION_VERSION_MISMATCH", "CUDA_VARIANT_MIXED"}


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _serious(report):
    return {f.category for f in report.all_findings if f.severity in ("warning", "error")}


def _collect_env(torch: str, cuda: str, python: str, driver: str, gpu: str, extra: str = "") -> str:
    return (f"Collecting environment information...\nPyTorch version: {torch}\nIs debug build: False\n"
            f"CUDA used to build PyTorch: {cuda}\nROCM used to build PyTorch: N/A\n\nOS: Ubuntu 22.04.3 LTS (x86_64)\n"
            f"Python version: {python} (main) [GCC 11.2.0] (64-bit runtime)\nIs CUDA available: True\n"
            f"GPU models and configuration: GPU 0: {gpu}\nNvidia driver version: {driver}\n"
            f"cuDNN version: Could not collect\n\nVersions of relevant libraries:\n[pip3] torch=={torch}\n{extra}")


def test_compatible_values() -> None:
    assert compatible("2.6.0", "2.6.0+cu126") and compatible("3.12", "3.12.9") and compatible("570.124", "570.124.04")
    assert not compatible("2.6.0+cpu", "2.6.0+cu126") and not compatible("1.3.0", "2.6.0")
    assert compatible(["NVIDIA GeForce ..."], ["NVIDIA GeForce RTX 4090"])
    assert compatible("Ubuntu 22.04.3 LTS", "Ubuntu 22.04") and not compatible("Ubuntu 22.04", "Ubuntu 20.04")


@pytest.mark.skipif(not LABELS, reason="shared/examples/reports not present")
@pytest.mark.parametrize("order", [("001", "010"), ("010", "001")])
def test_two_reporters_are_judged_separately(order, compat) -> None:
    labels = {r["id"]: r["labels"] for r in LABELS}
    texts = [(REPORTS / f"{rid}.txt").read_text() for rid in order]
    report = diagnose_report(texts, compat, names=[f"{rid}.txt" for rid in order])
    serious = _serious(report)
    # no finding pairs torchvision 0.4.1 (010) with torch 2.6.0 (001)
    assert not serious & MIXING, [(f.category, f.summary) for f in report.findings]
    for rid in order:
        machine = next(m for m in report.machines if f"({rid}.txt)" in m.label)
        for label in labels[rid]:
            assert any(f.category == label for f in machine.findings), label
    assert not report.findings  # each machine's findings are its own (Report.machines), no "report N: " prose
    for m in report.machines:
        assert not any(f.summary.startswith("report ") for f in m.findings)
    paste = report.facts.paste
    assert paste.reports and len(paste.reports) == 2 and len(paste.machines) == 2
    assert any("001.txt line" in c and "010.txt line" in c for c in paste.conflicts)
    # the merged facts keep only what the machines agree on
    assert report.facts.driver.version is None and report.facts.pythons[0].python_version is None
    data = json.loads(render_json(report))
    assert data["findings"] == [] and [len(m["findings"]) for m in data["machines"]] == \
        [len(m.findings) for m in report.machines]
    assert len(data["facts"]["paste"]["machines"]) == 2
    md = render_markdown(report)
    assert "report 1 of 2" in md and "report 2 of 2" in md and "Conflict" in md


def test_collect_env_and_nvidia_smi_of_one_machine_merge(compat) -> None:
    ce = _collect_env("2.0.1+cu118", "11.8", "3.10.12", "525.125.06", "NVIDIA GeForce RTX 3090")
    facts, info = read_paste([ce, "$ nvidia-smi\n" + TABLE], compat, names=["env.txt", "smi.txt"])
    assert facts.paste.machines is None and not facts.paste.conflicts and not info.reports
    assert facts.driver.version == "525.125.06" and facts.driver.cuda_driver_version == "12.0"
    assert facts.pythons[0].torch.version == "2.0.1+cu118"
    # the same in one paste
    facts, _ = read_paste([ce + "\n$ nvidia-smi\n" + TABLE], compat)
    assert facts.paste.machines is None and facts.driver.cuda_driver_version == "12.0"


def test_thread_with_two_collect_envs(compat) -> None:
    a = _collect_env("2.6.0+cu126", "12.6", "3.12.9", "570.124.04", "NVIDIA GeForce RTX 4090",
                     "[pip3] torchvision==0.21.0+cu126\n")
    b = _collect_env("1.13.1+cu117", "11.7", "3.8.10", "470.182.03", "NVIDIA GeForce RTX 3090",
                     "[pip3] torchvision==0.14.1+cu117\n")
    text = f"Reporter:\n{a}\n\nSame here, my env:\n\n{b}\n"
    report = diagnose_report([text], compat)
    assert not _serious(report) & MIXING, [f.summary for f in report.findings]
    assert len(report.facts.paste.machines) == 2
    assert [m.pythons[0].torch.version for m in report.facts.paste.machines] == ["2.6.0+cu126", "1.13.1+cu117"]
    assert "lines" in report.facts.paste.reports[0]  # one file split: the lines say which part


def test_before_and_after_invent_no_mismatch(compat) -> None:
    text = ("Before the upgrade:\n>>> import torch\n>>> torch.__version__\n'1.13.1+cu117'\n"
            "After `pip install -U torch torchvision`:\n>>> import torch\n>>> torch.__version__\n'2.0.1+cu118'\n\n"
            "$ pip list | grep torch\nPackage     Version\n----------- -----------\ntorch       2.0.1+cu118\n"
            "torchvision 0.15.2+cu118\n")
    report = diagnose_report([text], compat)
    assert not _serious(report) & MIXING, [f.summary for f in report.findings]
    notes = " ".join(report.facts.paste.not_found)
    assert "1.13.1" in notes and "2.0.1" in notes
    # two REPL values in one stretch of text with no boundary between them: the fact is dropped, not chosen
    facts, info = read_paste([text.split("$ pip list")[0] + "[pip3] torchvision==0.15.2+cu118\n"], compat)
    t = facts.pythons[0].torch if facts.pythons else None
    assert t is None or t.version is None
    assert any("torch version: 2 different values" in n for n in info.not_found)


@pytest.mark.skipif(not LABELS, reason="shared/examples/reports not present")
@pytest.mark.parametrize("row", LABELS, ids=[r["id"] for r in LABELS])
def test_single_reports_are_one_machine(row, compat) -> None:
    facts, _ = read_paste([(REPORTS / f"{row['id']}.txt").read_text()], compat)
    assert facts.paste.machines is None and facts.paste.reports is None and facts.paste.conflicts is None


def test_splitting_is_linear_in_units(compat) -> None:
    """A report pasted 20 or 400 times: each distinct output is read once and grouping compares a bounded number
    of times (work done, never seconds: the 10 MB version was 5x slower when each unit was compared again)."""
    from envdoctor.diagnose import machines

    one = _collect_env("2.3.1+cu121", "12.1", "3.11.9", "525.125.06", "NVIDIA GeForce RTX 4090") + "\n" + TABLE + "\n"
    work = {}
    for n in (20, 400):
        facts, _ = read_paste([one * n], compat)
        work[n] = dict(machines.LAST_WORK)
        assert facts.pythons[0].torch.version == "2.3.1+cu121"
        assert facts.paste.reports is None  # one machine, pasted many times
    assert work[400]["units"] >= 20 * work[20]["units"] - 20
    assert work[400]["reads"] == work[20]["reads"] <= 3
    assert work[400]["compared"] <= work[20]["compared"] + 2
