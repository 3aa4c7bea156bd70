"""Collect error and warning messages (tracebacks, warnings, tool failures) verbatim from a paste.

Real error text is rarely one clean line: terminals and text boxes wrap long lines with no indentation, a copy
breaks a line inside a phrase, Python's multi-line warnings put the subject on one line and the verdict on the
next, tools print "Header:" followed by an indented detail block. So a message is assembled around each trigger
line: forward while the sentence is unfinished (indented or not) and over an indented block after a line ending
in ":", backward over the lines it continues (an indented, lower-case or unfinished start), bounded to a few
lines and never across a blank line, a traceback frame, a prompt or a code fence. The trigger line alone is kept
as a message too, so a signature anchored on one line still matches. Trigger words are the reader's own plus the
longest literal of every signature in the catalogue, so a new catalogue row never needs a second edit here.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence, Tuple

from .base import Acc, Paste

# Lines that carry an error or warning worth keeping. Plain keywords, no nested quantifiers: each line is
# scanned once, so a multi-MB paste stays linear.
_TRIGGER = re.compile(
    r"Error\b|error:|Exception\b|Warning\b|warning:|\bnot found\b|\bfailed\b|\bFAIL\b|cannot open|"
    r"undefined symbol|mismatch|does not match|is not defined|not compatible|too old|not compiled|does not exist|not supported|"
    r"No matching distribution|cannot import name|incompatib|no CUDA-capable|returned \d+|"
    r"no kernel image|not recognized|device-side assert|couldn'?t communicate|could not select|"
    r"insufficient|supports CUDA capabilities|PyTorch no longer supports|system not yet initialized|forward compatibility|No devices were found|"
    r"\bXid\b|(?:fallen|falls?|fell|falling) off the bus|does not include the required GPU|device_count\(\)`? (?:shows?|returns?|gives?|reports?|says?) |out of memory|unable to write to file|busy or unavailable|No CUDA GPUs|"
    r"\bfatal\b|Segmentation fault|core dumped|exit (?:status|code)|"
    # the rest of an error line's shapes (checks/_errors.py _ERROR), so that no line the unexplained-error check
    # would count is lost before it: NCCL's "Cuda failure 1 'invalid argument'", cudaErrorInvalidValue, "[E:"
    r"\bfailures?\b|cudaError\w*|Illegal instruction|\[E[:\]]|\bFault\b|\bpanicked at\b",
    re.IGNORECASE,
)
# glog's (and absl's) record prefix, "E0515 10:03:24.130426 19611 cuda_dnn.cc:534] ": level (Info, Warning,
# Error, Fatal), month and day, time, thread id, file and line. TensorFlow, JAX/XLA, PaddlePaddle and other C++
# runtimes log through it; an E or F record is an error line whatever its words ("Could not create cudnn handle:
# CUDNN_STATUS_NOT_INITIALIZED" holds none of the trigger words).
_GLOG_ERROR = re.compile(r"^[ \t]*[EF]\d{4} \d\d:\d\d:\d\d(?:\.\d+)? +\d+ [^\s\]]+:\d+\] ", re.M)
# literal, lower-case pieces covering every trigger alternative ("not " covers "not found", "cannot open",
# "could not select" ...): each keyword costs one C-speed scan of the paste, so there are few of them
_KEYWORDS = ["error", "exception", "warn", "not ", "fail", "too old", "undefined symbol", "mismatch",
             "no matching", "incompatib", "cuda-capable", "returned ", "kernel image", "device-side",
             "communicate", "insufficient", "capabilities", "no longer", "forward compat", "no devices", "xid",
             "off the bus", "device_count", "out of memory", "unable to write", "unavailable", "no cuda gpus", "fatal",
             "segmentation fault", "core dumped", "exit status", "exit code", "illegal instruction", "[e:",
             "fault", "panicked at"]
_END = re.compile(r"[.!?)\]]\s*$")
_COLON = re.compile(r":\s*$")
_SKIP = re.compile(r"^\s*(?:File \"|Traceback \(most recent call last\)|\^+\s*$|~+\s*$|During handling of)")
# a line that starts something else: a prompt, a fence, a frame, a log record with its own timestamp (also
# inside the quotes a person put around the line they copied: `"2024-11-12 10:07:56 [W:...] Failed ..."`)
_STOP = re.compile(r"^\s*[\"'\u201c\u2018]?(?:```|~~~|\$ |>>> |In \[\d+\]:|Out\[\d+\]:|# |[A-Z][\w.]*(?:Error|Exception|Warning)\b:|"
                   r"\d{4}-\d\d-\d\d[ T]\d|\d\d:\d\d:\d\d|\+-{3}|\||[IWEF]\d{4} \d\d:\d\d:\d\d)")
_PROMPT = re.compile(r"^\s*(?:\$ |>>> |In \[\d+\]:|PS [A-Z]:\\[^>]*> )")
_CONTINUATION = re.compile(r"^\s+\S")
_LOWER_START = re.compile(r"^\s*[a-z(]")
# a repeated log prefix on every line of one logical message: journalctl's "Aug 26 14:08:07 host kernel: ",
# dmesg's "[  12.345678] ", then the emitter's own tag ("NVRM: ", NCCL's "host:pid:tid [rank] NCCL WARN ")
_LOG_PREFIX = re.compile(r"^\s*(?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ [\w.-]+(?:\[\d+\])?: |"
                         r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \S+ [\w.-]+(?:\[\d+\])?: |\[\s*\d+\.\d+\] )")
_TAG = re.compile(r"^\s*(NVRM: |[\w.-]+:\d+:\d+ \[\d+\] NCCL (?:WARN|INFO) )")
MAX_SPAN = 8  # lines one message may span: bounds the work and never glues far-apart messages
# a logger record's prefix (vLLM's "(RayWorkerWrapper pid=5486) ERROR 05-06 08:55:19 worker_base.py:145] "): a line
# whose record starts a new exception ("ValueError: ...") starts a new message, whatever the line before it
_RECORD = re.compile(r"^\s*(?:\([\w.-]+(?: rank=\d+)?(?: pid=\d+)?\)\s+)?(?:ERROR|CRITICAL|FATAL|WARNING|WARN|INFO|DEBUG)\s+"
                     r"(?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+)?(?:\[[\w./-]+:\d+\]|[\w./-]+:\d+(?:\]| --))\s?")
_NEW_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b:")


_COMMON = {"version", "installed", "current", "pytorch", "install", "available", "running", "compiled"}


def _literal_keywords(sigs: Sequence[Any]) -> List[str]:
    """The longest literal word of each signature's pattern (lower-case): a line holding one is kept when a
    catalogue row matches the message assembled around it. One word, so a message wrapped or double-spaced inside
    a phrase still has it whole on one line.

    Every row has its word, also a row whose text holds one of the reader's own keywords: a keyword only puts a
    line among the candidates, and a candidate is kept on a trigger word (``_TRIGGER``) or a row's word; a row
    holding "not " (the keyword of "not found", "could not select", ...) but no trigger word ("Could not create
    cudnn handle: CUDNN_STATUS_NOT_INITIALIZED") was dropped when rows with a keyword had no word of their own.
    A row whose distinctive literals are short or common names them in its ``word`` field (one or a list),
    which is used instead."""
    out: List[str] = []
    for sig in sigs:
        if getattr(sig, "words", ()):
            # the row names its own literals (a device path such as /dev/dxg: too short to be a word here)
            out.extend(w for w in sig.words if w not in out)
            continue
        plain = re.sub(r"\\[a-zA-Z]|\(\?P<\w+>|\(\?<!.*?\)|\[[^\]]*\]|[{][^}]*[}]", " ", sig.pattern)
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]{6,}", plain) if w.lower() not in _COMMON]
        if words:
            best = max(words, key=len).lower()
        else:
            # only short words ("Found no NVIDIA driver on your system"): the longest literal phrase of the
            # first alternative, which a message carries whole unless a wrap splits it
            phrases = re.findall(r"[A-Za-z][A-Za-z' ]{11,}[A-Za-z]", plain.split("|")[0])
            best = max(phrases, key=len).lower() if phrases else ""
        if best and best not in out:
            out.append(best)
    return out


def _unprefix(line: str, tag: Optional[str]) -> str:
    """A line without its log prefix, and without the message's own tag when it repeats the first line's
    ("NVRM: this kernel module ..." continuing "NVRM: API mismatch ..."): the logical message, joined."""
    line = _LOG_PREFIX.sub("", line, count=1)
    if tag:
        m = _TAG.match(line)
        if m and (m.group(1) == tag or "NCCL" in tag and "NCCL" in m.group(1)):
            line = line[m.end():]
    return line.strip()


def _tag_of(line: str) -> Optional[str]:
    m = _TAG.match(_LOG_PREFIX.sub("", line, count=1))
    return m.group(1) if m else None


def _finished(text: str) -> bool:
    return bool(_END.search(text))


def _assemble(lines: Sequence[str], i: int) -> Tuple[Optional[str], int]:
    """The message around trigger line ``i`` (None when it is only the line itself) and its last line."""
    n = len(lines)
    start = i
    # backward: the trigger line continues an earlier one (indented, lower-case start, or the previous line is
    # an unfinished sentence without an end mark)
    while start > 0 and i - start < 2:
        prev, cur = lines[start - 1], lines[start]
        if not prev.strip() or _SKIP.match(prev) or len(prev) > 4000:
            break
        if _STOP.match(cur) or _STOP.match(prev) and start - 1 < i - 1:
            break
        rec = _RECORD.match(cur)
        if rec and _NEW_EXCEPTION.match(cur, rec.end()):
            break  # this record's exception starts a message of its own
        if _CONTINUATION.match(cur) and not _CONTINUATION.match(prev):
            start -= 1  # an indented detail under its subject line ("Found GPU1 ... 3.5." / "    PyTorch no ...")
            break
        if not (_CONTINUATION.match(cur) or _LOWER_START.match(cur)) or _finished(prev):
            break
        start -= 1
    tag = _tag_of(lines[start])
    parts = [_LOG_PREFIX.sub("", lines[start], count=1).strip()] + [_unprefix(ln, tag) for ln in lines[start + 1:i + 1]]
    j = i + 1
    # a command typed at a prompt ends there: what follows is its output, messages of their own
    typed = bool(_PROMPT.match(lines[i]))
    block = bool(_COLON.search(lines[i]))
    while not typed and j < n and j - start < MAX_SPAN:
        nxt = lines[j]
        if not nxt.strip() or _SKIP.match(nxt) or len(nxt) > 4000:
            break
        indented = bool(_CONTINUATION.match(nxt))
        rec = _RECORD.match(nxt)
        if rec and _NEW_EXCEPTION.match(nxt, rec.end()):
            break  # another record's exception: a message of its own
        if tag and _tag_of(nxt) and not (_finished(parts[-1]) and "NVRM" in tag):
            parts.append(_unprefix(nxt, tag))  # the same emitter's next line: one logical message
        elif block and indented:
            parts.append(nxt.strip())
        elif _finished(parts[-1]) or _COLON.search(parts[-1]) and not indented:
            break
        elif _STOP.match(nxt) and not indented:
            break
        else:
            parts.append(_unprefix(nxt, tag))
        j += 1
    if len(parts) == 1:
        return None, i
    return " ".join(parts), j - 1


_TORCH_IMPORT = re.compile(r"(?:^|>>> |In \[\d+\]: |[\"';]\s*|-c\s+[\"']?)import torch\b|[\\/]torch[\\/]__init__\.py")
# an import statement of a listing or a session, and the module it imports
_IMPORT_STMT = re.compile(r"^\s*(?:>>>\s*|In \[\d+\]:\s*)?(?:import|from)\s+([A-Za-z_][\w.]*)")
_RAISED = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b:|^Traceback \(most recent call last\)")


def _import_went_through(lines: Sequence[str], i: int) -> bool:
    """A listing's ``import torch`` on line ``i`` followed, before anything was raised, by the import of another
    module: the next statement ran, so that import is the one that failed (``import torch`` / ``import
    flash_attn_2_cuda`` / ``ImportError: libcudart.so.11.0 ...``)."""
    for line in lines[i + 1:i + 40]:
        if _RAISED.match(line):
            return False
        m = _IMPORT_STMT.match(line)
        if m and m.group(1).split(".")[0] != "torch":
            return True
    return False


def read(paste: Paste, acc: Acc, sigs: Sequence[Any] = ()) -> None:
    lines = paste.lines
    for i in paste.with_any(["import torch", "__init__.py"])[:200]:
        if _TORCH_IMPORT.search(lines[i]):
            if "__init__" not in lines[i] and _IMPORT_STMT.match(lines[i]) and _import_went_through(lines, i):
                continue
            # the failure the paste shows happened while importing torch itself (a qualifier for signatures)
            acc.put("paste.torch_import", True, 1, lines[i].strip()[:160])
            break
    row_words = _literal_keywords(sigs)
    # the words the reader's own keywords do not already find (those lines are candidates anyway)
    extra = [k for k in row_words if not any(k2 in k for k2 in _KEYWORDS)]
    candidates = paste.with_any(_KEYWORDS + extra)
    glog = {paste.line_of(m.start()) for m in _GLOG_ERROR.finditer(paste.text)} if "] " in paste.text else set()
    if glog:
        candidates = sorted(set(candidates) | glog)
    # a log repeating one error adds nothing but time: each distinct line once, the first and the last
    # ones of a long log (where the first failure and the one that ended the run are)
    hit_lines = []
    for i in paste.distinct(candidates, head=1500, tail=500):
        line = lines[i][:4000]
        if _TRIGGER.search(line) or i in glog:
            hit_lines.append((i, False))
        elif row_words and any(k in line.lower() for k in row_words):
            hit_lines.append((i, True))  # kept only when a catalogue row matches what is assembled around it
    acc.message_lines = len(candidates)
    done = -1
    for i, needs_row in hit_lines:
        line = lines[i]
        if len(line) > 4000 or _SKIP.match(line):
            continue
        if i <= done:
            # inside the previous message: a later trigger there starts no second one, but is kept as a line of
            # its own, as every trigger line is (a record a person's sentence ran into is still an error line)
            if not needs_row:
                acc.add_message(line.strip())
            continue
        whole, end = _assemble(lines, i)
        if needs_row:
            text = whole or line.strip()
            if not any(sig.search(text) for sig in sigs):
                continue
        acc.add_message(line.strip())
        if whole:
            acc.add_message(whole)
            done = end
