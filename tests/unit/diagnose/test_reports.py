"""The real pasted reports (shared/examples/reports and reports-batch2): labelled categories found at warning or
error, healthy ones error-free. Skipped with a reason when ../shared is absent (a bare clone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import diagnose_report, diagnose_text
from tests.paths import SHARED

EXAMPLES = SHARED / "examples"
REPORTS = EXAMPLES / "reports"


def _labels(folder: Path) -> list:
    path = folder / "labels.json"
    return [dict(r, folder=folder.name) for r in json.loads(path.read_text())] if path.exists() else []


LABELS = _labels(REPORTS)
ALL_LABELS = LABELS + _labels(EXAMPLES / "reports-batch2")
pytestmark = pytest.mark.skipif(not LABELS, reason="../shared/examples/reports not present (a bare clone)")


def _text(rid: str, folder: str = "reports") -> str:
    return (EXAMPLES / folder / f"{rid}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("row", ALL_LABELS, ids=[f"{r['folder']}/{r['id']}" for r in ALL_LABELS])
def test_labelled_categories(row) -> None:
    report = diagnose_report([_text(row["id"], row["folder"])], load_compat())
    serious = {f.category for f in report.findings if f.severity in ("warning", "error")}
    for label in row["labels"]:
        if label == "HEALTHY":
            assert not [f for f in report.findings if f.severity == "error"], report.findings
        else:
            assert label in serious, [(f.category, f.severity, f.code) for f in report.findings]


# What the readers must recover from each paste (only facts the text shows).
EXPECTED = {
    "001": {"driver": "570.124.04", "torch": "2.6.0+cu126", "torch_cuda": "12.6", "python": "3.12.9",
            "gpu": "NVIDIA GeForce RTX 5090 D", "cc": "12.0", "available": True, "gcc": "14.2.0"},
    "005": {"torch": "2.2.1+cpu", "packages": {"torchvision": "0.17.1"}},
    "007": {"env": {"LD_LIBRARY_PATH": "/public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64"}},
    "010": {"driver": "410.48", "torch": "1.3.0", "python": "3.7.5", "available": False},
    "011": {"driver": "460.80", "ceiling": "11.3", "gpu": "GeForce GTX 1650"},
    "012": {"driver": "435.21", "ceiling": "10.1", "gpus": 2, "container": "docker"},
    "014": {"driver": "440.31", "toolkit": "10.0", "gcc": "9.2.1", "python": "3.6", "torch": "1.4"},
    "016": {"toolkit": "11.2", "torch_cuda": "10.2"},
    "019": {"torch": "2.3.0", "packages": {"flash-attn": "2.5.7"}},
    "024": {"toolkit": "11.3", "torch": "2.0.1+cu117", "torch_cuda": "11.7"},
    "035": {"python": "3.10"},
    "037": {},
    "040": {"wsl": True, "driver_status": "absent"},
    "051": {"driver": "470.182.03", "torch": "1.8.1", "gpus": 2, "available": False, "toolkit": "11.4",
            "python": "3.8.16"},
}


@pytest.mark.parametrize("rid", sorted(EXPECTED))
def test_extracted_facts(rid: str) -> None:
    facts, info = diagnose_text([_text(rid)], load_compat())
    exp = EXPECTED[rid]
    assert facts.origin == "paste" and facts.paste is not None and info.found
    d = facts.driver
    py = facts.pythons[0] if facts.pythons else None
    t = py.torch if py else None
    if "driver" in exp:
        assert d.version == exp["driver"]
    if "ceiling" in exp:
        assert d.cuda_driver_version == exp["ceiling"]
    if "driver_status" in exp:
        assert d.status == exp["driver_status"] and d.nvidia_smi_error
    if "gpu" in exp:
        assert d.gpus[0].name == exp["gpu"]
    if "cc" in exp:
        assert d.gpus[0].compute_capability == exp["cc"]
    if "gpus" in exp:
        assert len(d.gpus) == exp["gpus"]
    if "torch" in exp:
        assert t.version == exp["torch"]
    if "torch_cuda" in exp:
        assert t.cuda == exp["torch_cuda"]
    if "available" in exp:
        assert t.cuda_available is exp["available"]
    if "python" in exp:
        assert py.python_version == exp["python"]
    if "toolkit" in exp:
        assert facts.toolkits.on_path.version == exp["toolkit"]
    if "gcc" in exp:
        assert facts.host.gcc_version == exp["gcc"]
    if "wsl" in exp:
        assert facts.host.wsl is exp["wsl"]
    if "container" in exp:
        assert facts.host.container.runtime == exp["container"]
    for name, version in exp.get("packages", {}).items():
        assert py.package(name).version == version
    for key, value in exp.get("env", {}).items():
        assert py.env[key].startswith(value)
