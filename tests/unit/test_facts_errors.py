"""A truncated facts snapshot gives a clean message."""

from __future__ import annotations

import pytest

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, FactsError


def _result(facts, check_id):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def test_truncated_snapshot_message_reads_cleanly():
    with pytest.raises(FactsError) as e:
        Facts.from_json('{"schema_version": 1, "host": {"hostname": "ab')
    assert "at at" not in str(e.value) and "line 1" in str(e.value)
