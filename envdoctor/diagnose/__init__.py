"""Pasted text as facts: the readers recover what a pasted report, table, log or traceback shows into the same
``Facts`` a live run collects (origin "paste"), one machine's or several's. A source of facts, below the judge:
``services/diagnose.py`` judges them (`envdoctor diagnose`)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import Facts

__all__ = ["DiagnoseInfo", "NothingRecognised", "decode_text", "read_paste"]

class NothingRecognised(ValueError):
    """The input held nothing envdoctor can read (binary, garbage, empty): the CLI exits 2."""


@dataclass(frozen=True)
class DiagnoseInfo:
    """What the readers found in the paste and what it does not show (before any judging)."""

    found: List[str] = field(default_factory=list)
    not_found: List[str] = field(default_factory=list)
    reports: List[str] = field(default_factory=list)  # the machines, when the paste holds several


def _check_readable(text: str) -> None:
    if not text.strip():
        raise NothingRecognised("nothing recognisable: the input is empty")
    sample = text[:65536]
    if "\x00" in sample:
        raise NothingRecognised("nothing recognisable: the input looks binary (NUL bytes)")
    bad = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\t\n\r\x1b\x0c") or ch == "\ufffd")
    if bad > max(8, len(sample) // 50):
        raise NothingRecognised("nothing recognisable: the input looks binary (control characters)")


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def decode_text(data: bytes) -> str:
    """Bytes of a paste or snapshot as text: UTF-8, or the UTF-16/32 that Windows tools write.

    PowerShell 5's `>` and `Out-File` write UTF-16LE with a BOM, so `python -m torch.utils.collect_env >
    env.txt` on Windows gives UTF-16; a copy through some editors drops the BOM. Anything else is read
    as UTF-8 with replacement characters (binary is rejected later, by its NUL bytes).
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(codec.replace("-sig", ""), errors="replace")
    head = data[:4096]
    if len(head) >= 8:
        even, odd = head[0::2], head[1::2]
        # text in UTF-16 without a BOM: mostly ASCII, so one byte of each pair is NUL and the other not
        if odd.count(0) > 0.8 * len(odd) and even.count(0) < 0.05 * len(even):
            return data.decode("utf-16-le", errors="replace")
        if even.count(0) > 0.8 * len(even) and odd.count(0) < 0.05 * len(odd):
            return data.decode("utf-16-be", errors="replace")
    return data.decode("utf-8", errors="replace")


def _decode(t: Any) -> str:
    if isinstance(t, bytes):
        text = decode_text(t)
        if "\x00" in text[:65536]:
            raise NothingRecognised("nothing recognisable: the input looks binary (NUL bytes)")
        return text
    return str(t)


# Terminal colour and cursor codes (CSI and OSC sequences, other two-byte escapes), as a coloured
# `pip`, pytest, rich or a CI log leaves them in a paste; and SGR codes whose ESC byte a copy dropped.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
                   r"|\[\d{1,3}(?:;\d{1,3})*m")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _names(names: Optional[Sequence[str]], n: int) -> List[str]:
    if names is not None and len(names) == n:
        return [str(x) for x in names]
    return ["the paste"] if n == 1 else [f"text {i + 1}" for i in range(n)]


@dataclass
class _Split:
    text: str  # the whole input, as one paste
    parts: List[str]  # each input text, decoded
    names: List[str]
    machines: List[Any]  # machines.Machine, one when the input is one machine's report
    notes: List[str]  # what differed between the machines, with file and line
    offsets: Optional[List[int]] = None  # first line of each part in its file (0 when a part is a whole file)
    acc: Any = None  # the readers' Acc for the whole text when its units were read already (None: read it)


def _split(texts: Sequence[Any], compat: Any, names: Optional[Sequence[str]] = None, split: bool = True) -> _Split:
    from .machines import Machine, group, merged

    parts = [strip_ansi(_decode(t)) for t in texts]
    text = "\n".join(parts)
    _check_readable(text)
    nm = _names(names, len(parts))
    machines, notes = group(parts, nm, compat) if split else ([Machine()], [])
    acc = merged([u for m in machines for u in m.units], compat) if split and len(machines) == 1 else None
    if split and len(machines) > 1:
        units = sorted((u for m in machines for u in m.units), key=lambda u: (u.file, u.start))
        acc = merged(units, compat)
    return _Split(text, parts, nm, machines, notes, acc=acc)


def _locator(sp: _Split) -> Any:
    """value -> "001.txt line 3": the first line of the input showing it (str.find, so a multi-MB paste
    costs one C-speed scan per distinct value)."""
    memo: Dict[str, str] = {}

    def where(value: Any) -> str:
        needle = str(value[0] if isinstance(value, (list, tuple)) and value else value)
        needle = needle.split("+", 1)[0] if len(needle) > 3 else needle
        hit = memo.get(needle)
        if hit is not None:
            return hit
        out = "the paste"
        for k, (part, name) in enumerate(zip(sp.parts, sp.names)):
            pos = part.find(needle) if needle else -1
            if pos != -1:
                at = (sp.offsets[k] if sp.offsets else 0) + part.count("\n", 0, pos) + 1
                out = f"line {at}" if name == "the paste" else f"{name} line {at}"
                break
        memo[needle] = out
        return out
    return where


def read_paste(texts: Sequence[Any], compat: Any, names: Optional[Sequence[str]] = None) -> Tuple[Facts, DiagnoseInfo]:
    """Pasted texts (str, or bytes in any encoding decode_text reads) as paste Facts, and what was found in them.

    Several texts are one report unless their facts conflict. When they hold several machines' reports (see
    ``diagnose.machines``), the Facts are those the machines agree on (each conflicting fact unknown; ``not_found``
    and ``paste.conflicts`` say what differed where) and ``facts.paste.machines`` holds each machine's own Facts,
    labelled (``paste.reports``), for the judge to judge one by one. NothingRecognised when nothing could be read.
    """
    from .machines import merged

    sp = _split(texts, compat, names)
    facts, info = _facts_and_info(sp, compat)
    if len(sp.machines) > 1:
        each: List[Facts] = []
        for m in sp.machines:
            msp = _Split("\n".join(m.texts()), m.texts(), [u.name for u in m.units], [m], [],
                         [u.start for u in m.units], acc=merged(m.units, compat))
            try:
                mfacts, _minfo = _facts_and_info(msp, compat)
            except NothingRecognised:
                continue
            each.append(_labelled(mfacts, m.label))
        assert facts.paste is not None
        facts = dataclasses.replace(facts, paste=dataclasses.replace(facts.paste, machines=each))
    return facts, info


def _labelled(facts: Facts, label: str) -> Facts:
    """One machine's paste facts labelled as that machine ("report 1 of 2 (001.txt)")."""
    if facts.paste is None:
        return facts
    return dataclasses.replace(facts, paste=dataclasses.replace(facts.paste, reports=[label]))


def _facts_and_info(sp: _Split, compat: Any) -> Tuple[Facts, DiagnoseInfo]:
    from . import engine, machines

    text = sp.text
    acc = sp.acc if sp.acc is not None else engine.read_all(text, compat)
    if sp.acc is not None:
        engine.read_recordings(text, acc)  # merged from units: the recording runs across them
    if not acc.found and not acc.messages and not acc.values and not acc.packages:
        raise NothingRecognised("nothing recognisable: no collect_env output, nvidia-smi table, package list, "
                                "version line or error message was found")
    drop_keys = machines.conflicting_keys(sp.machines) if len(sp.machines) > 1 else []
    notes = list(sp.notes)
    disagreements = machines.resolve(acc, _locator(sp)) if len(sp.machines) <= 1 else []
    for key, note in machines.within(acc, [], _locator(sp)).items():
        if key not in drop_keys:
            drop_keys.append(key)
            notes.append(note)
    machines.drop(acc, drop_keys)
    facts = engine.build_facts(acc, text)
    assert facts.paste is not None
    facts = dataclasses.replace(facts, paste=dataclasses.replace(
        facts.paste, provenance=engine.provenance(acc, _locator(sp)), disagreements=disagreements or None))
    if notes or len(sp.machines) > 1:
        paste = facts.paste
        assert paste is not None
        reports = [m.label for m in sp.machines] if len(sp.machines) > 1 else None
        found = list(paste.found)
        if reports:
            found.insert(0, f"{len(reports)} different machines' reports, judged separately")
        facts = dataclasses.replace(facts, paste=dataclasses.replace(
            paste, found=found, not_found=list(paste.not_found) + notes, conflicts=notes or None, reports=reports))
    assert facts.paste is not None
    return facts, DiagnoseInfo(found=list(facts.paste.found), not_found=list(facts.paste.not_found),
                               reports=list(facts.paste.reports or []))
