"""NVIDIA library status codes (compat_data/status_codes.json): each status's names, number and standard message,
and the environment cause it implies; ``statuses_in`` finds the statuses a text quotes.

A status is found in text three ways: by an enum name (``CUDA_ERROR_NO_DEVICE``, ``cudaErrorNoDevice``,
``CUDNN_STATUS_NOT_INITIALIZED``, ``ncclSystemError``, ``NVML_ERROR_GPU_IS_LOST``); by a number, only where the words
before it say which library's number it is (``CUDA error 100``, ``cuda runtime error (35)``, ``NCCL error 2``,
``CUBLAS failure 1``; a bare "error 2" is nothing); and by the library's standard message string, a long one alone,
a short one ("invalid argument") only beside its library's name. A number that disagrees with a message or name of
the same library on the same text is dropped: older CUDA runtimes numbered some codes differently, the string is
what the library printed.
"""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.catalogue import CATEGORIES
from ._parse import loaded

STEM = "status_codes"
KINDS = ("environment", "ambiguous", "program", "success")
CONFIDENCES = ("high", "medium", "low")
# what each library is called in the table, in text and in a finding
LIBRARIES: Dict[str, str] = {
    "cuda_runtime": "CUDA runtime (cudaError_t)", "cuda_driver": "CUDA driver API (CUresult)",
    "nvrtc": "NVRTC (nvrtcResult)", "cublas": "cuBLAS (cublasStatus_t)", "cusolver": "cuSOLVER (cusolverStatus_t)",
    "cufft": "cuFFT (cufftResult)", "curand": "cuRAND (curandStatus_t)", "cusparse": "cuSPARSE (cusparseStatus_t)",
    "cudnn": "cuDNN (cudnnStatus_t)", "nccl": "NCCL (ncclResult_t)", "nvml": "NVML (nvmlReturn_t)",
}
# the words that make a number one library's status: "CUDA error 100", "cuda runtime error (35)", "CUDA error: code
# 35", "cudaGetDeviceCount returned 100" (runtime); "CUDA driver error 100", "cuInit returned 100" (driver); "NCCL
# error 2"; "CUBLAS failure 1", "cuBLAS error 13"; "NVML error 9"; "cuSPARSE/cuSOLVER/cuRAND/cuFFT error N". cuDNN
# numbers are left out: cuDNN 9 renumbered every status (cuDNN 8's 1-14 are 1001, 2000 ... now)
_NUMBER = re.compile(
    # Ollama's GPU discovery quotes cuInit's CUresult ("cuda driver library init failure: 999") and cudaSetDevice's
    # cudaError_t ("cudart init failure: 35"): ollama's discover/gpu_info_nvcuda.c and gpu_info_cudart.c
    r"\b(?:(?P<cuda_driver>CUDA driver (?:API )?error|CUresult|(?-i:cu(?!da)[A-Z]\w+)\(?\)? (?:returned|failed with)(?: error)?|"
    r"cuda driver library init failure)|"
    r"(?P<cuda_runtime>(?-i:CUDA|cuda|Cuda)(?: runtime)? error|cudaError(?:_t)?|(?-i:cuda[A-Z]\w+)\(?\)? (?:returned|failed with)"
    r"(?: error)?|cudart init failure)|(?P<nccl>NCCL (?:error|failure)|ncclResult(?:_t)?)|(?P<cublas>CUBLAS (?:error|failure|status))|"
    r"(?P<nvml>NVML (?:error|return(?: code)?))|(?P<cusparse>CUSPARSE (?:error|failure|status))|"
    r"(?P<cusolver>CUSOLVER (?:error|failure|status))|(?P<curand>CURAND (?:error|failure|status))|"
    r"(?P<cufft>CUFFT (?:error|failure|status)))"
    r"\s?(?:code\s?)?[:=]?\s?(?:code\s?)?[(\[]?(?P<number>\d{1,4})\b(?![.,]\d)", re.I)
# the words that put a short standard message in its library's mouth
_CONTEXT = {"cuda_runtime": re.compile(r"cuda", re.I), "nccl": re.compile(r"\bnccl", re.I),
            "cublas": re.compile(r"\bcublas", re.I), "cusparse": re.compile(r"\bcusparse", re.I)}
