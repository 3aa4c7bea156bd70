"""What the tests of checks judged on machine snapshots share (tests/machines.py): the warnings and errors of a
whole judgement by category, and one check's result."""

from __future__ import annotations

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge


def problems(facts):
    """{category: finding} of warnings and errors."""
    report = judge(facts)
    errored = [c for c in report.checks if c.status == CheckStatus.ERRORED]
    assert not errored, [(c.id, c.reason) for c in errored]
    return {f.category: f for f in report.findings if Severity.at_least(f.severity, Severity.WARNING)}


def result(facts, check_id, expect_gpu=False):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]), expect_gpu=expect_gpu)
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def found(facts, prefix: str):
    """The findings of a whole judgement whose code starts with ``prefix``."""
    return [x for x in judge(facts).findings if x.code.startswith(prefix)]

