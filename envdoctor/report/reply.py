"""What a maintainer replies to a pasted report (`envdoctor diagnose`, issue 42), shared by the console and
Markdown renderers: what the paste shows, the cause (or the line nothing recognised), and what to ask the
reporter for, each ask with the command whose output would settle it and why. The checks that could not be
judged from a paste are counted here; their list is for ``-v`` (the console) or a folded block (Markdown).

It decides nothing: the findings are the judge's, the asks are the settling commands the findings and the paste
policy already name (``paste.settle`` evidence, ``facts.paste.settle``), in order, without duplicates.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.catalogue import CATEGORIES, UNRECOGNISED
from ..model.findings import Finding, Report, Severity
from .facts_view import key_fact_rows

# key-fact values that say the paste did not show the fact: the reply lists what the paste shows, and says once
# what it does not ("Not in paste")
_ABSENT = re.compile(r"not (?:checked|in the (?:pasted text|paste)|inspected)|version not in the paste|"
                     r"^unknown(?: · CUDA ceiling unknown)?$")
_CODE = re.compile(r"`([^`]+)`")
MAX_ASKS = 4  # a reply asks for a few outputs, not a checklist


@dataclass(frozen=True)
class Ask:
    what: str  # a command whose output to paste, or what to paste ("the full traceback ...")
    why: str  # what it settles
    command: bool = True  # ``what`` is a command (rendered as code)


@dataclass(frozen=True)
class Reply:
    shows: List[Tuple[str, str]]  # (label, value) of the facts the paste shows, then "Not in paste"
    causes: List[Finding]  # the problems (warning/error), root causes first, as the findings section shows them
    unrecognised: List[str]  # the error lines nothing recognised, quoted
    asks: List[Ask]  # what to ask the reporter for, most useful first
    unjudged: int  # checks that could not be judged from the paste (facts unknown)
    not_applied: int  # checks that do not apply to a paste of this kind


def is_paste_reply(report: Report) -> bool:
    """A report of one pasted machine (``envdoctor diagnose``): rendered as a reply. Several machines in one
    paste keep their per-machine sections (report/machines.py)."""
    return report.facts.paste is not None and report.facts.origin == "paste" and not report.machines


def _why_generic(command: str, otherwise: str = "what the paste leaves open") -> str:
    if command.strip() == "nvidia-smi":
        return "the driver, its CUDA ceiling and the GPUs"
    if "collect_env" in command:
        return "torch, its CUDA build, Python, the driver and the GPUs in one report"
    if "import torch" in command:
        return "torch's version, the CUDA it was built with and whether it sees the GPU"
    return otherwise


def _asks(report: Report) -> List[Ask]:
    out: List[Ask] = []
    seen: set = set()

    def add(what: str, why: str, command: bool = True) -> bool:
        key = what.strip().lower()
        if command and any(key in {p.strip() for p in re.split(r";|&&", s)} for s in seen):
            return False  # already one of the commands an earlier ask runs ("...; nvidia-smi")
        if key and key not in seen:
            seen.add(key)
            out.append(Ask(what.strip(), why, command))
            return True
        return False

    problems = sorted(report.problems, key=lambda f: (f.severity != Severity.ERROR, f.category == UNRECOGNISED))
    for f in problems:
        if f.category == UNRECOGNISED:
            if "traceback" in (f.fix.summary if f.fix else "").lower():
                add("the full traceback (from `Traceback (most recent call last):` to its last line)",
                    "the error line alone does not say which call failed", command=False)
            for cmd in (f.fix.commands if f.fix else []):
                add(cmd, _why_generic(cmd, "to judge the error line nothing recognised"))
            continue
        sure = f.confidence in (None, "high")
        title = CATEGORIES[f.category].title if f.category in CATEGORIES else f.category
        why = (f"confirms the cause: {title}" if sure else
               f"tells whether the cause is \u201c{title}\u201d (the paste alone leaves it open)")
        for e in f.evidence:
            if e.path == "paste.settle" and isinstance(e.value, str):
                if add(e.value, why):
                    why = "with the output above, the same question"  # the question is said once per finding
    for line in (report.facts.paste.settle if report.facts.paste is not None else None) or []:
        m = _CODE.search(line)
        if m and not ("import torch" in m.group(1) and any("collect_env" in a.what for a in out)):
            add(m.group(1), _why_generic(m.group(1)))  # (collect_env already shows what torch's line would)
    return out[:MAX_ASKS]


def reply_view(report: Report, unjudged: int = 0, not_applied: int = 0) -> Reply:
    """The reply for ``report`` (a paste's); ``unjudged`` / ``not_applied`` are the renderer's check counts."""
    shows: List[Tuple[str, str]] = []
    blank: List[str] = []  # rows whose every part is unknown ("Host  unknown · unknown CPUs · ..."): said once below
    for label, value in key_fact_rows(report.facts):
        if label == "To settle" or (label != "Not in paste" and _ABSENT.search(value)):
            continue  # "To settle" is the asks below; an absent fact is said once, in "Not in paste"
        if label != "Not in paste" and all("unknown" in part for part in value.split(" \u00b7 ")):
            blank.append(label.lower())
            continue
        shows.append((label, value))
    if blank:
        at = next((i for i, (label, _) in enumerate(shows) if label == "Not in paste"), None)
        if at is None:
            shows.append(("Not in paste", ", ".join(blank)))
        else:
            shows[at] = ("Not in paste", shows[at][1] + ", " + ", ".join(blank))
    causes = [f for f in report.problems if f.category != UNRECOGNISED]
    unrecognised: List[str] = []
    for f in report.problems:
        if f.category == UNRECOGNISED:
            unrecognised.extend(str(e.value) for e in f.evidence if e.path.startswith("paste.messages["))
    return Reply(shows, causes, unrecognised, _asks(report), unjudged, not_applied)


def ask_line(ask: Ask) -> str:
    """One ask as plain text: "`cmd`: why" (the console and Markdown wrap it their own way)."""
    return (f"`{ask.what}`" if ask.command else ask.what) + f": {ask.why}"


def closing(reply: Reply) -> Optional[str]:
    """What the reply ends with when there is nothing to ask: the paste named its cause with certainty."""
    if reply.asks:
        return None
    if reply.causes:
        return "Nothing more to ask: the paste shows the cause; after the fix, the same output again confirms it."
    return "Nothing to ask: the paste shows no error and nothing the checks could fault."