LONG_MESSAGE = 28  # a CUDA runtime message this long (and of 4 words or more) names its library alone


class StatusCodeError(ValueError):
    """A malformed row of status_codes.json (the message names the row and the problem)."""


@dataclass(frozen=True)
class StatusRow:
    library: str
    names: Tuple[str, ...]
    number: int
    message: Optional[str]
    kind: str
    category: Optional[str]
    confidence: Optional[str]
    meaning: Optional[str]
    ask: Optional[str]
    source: str

    @property
    def key(self) -> str:
        """The row's name in findings and docs: "<library>/<first enum name>"."""
        return f"{self.library}/{self.names[0]}"

    @property
    def finding_kind(self) -> str:
        """The kind of the finding that reads it (messages.status-codes/<kind>): "cuda-driver.cuda-error-no-device"."""
        return f"{self.library}.{self.names[0]}".lower().replace("_", "-")

    @property
    def label(self) -> str:
        """``CUDA_ERROR_NO_DEVICE (CUDA driver API (CUresult) 100)``."""
        return f"{self.names[0]} ({LIBRARIES[self.library]} {self.number})"


@dataclass(frozen=True)
class Mention:
    row: StatusRow
    text: str  # what the text said: the name, "CUDA error 100", the message string
    how: str  # "name", "number" or "message"


class StatusTable(list):
    """The parsed rows and their indexes: by enum name, by (library, number), by message (lower case)."""

    names: Dict[str, StatusRow] = {}
    numbers: Dict[Tuple[str, int], StatusRow] = {}
    messages: Dict[str, List[StatusRow]] = {}


def _text(r: Dict[str, Any], key: str, where: str, required: bool) -> Optional[str]:
    v = r.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str) or not v.strip():
        raise StatusCodeError(f"{where}: {key!r} must be a non-empty string" + ("" if required else " or null"))
    return v


def _row(r: Any, i: int) -> StatusRow:
    if not isinstance(r, dict):
        raise StatusCodeError(f"{STEM}.json: rows[{i}] is not an object")
    names = r.get("names")
    where = f"{STEM}.json: rows[{i}] ({names[0] if isinstance(names, list) and names else '?'})"
    if r.get("library") not in LIBRARIES:
        raise StatusCodeError(f"{where}: library must be one of {sorted(LIBRARIES)}, not {r.get('library')!r}")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and re.fullmatch(r"\w+", n) for n in names):
        raise StatusCodeError(f"{where}: 'names' must be a non-empty list of enum names")
    number = r.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        raise StatusCodeError(f"{where}: 'number' must be a non-negative integer, not {number!r}")
    kind, category, confidence = r.get("kind"), r.get("category"), r.get("confidence")
    if kind not in KINDS:
        raise StatusCodeError(f"{where}: 'kind' must be one of {KINDS}, not {kind!r}")
    if (kind == "environment") != (category is not None):
        raise StatusCodeError(f"{where}: an 'environment' row names a category and no other kind does")
    if category is not None and category not in CATEGORIES:
        raise StatusCodeError(f"{where}: unknown category {category!r}")
    if category is not None and confidence not in CONFIDENCES:
        raise StatusCodeError(f"{where}: a row with a category needs a confidence in {CONFIDENCES}")
    meaning = _text(r, "meaning", where, kind in ("environment", "ambiguous"))
    ask = _text(r, "ask", where, kind == "ambiguous")
    return StatusRow(r["library"], tuple(names), number, _text(r, "message", where, False), kind, category,
                     confidence if category else None, meaning, ask, str(_text(r, "source", where, True)))


