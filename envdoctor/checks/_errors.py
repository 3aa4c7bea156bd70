"""The shape of an error line in pasted text, shared by the paste checks (diagnose_unexplained lists the lines no
finding explains; diagnose_compiler looks for a failed CUDA compile): a failure a program printed, not a count of
zero, a counter, a warning, pip's resolver notice or a person's sentence."""

from __future__ import annotations

import re
from typing import Iterable, List, Sequence, Tuple

# a log prefix that is no part of the message: journalctl/syslog, an ISO timestamp and host, dmesg's clock
_PREFIX = re.compile(r"^\s*(?:\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}\] |[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ [\w./-]+(?:\[\d+\])?: |"
                     r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S* (?:\S+ [\w./-]+(?:\[\d+\])?: )?|\[\s*\d+\.\d+\] )")

# a logger's record prefix with its level: vLLM's "ERROR 05-06 08:55:19 worker_base.py:145] " (and "[core.py:340]",
# a Ray actor's "(RayWorkerWrapper pid=5486) " before it), Python logging's "ERROR worker.py:99 -- " after a time
_RECORD = re.compile(r"^\s*(?:\([\w.-]+(?: rank=\d+)?(?: pid=\d+)?\)\s+)?(?P<level>ERROR|CRITICAL|FATAL|WARNING|WARN|INFO|"
                     r"DEBUG)\s+(?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+)?(?:\[[\w./-]+:\d+\]|[\w./-]+:\d+(?:\]| --))\s?")
# glog's (and absl's) record prefix: "E0515 10:03:24.130426 19611 cuda_dnn.cc:534] ", the level first (Info, Warning,
# Error, Fatal); TensorFlow, XLA (JAX), PaddlePaddle and other C++ runtimes log through it (issue 42)
_GLOG = re.compile(r"^\s*(?P<level>[IWEF])(?P<when>\d{4} \d\d:\d\d:\d\d)(?:\.\d+)? +(?P<tid>\d+) (?P<file>[^\s\]:]+)"
                   r":\d+\] ")
# what a traceback prints between its first and last line: frames, source lines, carets
_FRAME = re.compile(r"^(?:\s|File \"|Traceback \(most recent call last\)|During handling of|The above exception|\^|~)")

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
    # a line a program starts with "Error" and what it was doing ("Error while creating shared memory segment"),
    # and a Rust program's panic ("thread 'main' panicked at src/x.rs:61:9:")
    r"|^\s*(?:Error|ERROR)\s+(?:while|when|during|in|loading|creating|opening|initiali[sz]ing|occurred|running)\b"
    r"|\bpanicked at\b"
)
# an NVRM line is the kernel module speaking: an error only when it says something went wrong (its load banner
# "NVRM: loading NVIDIA UNIX x86_64 Kernel Module 535.54.03" is not)
NVRM = re.compile(r"\bNVRM:")
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
                      # NCCL's result code as torch wraps it; the cause is in the NCCL WARN lines before it
                      r"\bNCCL error\b[^\n]{0,200}?\bunhandled (?:cuda|system) error\b|"
                      r"^\s*nccl(?:UnhandledCuda|System)Error: (?:Call to CUDA function failed|System call)|"
                      # jax's wrapper: the components' own lines (an outdated cuDNN ...) follow it (issue 42)
                      r"CUDA backend failed to initialize: Unable to use CUDA because of the following issues|"
                      r"^\s*(?:\w+\.)*\w*(?:Error|Exception):?\s*$|"  # a bare "RuntimeError:" (its text follows)
                      # a header that names only where an error happened, its text on the next line ("[guppy/error]
                      # ... CUDA error at /builds/.../cuda_common.cpp:234:" then "CUDA_ERROR_NO_DEVICE. ...")
                      r"\berror (?:at|in) [\w./\\:-]+?(?::\d+)?:\s*$|"
                      # a build wrapper's verdict ("CompileError: nvcc compilation of /tmp/x/kernel.cu failed"): the
                      # compiler's own lines that follow say why
                      r"\bcompilation of \S+ failed\b", re.I)


def record_key(line: str) -> str:
    """The logger record a line belongs to (its time, emitter and source line: "(RayWorkerWrapper pid=5486) ERROR
    05-06 08:55:19 worker_base.py:145]"), or "" when it has none: one logging call prints a message and its
    traceback as lines of one record."""
    g = _GLOG.match(_PREFIX.sub("", line, count=1))
    if g is not None:
        # glog: one event is several calls of one source file on one thread within a second ("Could not create
        # cudnn handle" at cuda_dnn.cc:534, then its "Memory usage: ... bytes free" at cuda_dnn.cc:538)
        return " ".join(g.group("level", "when", "tid", "file"))
    m = _RECORD.match(_PREFIX.sub("", line, count=1))
    return " ".join(line[:len(line) - len(_PREFIX.sub("", line, count=1)) + m.end()].split()) if m else ""


def unprefixed(line: str) -> str:
    text = _PREFIX.sub("", line, count=1)
    m = _RECORD.match(text) or _GLOG.match(text)
    return (text[m.end():] if m else text).strip()


def is_error_line(line: str) -> bool:
    """Whether ``line`` has the shape of a failure a program printed (module docstring)."""
    glog = _GLOG.match(_PREFIX.sub("", line, count=1))
    if glog is not None:
        # a glog record: its level says what it is, whatever its words (an E line is an error line)
        return glog.group("level") in "EF" and bool(_PREFIX.sub("", line, count=1)[glog.end():].strip())
    record = _RECORD.match(_PREFIX.sub("", line, count=1))
    if record is not None:
        # a logger's record: its level says what it is; an ERROR record's traceback frames and source lines are not
        # error lines of their own (its last line, the exception, is)
        body = _PREFIX.sub("", line, count=1)[record.end():]
        if record.group("level") not in ("ERROR", "CRITICAL", "FATAL") or not body.strip() or _FRAME.match(body):
            return False
        if not _ERROR.search(body) and not _PERSON.match(body.strip()):
            return True
    text = unprefixed(line)
    if not text or _PIP_RESOLVER.search(text) or _WARNING.match(text) or _PERSON.match(text):
        return False
    text = _COUNTER.sub(" ", _ZERO.sub(" ", text))  # counts are facts, zeros are health
    if NVRM.search(text):
        return bool(_NVRM_BAD.search(text))
    return bool(_ERROR.search(text)) and not (_INTRO.search(text) and not exception_line(text))


_EXC = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b\s*(?::|$)")


def exception_line(text: str) -> bool:
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
    explained = list(explained)
    key = record_key(message)
    if key and any(record_key(e) == key for e in explained):
        return True  # a line of the same logger record as an explained one (its message, its traceback)
    explained = [en for en in (_norm(e) for e in explained) if en]
    for text in [message, *holders]:
        n = _norm(text)
        if any(n in en or (len(en) >= 20 and en in n) for en in explained):
            return True
    return any(v in text for v in values for text in [message, *holders])
