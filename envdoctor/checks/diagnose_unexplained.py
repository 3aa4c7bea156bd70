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

import re
from typing import Iterable, List, Optional, Sequence, Tuple

from ..catalogue import UNRECOGNISED
from ..facts import Facts
from ..findings import Evidence, Finding, Fix
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

CATEGORY = UNRECOGNISED
UNEXPLAINED = Findings("diagnose.unexplained-error", CATEGORY, kinds=("error-line",))
MAX_QUOTED = 5  # lines quoted as evidence; the summary counts them all

# a log prefix that is no part of the message: journalctl/syslog, an ISO timestamp and host, dmesg's clock
_PREFIX = re.compile(r"^\s*(?:\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}\] |[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ [\w./-]+(?:\[\d+\])?: |"
                     r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S* (?:\S+ [\w./-]+(?:\[\d+\])?: )?|\[\s*\d+\.\d+\] )")

# the shapes of a failure a program printed; each alternative is anchored on a word a program writes
_ERROR = re.compile(
    r"^\s*(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Fault|Interrupt)\b\s*(?::|$)"  # exception line
    r"|(?:^|[\s:(\[\]])(?:[Ee]rror|ERROR|[Ff]atal(?: error)?|FATAL)\s*(?:\(\w+\)\s*)?:\s*\S"  # error: x, fatal: x
    r"|\b(?:ERROR|FATAL|CRITICAL)\b|\[E[:\]]"  # a log record's level
    r"|\b(?:[Ff]ailed|FAILED|[Ff]ailure)\b|\bFAIL\b"
    r"|\b[Mm]ismatch\b"
    r"|\bXid\b"
    r"|\bexit(?:ed with)? (?:status|code)[ :=]*[1-9]\d*\b|\bnon-zero exit\b|\breturned [1-9]\d* exit status\b"
    r"|\bSegmentation fault\b|\bcore dumped\b|\bIllegal instruction\b|\bBus error\b"
    r"|\bCUDA error\b|\bcudaError\w+|\bNCCL error\b"
)
# an NVRM line is the kernel module speaking: an error only when it says something went wrong (its load banner
# "NVRM: loading NVIDIA UNIX x86_64 Kernel Module 535.54.03" is not)
_NVRM = re.compile(r"\bNVRM:")
_NVRM_BAD = re.compile(r"mismatch|fail|error|\bXid\b|unable|cannot|can't|not supported|invalid|fallen|timeout|"
                       r"RmInit|No NVIDIA|not found|denied|mismatched|does not", re.I)
# not a failure: a count of zero or none ("ECC errors: 0", "failed: 0", "0 failed", "Errors: None", "No errors")
_ZERO = re.compile(r"\b(?:errors?|failed|failures?|fatal|mismatch(?:es)?)\b\s*(?:count\s*)?[:=]?\s*"
                   r"(?:0|none|no|n/?a|false|-)\s*(?:$|[,;)\]|])|\b0 (?:errors?|failed|failures?)\b|"
                   r"\bno (?:errors?|failures?)\b|\bwithout (?:errors?|failures?)\b|"
                   # a table field of nvidia-smi -q ("Remapping Failure Occurred        : No")
                   r"\b(?:errors?|fail\w*)\b[\w .()-]{0,40}?\s\s+:\s*(?:0|none|no|n/?a|false)\b", re.I)
_WARNING = re.compile(r"^\s*(?:[\w.]*Warning\b|WARNING\b|WARN\b|warning:|W\d{4} |\[W[:\]])")
# pip prints this after an install that completed, about packages it did not resolve together
_PIP_RESOLVER = re.compile(r"pip's dependency resolver does not currently take into account", re.I)
# a person's sentence introducing the error, not the error ("I get the following error:", "Error: see below")
_INTRO = re.compile(r"\b(?:following|this|the|an|same|below|got|get|getting|gives?|throws?|see)\b[^:]{0,30}"
                    r"\b(?:error|failure)s?\s*:?\s*$", re.I)


# a person's sentence, not a program's line ("I failed to build ...", "When I run it I get an error"), and a
# Markdown heading or shell comment ("# ERROR")
_PERSON = re.compile(r"^(?:#+\s|(?:I|I'm|I've|I'd|We|We're|My|Our|When|Whenever|If|It|This|That|After|Before|But|So|"
                     r"Also|Then|Here|Please|Hi|Hello|Thanks|Now|However|Same|Any|Why|How)\b(?!\.))")
