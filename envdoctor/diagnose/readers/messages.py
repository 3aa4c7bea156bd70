"""Collect error and warning messages (tracebacks, warnings, tool failures) verbatim from a paste."""

from __future__ import annotations

import re

from .base import Acc, Paste

# Lines that carry an error or warning worth keeping. Plain keywords, no nested quantifiers: each line is
# scanned once, so a multi-MB paste stays linear.
_TRIGGER = re.compile(
    r"Error\b|error:|Exception\b|Warning\b|warning:|\bnot found\b|\bfailed\b|\bFAIL\b|cannot open|"
    r"undefined symbol|mismatch|not compatible|too old|not compiled|does not exist|not supported|"
    r"No matching distribution|cannot import name|incompatib|no CUDA-capable|returned \d+|"
    r"no kernel image|not recognized|device-side assert|couldn'?t communicate|could not select|"
    r"insufficient|supports CUDA capabilities|PyTorch no longer supports|system not yet initialized|forward compatibility|No devices were found|"
    r"\bXid\b|fallen off the bus|out of memory|unable to write to file",
    re.IGNORECASE,
)
# literal, lower-case pieces covering every trigger alternative ("not " covers "not found", "cannot open",
# "could not select" ...): each keyword costs one C-speed scan of the paste, so there are few of them
_KEYWORDS = ["error", "exception", "warn", "not ", "fail", "too old", "undefined symbol", "mismatch",
             "no matching", "incompatib", "cuda-capable", "returned ", "kernel image", "device-side",
             "communicate", "insufficient", "capabilities", "no longer", "forward compat", "no devices", "xid",
             "fallen off", "out of memory", "unable to write"]
_END = re.compile(r"[.!?:)\]]\s*$")
_SKIP = re.compile(r"^\s*(?:File \"|Traceback \(most recent call last\)|\^+\s*$|~+\s*$|During handling of)")
_CONTINUATION = re.compile(r"^\s+\S")


def read(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    candidates = paste.with_any(_KEYWORDS)
    # a log repeating one error adds nothing but time: each distinct line once, the first and the last
    # ones of a long log (where the first failure and the one that ended the run are)
    hit_lines = [i for i in paste.distinct(candidates, head=1500, tail=500) if _TRIGGER.search(lines[i][:4000])]
    acc.message_lines = len(candidates)
    n = len(lines)
    done = -1
    for i in hit_lines:
        if i <= done:
            continue
        line = lines[i]
        if len(line) > 4000 or _SKIP.match(line):
            continue
        # messages wrap: join indented continuation lines while the sentence is not finished
        parts = [line.strip()]
        j = i + 1
        while (j < n and len(parts) < 4 and not _END.search(parts[-1]) and lines[j].strip()
               and _CONTINUATION.match(lines[j]) and not _SKIP.match(lines[j])):
            parts.append(lines[j].strip())
            j += 1
        acc.add_message(" ".join(parts))
        done = j - 1
