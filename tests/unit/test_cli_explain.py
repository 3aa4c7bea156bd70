"""explain: every finding code the fixtures produce can be explained."""

from __future__ import annotations

import pytest

from tests.paths import FIXTURES

PASTES = FIXTURES / "pastes"



def _cli(*argv: str) -> int:
    from envdoctor.cli import main

    return main(list(argv))


def test_every_finding_code_the_fixtures_produce_can_be_explained(capsys):
    # `envdoctor explain messages.signature/...`, copied from diagnose's own output, used to be "unknown code"
    from envdoctor.compat import load_compat
    from envdoctor.diagnose import NothingRecognised
    from envdoctor.services.diagnose import diagnose_report

    compat = load_compat()
    codes = {f"messages.signature/{s.id}" for s in load_compat().signatures}
    for paste in sorted(PASTES.glob("*.txt")):
        try:
            report = diagnose_report([paste.read_text(encoding="utf-8")], compat)
        except NothingRecognised:
            continue
        codes |= {f.code for f in report.findings}
    assert any(c.startswith("messages.signature/") for c in codes)
    for code in sorted(codes):
        assert _cli("explain", code) == 0, (code, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "Category: DRIVER_TOO_OLD_FOR_TORCH_CUDA" in out
    assert _cli("explain", "messages.signature/no-such-signature") == 2


def test_codes_a_helper_emits_through_a_builder_parameter_are_known():
    # checks/host.py's _per_gpu(rule, ...) calls rule.warning("per-gpu", ...) for both CPU and MEMORY
    from envdoctor.checks.catalog import known_finding_code as _known_finding_code

    for code in ("host.cpu/per-gpu", "host.cpu/per-gpu-below-recommended", "host.memory/per-gpu",
                 "host.memory/per-gpu-below-recommended"):
        assert _known_finding_code(code), code
    assert not _known_finding_code("host.shm/per-gpu")  # a builder the helper is never given
    # Cases.report(NVLINK.error, "inactive", ...) hands the builder over with the kind
    for code in ("interconnect.nvlink/inactive", "interconnect.nvlink/fewer-links", "pcie.link/gen-idle",
                 "pcie.link/slot-gen"):
        assert _known_finding_code(code), code
    assert not _known_finding_code("pcie.link/inactive")


def _machines():
    """Every snapshot in the repository and every zero-argument machine builder in tests/machines.py."""
    import inspect

    import tests.machines as machines
    from envdoctor.model.facts import Facts

    for snap in sorted((FIXTURES / "snapshots").glob("*.json")):
        yield Facts.from_json(snap.read_text(encoding="utf-8"))
    for name, fn in sorted(vars(machines).items()):
        if inspect.isfunction(fn) and fn.__module__ == machines.__name__ and not name.startswith("_") \
                and not inspect.signature(fn).parameters:
            facts = fn()
            if isinstance(facts, Facts):
                yield facts


def test_every_code_the_checks_emit_on_the_snapshots_and_test_machines_can_be_explained():
    # explain learns the codes from the checks' source: a code built in a way it does not read would be refused
    from envdoctor.checks import run_checks
    from envdoctor.checks.catalog import known_finding_code as _known_finding_code
    from envdoctor.compat import load_compat

    compat = load_compat()
    codes = {f.code for facts in _machines() for r in run_checks(facts, compat) for f in r.findings}
    assert len(codes) >= 20
    assert [c for c in sorted(codes) if not _known_finding_code(c)] == []


@pytest.mark.parametrize("code, own", [("driver.lifecycle/gpu-older-than-driver", "DRIVER_DROPPED_GPU"),
                                       ("driver.lifecycle/past-eol", "DRIVER_OUTDATED"),
                                       ("torch.interpreter/no-torch", "TORCH_NOT_INSTALLED"),
                                       ("torch.interpreter/timeout", "TARGET_PYTHON_UNUSABLE")])
def test_explain_shows_the_findings_own_category_first(code, own):
    from envdoctor.checks.catalog import explain_lines
    from envdoctor.compat import load_compat
    from envdoctor.model.catalogue import CATEGORIES

    lines = explain_lines(code, load_compat())
    first = next(line for line in lines if line.split(":", 1)[0] in CATEGORIES)
    assert first.startswith(f"{own}: "), lines
