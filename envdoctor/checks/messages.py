"""Checks over pasted messages (facts.paste.messages): known error signatures mapped to categories."""

from __future__ import annotations

from typing import Dict, List

from ..model.catalogue import CATEGORIES
from ..model.findings import Evidence, Finding, Fix, Severity
from ._paste import Hit, signature_hits
from ._paste_context import K8S_DOC, K8S_FIX
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

# a finding per matched signature (compat_data/error_signatures.json), a kind per signature id; a further cause
# the same message proves is "<id>/<category in lower case>"; the category is the signature's
SIGNATURE = Findings("messages.signature", "", kinds=("{signature}", "{signature}/{category}"),
                     categories=tuple(sorted(CATEGORIES)), check="messages.signatures")

_RANK = {"high": 3, "medium": 2, "low": 1}


# Apptainer/Singularity passes the GPU only with --nv; enroot's NVIDIA hook (and pyxis's, under Slurm) injects the
# driver only when NVIDIA_VISIBLE_DEVICES is set in the container's environment (issue 42, round 10)
CONTEXT_FIXES = {
    "apptainer": ("Start the container with --nv (or --nvccli), without options that replace /dev (-c/--contain "
                  "on old Singularity releases), and check that nvidia-smi works on the host.",
                  [], "https://apptainer.org/docs/user/latest/gpu.html"),
    "enroot": ("Make enroot's NVIDIA hook inject the driver: set NVIDIA_VISIBLE_DEVICES (e.g. all) and "
               "NVIDIA_DRIVER_CAPABILITIES=compute,utility in the image or the container's environment (pyxis: "
               "--container-env), request GPUs from Slurm, and check that nvidia-smi works on the node.",
               [], "https://github.com/NVIDIA/enroot/blob/master/doc/usage.md"),
}


def _finding(hits: List[Hit], facts=None) -> Finding:
    # at equal confidence, a row written for this category wins over a generic row a qualifier turned into it
    # (ctranslate2's own cuDNN row before the loader's generic "cannot open shared object file")
    best = max(hits, key=lambda h: (_RANK.get(h.confidence, 0), h.category == h.signature.category))
    sig = best.signature
    # a row's own headline names its subject (a CPU-only DGL, not "torch"); a qualifier that changed the category
    # keeps the category's title
    title = sig.title if sig.title and best.category == sig.category else CATEGORIES[best.category].title
    excerpt = best.matched if len(best.matched) <= 160 else best.matched[:157] + "..."
    # a capture is read back whole up to 60 characters (a mangled C++ symbol can run to 200: the excerpt above
    # and the evidence keep it whole)
    numbers = [f"{sig.captures.get(k, k)} = {v if len(v) <= 60 else v[:57] + '...'}"
               for k, v in best.groups.items() if v and k in sig.captures]
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
    severity = sig.severity
    if best.confidence == "low" and severity == Severity.ERROR:
        severity = Severity.WARNING  # a low-confidence match is a lead, never an error
    if sig.settle:
        evidence.append(Evidence("paste.settle", sig.settle))
    # a further cause the same message proves is a finding of its own, with its own code (the JSON keeps both,
    # and caused_by links a consequence such as TORCH_IMPORT_FAILED to its root)
    kind = sig.id + (f"/{best.category.lower().replace('_', '-')}" if best.also else "")
    return SIGNATURE(
        kind, severity, category=best.category,
        summary=summary, detail=detail, evidence=evidence, fix=_fix(sig, best.category, facts),
        confidence=best.confidence,
    )


def _fix(sig, category: str, facts) -> Fix:
    container = facts.host.container if facts is not None else None
    if category == "CONTAINER_NO_GPU_RUNTIME" and container is not None and container.runtime == "kubernetes":
        return Fix(K8S_FIX, [], K8S_DOC)
    if category == "CONTAINER_NO_GPU_RUNTIME" and container is not None and container.runtime in CONTEXT_FIXES:
        return Fix(*CONTEXT_FIXES[container.runtime])
    return Fix(sig.fix, [], sig.source)


@check("messages.signatures", "Known error messages in the paste",
       categories=tuple(sorted(c for c in CATEGORIES)), applies=PASTE_ONLY)
def check_signatures(ctx: CheckContext) -> List[Finding]:
    paste = ctx.facts.paste
    if paste is None:
        raise SkipCheck("no pasted text (messages are read only by `envdoctor diagnose`)", not_applicable="judged in pastes only")
    if not paste.messages:
        raise SkipCheck("the paste holds no error or warning message to match")
    try:
        ctx.compat.optional("error_signatures")
    except LookupError as e:  # no catalogue is not "no known message"
        raise SkipCheck(f"known error messages unknown: {e}") from None
    by_category: Dict[str, List[Hit]] = {}
    for h in signature_hits(ctx.facts, ctx.compat):
        by_category.setdefault(h.category, []).append(h)
    return [_finding(hits, ctx.facts) for hits in by_category.values()]


# ---- checks that judge what a paste shows when its facts are thin (diagnose only: a live probe always knows
# torch's build and the driver, so these skip there). Each reads facts and their provenance, never prose.


