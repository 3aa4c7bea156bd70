"""`envdoctor diagnose`: recover facts and messages from pasted text, then judge them like a live machine."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import Facts
from ..model.findings import CheckResult, Report

__all__ = ["Candidate", "DiagnoseInfo", "NothingRecognised", "decode_text", "diagnose_report", "diagnose_text"]

class NothingRecognised(ValueError):
    """The input held nothing envdoctor can read (binary, garbage, empty): the CLI exits 2."""


@dataclass(frozen=True)
class Candidate:
    category: str
    confidence: str  # "high", "medium", "low"
    reason: str
    settle: Optional[str] = None  # the one command whose output would settle it


@dataclass(frozen=True)
class DiagnoseInfo:
    found: List[str] = field(default_factory=list)
    not_found: List[str] = field(default_factory=list)
    candidates: List[Candidate] = field(default_factory=list)  # best first
    suggestions: List[str] = field(default_factory=list)  # "paste the output of `nvidia-smi`"
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


def diagnose_text(texts: List[str], compat: Any, names: Optional[Sequence[str]] = None) -> Tuple[Facts, DiagnoseInfo]:
    """Read pasted texts (several files are one report unless their facts conflict) into paste Facts.

    When the texts hold several machines' reports (see ``diagnose.machines``), the Facts are those the machines
    agree on: each conflicting fact is unknown, and ``not_found`` / ``paste.conflicts`` say what differed where.
    """
    return _facts_and_info(_split(texts, compat, names), compat)


def _facts_and_info(sp: _Split, compat: Any, judge: bool = True) -> Tuple[Facts, DiagnoseInfo]:
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
    if not judge:
        return facts, DiagnoseInfo(found=list(facts.paste.found), not_found=list(facts.paste.not_found),
                                   reports=list(facts.paste.reports or []))
    from ..judging import PastePolicy, Selection, run_selected, settle_lines

    results = PastePolicy().weigh(facts, run_selected(facts, compat, Selection()))
    findings = [f for r in results for f in r.findings]
    info = DiagnoseInfo(found=list(facts.paste.found), not_found=list(facts.paste.not_found),
                        candidates=_candidates(results), suggestions=settle_lines(facts, findings),
                        reports=list(facts.paste.reports or []))
    return facts, info


def _candidates(results: Sequence[CheckResult]) -> List[Candidate]:
    """The causes the registered checks found, best first (the checks are the only judge)."""
    from ..judging.policy import CONFIDENCE_RANK as _RANK
    from ..judging.policy import serious as _serious

    out: Dict[str, Candidate] = {}
    for r in results:
        for f in r.findings:
            if not _serious(f) or f.category == "HEALTHY":
                continue
            conf = f.confidence or "high"
            settle = next((e.value for e in f.evidence if e.path == "paste.settle"), None)
            old = out.get(f.category)
            if old is None or _RANK[conf] > _RANK[old.confidence]:
                out[f.category] = Candidate(f.category, conf, f.summary, settle)
    return sorted(out.values(), key=lambda c: -_RANK[c.confidence])


def diagnose_report(texts: List[str], compat: Any, checks: Optional[list] = None,
                    names: Optional[Sequence[str]] = None, read_notes: Sequence[str] = ()) -> Report:
    """Diagnose pasted texts: run the registered checks over the paste facts, then merge their findings.

    ``names`` name the texts (file names) in labels. When the texts hold several machines' reports (see
    ``diagnose.machines``), each machine is judged on its own and each finding says which machine it is about.
    ``read_notes`` say what of the input was not read (diagnose.bounded_read: the middle of a long log): the
    report lists them with what the paste does not show.
    """
    report = _diagnose_report(texts, compat, checks, names)
    if read_notes and report.facts.paste is not None:
        paste = report.facts.paste
        facts = dataclasses.replace(report.facts, paste=dataclasses.replace(
            paste, not_found=list(paste.not_found) + [n for n in read_notes if n not in paste.not_found]))
        report = dataclasses.replace(report, facts=facts)
    return report


def _diagnose_report(texts: List[str], compat: Any, checks: Optional[list] = None,
                     names: Optional[Sequence[str]] = None) -> Report:
    """The paste's facts (each machine's too, in ``facts.paste.machines``, when it holds several), judged by the one
    judge under the paste policy: what `check --facts` on ``report.facts`` gives too."""
    from ..judging import PastePolicy, Selection, judge, with_reports
    from .machines import merged

    sp = _split(texts, compat, names)
    facts, _ = _facts_and_info(sp, compat, judge=False)  # with several machines: what they agree on
    if len(sp.machines) > 1:
        each: List[Facts] = []
        for m in sp.machines:
            msp = _Split("\n".join(m.texts()), m.texts(), [u.name for u in m.units], [m], [],
                         [u.start for u in m.units], acc=merged(m.units, compat))
            try:
                mfacts, _minfo = _facts_and_info(msp, compat, judge=False)
            except NothingRecognised:
                continue
            each.append(with_reports(mfacts, m.label))
        assert facts.paste is not None
        facts = dataclasses.replace(facts, paste=dataclasses.replace(facts.paste, machines=each))
    return judge(facts, compat, Selection(checks=checks), PastePolicy())
