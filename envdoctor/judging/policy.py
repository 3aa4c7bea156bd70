"""Judging policies: what the judge does with the check results before they are a report.

A policy has one method, ``judge(facts, compat, selection, run) -> (facts, checks, machines)``, where ``run`` runs
the selected checks over some facts (``judging.run_selected``). ``PLAIN`` keeps what the checks found.
``PastePolicy`` is what facts read from pasted text need, and nothing else does: the checks are the only judge of
*what* is wrong; the policy only weighs how sure the paste lets them be and merges what several of them say about
one cause.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..model.catalogue import UNRECOGNISED
from ..model.facts import Facts
from ..model.findings import CheckResult, CheckStatus, Finding, MachineReport, Severity

if TYPE_CHECKING:
    from ..compat.queries import Compat

Run = Callable[[Facts, Any, Any], List[CheckResult]]
Judged = Tuple[Facts, List[CheckResult], List[MachineReport]]

CONFIDENCE_RANK = _RANK = {"high": 3, "medium": 2, "low": 1}
_RANK_SEV = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}
_CONF_ORDER = ("low", "medium", "high")
TORCH_CMD = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'
SMI_CMD = "nvidia-smi"


class Policy:
    """The interface (and the plain policy): the checks' results as they are."""

    name = "plain"

    def judge(self, facts: Facts, compat: Compat, selection: Any, run: Run) -> Judged:
        return facts, run(facts, compat, selection), []


class PlainPolicy(Policy):
    """Live machines, snapshots, builds: a check's finding is as sure as the probe that read its facts."""


PLAIN = PlainPolicy()


def serious(f: Finding) -> bool:
    return Severity.at_least(f.severity, Severity.WARNING)


class PastePolicy(Policy):
    """Facts read from pasted text (origin "paste"), one machine or several.

    1. Confidence from provenance: a finding with no confidence of its own takes the least sure of the paste facts
       its evidence names (a driver version from a bare number on its own line is low, from an nvidia-smi table
       high); medium when its evidence names no fact the paste gave.
    2. Confidence bounds severity: a low-confidence finding is at most a warning.
    3. A message finding (``messages.*``) whose category a facts-based finding also reports becomes that finding's
       evidence; the kept finding takes the more severe of the two (a pasted build failure stays an error) and the
       surer confidence.
    4. A low-confidence message lead is dropped when a surer facts-based finding cites the same message; a
       low-confidence ``diagnose.*`` guess is dropped when anything surer explains the paste.
   4b. An error line no finding explains stays a finding (UNRECOGNISED_ERROR, ``diagnose.unexplained-error``):
       the lines a warning or error finding's evidence covers (the message a signature matched, folded or not)
       are taken out of it, and it goes when none is left.
    5. The outputs that would settle what is left open go into ``facts.paste.settle`` (``settle_lines``).
    6. A paste holding several machines' reports (``facts.paste.machines``) is judged machine by machine: each is a
       ``Report.machines`` entry with its label, facts and results; nothing is judged on the facts they share.
    """

    name = "paste"

    def judge(self, facts: Facts, compat: Compat, selection: Any, run: Run) -> Judged:
        paste = facts.paste
        if paste is not None and paste.machines:
            machines = []
            for i, m in enumerate(paste.machines):
                label = m.paste.reports[0] if m.paste is not None and m.paste.reports else None
                machines.append(MachineReport(label or f"report {i + 1} of {len(paste.machines)}", m,
                                              self.weigh(m, run(m, compat, selection))))
            return facts, [], machines
        results = self.weigh(facts, run(facts, compat, selection))
        settle = settle_lines(facts, [f for r in results for f in r.findings])
        if settle and paste is not None:
            facts = dataclasses.replace(facts, paste=dataclasses.replace(paste, settle=settle))
        return facts, results, []

    def weigh(self, facts: Facts, results: List[CheckResult]) -> List[CheckResult]:
        """Steps 1-4 over one machine's results."""
        prov = (facts.paste.provenance if facts.paste else None) or {}
        merged = [[capped(with_confidence(f, prov)) for f in r.findings] for r in results]
        _fold_messages(results, merged)
        _drop_explained(results, merged)
        _narrow_unexplained(facts, results, merged)
        out: List[CheckResult] = []
        for r, fs in zip(results, merged):
            status = r.status
            if r.status in (CheckStatus.PASSED, CheckStatus.FAILED):
                status = CheckStatus.FAILED if any(serious(f) for f in fs) else CheckStatus.PASSED
            out.append(dataclasses.replace(r, findings=fs, status=status))
        return out


