"""The accumulator readers write into: each fact keeps the value from the most trustworthy source seen."""

from __future__ import annotations

import bisect
import re
from dataclasses import field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ...domain.fastclass import dataclass
from ...model.facts import Gpu, LibraryCopy, NvlinkLink, Package, PcieLink, XidEvent, normalize_name

# How much a source is trusted, highest wins (ties: first seen). A structured tool output (collect_env,
# an nvidia-smi table, pip list) beats REPL output, which beats a "Key: value" line typed by a person,
# which beats a bare number on its own line.
STRUCTURED = 3
REPL = 2
LOOSE = 1
BARE = 0

# Every message is matched against every signature (three times per diagnose): a bound keeps that cheap
MAX_MESSAGES = 300

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
    # variable -> (priority, how it was read, the line that showed it)
    env_how: Dict[str, Tuple[int, str, str]] = field(default_factory=dict)
    messages: List[str] = field(default_factory=list)
    found: List[str] = field(default_factory=list)
    requested: Dict[str, str] = field(default_factory=dict)  # pip install pins that did not install
    notes: List[str] = field(default_factory=list)
    nvlinks: Optional[Dict[int, List[NvlinkLink]]] = None  # `nvidia-smi nvlink --status`, GPU index -> links
    nvlink_names: Dict[int, Optional[str]] = field(default_factory=dict)
    topology_matrix: Optional[List[List[str]]] = None  # `nvidia-smi topo -m`
    pcie_links: List[PcieLink] = field(default_factory=list)  # `lspci -vv`
    xid_events: Optional[List[XidEvent]] = None  # NVRM Xid lines of a pasted kernel log
    message_lines: int = 0  # lines that looked like errors or warnings, repeats included
    dropped_messages: int = 0  # distinct messages beyond MAX_MESSAGES
    repeated_blocks: int = 0  # blocks (or whole outputs) seen before, read once
    # every distinct value each fact was given, not only the winner: (priority, value, how), and for packages
    # (priority, version); diagnose/machines.py finds conflicting facts (two reports in one paste) in them
    seen: Dict[str, List[Tuple[int, Any, str]]] = field(default_factory=dict)
    seen_packages: Dict[str, List[Tuple[int, str]]] = field(default_factory=dict)

    def put(self, key: str, value: Any, priority: int, how: str) -> None:
        if value is None or value == "":
            return
        obs = self.seen.setdefault(key, [])
        if len(obs) < 20 and all(o[1] != value for o in obs):
            obs.append((priority, value, how))
        old = self.values.get(key)
        if old is None or priority > old[0]:
            self.values[key] = (priority, value, how)

    def put_env(self, name: str, value: str, priority: int, how: str, line: str = "") -> None:
        """An environment variable the paste shows set (the first wins, as for ``env``), with its provenance."""
        if name not in self.env:
            self.env[name] = value
            self.env_how[name] = (priority, how, line.strip())

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
        obs = self.seen_packages.setdefault(key, [])
        if len(obs) < 20 and all(o[1] != pkg.version for o in obs):
            obs.append((priority, pkg.version))
        old = self.packages.get(key)
        if old is None or priority > old[0]:
            if old is not None and old[1].version == pkg.version and old[1].variant and not pkg.variant:
                # the same wheel seen again ("Successfully installed torch-2.1.0" after its file name): keep what
                # the earlier sighting knew about its build
                pkg = Package(**{**pkg.__dict__, "variant": old[1].variant,
                                 "variant_evidence": old[1].variant_evidence})
            self.packages[key] = (priority, pkg)
        elif old[1].version == pkg.version and pkg.variant and not old[1].variant:
            self.packages[key] = (old[0], Package(**{**old[1].__dict__, "variant": pkg.variant,
                                                     "variant_evidence": pkg.variant_evidence}))

    def add_found(self, what: str) -> None:
        if what not in self.found:
            self.found.append(what)

    def add_message(self, message: str) -> None:
        message = message.strip()[:2000]
        if not message or message in self.messages:
            return
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(message)
        else:
            # keep the first ones and the latest: the error that ended a long log is at its end
            self.messages.pop(MAX_MESSAGES // 2)
            self.messages.append(message)
            self.dropped_messages += 1

    def merge(self, other: Acc) -> None:
        """Add what ``other`` (the next part of the same paste) recovered, as if it had been read after this:
        the most trusted value wins and ties keep the first seen, exactly as one reading of both texts."""
        for key, (prio, value, how) in other.values.items():
            old = self.values.get(key)
            if old is None or prio > old[0]:
                self.values[key] = (prio, value, how)
        for key, obs in other.seen.items():
            mine = self.seen.setdefault(key, [])
            for o in obs:
                if len(mine) < 20 and all(m[1] != o[1] for m in mine):
                    mine.append(o)
        self.set_gpus(other.gpus, other.gpus_priority)
        for key, (prio, pkg) in other.packages.items():
            old_pkg = self.packages.get(key)
            if old_pkg is None or prio > old_pkg[0]:
                self.packages[key] = (prio, pkg)
        for key, pobs in other.seen_packages.items():
            pmine = self.seen_packages.setdefault(key, [])
            for po in pobs:
                if len(pmine) < 20 and all(m[1] != po[1] for m in pmine):
                    pmine.append(po)
        for lib in other.libraries:
            if lib not in self.libraries:
                self.libraries.append(lib)
        for name, val in other.env.items():
            self.env.setdefault(name, val)
        for name, how in other.env_how.items():
            self.env_how.setdefault(name, how)
        for message in other.messages:
            self.add_message(message)
        for what in other.found:
            self.add_found(what)
        for name, version in other.requested.items():
            self.requested.setdefault(name, version)
        for note in other.notes:
            if note not in self.notes:
                self.notes.append(note)
        if other.nvlinks:
            self.nvlinks = {**other.nvlinks, **(self.nvlinks or {})}
            self.nvlink_names = {**other.nvlink_names, **self.nvlink_names}
        if self.topology_matrix is None:
            self.topology_matrix = other.topology_matrix
        self.pcie_links.extend(x for x in other.pcie_links if x not in self.pcie_links)
        if other.xid_events is not None:
            self.xid_events = (self.xid_events or []) + list(other.xid_events)
        self.message_lines += other.message_lines
        self.repeated_blocks += other.repeated_blocks
        self.dropped_messages += other.dropped_messages


def looks_like_version(text: str) -> bool:
    return bool(_VERSION_RE.match(text.strip()))


def first_version(text: str) -> Optional[str]:
    m = re.search(VERSION, text)
    return m.group(0) if m else None


def last_version(text: str) -> Optional[str]:
    found = re.findall(VERSION, text)
    return found[-1] if found else None


# Per keyword, the lines of its first HEAD_HITS and last TAIL_HITS occurrences are read: facts sit at
# the start of a paste, and the error that ended a long log at its end.
HEAD_HITS = 3000
TAIL_HITS = 1000


class Paste:
    """One paste, split into cleaned lines once, with cheap keyword indexes that every reader shares.

    Python's re does not optimise alternations, so one big case-insensitive pattern run over a multi-MB
    paste costs seconds; literal ``in`` / ``str.find`` tests run in C and cost milliseconds. Readers ask
    for the lines holding a keyword and run their regexes on those lines only.
    """

    def __init__(self, lines: List[str]):
        self.lines = lines
        self.text = "\n".join(lines)
        self._low: Optional[str] = None
        self._starts: Optional[List[int]] = None
        self._cache: Dict[Tuple[str, bool], List[int]] = {}

    @property
    def low(self) -> str:
        if self._low is None:
            self._low = self.text.lower()
        return self._low

    def line_of(self, pos: int) -> int:
        """The index of the line holding character ``pos`` of ``text``."""
        if self._starts is None:
            starts, at = [], 0
            for line in self.lines:
                starts.append(at)
                at += len(line) + 1
            self._starts = starts
        return bisect.bisect_right(self._starts, pos) - 1

    def _one(self, kw: str, case: bool) -> List[int]:
        key = (kw, case)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        hay = self.text if case else self.low
        self.line_of(0)
        starts = self._starts or [0]
        head: List[int] = []
        at = hay.find(kw)
        while at != -1 and len(head) < HEAD_HITS:
            i = bisect.bisect_right(starts, at) - 1
            head.append(i)
            at = hay.find(kw, starts[i + 1] if i + 1 < len(starts) else len(hay))
        tail: List[int] = []
        if at != -1:
            # many hits: the last ones too, found from the end; the middle of a long log is skipped
            floor = starts[head[-1] + 1] if head[-1] + 1 < len(starts) else len(hay)
            at = hay.rfind(kw, floor)
            while at != -1 and len(tail) < TAIL_HITS:
                i = bisect.bisect_right(starts, at) - 1
                tail.append(i)
                at = hay.rfind(kw, floor, starts[i]) if starts[i] > floor else -1
            tail.reverse()
        out = head + tail
        self._cache[key] = out
        return out

    def with_any(self, keywords: Iterable[str], case: bool = False) -> List[int]:
        """Sorted indices of lines holding any keyword (lower-case keywords unless ``case``)."""
        found: set = set()
        for kw in keywords:
            found.update(self._one(kw, case))
        return sorted(found)

    def distinct(self, indices: Iterable[int], head: int = 3000, tail: int = 1000) -> List[int]:
        """The indices of the first occurrence of each distinct line, bounded to the first ``head`` and the
        last ``tail`` of them: a log repeating lines adds nothing, and facts and the error that ended a
        run sit near the start or the end of a long log."""
        seen: set = set()
        out = []
        for i in indices:
            line = self.lines[i]
            if line not in seen:
                seen.add(line)
                out.append(i)
        if len(out) > head + tail:
            out = out[:head] + out[-tail:]
        return out


def lines_with(lines: List[str], keywords: List[str]) -> List[int]:
    """Indices of lines holding any keyword (case-insensitive); see Paste.with_any."""
    return Paste(lines).with_any(keywords)


_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_RANK = re.compile(r"^\s*\[rank\d+\]:\s?")


_EMPHASIS = re.compile(r"\*\*|`")


def _markdown(line: str) -> str:
    """Markdown labels as plain text: `- **PyTorch Version**: 1.13.1`, `` `torch`: 2.1.0 ``, a full-width colon."""
    if "：" in line:
        line = line.replace("：", ": ")
    if "**" in line or "`" in line:
        line = _EMPHASIS.sub("", line)
    return line


# rsyslog writes a control character inside a message as "#" and three octal digits: a kernel message of several
# lines reaches /var/log/syslog (and journal exports, Ansible's captured output) as one line holding "#012" (a line
# feed) and "#011" (a tab). The record's prefix ("Jun 30 11:07:05 gpu-0 kernel: ", an ISO time and host) says it
# is such a log line; each piece is given the same prefix, as the kernel printed it.
_SYSLOG_PREFIX = re.compile(r"^\s*(?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ [\w./-]+(?:\[\d+\])?: |"
                            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \S+ [\w./-]+(?:\[\d+\])?: )")
_SYSLOG_LF = re.compile(r"#012(?!\d)")


def syslog_lines(line: str) -> List[str]:
    """One syslog record with escaped line breaks as the lines it held (the line itself otherwise)."""
    m = _SYSLOG_PREFIX.match(line)
    if m is None:
        return [line]
    prefix = m.group(0)
    pieces = _SYSLOG_LF.split(line[m.end():].replace("#011", "\t"))
    return [prefix + p.rstrip() for p in pieces if p.strip()] or [line]


def clean_lines(text: str) -> List[str]:
    """Lines without Markdown quoting or emphasis, distributed-rank prefixes ("[rank7]: ") or pytest's "E   "
    margin; a syslog record's escaped line breaks ("#012") split into its lines."""
    out = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if "#01" in line and _SYSLOG_LF.search(line):
            split = syslog_lines(line)
            if len(split) > 1:
                out.extend(clean_lines("\n".join(split)))
                continue
        if ("**" in line and ":" in line) or "`" in line or "：" in line:
            line = _markdown(line)
        c = line[:1]
        if c not in (">", "[", "E", " ", "\t"):
            out.append(line)
            continue
        if line.lstrip()[:1] == ">":
            line = _QUOTE.sub("", line)
        if "[rank" in line[:12]:
            line = _RANK.sub("", line)
        if line.startswith("E   "):
            line = line[4:]
        out.append(line)
    return out
