"""Where the tests' inputs are, for test files at any depth of tests/ (unit/<package>/, integration/, gpu/)."""

from __future__ import annotations

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
# the read-only shared folder next to the worktree (real fixtures, pastes); every test that reads it skips with a
# reason where it is absent. ENVDOCTOR_TEST_SHARED names another folder: a missing one runs the suite as a bare
# clone would (`ENVDOCTOR_TEST_SHARED=/nonexistent python -m pytest ...`), which is how those skips are checked.
SHARED = Path(os.environ.get("ENVDOCTOR_TEST_SHARED") or REPO.parent / "shared")
