"""The registry: every check module registered by one mechanism, in area order, and every finding a check makes
declared by its ``Findings`` builder (an undeclared kind fails the test that made it)."""

from __future__ import annotations

import importlib

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.checks.base import (
    DECLARED,
    STRICT_ENV,
    CheckContext,
    Findings,
    UndeclaredFinding,
    kind_matches,
    registrar,
)
from envdoctor.checks.registry import AREAS, builders, check_modules, finding_code, finding_codes
from envdoctor.compat import load_compat
from envdoctor.model.catalogue import CATEGORIES
from tests import machines as m
from tests.paths import REPO


def test_every_check_module_is_registered():
    files = sorted(p.stem for p in (REPO / "envdoctor" / "checks").glob("*.py")
                   if not p.stem.startswith("_") and p.stem not in ("base", "registry", "catalog"))
    assert check_modules() == files  # each holds a CHECKS list: none is skipped by the discovery
    registered = {c.id for c in all_checks()}
    for name in files:
        module = importlib.import_module(f"envdoctor.checks.{name}")
        assert module.CHECKS, name
        assert {c.id for c in module.CHECKS} <= registered, name
    assert len(registered) == len(all_checks())  # no id twice


def test_display_order_is_area_order():
    areas = [c.area for c in all_checks()]
    assert set(areas) <= set(AREAS), sorted(set(areas) - set(AREAS))  # a new area is placed in AREAS
    grouped = list(dict.fromkeys(areas))
    assert grouped == [a for a in AREAS if a in grouped]
    for a in grouped:  # each area's checks side by side, as the console groups them
        idx = [i for i, x in enumerate(areas) if x == a]
        assert idx == list(range(idx[0], idx[-1] + 1)), a
    ids = [c.id for c in all_checks()]
    assert ids.index("driver.lifecycle") < ids.index("torch.gpu-arch")  # listed after host.* before
    assert ids[-1].startswith("fleet.")


def test_every_check_declares_what_it_reports():
    ids = {c.id for c in all_checks()}
    owners = {b.owner for b in builders()}
    # fleet.node-findings relays the nodes' findings under their own checks' codes: it makes none of its own
    assert [c.id for c in all_checks() if c.id not in owners] == ["fleet.node-findings"]
    for b in DECLARED:
        if b.made_in.startswith("envdoctor."):
            assert b.owner in ids, (b.made_in, b.check_id)
    for b in builders():
        assert b.kinds, b.check_id
        assert set(b.all_categories) <= set(CATEGORIES), b.check_id
    for c in all_checks():
        assert set(c.categories) <= set(CATEGORIES), c.id


def test_kind_templates_stand_for_one_computed_word():
    assert kind_matches("{package}", "flash_attn") and kind_matches("{xid}", "79")
    assert kind_matches("{package}-overwritten", "nvidia-cudnn-cu12-overwritten")
    assert not kind_matches("{package}", "a/b") and not kind_matches("{package}", "")
    assert not kind_matches("missing", "missing-too") and kind_matches("missing", "missing")
    assert finding_code("packages.torch-requires/nvidia-cudnn-cu12-overwritten").kind == "{package}-overwritten"
    assert finding_code("packages.torch-requires/nvidia-cudnn-cu12").kind == "{package}"
    assert finding_code("gpu.xid/79").check.id == "gpu.xid"
    assert finding_code("gpu.throttle/no-such-kind") is None


RULE = Findings("area.rule", "GPU_THROTTLED", kinds=("thermal", "{gpu}-slow"), categories=("NOTE",))


def test_an_undeclared_kind_or_category_is_an_error_under_the_tests():
    assert RULE.warning("thermal", "s").code == "area.rule/thermal"
    assert RULE.info("gpu0-slow", "s", category="NOTE").code == "area.rule/gpu0-slow"
    with pytest.raises(UndeclaredFinding, match=r"area.rule/power .*kinds=\('thermal'"):
        RULE.warning("power", "s")
    with pytest.raises(UndeclaredFinding, match="HOST_MEMORY_LOW"):
        RULE.warning("thermal", "s", category="HOST_MEMORY_LOW")


def test_a_live_run_emits_an_undeclared_finding_unchanged(monkeypatch):
    from envdoctor.checks import base

    monkeypatch.setattr(base, "STRICT_FINDINGS", False)  # a live run: the variable unset at import
    f = RULE.error("power", "s", category="HOST_MEMORY_LOW")
    assert (f.code, f.category, f.severity) == ("area.rule/power", "HOST_MEMORY_LOW", "error")


def test_run_checks_does_not_hide_an_undeclared_kind_as_an_errored_check():
    checks: list = []
    check = registrar(checks)

    @check(RULE, "A rule")
    def rule(ctx: CheckContext):
        make = RULE.error if ctx.expect_gpu else RULE.warning
        return [make("power", "s")]

    with pytest.raises(UndeclaredFinding):  # the test that made it fails, naming the builder
        run_checks(m.healthy_a100(), load_compat(), checks)


def test_every_kind_the_checks_make_on_the_test_machines_is_declared():
    # the strict mode is on (tests/conftest.py): any undeclared kind would raise here
    assert __import__("os").environ.get(STRICT_ENV) == "1"
    compat = load_compat()
    codes = set()
    for name in ("healthy_a100", "h100_old_driver", "rtx5090_cu124", "gpus_with_cpu_torch", "cpu_torch_cuda_vision"):
        for r in run_checks(getattr(m, name)(), compat):
            codes |= {f.code for f in r.findings}
    assert len(codes) >= 5
    assert [c for c in sorted(codes) if finding_code(c) is None] == []


def test_the_fleet_checks_are_registered_and_do_not_apply_to_one_machine():
    from envdoctor.report.console import render_console
    from envdoctor.report.summary import skip_label

    fleet = [c for c in all_checks() if c.area == "fleet"]
    assert [c.id for c in fleet] == ["fleet.ranks", "fleet.consistency", "fleet.node-findings", "fleet.stragglers",
                                     "fleet.collectives", "fleet.transport"]
    facts = m.healthy_a100()
    results = [r for r in run_checks(facts, load_compat(), fleet)]
    assert {r.status for r in results} == {"skipped"}
    assert {skip_label(r, facts) for r in results} == {"not a fleet run"}
    from envdoctor.services.collect import judge

    text = render_console(judge(facts, load_compat()), color=False)
    assert "not a fleet run" in text and "fleet.ranks" not in text
    assert not any(line.strip().startswith(("✓ fleet", "! fleet", "✗ fleet")) for line in text.splitlines())


def test_finding_codes_cover_every_builder_kind():
    codes = finding_codes()
    for b in builders():
        for kind in b.kinds:
            assert codes[f"{b.check_id}/{kind}"].check.id == b.owner


def test_check_tests_mirror_check_modules():
    # every check module's checks are tested in tests/unit/checks/test_<module>.py (a passing, a failing and a
    # skipped case each); a new check module comes with its test file
    mirrored = {p.stem[len("test_"):] for p in (REPO / "tests" / "unit" / "checks").glob("test_*.py")}
    assert sorted(set(check_modules()) - mirrored) == []
