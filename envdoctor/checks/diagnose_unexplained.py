"""An error line in a paste that no finding explains is a finding of its own (UNRECOGNISED_ERROR), never silence.

A user who pastes an error and reads "No problems found" stops trusting the tool. The rule has two halves:

- this check lists the paste's *error lines*: the messages the message reader kept (facts.paste.messages) that
  have the shape of a failure a program printed (a traceback's last line ``SomeError: ...``, ``error:`` /
  ``fatal`` / ``ERROR``, ``failed``, ``mismatch``, an NVRM kernel line saying something went wrong, an Xid, a
  non-zero exit status, a crash), not a count of zero (``ECC errors: 0``, ``failed: 0``, ``Errors: None``), not a
  warning, not pip's notice that its resolver ignored installed packages (printed after an install that
  succeeded), and not a person's sentence introducing the error ("I get the following error:");
- the paste policy (judging/policy.py, ``narrow``) then removes every line that a warning or error finding's
  evidence covers: the message a signature matched (directly, or folded into the facts-based finding of its
  category), or an assembled message that holds the line. What is left is quoted, with what the paste does
  not show and the output that would let envdoctor judge it.

The finding is a warning: the paste shows something failed, envdoctor cannot say why, so it is not a clean bill
(the verdict says "not judged", ``--fail-on warning`` exits 1), but it is no diagnosed error either.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

from ..model.catalogue import UNRECOGNISED
from ..model.facts import Facts
from ..model.findings import Evidence, Finding, Fix
from ._errors import (  # noqa: F401 - is_error_line: the rule this check applies, for its callers
    NVRM,
    covered,
    distinctive,
    error_groups,
    error_lines,
    exception_line,
    generic,
    is_error_line,
    unprefixed,
)
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

CATEGORY = UNRECOGNISED
UNEXPLAINED = Findings("diagnose.unexplained-error", CATEGORY, kinds=("error-line",))
MAX_QUOTED = 5  # lines quoted as evidence; the summary counts them all

_TRACEBACK = "the full traceback (from `Traceback (most recent call last):` to the last line)"
_SMI = "nvidia-smi"
_ENV = "python -m torch.utils.collect_env"
_KERNEL = "sudo dmesg | grep -i -E 'nvrm|xid'"


def _asks(facts: Facts, lines: Sequence[str]) -> List[str]:
    """What to paste next, from what the paste does not show and what the lines are."""
    missing = list(facts.paste.not_found) if facts.paste is not None else []
    out: List[str] = []
    if any(exception_line(unprefixed(m)) for m in lines):
        out.append(_TRACEBACK)
    if any("driver" in m or "GPU" in m for m in missing):
        out.append(f"`{_SMI}`")
    if any(w in m for m in missing for w in ("torch", "Python", "nvcc")):
        out.append(f"`{_ENV}`")
    if any(NVRM.search(m) or "Xid" in m for m in lines):
        out.append(f"`{_KERNEL}`")
    return out or [f"`{_ENV}`", f"`{_SMI}`"]


def unexplained_finding(facts: Facts, lines: Sequence[Tuple[int, str]]) -> Optional[Finding]:
    """The finding for the error lines ``lines`` ((message index, text)), or None when there are none."""
    if not lines:
        return None
    missing = list(facts.paste.not_found) if facts.paste is not None else []
    asks = _asks(facts, [m for _, m in lines])
    first = lines[0][1] if len(lines[0][1]) <= 160 else lines[0][1][:157] + "..."
    more = f" (and {len(lines) - 1} more error line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
    evidence = [Evidence(f"paste.messages[{i}]", m[:500]) for i, m in lines[:MAX_QUOTED]]
    if missing:
        evidence.append(Evidence("paste.not_found", missing))
    commands = [a.strip("`") for a in asks if a.startswith("`")]
    if commands:
        evidence.append(Evidence("paste.settle", commands[0]))
    return UNEXPLAINED.warning(
        "error-line", confidence="medium",
        summary=f"The paste shows an error envdoctor does not recognise: \u201c{first}\u201d{more}",
        detail=("No check explains this error, so the paste is not judged (not \"no problems\"). "
                + (f"The paste does not show: {', '.join(missing)}. " if missing else "")
                + f"To judge it, paste {', '.join(asks)}."),
        evidence=evidence,
        fix=Fix("Paste " + ", ".join(asks) + " with the error", commands),
    )


def narrow(facts: Facts, finding: Finding, explained: Iterable[str], values: Iterable[str] = (),
           cause_found: bool = False) -> Optional[Finding]:
    """``finding`` (this check's) without the lines other findings cover (``explained`` messages, distinctive
    fact ``values`` they cite; with ``cause_found``, a finding named a cause, which explains the lines that only
    say something failed); None when none is left."""
    messages = facts.paste.messages if facts.paste is not None else []
    explained, values = list(explained), [v for v in values if distinctive(v)]
    lines = [(i, m) for i, m, holders in error_groups(messages)
             if not (cause_found and generic(m)) and not covered(m, explained, values, holders)]
    return unexplained_finding(facts, lines)


@check(UNEXPLAINED, "Every error line in the paste is explained")
def check_unexplained(ctx: CheckContext) -> List[Finding]:
    """Every error line of the paste, as one finding; the paste policy keeps those no other finding explains."""
    paste = paste_or_skip(ctx)
    if not paste.messages:
        raise SkipCheck("the paste holds no error or warning message")
    found = unexplained_finding(ctx.facts, error_lines(paste.messages))
    return [found] if found is not None else []
