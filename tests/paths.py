"""Where the tests' inputs are, for test files at any depth of tests/ (unit/<package>/, integration/, gpu/)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
SHARED = REPO.parent / "shared"  # the read-only shared folder next to the worktree (real fixtures, pastes)
