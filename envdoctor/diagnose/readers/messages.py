"""Collect error and warning messages (tracebacks, warnings, tool failures) verbatim from a paste."""

from __future__ import annotations

import re
from typing import List

from .base import Acc, lines_with

# Lines that carry an error or warning worth keeping. Plain keywords, no nested quantifiers: each line is
# scanned once, so a multi-MB paste stays linear.
_TRIGGER = re.compile(
    r"Error\b|error:|Exception\b|Warning\b|warning:|\bnot found\b|\bfailed\b|\bFAIL\b|cannot open|"
    r"undefined symbol|mismatch|not compatible|too old|not compiled|does not exist|not supported|"
    r"No matching distribution|cannot import name|incompatib|no CUDA-capable|returned \d+|"
    r"no kernel image|not recognized|device-side assert|couldn'?t communicate|could not select|"
    r"insufficient|supports CUDA capabilities|PyTorch no longer supports|system not yet initialized|forward compatibility|No devices were found",
    re.IGNORECASE,
)
# literal, lower-case forms of the trigger alternatives (fast prefilter for multi-MB pastes)
_KEYWORDS = ["error", "exception", "warning", "not found", "failed", "fail", "cannot open", "undefined symbol",
             "mismatch", "not compatible", "too old", "not compiled", "does not exist", "not supported",
             "no matching distribution", "cannot import name", "incompatib", "no cuda-capable", "returned ",
             "no kernel image", "not recognized", "device-side assert", "communicate", "could not select",
             "insufficient", "supports cuda capabilities", "no longer supports", "not yet initialized",
             "forward compatibility", "no devices were found"]
_END = re.compile(r"[.!?:)\]]\s*$")
_SKIP = re.compile(r"^\s*(?:File \"|Traceback \(most recent call last\)|\^+\s*$|~+\s*$|During handling of)")
_CONTINUATION = re.compile(r"^\s+\S")


def read(lines: List[str], acc: Acc) -> None:
    hit_lines = []
    seen = set()
    for i in lines_with(lines, _KEYWORDS):
        line = lines[i]
        if line in seen:  # a log repeating one error adds nothing but time
            continue
        seen.add(line)
        if _TRIGGER.search(line[:4000]):
            hit_lines.append(i)
        if len(hit_lines) >= 2000:
            break
    n = len(lines)
    done = -1
    for i in hit_lines:
        if len(acc.messages) >= 500:
            break
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
