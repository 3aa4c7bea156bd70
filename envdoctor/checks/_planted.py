"""Interpreters envdoctor saw but does not suggest: another user could change what they run (issue 40).

The probe (probes/trust.py) leaves out of ``PythonEnv.torch_elsewhere`` an interpreter on a path that another
user owns or can write to (a venv planted in /tmp, a shared scratch directory, a world-writable PATH entry), and
records it with the reason in ``torch_elsewhere_refused``: a fix that says ``envdoctor --python THAT``, pasted as
root, would run that user's code. The fix says so instead, so that the user who does own it can move it.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..model.facts import PythonEnv
from ..model.findings import Fix


def refused_note(py: PythonEnv) -> str:
    """" Not suggested: /tmp/x/.venv/bin/python (/tmp/x is owned by mallory (uid 1001)) ...", or ""."""
    refused = py.torch_elsewhere_refused or {}
    if not refused:
        return ""
    named = "; ".join(f"{exe} ({why})" for exe, why in list(refused.items())[:3])
    return (f". Not suggested: {named}: another user can change what {'it runs' if len(refused) == 1 else 'they run'}, "
            "so running it would run their code (copy or rebuild the environment in a directory only you can "
            "write to)")


def with_refused(fix: Optional[Fix], py: PythonEnv) -> Optional[Fix]:
    """``fix`` with the interpreters left out of it, and why, in its summary."""
    note = refused_note(py)
    if fix is None or not note:
        return fix
    return dataclasses.replace(fix, summary=fix.summary + note)
