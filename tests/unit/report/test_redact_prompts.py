"""Redaction of a shell prompt's user and host."""

from __future__ import annotations

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat


def _result(facts, check_id):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def test_shell_prompt_user_and_host_are_redacted():
    from envdoctor.report.redact import redact_text

    out = redact_text("alice@gpu-node-17:~/src$ python -c 'import torch'\nmail me at bob@example.org")
    assert "alice" not in out and "gpu-node-17" not in out and "~/src$" in out
    assert "bob@example.org" in out  # an address that is not a prompt stays
