"""Fixtures the diagnose tests share (a module may still define its own)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat


@pytest.fixture(scope="module")
def compat():
    return load_compat()
