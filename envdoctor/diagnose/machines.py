"""Which machine each fact came from: a paste holding two machines' reports is judged as two machines.

The problem. A maintainer pastes a whole thread (the reporter's collect_env and a commenter's), or someone pastes
"before" and "after" environments, or gives several files. Read as one machine, facts of different machines
combine into findings that are neither machine's problem ("torchvision 0.4.1 does not pair with torch 2.6.0"). A
wrong diagnosis is worse than none.

The design (two layers).

1. **Split into units, group units into machines.** The paste is cut into *units* at the boundaries of
   self-contained outputs: each file given on the command line, and inside a file a new collect_env report
   ("Collecting environment information..." or a "PyTorch version:" line not right after it), a new nvidia-smi
   table, a ``pip list`` / ``conda list`` header. Each unit is read on its own, and its single-valued facts
   (torch version and CUDA, driver version, Python version, nvcc version, GPU models, versions of torch-family
   packages) are compared with those of the machines found so far. A unit joins the most recent machine it does
   not contradict; a unit that contradicts every machine starts a new one. A unit with no such facts (a
   traceback, a prose comment) joins the current machine. So a collect_env in one file and the nvidia-smi table
   of the same machine in another still merge: **only conflicts split**. Values are compatible when one is a
   dotted prefix of the other ("3.12" and "3.12.9", "2.6.0" and "2.6.0+cu126"; two different local tags,
   "+cpu" and "+cu126", conflict), and GPU lists when they share a model (nvidia-smi truncates names).
   When there is one machine, its facts are the merge of its units' (each distinct unit read once, in order,
   the most trusted value winning as in one reading of the whole text), so splitting costs no second reading.
   When there are several, each machine is diagnosed as its own report and every finding is labelled with the
   machine it is about ("report 1 of 2 (001.txt): ..."), in its summary and in an evidence entry
   ``paste.report``; the report's facts are then the facts the machines agree on (conflicting ones unknown),
   with ``paste.reports`` naming each machine and ``paste.conflicts`` saying what differed and where.

2. **Conflicts that no boundary separates are dropped, never combined.** Inside one machine's text two
   trusted values (a tool output or a REPL line, not a human's "Key: value" line) of one fact can still
   differ ("before: 1.13.1 ... after: 2.0.1" in REPL output, a pip list before and after an upgrade). Such a
   fact becomes unknown and ``paste.not_found`` says so ("torch version: two different values (1.13.1 line 2,
   2.0.1 line 5): not judged"), so no check pairs one side with the other.

Where a fact came from is given as file and line: the unit holding it, and the first line of that unit that
shows the value (readers do not carry line numbers; the value's text locates it).
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import normalize_name
from . import fields
from .readers.base import BARE, LOOSE, REPL, Acc

# single-valued facts compared across units: Acc key -> how a conflict is named (their ``label`` in facts.py)
FACT_NAMES = fields.compared()
# packages whose versions are single-valued facts of one environment (the ones the checks pair)
_PAIRED = re.compile(r"^(?:torch|torchvision|torchaudio|torchtext|torchdata|triton|xformers|flash-attn|"
                     r"torch-scatter|torch-sparse|torch-geometric|mmcv|mmcv-full|deepspeed|vllm|bitsandbytes)$")
MAX_UNITS = 24  # more distinct units (a log repeating reports): read as one, conflicts dropped (layer 2)

_CE_HEAD = re.compile(r"^\s*(?:>\s*)*Collecting environment information")
_CE_TORCH = re.compile(r"^\s*(?:>\s*)*PyTorch version\s*:")
_SMI_HEAD = re.compile(r"^\s*(?:>\s*)*\|\s*NVIDIA-SMI\s+\d")
_PIP_HEAD = re.compile(r"^\s*(?:>\s*)*Package\s+Version\b")
_CONDA_HEAD = re.compile(r"^\s*(?:>\s*)*#\s*packages in environment at", re.I)
# a framework's start-up banner describes the run it starts (Ultralytics' "Ultralytics YOLOv8.0.54 Python-3.10.6
# torch-2.0.0+cpu CPU"): two banners are two runs, possibly of two environments (before and after an update)
_BANNER_HEAD = re.compile(r"^\s*(?:>\s*)*Ultralytics (?:YOLO\w*\s*)?v?\d+\.\d+\.\d+\b[^\n]{0,80}?\btorch-\d")


@dataclass
class Unit:
    file: int  # index of the text (file) it comes from
    name: str  # that file's name ("001.txt", "stdin", "text 2")
    start: int  # 0-based line of the unit in its file
    lines: List[str]
    sig: Dict[str, Any] = field(default_factory=dict)  # fact -> value
    acc: Optional[Acc] = None  # what the readers recovered from it (one object for identical units)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def where(self, value: Any) -> str:
        """'001.txt line 3': the first line of this unit showing ``value``."""
        needle = str(value[0] if isinstance(value, (list, tuple)) and value else value).strip().rstrip(".")
        needle = needle.split("+", 1)[0] if len(needle) > 3 else needle
        for i, line in enumerate(self.lines):
            if needle and needle in line:
                return f"{self.name} line {self.start + i + 1}"
        return f"{self.name} lines {self.start + 1}-{self.start + len(self.lines)}"


@dataclass
class Machine:
    units: List[Unit] = field(default_factory=list)
    values: Dict[str, List[Tuple[Any, Unit]]] = field(default_factory=dict)
    label: str = ""

    def texts(self) -> List[str]:
        return [u.text for u in self.units]


# the literal each boundary line holds: only lines holding one are matched against the patterns (a line-by-line
# regex over a multi-MB paste costs more than all the readers; str.find runs in C)
_BOUNDARY_WORDS = (("Collecting environment information", False), ("PyTorch version", False),
                   ("NVIDIA-SMI", False), ("Package", False), ("packages in environment at", True),
                   ("Ultralytics ", False))


def _candidates(lines: Sequence[str]) -> List[int]:
    """Sorted indices of the lines holding a boundary literal (hits found by str.find, line numbers by
    counting newlines between consecutive hits: both in C)."""
    text = "\n".join(lines)
    low: Optional[str] = None
    found = set()
    for word, nocase in _BOUNDARY_WORDS:
        if nocase and low is None:
            low = text.lower()
        hay = low if nocase and low is not None else text
        needle = word.lower() if nocase else word
        pos, line, last = hay.find(needle), 0, 0
        while pos != -1:
            line += hay.count("\n", last, pos)
            found.add(line)
            nxt = hay.find("\n", pos)
            if nxt == -1:
                break
            last = nxt + 1
            line += 1
            pos = hay.find(needle, last)
    return sorted(found)


def _starts(lines: Sequence[str]) -> List[int]:
    """Line indices where a self-contained output begins (0 always)."""
    out = [0]
    for i in _candidates(lines):
        line = lines[i]
        if not line or len(line) > 200:
            continue
        start = None
        if _CE_HEAD.match(line):
            start = i
        elif _CE_TORCH.match(line):
            if not any(_CE_HEAD.match(p) for p in lines[max(0, i - 4):i]):
                start = i
        elif _SMI_HEAD.match(line):
            start = i - 1 if i > 0 and lines[i - 1].strip().lstrip(">").strip().startswith("+-") else i
        elif _PIP_HEAD.match(line) and i + 1 < len(lines) and lines[i + 1].strip().startswith("---"):
            start = i
        elif _CONDA_HEAD.match(line):
            start = i
        elif _BANNER_HEAD.match(line):
            start = i
        if start is not None and start > out[-1]:
            out.append(start)
    return out


def split_units(texts: Sequence[str], names: Sequence[str]) -> List[Unit]:
    units: List[Unit] = []
    for fi, text in enumerate(texts):
        lines = text.split("\n")
        starts = _starts(lines) + [len(lines)]
        for a, b in zip(starts, starts[1:]):
            units.append(Unit(file=fi, name=names[fi], start=a, lines=lines[a:b]))
    return units


def _norm(value: Any) -> str:
    return str(value).strip().lower()


def compatible(a: Any, b: Any) -> bool:
    """Two values of one fact that can describe the same machine: equal, or one a dotted prefix of the other."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        from .engine import _same_gpu

        la = [x for x in (a if isinstance(a, (list, tuple)) else [a]) if x]
        lb = [x for x in (b if isinstance(b, (list, tuple)) else [b]) if x]
        return not la or not lb or any(_same_gpu(x, y) or _same_gpu(y, x) for x in la for y in lb)
    sa, sb = _norm(a), _norm(b)
    if sa == sb:
        return True
    if not re.match(r"^\d", sa) or not re.match(r"^\d", sb):  # names ("Ubuntu 22.04.3 LTS", "Linux")
        wa, wb = re.sub(r"\W|lts", "", sa), re.sub(r"\W|lts", "", sb)
        return wa.startswith(wb) or wb.startswith(wa)
    pa, _, ta = sa.partition("+")
    pb, _, tb = sb.partition("+")
    if ta and tb and ta != tb:
        return False
    da, db = pa.split("."), pb.split(".")
    n = min(len(da), len(db))
    return da[:n] == db[:n]