def with_confidence(f: Finding, prov: Dict[str, Any]) -> Finding:
    """Step 1: the finding with the confidence of the least sure paste fact its evidence names."""
    if f.confidence is not None:
        return f
    seen: List[str] = []
    for e in f.evidence:
        path = e.path
        while path:
            hit = prov.get(path)
            if hit is not None:
                seen.append(str(hit.get("confidence") or "medium"))
                break
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
    conf = min(seen, key=_CONF_ORDER.index) if seen else "medium"
    return dataclasses.replace(f, confidence=conf)


def capped(f: Finding) -> Finding:
    """Step 2: a low-confidence finding is at most a warning."""
    if f.confidence == "low" and f.severity == Severity.ERROR:
        return dataclasses.replace(f, severity=Severity.WARNING)
    return f


def _fold_messages(results: Sequence[CheckResult], merged: List[List[Finding]]) -> None:
    """Step 3, in place."""
    fact_cats: Dict[str, Tuple[int, int]] = {}
    for ri, r in enumerate(results):
        if r.id.startswith("messages."):
            continue
        for fi, f in enumerate(merged[ri]):
            if serious(f) and f.category not in fact_cats and f.category != UNRECOGNISED:
                fact_cats[f.category] = (ri, fi)
    for ri, r in enumerate(results):
        if not r.id.startswith("messages."):
            continue
        keep = []
        for f in merged[ri]:
            if f.category not in fact_cats:
                keep.append(f)
                continue
            tri, tfi = fact_cats[f.category]
            target = merged[tri][tfi]
            severity = f.severity if _RANK_SEV.get(f.severity, 0) > _RANK_SEV.get(target.severity, 0) \
                else target.severity
            conf = target.confidence
            if f.confidence and conf and _RANK[f.confidence] > _RANK[conf]:
                conf = f.confidence
            merged[tri][tfi] = dataclasses.replace(
                target, severity=severity, confidence=conf,
                evidence=list(target.evidence) + [e for e in f.evidence if e.path.startswith("paste.")])
        merged[ri] = keep


def _drop_explained(results: Sequence[CheckResult], merged: List[List[Finding]]) -> None:
    """Step 4, in place. A conda CUDA-major mix explains "libcusparse.so.11: cannot open"; the low-confidence lead
    "a system library shadows it" would only mislead."""
    explained = {str(e.value)[:300] for ri, r in enumerate(results) if not r.id.startswith("messages.")
                 for f in merged[ri] if serious(f) and f.confidence != "low" and f.category != UNRECOGNISED
                 for e in f.evidence if e.path.startswith("paste.messages")}
    if explained:
        for ri, r in enumerate(results):
            if r.id.startswith("messages."):
                merged[ri] = [f for f in merged[ri] if f.confidence != "low" or not any(
                    e.path.startswith("paste.messages[") and str(e.value)[:300] in explained for e in f.evidence)]
    if any(serious(f) and f.confidence != "low" and f.category != UNRECOGNISED for fs in merged for f in fs):
        for ri, r in enumerate(results):
            if r.id.startswith("diagnose."):
                merged[ri] = [f for f in merged[ri] if f.confidence != "low"]