# a counter in a table of fields ("Uncorrectable Error : 4", "Xid errors: 2"): a fact the checks read from the
# table (gpu.errors), not a message
_COUNTER = re.compile(r"\b(?:errors?|failed|failures?)\s*[:=]\s*\d+\b", re.I)
# a line that says only that something failed, not what (a build step's exit status, pip's wrapper): any finding
# that names a cause explains it
_GENERIC = re.compile(r"exit(?:ed with)? (?:status|code)|non-zero exit|Command errored out|subprocess-exited-with-error|"
                      r"CalledProcessError|Failed building wheel|Failed to build\b|build stopped|"
                      r"^\s*(?:ERROR: )?(?:Could not build wheels|failed-wheel-build)|"
                      r"^\s*(?:\w+\.)*\w*(?:Error|Exception):?\s*$", re.I)  # a bare "RuntimeError:" (its text follows)


def unprefixed(line: str) -> str:
    return _PREFIX.sub("", line, count=1).strip()


def is_error_line(line: str) -> bool:
    """Whether ``line`` has the shape of a failure a program printed (module docstring)."""
    text = unprefixed(line)
    if not text or _PIP_RESOLVER.search(text) or _WARNING.match(text) or _PERSON.match(text):
        return False
    text = _COUNTER.sub(" ", _ZERO.sub(" ", text))  # counts are facts, zeros are health
    if _NVRM.search(text):
        return bool(_NVRM_BAD.search(text))
    return bool(_ERROR.search(text)) and not (_INTRO.search(text) and not _exception_line(text))


_EXC = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b\s*(?::|$)")


def _exception_line(text: str) -> bool:
    return bool(_EXC.match(text))


def generic(line: str) -> bool:
    """Whether the line only says that something failed (an exit status, a wheel that did not build)."""
    return bool(_GENERIC.search(line))


def _norm(text: str) -> str:
    return " ".join(unprefixed(text).replace("NVRM: ", " ").split()).lower()


def error_groups(messages: Sequence[str]) -> List[Tuple[int, str, List[str]]]:
    """(index into ``messages``, message, the error messages holding it) of each error line, the smallest: an
    assembled message that holds a one-line error message is listed through that line."""
    errs = [(i, m) for i, m in enumerate(messages) if is_error_line(m)]
    norms = [_norm(m) for _, m in errs]
    out = []
    for k, (i, m) in enumerate(errs):
        holders = [j for j in range(len(errs)) if j != k and norms[j] != norms[k] and norms[k] and norms[k] in norms[j]]
        if any(norms[j] and norms[j] != norms[k] and norms[j] in norms[k] for j in range(len(errs)) if j != k):
            continue  # it holds a smaller error message: that one stands for it
        out.append((i, m, [errs[j][1] for j in holders]))
    return out


def error_lines(messages: Sequence[str]) -> List[Tuple[int, str]]:
    return [(i, m) for i, m, _ in error_groups(messages)]


# a fact value that names one thing (a version, a PCI address, a path, a library file), not a count or a word
_DISTINCT = re.compile(r"\d+\.\d+|[0-9a-f]{4}:[0-9a-f]{2}:|/\w|\.so\b|\w\.dll\b", re.I)


def distinctive(value: str) -> bool:
    return len(value) >= 4 and bool(_DISTINCT.search(value))


def covered(message: str, explained: Iterable[str], values: Iterable[str] = (), holders: Sequence[str] = ()) -> bool:
    """Whether a finding's evidence covers ``message``: an explained text holds it or it holds one (a signature
    that matched one line of an assembled message, or the assembled one around the line; also through the
    assembled messages ``holders`` that hold it), or it quotes a distinctive fact a finding cites (the version,
    the PCI address, the library the finding is about)."""
    explained = [en for en in (_norm(e) for e in explained) if en]
    for text in [message, *holders]:
        n = _norm(text)
        if any(n in en or (len(en) >= 20 and en in n) for en in explained):
            return True
    return any(v in text for v in values for text in [message, *holders])


_TRACEBACK = "the full traceback (from `Traceback (most recent call last):` to the last line)"
_SMI = "nvidia-smi"
_ENV = "python -m torch.utils.collect_env"
_KERNEL = "sudo dmesg | grep -i -E 'nvrm|xid'"


def _asks(facts: Facts, lines: Sequence[str]) -> List[str]:
    """What to paste next, from what the paste does not show and what the lines are."""
    missing = list(facts.paste.not_found) if facts.paste is not None else []
    out: List[str] = []
    if any(_exception_line(unprefixed(m)) for m in lines):
        out.append(_TRACEBACK)
    if any("driver" in m or "GPU" in m for m in missing):
        out.append(f"`{_SMI}`")
    if any(w in m for m in missing for w in ("torch", "Python", "nvcc")):
        out.append(f"`{_ENV}`")
    if any(_NVRM.search(m) or "Xid" in m for m in lines):
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
