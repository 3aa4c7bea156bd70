"""The one judge (envdoctor/judging): diagnose and check --facts agree on every fixture paste, the paste policy,
Report.machines, and where checks declare they apply."""

from __future__ import annotations

import dataclasses
import json

import pytest

from envdoctor.checks import all_checks
from envdoctor.checks.base import EVERYWHERE, MACHINE, PASTE, STATIC, Check, registrar
from envdoctor.compat import load_compat
from envdoctor.judging import PLAIN, PastePolicy, Selection, checks_for, judge, policy_for, setting_of
from envdoctor.model.facts import Facts, PasteSource
from envdoctor.model.findings import (
    CheckResult,
    CheckStatus,
    Evidence,
    Finding,
    MachineReport,
    Report,
    Severity,
)
from envdoctor.services import collect as app
from envdoctor.services.diagnose import diagnose_report
from tests.paths import SHARED
from tests.unit.diagnose.test_judge import all_pastes

PASTES = all_pastes()
REPORTS = SHARED / "examples" / "reports"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _verdicts(findings) -> list:
    return sorted((f.code, f.severity, f.summary, f.confidence) for f in findings)


def _as_check_facts(report: Report) -> Report:
    """What `envdoctor check --facts` does with the paste's facts (cli.cmd_check: Facts.from_json, then app.judge;
    ``_as_snapshot`` is only for live facts, and a paste's are not)."""
    facts = Facts.from_json(report.facts.to_json())
    assert facts.origin == "paste"
    return app.judge(facts)


def _agree(a: Report, b: Report) -> None:
    assert _verdicts(a.findings) == _verdicts(b.findings)
    assert [(m.label, _verdicts(m.findings)) for m in a.machines] == \
        [(m.label, _verdicts(m.findings)) for m in b.machines]
    assert [(c.id, c.status) for c in a.checks] == [(c.id, c.status) for c in b.checks]
    assert a.facts.paste.settle == b.facts.paste.settle
    assert a.fails("error") == b.fails("error") and a.fails("warning") == b.fails("warning")


def test_there_are_fixture_pastes() -> None:
    assert len(PASTES) >= 70  # the repository's own; ../shared adds its reports when present


@pytest.mark.parametrize("path", PASTES, ids=[f"{p.parent.name}/{p.stem}" for p in PASTES])
def test_diagnose_and_check_facts_agree(path, compat) -> None:
    report = diagnose_report([path.read_text(encoding="utf-8", errors="replace")], compat, names=[path.name])
    _agree(report, _as_check_facts(report))


@pytest.mark.skipif(not REPORTS.is_dir(), reason="../shared/examples/reports not present (a bare clone)")
def test_several_machines_agree_and_are_report_machines(compat) -> None:
    texts = [(REPORTS / f"{rid}.txt").read_text() for rid in ("001", "010")]
    report = diagnose_report(texts, compat, names=["001.txt", "010.txt"])
    _agree(report, _as_check_facts(report))
    assert [m.label for m in report.machines] == ["report 1 of 2 (001.txt)", "report 2 of 2 (010.txt)"]
    assert not report.checks and not report.findings  # nothing judged on what the machines share
    for m in report.machines:  # no "{label}: " prose: the machine is the section
        assert m.findings and not any(f.summary.startswith("report ") for f in m.findings)
        assert m.facts.paste.reports == [m.label]
    # the verdict and the exit code count every machine
    assert report.has_at_least("error") and report.judged
    assert len(report.problems) == sum(len(m.problems) for m in report.machines)


def test_report_json_round_trip_with_machines(compat) -> None:
    from tests.machines import healthy_a100, rtx5090_cu124

    one = MachineReport("report 1 of 2 (a.txt)", healthy_a100(), app.judge(healthy_a100(), compat).checks)
    two = MachineReport("report 2 of 2 (b.txt)", rtx5090_cu124(), app.judge(rtx5090_cu124(), compat).checks)
    report = Report(facts=Facts(origin="paste", paste=PasteSource()), checks=[], envdoctor_version="t", machines=[one, two])
    data = report.to_dict()
    assert [m["label"] for m in data["machines"]] == [one.label, two.label] and data["findings"] == []
    assert data["summary"]["errors"] == sum(1 for f in two.findings if f.severity == "error") > 0
    back = Report.from_json(report.to_json())
    assert back.to_dict() == data
    # a report written before machines existed loads with none, and writes no "machines" key
    old = app.judge(healthy_a100(), compat).to_dict()
    assert "machines" not in old
    assert Report.from_dict(old).to_dict() == old and Report.from_dict(old).machines == []
    # the exit code: a clean machine next to a failing one fails
    assert report.fails("error") and not Report(facts=report.facts, checks=[], envdoctor_version="t",
                                                machines=[one]).fails("error")


def test_policy_follows_the_facts() -> None:
    assert isinstance(policy_for(Facts(origin="paste", paste=PasteSource())), PastePolicy)
    assert policy_for(Facts(origin="live")) is PLAIN and policy_for(Facts(origin="snapshot")) is PLAIN
    assert setting_of(Facts(origin="paste")) == PASTE and setting_of(Facts(origin="snapshot")) == "snapshot"


def _result(check_id: str, *findings: Finding) -> CheckResult:
    return CheckResult(check_id, check_id.split(".")[0], check_id, CheckStatus.FAILED, findings=list(findings))


