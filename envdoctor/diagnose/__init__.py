"""`envdoctor diagnose`: recover facts and messages from pasted text, then judge them like a live machine."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..catalogue import CATEGORIES
from ..facts import Facts, ProbeStatus
from ..findings import CheckResult, CheckStatus, Evidence, Finding, Fix, Report, Severity

__all__ = ["Candidate", "DiagnoseInfo", "NothingRecognised", "decode_text", "diagnose_report", "diagnose_text"]

_RANK = {"high": 3, "medium": 2, "low": 1}


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
    """value -> "001.txt line 3": the first line of the input showing it."""
    def where(value: Any) -> str:
        needle = str(value[0] if isinstance(value, (list, tuple)) and value else value)
        needle = needle.split("+", 1)[0] if len(needle) > 3 else needle
        for k, (part, name) in enumerate(zip(sp.parts, sp.names)):
            at = sp.offsets[k] if sp.offsets else 0
            for i, line in enumerate(part.split("\n")):
                if needle in line:
                    return f"line {at + i + 1}" if name == "the paste" else f"{name} line {at + i + 1}"
        return "the paste"
    return where


def diagnose_text(texts: List[str], compat: Any, names: Optional[Sequence[str]] = None) -> Tuple[Facts, DiagnoseInfo]:
    """Read pasted texts (several files are one report unless their facts conflict) into paste Facts.

    When the texts hold several machines' reports (see ``diagnose.machines``), the Facts are those the machines
    agree on: each conflicting fact is unknown, and ``not_found`` / ``paste.conflicts`` say what differed where.
    """
    return _facts_and_info(_split(texts, compat, names), compat)


def _facts_and_info(sp: _Split, compat: Any) -> Tuple[Facts, DiagnoseInfo]:
    from . import engine, machines

    text = sp.text
    acc = sp.acc if sp.acc is not None else engine.read_all(text, compat)
    if not acc.found and not acc.messages and not acc.values and not acc.packages:
        raise NothingRecognised("nothing recognisable: no collect_env output, nvidia-smi table, package list, "
                                "version line or error message was found")
    drop_keys = machines.conflicting_keys(sp.machines) if len(sp.machines) > 1 else []
    notes = list(sp.notes)
    for key, note in machines.within(acc, [], _locator(sp)).items():
        if key not in drop_keys:
            drop_keys.append(key)
            notes.append(note)
    machines.drop(acc, drop_keys)
    facts = engine.build_facts(acc, text)
    if notes or len(sp.machines) > 1:
        paste = facts.paste
        assert paste is not None
        reports = [m.label for m in sp.machines] if len(sp.machines) > 1 else None
        found = list(paste.found)
        if reports:
            found.insert(0, f"{len(reports)} different machines' reports, judged separately")
        facts = dataclasses.replace(facts, paste=dataclasses.replace(
            paste, found=found, not_found=list(paste.not_found) + notes, conflicts=notes or None, reports=reports))
    candidates = rank_candidates(facts, compat)
    suggestions = []
    for c in candidates:
        if c.settle and c.confidence != "high":
            line = f"paste the output of `{c.settle}`"
            if line not in suggestions:
                suggestions.append(line)
    assert facts.paste is not None
    for missing, cmd in (("driver version", "nvidia-smi"), ("torch version", _TORCH_CMD)):
        if missing in facts.paste.not_found and not any(cmd in s for s in suggestions):
            if not any(c.confidence == "high" for c in candidates):
                suggestions.append(f"paste the output of `{cmd}`")
    info = DiagnoseInfo(found=list(facts.paste.found), not_found=list(facts.paste.not_found),
                        candidates=candidates, suggestions=suggestions[:3],
                        reports=list(facts.paste.reports or []))
    return facts, info


_TORCH_CMD = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'


def _torch_cuda_for(facts: Facts, compat: Any) -> Tuple[Optional[str], bool]:
    """(torch's CUDA version, certain): torch.version.cuda, else PyPI's default variant of that release."""
    py = facts.pythons[0] if facts.pythons else None
    t = py.torch if py else None
    if t is None or not t.version:
        return None, False
    if t.cuda:
        return t.cuda, True
    if "+" in t.version:
        tag = t.version.split("+", 1)[1]
        if tag.startswith("cu") and tag[2:].isdigit() and len(tag) >= 4:
            return f"{tag[2:-1]}.{tag[-1]}", True
        return None, True
    try:
        rel = compat.torch_release(t.version) if compat is not None else None
    except Exception:  # noqa: BLE001 - an odd version string must not stop the ranking
        rel = None
    v = rel.default_variant if rel else None
    if v and v.startswith("cu") and v[2:].isdigit():
        return f"{v[2:-1]}.{v[-1]}", False
    return None, False


def _oldest_torch_driver_floor(compat: Any) -> Optional[Tuple[str, str]]:
    """(cuda, driver): the oldest CUDA any torch build in the matrix uses, and the least driver it runs on."""
    try:
        variants = [v for r in compat.torch_releases() for v in r.cuda_variants]
        cudas = sorted({f"{v[2:-1]}.{v[-1]}" for v in variants if v.startswith("cu") and v[2:].isdigit()
                        and len(v) >= 4}, key=lambda c: tuple(int(x) for x in c.split(".")))
        if not cudas:
            return None
        req = compat.cuda_requirement(cudas[0])
    except Exception:  # noqa: BLE001 - compat lookups must not stop the ranking
        return None
    if req is None:
        return None
    # minor-version compatibility lets a CUDA 11.x build run on the 11.0 driver floor (cuda-compatibility doc)
    floor = req.minor_compat_min_driver or req.min_driver
    return (cudas[0], floor) if floor else None


def _older(a: str, b: str) -> bool:
    def t(v: str) -> Tuple[int, ...]:
        return tuple(int(x) for x in v.split(".") if x.isdigit())

    return t(a) < t(b)


def rank_candidates(facts: Facts, compat: Any) -> List[Candidate]:
    """Candidate causes, best first: signatures in the messages, then what thin facts suggest."""
    from ..checks.messages import signature_hits

    out: Dict[str, Candidate] = {}

    def add(c: Candidate) -> None:
        old = out.get(c.category)
        if old is None or _RANK[c.confidence] > _RANK[old.confidence]:
            out[c.category] = c

    try:
        hits = signature_hits(facts, compat)
    except (ValueError, OSError):
        hits = []
    for h in hits:
        add(Candidate(h.category, h.confidence, f"message: {h.matched[:120]}", h.signature.settle))
    py = facts.pythons[0] if facts.pythons else None
    t = py.torch if py else None
    d = facts.driver
    host = facts.host
    if t is not None and t.cuda_available is False:
        cpu_build = bool((t.version and t.version.endswith("+cpu")) or (t.cuda is None and t.arch_list == []))
        if cpu_build:
            add(Candidate("TORCH_CPU_ONLY_BUILD", "high", f"torch {t.version} is a CPU build and "
                          "torch.cuda.is_available() is False", "pip list | grep -i torch"))
        cuda, certain = _torch_cuda_for(facts, compat)
        if d.version and cuda and compat is not None:
            try:
                req = compat.cuda_requirement(cuda)
            except Exception:  # noqa: BLE001
                req = None
            if req is not None and req.min_driver and _older(d.version, req.min_driver):
                add(Candidate("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "high" if certain else "medium",
                              f"driver {d.version} < {req.min_driver} needed by CUDA {cuda} "
                              f"(torch {t.version}{'' if certain else ', its default PyPI build'})",
                              None if certain else 'python -c "import torch; print(torch.version.cuda)"'))
        elif d.version and cuda is None and compat is not None and not cpu_build:
            floor = _oldest_torch_driver_floor(compat)
            if floor and _older(d.version, floor[1]):
                add(Candidate("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "medium",
                              f"driver {d.version} is older than {floor[1]}, the least any CUDA build of torch in "
                              f"the matrix needs (CUDA {floor[0]}); torch {t.version or '?'}'s CUDA is not in the paste",
                              'python -c "import torch; print(torch.version.cuda)"'))
        if d.status == ProbeStatus.SKIPPED:
            add(Candidate("NO_NVIDIA_DRIVER", "low", "torch sees no GPU and the paste shows no driver",
                          "nvidia-smi"))
        if t.version is None or (t.cuda is None and t.arch_list is None and "+" not in (t.version or "")):
            add(Candidate("TORCH_CPU_ONLY_BUILD", "low", "torch's CUDA build is not in the paste", _TORCH_CMD))
    c = host.container
    if c is not None and c.runtime and c.gpu_device_nodes == []:
        add(Candidate("CONTAINER_NO_GPU_RUNTIME", "medium",
                      f"`{(c.evidence or 'docker run')[:80]}` requests no GPUs (--gpus)",
                      "docker run --gpus all <image> nvidia-smi"))
    if host.wsl and (d.status in (ProbeStatus.ABSENT, ProbeStatus.FAILED) or (t and t.cuda_available is False)):
        add(Candidate("WSL_SPECIFIC", "medium", "WSL with a driver that does not answer",
                      "ls -l /usr/lib/wsl/lib/"))
    return sorted(out.values(), key=lambda c: -_RANK[c.confidence])


def _with_evidence(f: Finding, extra: List[Evidence]) -> Finding:
    return dataclasses.replace(f, evidence=list(f.evidence) + extra)


def diagnose_report(texts: List[str], compat: Any, checks: Optional[list] = None,
                    names: Optional[Sequence[str]] = None) -> Report:
    """Diagnose pasted texts: run the checks over the paste facts and merge message findings into them.

    ``names`` name the texts (file names) in labels. When the texts hold several machines' reports (see
    ``diagnose.machines``), each machine is judged on its own and each finding says which machine it is about.
    """
    from .. import __version__
    from .machines import merged

    sp = _split(texts, compat, names)
    as_of = getattr(compat, "as_of", None)
    if len(sp.machines) <= 1:
        facts, info = _facts_and_info(sp, compat)
        return Report(facts=facts, checks=_judge(facts, info, compat, checks), envdoctor_version=__version__,
                      compat_as_of=as_of)
    facts, _ = _facts_and_info(sp, compat)  # what the machines agree on; the conflicts named
    out: List[CheckResult] = []
    each: List[Facts] = []
    for m in sp.machines:
        msp = _Split("\n".join(m.texts()), m.texts(), [u.name for u in m.units], [m], [],
                     [u.start for u in m.units], acc=merged(m.units, compat))
        try:
            mfacts, minfo = _facts_and_info(msp, compat)
        except NothingRecognised:
            continue
        assert mfacts.paste is not None
        each.append(dataclasses.replace(mfacts, paste=dataclasses.replace(mfacts.paste, reports=[m.label])))
        for r in _judge(mfacts, minfo, compat, checks):
            out.append(dataclasses.replace(
                r, title=f"{m.label}: {r.title}",
                findings=[dataclasses.replace(f, summary=f"{m.label}: {f.summary}",
                                              evidence=list(f.evidence) + [Evidence("paste.report", m.label)])
                          for f in r.findings]))
    assert facts.paste is not None
    facts = dataclasses.replace(facts, paste=dataclasses.replace(facts.paste, machines=each))
    return Report(facts=facts, checks=out, envdoctor_version=__version__, compat_as_of=as_of)


def _judge(facts: Facts, info: DiagnoseInfo, compat: Any, checks: Optional[list]) -> List[CheckResult]:
    """The checks over one machine's paste facts, message findings merged, likely causes added."""
    from ..checks import all_checks, run_checks

    # the registry includes the message checks; an explicit selection (--only/--ignore) is kept as given
    selected = list(checks) if checks is not None else all_checks()
    results = run_checks(facts, compat, selected)

    # The facts-based finding wins for a category; the message becomes its evidence.
    serious = lambda f: Severity.at_least(f.severity, Severity.WARNING)  # noqa: E731
    fact_cats: Dict[str, Tuple[int, int]] = {}
    for ri, r in enumerate(results):
        if r.id.startswith("messages."):
            continue
        for fi, f in enumerate(r.findings):
            if serious(f) and f.category not in fact_cats:
                fact_cats[f.category] = (ri, fi)
    merged = [list(r.findings) for r in results]
    for ri, r in enumerate(results):
        if not r.id.startswith("messages."):
            continue
        keep = []
        for f in r.findings:
            if f.category in fact_cats:
                tri, tfi = fact_cats[f.category]
                merged[tri][tfi] = _with_evidence(merged[tri][tfi], [e for e in f.evidence
                                                                     if e.path.startswith("paste.")])
            else:
                keep.append(f)
        merged[ri] = keep
    out: List[CheckResult] = []
    for r, fs in zip(results, merged):
        status = r.status
        if r.status in (CheckStatus.PASSED, CheckStatus.FAILED):
            status = CheckStatus.FAILED if any(serious(f) for f in fs) else CheckStatus.PASSED
        out.append(dataclasses.replace(r, findings=fs, status=status))

    # Candidate causes no check reported: shown with their confidence and the line that would settle them.
    covered = {f.category for fs in merged for f in fs if serious(f)}
    extra = []
    for c in info.candidates:
        if c.category in covered or c.category == "HEALTHY" or c.confidence == "low":
            continue
        cat = CATEGORIES[c.category]
        extra.append(Finding(
            code=f"diagnose.candidate/{c.category.lower().replace('_', '-')}", category=c.category,
            severity=Severity.WARNING if c.confidence == "medium" else Severity.ERROR,
            summary=f"Likely cause ({c.confidence} confidence): {cat.title} \u2014 {c.reason}",
            detail=cat.meaning + (f" To settle it, paste the output of `{c.settle}`." if c.settle else ""),
            evidence=[Evidence("paste", c.reason)], fix=Fix(cat.fix), confidence=c.confidence,
        ))
        covered.add(c.category)
    if extra:
        out.append(CheckResult("diagnose.candidates", "diagnose", "Likely causes read from the paste",
                               CheckStatus.FAILED, findings=extra))
    return out
