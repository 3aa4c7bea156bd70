"""messages.signatures (envdoctor/checks/messages.py): a known error message in a paste is a finding of its
signature's category, with the message as evidence; a paste without messages and any probed machine are
skipped (one as unknown, one as did not apply). Every signature on its own paste: tests/unit/diagnose/."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.diagnose import diagnose_report
from tests import machines as m
from tests.paths import FIXTURES

NO_DRIVER = ("nvidia-smi\nNVIDIA-SMI has failed because it couldnt communicate with the NVIDIA driver. Make sure "
             "that the latest NVIDIA driver is installed and running.\n")


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _check(report):
    return next(c for c in report.checks if c.id == "messages.signatures")


def test_a_known_message_is_a_finding_of_its_category_with_the_message_as_evidence(compat):
    res = _check(diagnose_report([(FIXTURES / "pastes" / "compose-no-driver.txt").read_text()], compat))
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("messages.signature/found-no-nvidia-driver",
                                                "CONTAINER_NO_GPU_RUNTIME", Severity.ERROR)
    assert f.summary == ("Container started without GPU access: the paste shows “Found no NVIDIA driver on your "
                         "system”")
    assert f.evidence[0].path == "paste.messages[0]"
    assert f.evidence[0].value.startswith("RuntimeError: Found no NVIDIA driver on your system.")
    assert ("paste.settle", "nvidia-smi") in [(e.path, e.value) for e in f.evidence]  # what would settle it
    assert f.fix is not None and f.fix.url


def test_nvidia_smi_that_cannot_reach_the_driver_is_no_driver(compat):
    (f,) = _check(diagnose_report([NO_DRIVER], compat)).findings
    assert (f.code, f.category) == ("messages.signature/nvidia-smi-could-not-communicate", "NO_NVIDIA_DRIVER")


def test_a_paste_without_messages_is_unknown_and_a_machine_does_not_apply(compat):
    facts, _ = read_paste([NO_DRIVER], compat)
    quiet = replace(facts, paste=replace(facts.paste, messages=[]))
    (res,) = run_checks(quiet, compat, [c for c in all_checks() if c.id == "messages.signatures"])
    assert (res.status, res.reason, res.not_applicable) == (
        CheckStatus.SKIPPED, "the paste holds no error or warning message to match", None)
    (live,) = run_checks(m.healthy_a100(), compat, [c for c in all_checks() if c.id == "messages.signatures"])
    assert live.status == CheckStatus.SKIPPED and live.not_applicable == "judged in pastes only"
