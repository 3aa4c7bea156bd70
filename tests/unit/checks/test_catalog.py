"""explain from the registry: every code a check declares is explained, whatever shape its source has."""

from __future__ import annotations

import re

import pytest

from envdoctor.checks import registry, run_checks
from envdoctor.checks.base import DECLARED, CheckContext, Findings, registrar
from envdoctor.checks.catalog import UnknownCode, explain_lines, known_finding_code
from envdoctor.checks.registry import finding_codes
from envdoctor.compat import load_compat
from tests import machines as m


def _unread():
    raise AssertionError("the compatibility data is read only for an error signature's code")


def _instance(code: str) -> str:
    """A code a template stands for: each {placeholder} a plausible computed word."""
    return re.sub(r"\{[a-z_]+\}", "x1", code)


def test_every_declared_code_is_explained():
    compat = load_compat()
    signatures = [s.id for s in compat.signatures]
    explained = 0
    for code, fc in sorted(finding_codes().items()):
        if code.startswith("messages.signature/"):  # its kinds are the signatures' ids: each one explained
            for sid in signatures:
                out = "\n".join(explain_lines(code.replace("{signature}", sid).replace("{category}", "x"), compat))
                assert "Source: " in out and "(messages.signatures)" in out, sid
                explained += 1
            continue
        if code.startswith("host.environment/"):  # its kinds are the ids of compat_data/env_vars.json's rows
            for row in compat.env_vars.rows:
                out = "\n".join(explain_lines(f"host.environment/{row.id}", compat))
                assert "Source: https://" in out and f"When: {row.variable} " in out, row.id
                explained += 1
            continue
        if code.startswith("messages.status-codes/"):  # its kinds name rows of compat_data/status_codes.json
            for row in compat.status_codes:
                out = "\n".join(explain_lines(f"messages.status-codes/{row.finding_kind}", compat))
                assert f"Number: {row.number}" in out and f"Source: {row.source}" in out, row.key
                explained += 1
            continue
        real = _instance(code) if fc.template else code
        out = explain_lines(real, _unread)
        assert out[0] == f"{fc.check.id}: {fc.check.title}", code
        assert f"finding code: {real}" in out, code
        assert ("declared as: " + code in "\n".join(out)) == fc.template, code
        cats = [line.split(":")[0] for line in out if re.fullmatch(r"[A-Z_]+: .*", line)]
        assert cats and set(cats) <= set(fc.categories), (code, cats)
        explained += 1
    assert explained >= len(finding_codes())


def test_checks_and_categories_are_explained_and_unknown_codes_are_refused():
    out = explain_lines("DRIVER_TOO_OLD_FOR_TORCH_CUDA", _unread)
    assert out[0].startswith("DRIVER_TOO_OLD_FOR_TORCH_CUDA: ") and any("driver.cuda-compat" in x for x in out)
    assert explain_lines("gpu.xid", _unread)[0].startswith("gpu.xid: ")
    assert "finding code: fleet.stragglers/h2d-pinned" in explain_lines("fleet.stragglers/h2d-pinned", _unread)
    for code, words in (("NOPE", "unknown code 'NOPE'"), ("no.such-check", "unknown code"),
                        ("driver.present/bogus", "driver.present reports no such kind"),
                        ("pcie.link/inactive", "pcie.link reports no such kind"),
                        ("messages.signature/no-such-signature", "unknown error signature")):
        with pytest.raises(UnknownCode, match=re.escape(words)):
            explain_lines(code, load_compat)


def test_a_status_is_explained_from_its_row_by_code_or_enum_name():
    """issue 42: `envdoctor explain CUDA_ERROR_NO_DEVICE` prints compat_data/status_codes.json's row."""
    compat = load_compat()
    by_name = explain_lines("CUDA_ERROR_NO_DEVICE", compat)
    assert by_name == explain_lines("messages.status-codes/cuda-driver.cuda-error-no-device", compat)
    assert "Number: 100" in by_name and any(line.startswith("Kind: environment; category NO_GPU_VISIBLE")
                                            for line in by_name)
    assert "Standard message: no CUDA-capable device is detected" in explain_lines("cudaErrorNoDevice", compat)
    with pytest.raises(UnknownCode, match="unknown status"):
        explain_lines("messages.status-codes/cuda-runtime.no-such-status", compat)


def test_codes_the_old_source_scanner_refused_are_known():
    # explain parsed the checks' source with ast and exited 2 on these: a kind built with .replace(), one
    # chosen by a dict or an f-string over a name, one handed over with its builder to a helper in another file
    for code in ("bench.matmul/tf32-override", "requirements.torch/unmet", "requirements.packages/unmet",
                 "requirements.extensions-gpus/ptx-only", "gpu.xid/79", "torch.interpreter/not-found",
                 "packages.torch-requires/nvidia-cudnn-cu12", "diagnose.cuda-unavailable/driver-unknown"):
        assert known_finding_code(code), code
    assert not known_finding_code("host.shm/per-gpu") and not known_finding_code("gpu.xid/")


@pytest.fixture
def scratch_check():
    """A check added the ordinary way, its kind chosen by ``make = X.error if ... else X.warning`` (the shape the
    ast scanner could not read), registered for this test only."""
    checks: list = []
    check = registrar(checks)
    rule = Findings("driver.scratch", "NO_NVIDIA_DRIVER", kinds=("too-many", "too-few"))

    @check(rule, "A scratch rule")
    def scratch(ctx: CheckContext):
        make = rule.error if ctx.facts.driver.gpus else rule.warning
        return [make("too-many" if len(ctx.facts.driver.gpus) > 1 else "too-few", "scratch")]

    registry.ALL_CHECKS.extend(checks)
    finding_codes.cache_clear()
    yield checks
    registry.ALL_CHECKS[:] = [c for c in registry.ALL_CHECKS if c not in checks]
    DECLARED.remove(rule)
    finding_codes.cache_clear()


def test_a_check_whose_severity_and_kind_are_chosen_at_run_time_is_explained(scratch_check):
    [r] = run_checks(m.healthy_a100(), load_compat(), scratch_check)
    [f] = r.findings
    assert (f.code, f.severity) == ("driver.scratch/too-few", "error")
    out = explain_lines(f.code, _unread)
    assert out[:2] == ["driver.scratch: A scratch rule", "finding code: driver.scratch/too-few"]
    assert "NO_NVIDIA_DRIVER: " in "\n".join(out)
    assert known_finding_code("driver.scratch/too-many") and not known_finding_code("driver.scratch/other")
