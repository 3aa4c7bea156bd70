"""diagnose.framework-platform (checks/diagnose_frameworks.py, issue 42): a TensorFlow release with no GPU build for
native Windows, on invented pastes in the layouts reports use (TensorFlow's issue template, a pin, the printed
version); the failing, passing and skipped cases assert whole findings."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report

TEMPLATE = """### TensorFlow version

{tf}

### OS platform and distribution

{os}

### Python version

3.10
"""


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _check(text: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == "diagnose.framework-platform")


def test_tensorflow_after_2_10_on_native_windows_is_a_cpu_build(compat) -> None:
    result = _check(TEMPLATE.format(tf="2.13.0", os="Windows 11 Pro"), compat)
    assert [f.code for f in result.findings] == ["diagnose.framework-platform/tensorflow-native-windows"]
    f = result.findings[0]
    assert (f.category, f.severity, f.confidence) == ("FRAMEWORK_CPU_ONLY_BUILD", "error", "high")
    assert "TensorFlow 2.13.0 on native Windows" in f.summary and "WSL2" in f.fix.summary
    ev = {e.path: e for e in f.evidence}
    assert ev["pythons[0].packages.tensorflow"].value == "2.13.0" and "v2.11.1" in ev["pythons[0].packages.tensorflow"].source
    assert ev["host.os"].value == "Windows"


def test_a_pin_in_prose_with_a_windows_field_is_read_too(compat) -> None:
    text = "I ran pip install tensorflow==2.15.1 but it only uses the CPU.\n\n**OS platform and distribution**\nwin11\n"
    assert [f.category for f in _check(text, compat).findings] == ["FRAMEWORK_CPU_ONLY_BUILD"]


def test_tensorflow_2_10_on_windows_and_any_release_in_wsl_pass(compat) -> None:
    ok = _check(TEMPLATE.format(tf="tf 2.10.1", os="Windows 10"), compat)
    assert ok.status == "passed" and ok.findings == []
    wsl = _check(TEMPLATE.format(tf="2.16.1", os="Windows 11, Ubuntu 22.04 in WSL2"), compat)
    assert wsl.findings == [] and wsl.status == "passed"


def test_skipped_without_a_release_or_a_platform(compat) -> None:
    linux = _check(TEMPLATE.format(tf="2.16.1", os="Ubuntu 22.04"), compat)
    assert linux.status == "skipped" and "native Windows" in linux.reason
    none = _check("RuntimeError: CUDA error: out of memory\n", compat)
    assert none.status == "skipped" and "no TensorFlow release" in none.reason


# ---- diagnose.extension-release: a torch extension's release beside another torch


def _release(text: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == "diagnose.extension-release")


def test_xformers_release_beside_another_torch_is_an_extension_mismatch(compat) -> None:
    result = _release("torch                2.7.1+cu128\nxformers             0.0.32\n", compat)
    assert [f.code for f in result.findings] == ["diagnose.extension-release/other-torch"]
    f = result.findings[0]
    assert (f.category, f.severity, f.confidence) == ("THIRD_PARTY_EXTENSION_MISMATCH", "error", "high")
    assert "built for torch 2.8.0" in f.summary and "CHANGELOG" in f.evidence[0].source
    dev = _release("torch                2.7.1+cu128\nxformers             0.0.32.dev1073\n", compat).findings
    assert [(g.severity, g.confidence) for g in dev] == [("warning", "low")]
    assert "development build of 0.0.32" in dev[0].summary


def test_xformers_release_for_the_installed_torch_passes(compat) -> None:
    ok = _release("torch                2.7.1+cu128\nxformers             0.0.31\n", compat)
    assert ok.status == "passed" and ok.findings == []
    post = _release("torch                2.9.1+cu128\nxformers             0.0.33.post2\n", compat)
    assert post.status == "passed" and post.findings == []


def test_extension_release_skipped_when_no_paired_release_is_listed(compat) -> None:
    other = _release("torch                2.7.1+cu128\nxformers             0.0.29.post3\n", compat)
    assert other.status == "skipped" and "paired" in other.reason