def test_paste_policy_weighs_confidence_and_folds_messages() -> None:
    facts = Facts(origin="paste", paste=PasteSource(provenance={"driver.version": {"confidence": "low"},
                                                          "pythons[0].torch.version": {"confidence": "high"}}))
    thin = Finding("driver.cuda-compat/too-old", "DRIVER_TOO_OLD_FOR_TORCH_CUDA", Severity.ERROR, "too old",
                   evidence=[Evidence("driver.version", "410.48")])
    sure = Finding("toolchain.host-compiler/gcc-too-new", "HOST_COMPILER_UNSUPPORTED", Severity.WARNING, "gcc",
                   evidence=[Evidence("pythons[0].torch.version", "2.4")])
    message = Finding("messages.signature/gcc", "HOST_COMPILER_UNSUPPORTED", Severity.ERROR, "the paste shows",
                      evidence=[Evidence("paste.messages[0]", "unsupported GNU version")], confidence="high")
    guess = Finding("diagnose.cuda-unavailable/x", "TORCH_CPU_ONLY_BUILD", Severity.WARNING, "guess",
                    confidence="low")
    out = PastePolicy().weigh(facts, [_result("driver.cuda-compat", thin), _result("toolchain.host-compiler", sure),
                                      _result("messages.signatures", message),
                                      _result("diagnose.cuda-unavailable", guess)])
    by_id = {r.id: r for r in out}
    # low confidence from provenance caps an error at a warning
    assert by_id["driver.cuda-compat"].findings[0].confidence == "low"
    assert by_id["driver.cuda-compat"].findings[0].severity == Severity.WARNING
    # the message becomes the fact finding's evidence, which takes its severity
    folded = by_id["toolchain.host-compiler"].findings[0]
    assert folded.severity == Severity.ERROR and any(e.path == "paste.messages[0]" for e in folded.evidence)
    assert by_id["messages.signatures"].findings == [] and by_id["messages.signatures"].status == CheckStatus.PASSED
    # a low-confidence guess goes when something surer explains the paste
    assert by_id["diagnose.cuda-unavailable"].findings == []


def test_checks_declare_where_they_apply() -> None:
    ids = {c.id for c in checks_for(STATIC)}
    assert "torch.gpu-arch" in ids and "requirements.torch" in ids and "driver.lifecycle" in ids
    assert not any(i.startswith(("gpu.", "pcie.", "host.", "storage.", "interconnect.", "diagnose.")) for i in ids)
    assert "driver.present" not in ids and "messages.signatures" not in ids
    paste_only = {c.id for c in all_checks() if c.applies == frozenset({PASTE})}
    assert "messages.signatures" in paste_only and "diagnose.cuda-unavailable" in paste_only
    assert next(c for c in all_checks() if c.id == "torch.interpreter").applies_to(PASTE) is False
    assert next(c for c in all_checks() if c.id == "gpu.throttle").applies == MACHINE  # the default
    with pytest.raises(ValueError, match="applies"):
        registrar([])("x.y", "X", applies=frozenset({"cloud"}))


def test_a_check_that_does_not_apply_is_skipped_on_a_machine_and_left_out_of_a_build(compat) -> None:
    from tests.machines import healthy_a100

    ran = []

    def paste_only(ctx):
        ran.append(ctx)
        return []

    checks = [Check("demo.paste-only", "Paste only", paste_only, applies=frozenset({PASTE})),
              next(c for c in all_checks() if c.id == "torch.cuda-build")]
    live = judge(healthy_a100(), compat, Selection(checks=checks))
    assert [(c.id, c.status) for c in live.checks][0] == ("demo.paste-only", CheckStatus.SKIPPED)
    assert "pasted reports only" in live.checks[0].reason and not ran
    build = judge(healthy_a100(), compat, Selection(checks=checks, setting=STATIC))
    assert [c.id for c in build.checks] == ["torch.cuda-build"]
    pasted = judge(dataclasses.replace(healthy_a100(), origin="paste", paste=PasteSource()), compat,
                   Selection(checks=checks))
    assert ran and pasted.checks[0].status == CheckStatus.PASSED


def test_every_check_declares_known_settings() -> None:
    for c in all_checks():
        assert c.applies and c.applies <= EVERYWHERE, c.id


def test_multi_machine_renderers_show_a_section_per_machine(compat) -> None:
    if not REPORTS.is_dir():
        pytest.skip("../shared/examples/reports not present (a bare clone)")
    from envdoctor.report import render_console
    from envdoctor.report.json_report import render_json
    from envdoctor.report.markdown import render_markdown

    texts = [(REPORTS / f"{rid}.txt").read_text() for rid in ("001", "010")]
    report = diagnose_report(texts, compat, names=["001.txt", "010.txt"])
    text = render_console(report, color=False, width=100)
    assert text.count("━━ report ") == 2 and text.count("envdoctor 0.1.0") <= 1
    first, second = text.index("━━ report 1 of 2"), text.index("━━ report 2 of 2")
    assert "RTX 5090" in text[first:second] and "410.48" in text[second:]
    assert text.rstrip().splitlines()[-1].startswith("✗ 2 machines: ")
    md = render_markdown(report)
    assert "## report 1 of 2 (001.txt)" in md and "## report 2 of 2 (010.txt)" in md and "### Findings" in md
    assert "Conflict" in md
    data = json.loads(render_json(report))
    assert [len(m["findings"]) for m in data["machines"]] == [len(m.findings) for m in report.machines]


def test_the_runner_itself_never_runs_a_check_where_it_does_not_apply(compat) -> None:
    """torch.interpreter has no `origin == "paste"` branch of its own: its declaration keeps it off pastes, for
    every caller of checks.run_checks."""
    from envdoctor.checks import run_checks
    from tests.machines import torch_env

    pasted = Facts(origin="paste", paste=PasteSource(), pythons=[torch_env("2.4.0", None, None)])
    (res,) = run_checks(pasted, compat, [c for c in all_checks() if c.id == "torch.interpreter"])
    assert res.status == CheckStatus.SKIPPED and res.reason == "a paste is judged without running an interpreter"
