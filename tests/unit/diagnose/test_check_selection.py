"""diagnose respects an explicit check selection."""

from __future__ import annotations

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat


def _result(facts, check_id):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def test_diagnose_respects_an_explicit_check_selection():
    from envdoctor.checks import all_checks, select
    from envdoctor.services.diagnose import diagnose_report

    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    report = diagnose_report([text], load_compat(), select(all_checks(), None, ["messages.*"]))
    assert not [c for c in report.checks if c.id.startswith("messages.")]
