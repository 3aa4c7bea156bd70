"""gpu.ecc-mode: an ECC mode change waiting for a reboot (envdoctor/checks/gpu_ecc_mode.py)."""

from __future__ import annotations

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _facts(*modes) -> Facts:
    gpus = [m.gpu(i, "NVIDIA H100 80GB HBM3", "9.0", ecc_mode_current=cur, ecc_mode_pending=pend)
            for i, (cur, pend) in enumerate(modes)]
    return m.facts(m.driver("550.54.15", "12.4", gpus), [])


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "gpu.ecc-mode"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_ecc_off_until_the_reboot_is_a_warning_naming_the_gpu(compat):
    res = _run(_facts((True, True), (False, True)), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert f.code == "gpu.ecc-mode/off-until-reboot" and f.severity == Severity.WARNING
    assert "GPU 1" in f.summary and "GPU 0" not in f.summary
    assert {e.path for e in f.evidence} == {"driver.gpus[1].ecc_mode_current", "driver.gpus[1].ecc_mode_pending"}
    assert f.fix.commands == ["sudo reboot"]


def test_ecc_turning_off_at_the_reboot_is_information_with_the_command_that_keeps_it(compat):
    (f,) = _run(_facts((True, False)), compat).findings
    assert f.code == "gpu.ecc-mode/off-after-reboot" and f.severity == Severity.INFO
    assert f.fix.commands == ["sudo nvidia-smi -i 0 -e 1"]


def test_settled_modes_pass_and_unknown_modes_are_not_judged(compat):
    assert _run(_facts((True, True), (False, False)), compat).status == CheckStatus.PASSED
    res = _run(_facts((None, None)), compat)  # a GeForce: no ECC, no mode
    assert res.status == CheckStatus.SKIPPED and "no GPU here reports" in res.reason


def test_a_real_nvidia_smi_capture_with_the_pending_mode_changed_is_judged(compat):
    # a real A10G `nvidia-smi -q -x` (../shared/fixtures/real), its pending ECC mode edited to what
    # `nvidia-smi -e 0` leaves until the reboot: the XML reader fills both modes and the check reads them
    import dataclasses

    from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
    from tests.paths import SHARED

    path = SHARED / "fixtures" / "real" / "nvidia-smi-xml" / "a10g_515.105.01.xml"
    if not path.exists():
        pytest.skip(f"{path} is not here (the shared fixtures sit beside the clone)")
    text = path.read_text()
    assert "<pending_ecc>Enabled</pending_ecc>" in text
    driver = parse_nvidia_smi_xml(text)
    assert _run(m.facts(driver, []), compat).status == CheckStatus.PASSED
    edited = parse_nvidia_smi_xml(text.replace("<pending_ecc>Enabled</pending_ecc>", "<pending_ecc>Disabled</pending_ecc>"))
    (f,) = _run(m.facts(dataclasses.replace(edited, status="ok"), []), compat).findings
    assert f.code == "gpu.ecc-mode/off-after-reboot"