def _narrow_unexplained(facts: Facts, results: Sequence[CheckResult], merged: List[List[Finding]]) -> None:
    """Step 4b, in place: the unexplained-error finding keeps only the lines no other finding covers: a message
    a signature recognised (whatever its severity: "CUDA out of memory" is the program's, said as an info), a
    message or a distinctive fact (a version, a PCI address, a path) a warning or error finding cites."""
    from ..checks.diagnose_unexplained import narrow

    CATEGORY = UNRECOGNISED

    if not any(f.category == CATEGORY for fs in merged for f in fs):
        return
    paste = facts.paste
    messages = paste.messages if paste is not None else []
    prov = (paste.provenance if paste is not None else None) or {}
    data: Any = None
    explained: List[str] = []
    values: List[str] = []
    cause = False
    for r, fs in zip(results, merged):
        for f in fs:
            if f.category == CATEGORY or not (serious(f) or r.id.startswith("messages.")):
                continue
            cause = cause or serious(f)
            for e in f.evidence:
                if e.path.startswith("paste.messages[") and e.path.endswith("]"):
                    idx = e.path[len("paste.messages["):-1]
                    if idx.isdigit() and int(idx) < len(messages):
                        explained.append(messages[int(idx)])  # the whole message, not the evidence's excerpt
                        continue
                if isinstance(e.value, str):
                    # a whole message quoted, or a value read from one (a capture: "paste.messages[1].version"); a
                    # reader's quote of the reporter's words (paste.*: a sentence of 20 or more characters) is text
                    # the finding explains too, so the same sentence is not also "not recognised"
                    whole = e.path.startswith("paste.messages") and e.path.endswith("]")
                    quoted = e.path.startswith("paste.") and not e.path.startswith("paste.messages") \
                        and len(e.value.strip("\u2026 ")) >= 20
                    (explained if whole or quoted else values).append(e.value.strip("\u2026 ") if quoted else e.value)
                if not e.path.startswith("paste."):
                    if data is None:
                        data = facts.to_dict()
                    values.extend(_strings(_at(data, e.path)))
                    hit = prov.get(e.path)
                    if hit is not None and isinstance(hit.get("value"), str):
                        values.append(hit["value"])
    for ri, fs in enumerate(merged):
        if any(f.category == CATEGORY for f in fs):
            kept = []
            for f in fs:
                left: Optional[Finding] = narrow(facts, f, explained, values, cause) if f.category == CATEGORY else f
                if left is not None:
                    kept.append(left)
            merged[ri] = kept


def _at(data: Any, path: str) -> Any:
    """The value at an evidence path ("driver.xid_events", "pythons[0].torch.version") of facts as a dict."""
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            i = part[1:].rstrip("]")
            data = data[int(i)] if i.isdigit() and isinstance(data, list) and int(i) < len(data) else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
        if data is None:
            return None
    return data


def _strings(value: Any, depth: int = 0) -> List[str]:
    if isinstance(value, str):
        return [value]
    if depth > 3:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v, depth + 1)]
    if isinstance(value, list):
        return [s for v in value[:50] for s in _strings(v, depth + 1)]
    return []


def settle_lines(facts: Facts, findings: Sequence[Finding]) -> List[str]:
    """Step 5: the one or two outputs that would settle what the paste leaves open (report-level, never a
    verdict): the settling command of each unsure serious finding, and, when nothing serious is sure, nvidia-smi
    and torch's own line for what the paste does not show."""
    out: List[str] = []
    sure = any(serious(f) and f.confidence in (None, "high") for f in findings)
    for f in findings:
        if not serious(f) or f.confidence in (None, "high"):
            continue
        for e in f.evidence:
            if e.path == "paste.settle" and isinstance(e.value, str):
                line = f"paste the output of `{e.value}`"
                if line not in out:
                    out.append(line)
    prov = (facts.paste.provenance if facts.paste else None) or {}
    if not sure:
        if "driver.version" not in prov and not any(SMI_CMD in s for s in out):
            out.append(f"paste the output of `{SMI_CMD}`")
        if "pythons[0].torch.version" not in prov and "pythons[0].torch.cuda" not in prov \
                and not any(TORCH_CMD in s for s in out):
            out.append(f"paste the output of `{TORCH_CMD}`")
    return out[:3]
