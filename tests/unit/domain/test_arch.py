"""envdoctor.domain.arch, table-driven: compute capability spellings and which arch runs where."""

from __future__ import annotations

import pytest

from envdoctor.domain.arch import arch_runs, cc_str, parse_cc, sm_name


@pytest.mark.parametrize("text, want", [
    ("8.0", (8, 0)), ("12.0", (12, 0)), ("80", (8, 0)), ("120", (12, 0)), ("sm_90a", (9, 0)),
    ("compute_100f", (10, 0)), ("sm_86+PTX", (8, 6)), ("8", (8, 0)), (9.0, (9, 0)),
])
def test_parse_cc(text, want):
    assert parse_cc(text) == want


@pytest.mark.parametrize("bad", ["", "sm_", "eight", "8.x"])
def test_parse_cc_rejects(bad):
    with pytest.raises(ValueError):
        parse_cc(bad)


@pytest.mark.parametrize("text, want", [("sm_120", "12.0"), ("sm_86", "8.6"), ("sm_90a", "9.0"), ("x", None)])
def test_cc_str(text, want):
    assert cc_str(text) == want


@pytest.mark.parametrize("cc, want", [("8.0", "sm_80"), ("12.0", "sm_120"), ("9.0", "sm_90")])
def test_sm_name(cc, want):
    assert sm_name(cc) == want


@pytest.mark.parametrize("arch, cc, runs", [
    (["sm_80"], "8.6", True),  # SASS: same major, later minor
    (["sm_86"], "8.0", False),  # never an earlier minor
    (["sm_80"], "9.0", False),  # never another major
    (["compute_80"], "9.0", True),  # PTX JITs to later majors
    (["compute_90"], "8.6", False),  # never to earlier ones
    (["sm_90a"], "9.0", True), (["sm_90a"], "9.1", False),  # arch-specific: exactly that CC
    (["compute_90a"], "10.0", False),
    (["sm_100f"], "10.3", True), (["sm_100f"], "12.0", False),  # family: within the major only
    (["compute_100f"], "10.3", True), (["compute_100f"], "12.0", False),
    (["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], "12.0", False),  # cu124 on Blackwell
    (["sm_75", "sm_120", "compute_120"], "12.0", True),
    ([], "8.0", False),
])
def test_arch_runs(arch, cc, runs):
    ok, why = arch_runs(arch, cc)
    assert ok is runs, why
    assert why
