"""The accumulator readers write into: each fact keeps the value from the most trustworthy source seen."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ...facts import Gpu, LibraryCopy, Package, normalize_name

# How much a source is trusted, highest wins (ties: first seen). A structured tool output (collect_env,
# an nvidia-smi table, pip list) beats REPL output, which beats a "Key: value" line typed by a person,
# which beats a bare number on its own line.
STRUCTURED = 3
REPL = 2
LOOSE = 1
BARE = 0

VERSION = r"\d+(?:\.\d+)+"
_VERSION_RE = re.compile(rf"^{VERSION}")


@dataclass
class Acc:
    """Everything the readers recovered from one paste, before it becomes Facts."""

    values: Dict[str, Tuple[int, Any, str]] = field(default_factory=dict)  # key -> (priority, value, how)
    gpus: List[Gpu] = field(default_factory=list)
    gpus_priority: int = -1
    packages: Dict[str, Tuple[int, Package]] = field(default_factory=dict)
    libraries: List[LibraryCopy] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    messages: List[str] = field(default_factory=list)
    found: List[str] = field(default_factory=list)
    requested: Dict[str, str] = field(default_factory=dict)  # pip install pins that did not install
    notes: List[str] = field(default_factory=list)

    def put(self, key: str, value: Any, priority: int, how: str) -> None:
        if value is None or value == "":
            return
        old = self.values.get(key)
        if old is None or priority > old[0]:
            self.values[key] = (priority, value, how)

    def get(self, key: str, default: Any = None) -> Any:
        v = self.values.get(key)
        return v[1] if v is not None else default

    def how(self, key: str) -> Optional[str]:
        v = self.values.get(key)
        return v[2] if v is not None else None

    def has(self, key: str) -> bool:
        return key in self.values

    def set_gpus(self, gpus: List[Gpu], priority: int) -> None:
        if gpus and priority > self.gpus_priority:
            self.gpus = list(gpus)
            self.gpus_priority = priority

    def add_package(self, pkg: Package, priority: int) -> None:
        key = normalize_name(pkg.name)
        old = self.packages.get(key)
        if old is None or priority > old[0]:
            self.packages[key] = (priority, pkg)

    def add_found(self, what: str) -> None:
        if what not in self.found:
            self.found.append(what)

    def add_message(self, message: str) -> None:
        message = message.strip()
        if message and message not in self.messages and len(self.messages) < 500:
            self.messages.append(message[:2000])


def looks_like_version(text: str) -> bool:
    return bool(_VERSION_RE.match(text.strip()))


def first_version(text: str) -> Optional[str]:
    m = re.search(VERSION, text)
    return m.group(0) if m else None


def last_version(text: str) -> Optional[str]:
    found = re.findall(VERSION, text)
    return found[-1] if found else None


def lines_with(lines: List[str], keywords: List[str]) -> List[int]:
    """Indices of lines holding any keyword (case-insensitive), by str.find over the whole text.

    Python's re does not optimise alternations, so a big case-insensitive pattern over a multi-MB paste
    costs seconds; literal searches cost milliseconds. Callers then run their regexes on these lines only.
    """
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    low = "\n".join(lines).lower()
    hits = set()
    for kw in keywords:
        at = low.find(kw)
        while at != -1:
            i = bisect.bisect_right(starts, at) - 1
            hits.add(i)
            nxt = starts[i + 1] if i + 1 < len(starts) else len(low)
            at = low.find(kw, nxt)
    return sorted(hits)


def clean_lines(text: str) -> List[str]:
    """Lines without Markdown quoting, list bullets of code fences, or distributed-rank prefixes."""
    out = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line[:1] not in (">", "[", "E", " ", "\t"):
            out.append(line)
            continue
        # "> quoted", "[rank7]: ", "E   " (pytest), "(EngineCore pid=1) " prefixes
        line = re.sub(r"^\s*(?:>\s?)+", "", line)
        line = re.sub(r"^\s*\[rank\d+\]:\s?", "", line)
        line = re.sub(r"^E {3}", "", line)
        out.append(line)
    return out
