"""Regression tests for review findings: skip reasons, pseudo-filesystems, ASCII terminals, JSON error text."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from envdoctor.app import judge
from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.facts import DataPath, Facts, FactsError, ProbeStatus, PythonEnv, Storage
from envdoctor.findings import CheckStatus
from envdoctor.report.console import render_console
from tests import machines as m


def _result(facts, check_id):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def test_skip_reason_names_a_failed_interpreter_probe():
    f = replace(m.healthy_a100(), pythons=[PythonEnv(status=ProbeStatus.FAILED, reason="timed out after 60 s")])
    res = _result(f, "packages.cuda-variant")
    assert res.status == CheckStatus.SKIPPED and "could not be inspected" in res.reason and "60 s" in res.reason


def test_nvcc_without_version_is_not_called_missing():
    f = m.with_nvcc(m.healthy_a100(), "12.1", "12.1.105")
    f = replace(f, toolkits=replace(f.toolkits, on_path=replace(f.toolkits.on_path, version=None)))
    res = _result(f, "toolchain.host-compiler")
    assert res.status == CheckStatus.SKIPPED and "did not tell its version" in res.reason


def test_pseudo_filesystem_has_no_low_space_warning():
    proc = DataPath(path="/proc", status=ProbeStatus.OK, exists=True, fstype="proc", kind="unknown",
                    size_bytes=0, free_bytes=0, mount_point="/proc")
    f = replace(m.healthy_a100(), storage=Storage(status=ProbeStatus.OK, paths=[proc]))
    assert not [x for x in judge(f).findings if x.code == "storage.data-path/low-free-space"]


def test_ascii_terminal_keeps_pass_and_fail_distinct():
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    render_console(judge(m.gpus_with_cpu_torch()), color=False, file=out)
    out.flush()
    text = out.buffer.getvalue().decode("ascii")
    assert "\nx " in text  # the error mark of the finding
    assert "  + " in text  # a passed check in the checklist


def test_truncated_snapshot_message_reads_cleanly():
    with pytest.raises(FactsError) as e:
        Facts.from_json('{"schema_version": 1, "host": {"hostname": "ab')
    assert "at at" not in str(e.value) and "line 1" in str(e.value)


def test_shell_prompt_user_and_host_are_redacted():
    from envdoctor.report.redact import redact_text

    out = redact_text("alice@gpu-node-17:~/src$ python -c 'import torch'\nmail me at bob@example.org")
    assert "alice" not in out and "gpu-node-17" not in out and "~/src$" in out
    assert "bob@example.org" in out  # an address that is not a prompt stays


def test_diagnose_respects_an_explicit_check_selection():
    from envdoctor.checks import all_checks, select
    from envdoctor.diagnose import diagnose_report

    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    report = diagnose_report([text], load_compat(), select(all_checks(), None, ["messages.*"]))
    assert not [c for c in report.checks if c.id.startswith("messages.")]
