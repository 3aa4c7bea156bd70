"""diagnose_paste's checks, which judge what only a paste leaves open: CUDA unavailable with the cause not shown
(diagnose.cuda-unavailable), a driver below every CUDA build when torch's CUDA is not shown (diagnose.driver-floor),
torch's version from two sources (diagnose.sources), a CPU build where the paste asks for CUDA
(diagnose.cpu-build-intent)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES

PASTES = FIXTURES / "pastes"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _check(text: str, compat, check_id: str):
    return next(c for c in diagnose_report([text], compat).checks if c.id == check_id)


def _paste(name: str) -> str:
    return (PASTES / name).read_text()


TWO_TORCHES = ("Collecting environment information...\nPyTorch version: 2.4.1+cu121\nIs debug build: False\n"
               "CUDA used to build PyTorch: 12.1\nROCM used to build PyTorch: N/A\n"
               "Nvidia driver version: 515.65.01\n\nVersions of relevant libraries:\n[pip3] torch==2.3.0\n"
               "[conda] pytorch 2.4.1 py3.11_cuda12.1_cudnn9.1.0_0 pytorch\n")


def test_pip_metadata_loses_to_the_imported_torch(compat) -> None:
    text = TWO_TORCHES
    facts, _ = read_paste([text], compat)
    assert facts.pythons[0].torch.version == "2.4.1+cu121"
    assert facts.paste.disagreements and facts.paste.disagreements[0]["other"] == "2.3.0"
    report = diagnose_report([text], compat)
    codes = {f.code: f.severity for f in report.findings}
    assert codes.get("diagnose.sources/two-torch-installs") == "warning"
    assert any(f.category == "DRIVER_TOO_OLD_FOR_TORCH_CUDA" and f.severity == "error" for f in report.findings)


def test_sources_whole_finding_and_one_source_skips(compat) -> None:
    (f,) = _check(TWO_TORCHES, compat, "diagnose.sources").findings
    assert (f.code, f.category, f.severity) == ("diagnose.sources/two-torch-installs", "COMPANION_VERSION_MISMATCH",
                                                "warning")
    assert f.summary == ("Package metadata lists torch 2.3.0 but the interpreter imports torch 2.4.1+cu121: two "
                         "installs of torch, or stale metadata")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].torch.version", "2.4.1+cu121"),
                                                       ("pythons[0].packages.torch", "2.3.0")]
    skipped = _check(_paste("markdown-env-h100.txt"), compat, "diagnose.sources")
    assert (skipped.status, skipped.reason) == ("skipped", "the paste gives torch's version from one source only: "
                                                           "nothing to compare")
    # sources that agree leave no disagreement to judge: no check mark either (the check never passes, by design:
    # one source or two that agree cannot show a second torch)
    agree = TWO_TORCHES.replace("[pip3] torch==2.3.0", "[pip3] torch==2.4.1+cu121")
    assert [c.status for c in diagnose_report([agree], compat).checks if c.id == "diagnose.sources"] == ["skipped"]
    assert not [f for f in diagnose_report([agree], compat).findings if f.code.startswith("diagnose.sources/")]


def test_cuda_unavailable_whole_finding_a_driver_shown_passes_and_no_is_available_skips(compat) -> None:
    c = _check(_paste("windows-pip-cpu-wheel.txt"), compat, "diagnose.cuda-unavailable")
    (f,) = c.findings
    assert (c.status, f.code, f.category, f.severity) == ("failed", "diagnose.cuda-unavailable/cpu-build",
                                                          "TORCH_CPU_ONLY_BUILD", "warning")
    assert f.summary == ("torch 1.7.1 is a CPU build, so torch.cuda.is_available() is False (the paste shows no GPU "
                         "list)")
    assert [(e.path, e.value) for e in f.evidence][:2] == [("pythons[0].torch.cuda_available", False),
                                                          ("pythons[0].torch.version", "1.7.1")]
    # the cause is in the paste (an old driver): other checks judge it, this one has nothing left to guess
    assert _check(_paste("driver-too-old.txt"), compat, "diagnose.cuda-unavailable").status == "passed"
    skipped = _check(_paste("cpu-only.txt"), compat, "diagnose.cuda-unavailable")
    assert (skipped.status, skipped.reason) == ("skipped", "the paste does not show torch.cuda.is_available() "
                                                           "returning False")


def test_driver_floor_whole_finding_a_new_driver_passes_and_a_known_build_skips(compat) -> None:
    old = "[pip3] torch==2.4.1\n| NVIDIA-SMI 340.108    Driver Version: 340.108 |\n"
    (f,) = _check(old, compat, "diagnose.driver-floor").findings
    assert (f.code, f.category, f.severity) == ("diagnose.driver-floor/below-every-build",
                                                "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "warning")
    assert f.summary.startswith("Driver 340.108 is older than") and "torch 2.4.1's CUDA is not in the paste" in \
        f.summary
    assert [(e.path, e.value) for e in f.evidence][:2] == [("driver.version", "340.108"),
                                                          ("pythons[0].torch.cuda", None)]
    new = old.replace("340.108 |", "550.54.15    CUDA Version: 12.4 |").replace("340.108", "550.54.15")
    assert _check(new, compat, "diagnose.driver-floor").status == "passed"
    skipped = _check(_paste("driver-too-old.txt"), compat, "diagnose.driver-floor")
    assert (skipped.status, skipped.reason) == ("skipped", "torch's build is in the paste (driver.cuda-compat "
                                                           "judges it)")


def test_cpu_build_intent_whole_finding_a_cuda_build_passes_and_no_intent_skips(compat) -> None:
    (f,) = _check(_paste("pip-cuda-index-cpu-installed.txt"), compat, "diagnose.cpu-build-intent").findings
    assert (f.code, f.category, f.severity) == ("diagnose.cpu-build-intent/cpu-resolved", "TORCH_CPU_ONLY_BUILD",
                                                "error")
    assert f.summary == ("A CPU build of torch was installed (pip: Successfully installed torch-2.3.1+cpu) although "
                         "the paste asks for CUDA (cu118, line 1)")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].packages.torch", "2.3.1+cpu"),
                                                       ("paste.provenance.intent.cuda", "cu118")]
    ok = ("$ pip install torch --index-url https://download.pytorch.org/whl/cu121\n"
          "Successfully installed torch-2.3.1+cu121\n")
    assert _check(ok, compat, "diagnose.cpu-build-intent").status == "passed"
    skipped = _check(_paste("cpu-only.txt"), compat, "diagnose.cpu-build-intent")
    assert (skipped.status, skipped.reason) == ("skipped", "the paste shows no intent to use CUDA (no CUDA spec or "
                                                           "index)")
