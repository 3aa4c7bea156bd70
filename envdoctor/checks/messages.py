"""Checks over pasted messages (facts.paste.messages): known error signatures mapped to categories."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ..catalogue import CATEGORIES
from ..compat.signatures import Signature, signatures_from
from ..facts import Facts
from ..findings import Evidence, Finding, Fix
from .base import Check, CheckContext, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

_RANK = {"high": 3, "medium": 2, "low": 1}


@dataclass(frozen=True)
class Hit:
    signature: Signature
    index: int  # into facts.paste.messages
    message: str
    matched: str
    groups: Dict[str, Optional[str]]
    category: str
    confidence: str


def _variant(version: Optional[str]) -> Optional[str]:
    if version and "+" in version:
        return version.split("+", 1)[1]
    return None


def _pkg_variant(facts: Facts, compat: Any, name: str) -> Optional[str]:
    """Variant of a torch-family package: local tag, the package's own record, else PyPI's default."""
    if not facts.pythons:
        return None
    py = facts.pythons[0]
    pkg = py.package(name)
    version = pkg.version if pkg else (py.torch.version if name == "torch" and py.torch else None)
    if version is None:
        return None
    tag = _variant(version)
    if tag:
        return tag
    if pkg is not None and pkg.variant:
        return pkg.variant
    if name == "torch" and py.torch is not None and py.torch.cuda is None and py.torch.arch_list == []:
        return "cpu"
    if compat is None:
        return None
    try:  # no local tag: the PyPI wheel, whose Linux x86_64 build is the release's default variant
        torch_v = version if name == "torch" else compat.torch_for_companion(name, version)
        rel = compat.torch_release(torch_v) if torch_v else None
        return rel.default_variant if rel else None
    except Exception:  # noqa: BLE001 - compat lookups on odd versions must not break the check
        return None


def _kind(variant: Optional[str]) -> Optional[str]:
    if not variant:
        return None
    return "cpu" if variant == "cpu" else ("rocm" if variant.startswith("rocm") else "cuda")


def _python_outside(facts: Facts, compat: Any, version: Optional[str]) -> bool:
    if not version or compat is None or not facts.pythons or not facts.pythons[0].python_version:
        return False
    try:
        rel = compat.torch_release(version.split("+", 1)[0])
    except Exception:  # noqa: BLE001
        return False
    if rel is None:
        return False
    py = tuple(int(x) for x in facts.pythons[0].python_version.split(".")[:2])

    def t(v: Optional[str]) -> Optional[tuple]:
        return tuple(int(x) for x in v.split(".")[:2]) if v else None

    lo, hi = t(rel.python_min), t(rel.python_max)
    return bool((lo and py < lo) or (hi and py > hi))


def holds(when: str, facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """The named conditions a catalogue row's alternatives may use."""
    host = facts.host
    if when == "wsl":
        return bool(host.wsl)
    if when == "in_container":
        return bool(host.container and host.container.runtime)
    if when == "in_container_no_gpu":
        return bool(host.container and host.container.runtime and host.container.gpu_device_nodes == [])
    if when == "variants_differ":
        t = _kind(_pkg_variant(facts, compat, "torch"))
        if t is None:
            return False
        return any(_kind(_pkg_variant(facts, compat, c)) not in (None, t) for c in ("torchvision", "torchaudio"))
    if when == "not_torch_import":
        msgs = facts.paste.messages if facts.paste else []
        return not any("torch/__init__" in m or "torch._C" in m for m in msgs)
    if when == "python_outside_requested_torch":
        return _python_outside(facts, compat, groups.get("version"))
    if when.startswith("capture:") and "~" in when:
        name, pattern = when[len("capture:"):].split("~", 1)
        value = groups.get(name) or ""
        return bool(re.search(pattern, value))
    return False


def signature_hits(facts: Facts, compat: Any) -> List[Hit]:
    """Every (message, signature) match, with the category the facts make most likely."""
    if facts.paste is None:
        return []
    sigs = signatures_from(compat)
    hits: List[Hit] = []
    for i, message in enumerate(facts.paste.messages):
        for sig in sigs:
            m = sig.search(message)
            if not m:
                continue
            groups = m.groupdict()
            category, confidence = sig.category, sig.confidence
            for alt in sig.alternatives:
                if holds(alt.when, facts, compat, groups):
                    category, confidence = alt.category, alt.confidence
                    break
            hits.append(Hit(sig, i, message, m.group(0), groups, category, confidence))
    return hits


def _finding(hits: List[Hit]) -> Finding:
    best = max(hits, key=lambda h: _RANK.get(h.confidence, 0))
    sig = best.signature
    title = CATEGORIES[best.category].title
    excerpt = best.matched if len(best.matched) <= 160 else best.matched[:157] + "..."
    numbers = [f"{sig.captures.get(k, k)} = {v}" for k, v in best.groups.items() if v and k in sig.captures]
    summary = f"{title}: the paste shows \u201c{excerpt}\u201d"
    detail = sig.explanation
    if numbers:
        detail += " Read from the message: " + "; ".join(numbers) + "."
    if sig.settle:
        detail += f" To confirm, paste the output of `{sig.settle}`."
    evidence = []
    for h in sorted(hits, key=lambda h: -_RANK.get(h.confidence, 0)):
        evidence.append(Evidence(f"paste.messages[{h.index}]", h.message[:500], source=h.signature.source))
        for k, v in h.groups.items():
            if v and k in h.signature.captures:
                evidence.append(Evidence(f"paste.messages[{h.index}].{k}", v, expected=h.signature.captures[k]))
    return Finding(
        code=f"messages.signature/{sig.id}", category=best.category, severity=sig.severity,
        summary=summary, detail=detail, evidence=evidence, fix=Fix(sig.fix, [], sig.source),
        confidence=best.confidence,
    )


@check("messages.signatures", "Known error messages in the paste",
       categories=tuple(sorted(c for c in CATEGORIES)))
def check_signatures(ctx: CheckContext) -> List[Finding]:
    paste = ctx.facts.paste
    if paste is None:
        raise SkipCheck("no pasted text (messages are read only by `envdoctor diagnose`)")
    if not paste.messages:
        raise SkipCheck("the paste holds no error or warning message to match")
    by_category: Dict[str, List[Hit]] = {}
    for h in signature_hits(ctx.facts, ctx.compat):
        by_category.setdefault(h.category, []).append(h)
    return [_finding(hits) for hits in by_category.values()]