def parse_status_codes(doc: Dict[str, Any]) -> StatusTable:
    """The table of the parsed JSON document; StatusCodeError on a bad row, a name or number listed twice."""
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise StatusCodeError(f"{STEM}.json: no 'rows' list")
    table = StatusTable(_row(r, i) for i, r in enumerate(rows))
    names: Dict[str, StatusRow] = {}
    numbers: Dict[Tuple[str, int], StatusRow] = {}
    messages: Dict[str, List[StatusRow]] = {}
    for row in table:
        if (row.library, row.number) in numbers:
            raise StatusCodeError(f"{STEM}.json: {row.library} number {row.number} is listed twice")
        numbers[(row.library, row.number)] = row
        for n in row.names:
            if n in names:
                raise StatusCodeError(f"{STEM}.json: the name {n} is listed twice")
            names[n] = row
        if row.message and row.kind != "success":
            messages.setdefault(row.message.lower(), []).append(row)
            # NCCL's "unhandled system error (run with NCCL_DEBUG=INFO for details)": older releases and the
            # frameworks that wrap it print the words before the parenthesis
            short = row.message.split(" (")[0].lower()
            if short != row.message.lower() and len(short) >= 12:
                messages.setdefault(short, []).append(row)
    table.names, table.numbers, table.messages = names, numbers, messages
    return table


# an enum name of any of the libraries (looked up in the table's names): one scan, not one per name
_TOKEN = re.compile(r"(?<![A-Za-z0-9])((?:cuda|nccl)[A-Z]\w*|(?:CUDA|CUDNN|CUBLAS|CUSOLVER|CUFFT|CURAND|CUSPARSE|NVRTC|"
                    r"NVML)_\w+)(?![A-Za-z0-9])")


def _message_at(message: str) -> Any:
    """The pattern of one standard message, whole words (compiled once per message, at its first use)."""
    pattern = _MESSAGE_RE.get(message)
    if pattern is None:
        pattern = _MESSAGE_RE[message] = re.compile(r"(?<![\w-])" + re.escape(message) + r"(?![\w-])", re.I)
    return pattern


_MESSAGE_RE: Dict[str, Any] = {}


def status_table(compat: Any) -> Optional[StatusTable]:
    """The loaded table of a Compat (parsed at load), None when its data has none."""
    try:
        return loaded(compat, STEM)  # type: ignore[no-any-return]
    except LookupError:
        return None


def _long(message: str) -> bool:
    return len(message) >= LONG_MESSAGE and len(message.split()) >= 4


def statuses_in(text: str, table: StatusTable) -> List[Mention]:
    """The statuses ``text`` quotes (module docstring), each row once, names first, success codes never."""
    found: List[Mention] = []
    for m in _TOKEN.finditer(text):
        row = table.names.get(m.group(1))
        if row is not None and row.kind != "success":
            found.append(Mention(row, m.group(1), "name"))
    if any(c.isdigit() for c in text):
        for m in _NUMBER.finditer(text):
            library = next(k for k, v in m.groupdict().items() if v is not None and k != "number")
            row = table.numbers.get((library, int(m.group("number"))))
            if row is None and library == "cuda_runtime":
                # "CUDA error 999" in a driver-API program: the driver's row when the runtime has none
                row = table.numbers.get(("cuda_driver", int(m.group("number"))))
            if row is not None and row.kind != "success":
                found.append(Mention(row, m.group(0), "number"))
    lowered = text.lower()
    # the longest first, so that a message holding a shorter one ("unhandled system error (run with ...)") is
    # the one read
    spans: List[Tuple[int, int]] = []
    for message in sorted((msg for msg in table.messages if msg in lowered), key=len, reverse=True):
        m = _message_at(message).search(text)
        if m is None or any(a <= m.start() and m.end() <= b for a, b in spans):
            continue  # not whole words, or inside a longer message read already
        spans.append(m.span())
        for row in table.messages[message]:
            context = _CONTEXT.get(row.library)
            long_alone = row.library == "cuda_runtime" and _long(message)
            if long_alone or context is not None and context.search(text):
                found.append(Mention(row, m.group(0), "message"))
    said = {(f.row.library, f.row.number) for f in found if f.how != "number"}
    libs = {f.row.library for f in found if f.how != "number"}
    out: List[Mention] = []
    seen = set()
    for f in found:
        key = (f.row.library, f.row.number)
        if key in seen or f.how == "number" and f.row.library in libs and key not in said:
            continue  # said twice, or a number its own library's words contradict (an older numbering)
        seen.add(key)
        out.append(f)
    return out
