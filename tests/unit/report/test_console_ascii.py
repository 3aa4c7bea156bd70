"""The console on an ASCII terminal keeps pass and fail marks distinct."""

from __future__ import annotations

import io

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.report.console import render_console
from envdoctor.services.collect import judge
from tests import machines as m


def _result(facts, check_id):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def test_ascii_terminal_keeps_pass_and_fail_distinct():
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    render_console(judge(m.gpus_with_cpu_torch()), color=False, file=out)
    out.flush()
    text = out.buffer.getvalue().decode("ascii")
    assert "\nx " in text  # the error mark of the finding
    assert "  + " in text  # a passed check in the checklist