def signature(acc: Acc) -> Dict[str, Any]:
    """The single-valued facts one unit shows, from sources that describe the machine (not pip install pins,
    not numbers inside error messages)."""
    sig: Dict[str, Any] = {}
    for key in FACT_NAMES:
        v = acc.values.get(key)
        if v is not None and v[0] >= BARE and not str(v[2]).startswith("message:"):
            sig[key] = v[1]
    for name, (prio, pkg) in acc.packages.items():
        # pip install pins count too: a pin in one file and another version in the next is two environments
        if prio >= BARE and pkg.version and _PAIRED.match(name):
            if name == "torch" and "torch.version" not in sig:
                sig["torch.version"] = pkg.version
            if name != "torch":
                sig[f"pkg:{name}"] = pkg.version
    names = [g.name for g in acc.gpus if g.name]
    if not names and acc.get("gpu.loose_name") and acc.values["gpu.loose_name"][0] >= LOOSE:
        names = [acc.get("gpu.loose_name")]
    if names:
        sig["gpus"] = names
    return sig


def fact_name(key: str) -> str:
    if key.startswith("pkg:"):
        return f"{key[4:]} version"
    if key == "gpus":
        return "GPU models"
    return FACT_NAMES.get(key, key)


def _show(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _conflicts(m: Machine, values: Dict[str, List[Tuple[Any, Unit]]]) -> bool:
    return any(not compatible(v, old) for k, vs in values.items() for v, _ in vs for old, _ in m.values.get(k, []))


class _Joiner:
    """Adds units to the most recent machine they do not contradict, else to a new machine.

    A long paste repeats a few outputs thousands of times (a report pasted again and again, a log printing the
    same nvidia-smi table): a unit whose facts are those of a unit already placed, while no machine has changed
    since, goes where that unit went without comparing again, so grouping is linear in the number of units.
    """

    def __init__(self) -> None:
        self.machines: List[Machine] = []
        self.epoch = 0  # bumped whenever a machine is added or gains a value
        self._memo: Dict[int, Tuple[int, Machine]] = {}  # id(values source) -> (epoch, machine)
        self.compared = 0  # conflict tests run (work done, for the complexity test)

    def join(self, units: List[Unit], values: Dict[str, List[Tuple[Any, Unit]]], key: Optional[int] = None
             ) -> None:
        memo = self._memo.get(key) if key is not None else None
        if memo is not None and memo[0] == self.epoch:
            memo[1].units.extend(units)
            return
        target: Optional[Machine] = None
        for m in reversed(self.machines):
            self.compared += 1
            if not _conflicts(m, values):
                target = m
                break
        if target is None:
            target = Machine()
            self.machines.append(target)
            self.epoch += 1
        target.units.extend(units)
        for k, vs in values.items():
            have = target.values.setdefault(k, [])
            for v, u in vs:
                if not any(_norm(v) == _norm(old) for old, _ in have):
                    have.append((v, u))
                    self.epoch += 1
        if key is not None:
            self._memo[key] = (self.epoch, target)


# work done by the last group() call (read by the complexity test: counts, never seconds)
LAST_WORK: Dict[str, int] = {}


def group(texts: Sequence[str], names: Sequence[str], compat: Any) -> Tuple[List[Machine], List[str]]:
    """The machines in the texts and, when there are several, what differed between them (with file and line).

    One machine (the common case, and every paste with one unit) comes back as ``[Machine]`` with no notes.
    Each distinct unit is read once; its ``acc`` is kept so that a machine's facts are the merge of its units'
    (``merged``), never a second reading.
    """
    from .engine import read_raw

    units = split_units(texts, names)
    LAST_WORK.clear()
    LAST_WORK.update(units=len(units), reads=0, compared=0)
    if len(units) <= 1:
        return [Machine(units=units)], []
    distinct: Dict[str, Acc] = {}
    sigs: Dict[int, Dict[str, Any]] = {}
    for u in units:
        key = u.text
        acc = distinct.get(key)
        if acc is None:
            if len(distinct) >= MAX_UNITS:
                for v in units:
                    v.acc = None
                return [Machine(units=units)], []
            # the recording (and speed symptoms) are read across the units once merged (engine.read_recordings)
            acc = read_raw(key, compat, recordings=False) if key.strip() else Acc()
            LAST_WORK["reads"] += 1
            distinct[key] = acc
            sigs[id(acc)] = signature(acc)
        u.acc = acc
        u.sig = sigs[id(acc)]
    # first the units of each file (a file is one machine's unless its own facts conflict), then across files
    blocks: List[Machine] = []
    for fi in range(len(texts)):
        mine = _Joiner()
        for u in units:
            if u.file == fi:
                assert u.acc is not None
                mine.join([u], {k: [(v, u)] for k, v in u.sig.items()}, key=id(u.acc))
        LAST_WORK["compared"] += mine.compared
        blocks.extend(mine.machines)
    across = _Joiner()
    for b in blocks:
        across.join(b.units, b.values)
    LAST_WORK["compared"] += across.compared
    machines = across.machines
    if len(machines) == 1:
        return machines, []
    _label(machines, units)
    return machines, _cross_notes(machines)


def merged(units: Sequence[Unit], compat: Any) -> Optional[Acc]:
    """One Acc for these units (a machine's, or the whole paste's), as one reading of their texts would give:
    each distinct unit merged once, in order; None when a unit was not read (one unit, or too many)."""
    from .engine import finish

    if not units or any(u.acc is None for u in units):
        return None
    acc = Acc()
    done: set = set()
    repeats = 0
    for u in units:
        assert u.acc is not None
        if id(u.acc) in done:
            repeats += 1 if u.text.strip() else 0
            continue
        done.add(id(u.acc))
        acc.merge(u.acc)
    acc.repeated_blocks += repeats
    finish(acc, compat)
    return acc


def _label(machines: List[Machine], units: List[Unit]) -> None:
    n = len(machines)
    per_file: Dict[int, int] = {}
    for u in units:
        per_file[u.file] = per_file.get(u.file, 0) + 1
    for i, m in enumerate(machines):
        parts: List[str] = []
        by_file: Dict[int, List[Unit]] = {}
        for u in m.units:
            by_file.setdefault(u.file, []).append(u)
        for fi, us in by_file.items():
            if len(us) == per_file[fi]:
                parts.append(us[0].name)
            else:
                spans = ", ".join(f"{u.start + 1}-{u.start + len(u.lines)}" for u in us)
                parts.append(f"{us[0].name} lines {spans}")
        m.label = f"report {i + 1} of {n} ({'; '.join(parts)})"


def _cross_notes(machines: List[Machine]) -> List[str]:
    notes = []
    keys: List[str] = []
    for m in machines:
        for k in m.values:
            if k not in keys:
                keys.append(k)
    for k in keys:
        seen: List[Tuple[Any, Unit]] = []
        for m in machines:
            for v, u in m.values.get(k, []):
                if not any(compatible(v, old) for old, _ in seen):
                    seen.append((v, u))
        if len(seen) > 1:
            where = ", ".join(f"{_show(v)} in {u.where(v)}" for v, u in seen)
            notes.append(f"{fact_name(k)}: {len(seen)} different values ({where}): each report judged separately")
    return notes


def conflicting_keys(machines: List[Machine]) -> List[str]:
    """Acc keys ("torch.version", "pkg:torchvision", "gpus") on which the machines disagree."""
    out = []
    for k in {k for m in machines for k in m.values}:
        vals = [v for m in machines for v, _ in m.values.get(k, [])]
        if any(not compatible(a, b) for i, a in enumerate(vals) for b in vals[i + 1:]):
            out.append(k)
    return sorted(out)


def resolve(acc: Acc, where: Any) -> List[Dict[str, Any]]:
    """Settle one machine's conflicting values by which source is authoritative; return the disagreements.

    "Which torch runs" is what the imported module reports (collect_env's ``PyTorch version:``, a REPL's
    ``torch.__version__``): package metadata (``[pip3] torch==``, ``pip list``, ``conda list``) describes an
    install, which may be a second one or a stale dist-info. The module's value is kept (the package record
    too), and the metadata's value becomes a disagreement the checks judge on its own. Run per machine, after
    ``group``, so two machines are never merged.
    """
    out: List[Dict[str, Any]] = []
    module = acc.values.get("torch.version")
    if module is None or module[0] < REPL or str(module[2]).startswith("message:"):
        return out
    kept = module[1]
    others = [v for p, v in acc.seen_packages.get("torch", []) if p >= REPL and v and not compatible(v, kept)]
    if not others:
        return out
    for v in others:
        out.append({"fact": "pythons[0].torch.version", "kept": kept, "kept_source": f"{module[2]} ({where(kept)})",
                    "other": v, "other_source": f"package metadata ({where(v)})"})
    acc.seen_packages["torch"] = [(p, v) for p, v in acc.seen_packages.get("torch", []) if v not in others]
    old = acc.packages.get("torch")
    if old is not None:
        from ..model.facts import Package

        prio, pkg = old
        acc.packages["torch"] = (prio, Package(**{**pkg.__dict__, "version": kept}))
    return out


def within(acc: Acc, lines: Sequence[str], where: Any = None) -> Dict[str, str]:
    """Facts one text gives two incompatible trusted values (tool output or REPL, not a typed line): key -> note.

    ``where(value)`` locates a value ("001.txt line 3"); by default the first line of ``lines`` showing it.
    """
    def locate(value: Any) -> str:
        if where is not None:
            return where(value)
        needle = str(value).split("+", 1)[0]
        i = next((i for i, ln in enumerate(lines) if needle in ln), None)
        return f"line {i + 1}" if i is not None else "the paste"

    out: Dict[str, str] = {}
    for key in FACT_NAMES:
        obs = [v for p, v, how in acc.seen.get(key, []) if p >= REPL and not str(how).startswith("message:")]
        pkg = "torch" if key == "torch.version" else None
        if pkg:
            obs += [v for p, v in acc.seen_packages.get(pkg, []) if p >= REPL]
        _note(out, key, obs, locate)
    for name, seen in acc.seen_packages.items():
        if name != "torch" and _PAIRED.match(name):
            _note(out, f"pkg:{name}", [v for p, v in seen if p >= REPL], locate)
    return out


def _note(out: Dict[str, str], key: str, obs: List[Any], locate: Any) -> None:
    distinct: List[Any] = []
    for v in obs:
        if not any(compatible(v, d) for d in distinct):
            distinct.append(v)
    if len(distinct) > 1:
        where = ", ".join(f"{_show(v)} {locate(v)}" for v in distinct)
        out[key] = f"{fact_name(key)}: {len(distinct)} different values ({where}): not judged"


def drop(acc: Acc, keys: Sequence[str]) -> None:
    """Make conflicting facts unknown, so no check combines one machine's value with another's."""
    for key in keys:
        if key.startswith("pkg:"):
            acc.packages.pop(normalize_name(key[4:]), None)
        elif key == "gpus":
            acc.gpus = []
            acc.values.pop("gpu.loose_name", None)
            acc.values.pop("gpu.capability", None)
        else:
            acc.values.pop(key, None)
            if key == "torch.version":
                acc.packages.pop("torch", None)
                acc.values.pop("torch.cpu_build", None)
            if key == "driver.version":
                acc.values.pop("driver.cuda", None)
