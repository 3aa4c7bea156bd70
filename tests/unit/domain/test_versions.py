"""envdoctor.domain.versions, table-driven: lenient and strict parsing, public version, release, branches."""

from __future__ import annotations

import pytest

from envdoctor.domain.versions import (
    base_version,
    driver_branch,
    major_minor,
    mm_str,
    parse_version,
    release,
    version_ge,
)


@pytest.mark.parametrize("text, strict, want", [
    ("2.5.1+cu124", False, "2.5.1+cu124"),
    ("535.104.05", False, "535.104.5"),  # a driver version: the leading zero is numeric
    ("12.4 (build 1)", False, "12.4"),  # lenient: the leading dotted number
    ("550.54.14-beta", False, "550.54.14b0"),  # PEP 440 reads "-beta" as a pre-release
    ("12.4 (build 1)", True, None),  # strict: only a PEP 440 version
    ("  2.3.1 ", True, "2.3.1"),
    ("not a version", False, None),
    ("", False, None),
    (None, False, None),
])
def test_parse_version(text, strict, want):
    v = parse_version(text, strict)
    assert (str(v) if v is not None else None) == want


@pytest.mark.parametrize("text, want", [
    ("2.5.1+cu124", "2.5.1"),
    ("2.6.0.dev20241112+cu124", "2.6.0.dev20241112"),  # Version.public keeps the dev part
    ("2.3.1", "2.3.1"),
    ("junk", None),
])
def test_base_version(text, want):
    assert base_version(text) == want


@pytest.mark.parametrize("text, rel, mm, mms", [
    ("550.54.14", (550, 54, 14), (550, 54), "550.54"),
    ("12", (12,), (12, 0), "12.0"),
    ("12.4.1", (12, 4, 1), (12, 4), "12.4"),
    (None, (), None, None),
])
def test_release_and_major_minor(text, rel, mm, mms):
    assert release(text) == rel
    assert major_minor(text) == mm
    assert mm_str(text) == mms


@pytest.mark.parametrize("a, b, want", [
    ("550.54.15", "550.54.14", True),
    ("535.104.05", "550.54.14", False),
    ("550.100", "550.54.14", True),  # numeric, not string, comparison
    ("12.4", "12.4.0", True),
    (None, "1.0", None),
    ("x", "1.0", None),
])
def test_version_ge(a, b, want):
    assert version_ge(a, b) == want


@pytest.mark.parametrize("text, want", [("535.104.05", 535), ("550", 550), ("R535", None), (None, None), ("", None)])
def test_driver_branch(text, want):
    assert driver_branch(text) == want
