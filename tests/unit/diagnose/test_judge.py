"""One judge: every verdict in a `diagnose` report comes from a registered check (ids, --only, explain)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from envdoctor.checks import all_checks
from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report
from tests.paths import SHARED as SHARED_DIR
from tests.paths import TESTS

HERE = TESTS
PASTES = HERE / "fixtures" / "pastes"
SHARED = SHARED_DIR / "examples"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def all_pastes() -> list:
    out = sorted(p for p in PASTES.rglob("*.txt"))
    for d in ("reports", "reports-batch2", "reports-batch3", "reports-batch4"):
        out += sorted((SHARED / d).glob("*.txt")) if (SHARED / d).is_dir() else []
    return out


def test_minor_compat_is_info_and_exit_0(compat) -> None:
    """nvidia-smi 535.161.07 and `2.5.1+cu124 12.4 False`: CUDA 12 minor-version compatibility runs it."""
    report = diagnose_report([(PASTES / "minor-compat-535.txt").read_text()], compat)
    # an info is a NOTE about its category
    cats = [(f.code, f.severity) for f in report.findings if (f.about or f.category) == "DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert cats == [("driver.cuda-compat/minor-compat", "info")]
    assert not [f for f in report.findings if f.severity == "error"]
    assert _cli("diagnose", str(PASTES / "minor-compat-535.txt")).returncode == 0


def test_every_finding_comes_from_a_registered_check(compat) -> None:
    ids = {c.id for c in all_checks()}
    for path in all_pastes():
        report = diagnose_report([path.read_text(encoding="utf-8", errors="replace")], compat)
        for r in report.checks:
            assert r.id in ids, (path.name, r.id)
            for f in r.findings:
                head = f.code.split("/", 1)[0]
                assert head in ids or head == "messages.signature", (path.name, f.code)


def test_only_runs_exactly_that_check(tmp_path) -> None:
    paste = PASTES / "minor-compat-535.txt"
    for check_id in ("driver.cuda-compat", "diagnose.cuda-unavailable", "messages.signatures"):
        out = _cli("diagnose", str(paste), "--only", check_id, "--format", "json")
        assert out.returncode in (0, 1), out.stderr
        doc = json.loads(out.stdout)
        assert [c["id"] for c in doc["checks"]] == [check_id]


def test_explain_knows_every_code_diagnose_prints(compat) -> None:
    codes = set()
    for path in all_pastes():
        report = diagnose_report([path.read_text(encoding="utf-8", errors="replace")], compat)
        codes |= {f.code for f in report.findings}
    assert len(codes) > 20
    from envdoctor.cli import main

    for code in sorted(codes):
        assert main(["explain", code]) == 0, code
    out = _cli("explain", "diagnose.sources/two-torch-installs")  # and from the command line
    assert out.returncode == 0 and "diagnose.sources" in out.stdout


def test_low_confidence_is_at_most_a_warning(compat) -> None:
    # a TensorFlow paste: the cuDNN-not-found line is a lead, never an error
    text = "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n"
    report = diagnose_report([text], compat)
    assert report.findings
    for f in report.findings:
        if f.confidence == "low":
            assert f.severity != "error", f


def test_thin_paste_warns_low_and_names_what_settles_it(compat) -> None:
    report = diagnose_report([">>> import torch\n>>> torch.cuda.is_available()\nFalse\n"], compat)
    serious = [f for f in report.findings if f.severity in ("error", "warning") and f.category != "HEALTHY"]
    assert serious and {f.confidence for f in serious} == {"low"}
    assert any("nvidia-smi" in s or "torch.version.cuda" in s for s in report.facts.paste.settle)
    assert {f.severity for f in report.findings} <= {"warning", "info"}


def test_checks_read_provenance_not_prose(compat) -> None:
    """Rewording what diagnose says it did not find changes no verdict."""
    import dataclasses

    from envdoctor.checks import run_checks

    facts, _ = read_paste(["Driver Version: 550.54.15\n"], compat)
    reworded = dataclasses.replace(facts, paste=dataclasses.replace(facts.paste, not_found=["(reworded)"],
                                                                    found=["(reworded)"]))
    for f in (facts, reworded):
        r = next(r for r in run_checks(f, compat) if r.id == "driver.gpus-visible")
        assert r.status == "skipped" and "no GPU list" in r.reason
    assert facts.paste.provenance["driver.version"]["confidence"] in ("high", "medium")
    assert "driver.gpus" not in facts.paste.provenance
