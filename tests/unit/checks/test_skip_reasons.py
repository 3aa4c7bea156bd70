"""Skip reasons that name the cause, and no low-space warning on pseudo filesystems."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.model.facts import DataPath, ProbeStatus, PythonEnv, Storage
from envdoctor.model.findings import CheckStatus
from envdoctor.services.collect import judge
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


# --------------------------------------------------------------------------- "did not apply" is the check's word


def test_a_paste_is_not_said_to_judge_torch_interpreter_in_pastes_only():
    # torch.interpreter applies to probed interpreters: in a paste it is not run. Its label says that, and is not
    # guessed from the words "a paste" in its reason (it read "judged in pastes only": the opposite of the truth)
    from envdoctor.report.summary import check_summary, skip_label
    from envdoctor.services.diagnose import diagnose_report
    from tests.paths import FIXTURES

    report = diagnose_report([(FIXTURES / "pastes" / "companion.txt").read_text()], load_compat())
    res = next(c for c in report.checks if c.id == "torch.interpreter")
    assert res.status == CheckStatus.SKIPPED and "a paste" in res.reason
    assert res.not_applicable == skip_label(res, report.facts) == "judged on a probed interpreter only"
    assert "judged in pastes only" not in (check_summary(report).not_applied or "")


def test_undeclared_requirements_did_not_apply_and_a_missing_fact_is_unknown():
    from envdoctor.report.summary import check_summary

    report = judge(m.healthy_a100())
    by_id = {c.id: c for c in report.checks}
    for cid in ("requirements.python", "requirements.torch", "requirements.target-gpus"):
        assert by_id[cid].not_applicable == "no requirements declared", (cid, by_id[cid].reason)
    summary = check_summary(report)
    assert "no requirements declared" in summary.not_applied
    assert "requirements." not in (summary.unread or "")


def test_a_skip_without_a_label_is_facts_unknown_whatever_its_words():
    from envdoctor.checks.base import Check, SkipCheck

    def worded(ctx):
        raise SkipCheck("InfiniBand devices unknown: the pasted text does not say; not WSL either")

    (res,) = run_checks(m.healthy_a100(), load_compat(), [Check("host.worded", "Worded", worded)])
    assert res.status == CheckStatus.SKIPPED and res.not_applicable is None
    back = type(res)(**{**res.__dict__})  # the field round-trips like any other
    assert back.not_applicable is None
