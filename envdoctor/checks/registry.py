"""The explicit list of checks, in display order. Add a module here when it lands."""

from __future__ import annotations

from typing import List

from .base import Check

ALL_CHECKS: List[Check] = []


def _extend(module) -> None:
    ALL_CHECKS.extend(module.CHECKS)


# one line per check module, in the order the report groups them
