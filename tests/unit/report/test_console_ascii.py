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


def test_sparklines_of_flat_series_say_their_level():
    """A series at 0 throughout is an empty line of bars, not half-height ones; a percentage is drawn on its
    0-100 scale, so 100 % throughout is full bars and a 40-60 % wobble stays mid-height."""
    from envdoctor.report.bench_view import SPARK, sparkline
    from envdoctor.report.watch import percent_scale, timeline

    assert sparkline([0.0] * 5) == SPARK[0] * 5
    assert sparkline([7.0] * 5) == SPARK[3] * 5  # no scale: a flat non-zero level, drawn mid-height
    assert sparkline([100.0] * 3, scale=(0.0, 100.0)) == SPARK[7] * 3
    assert set(sparkline([40.0, 60.0], scale=(0.0, 100.0))) <= set(SPARK[2:6])
    assert sparkline([0.0, 10.0]) == SPARK[0] + SPARK[7]  # unscaled: the series' own range, as before
    assert percent_scale("GPU 3 util %") == (0.0, 100.0) and percent_scale("process CPU %") is None
    lines = timeline([{"t_s": float(i), "host": {"cpu_busy_pct": 100.0, "cpu_iowait_pct": 0.0}} for i in range(4)])
    assert SPARK[7] * 4 in lines[1] and SPARK[0] * 4 in lines[2]
