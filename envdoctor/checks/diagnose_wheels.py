"""Paste check: pip found no distribution of a package (other than torch's family, which torch.python-version judges
against torch.json) and the paste says which Python pip ran under (issue 29). Where the cited table
(error_signatures.json context ``package_python_wheels``) has the release's Python range, the finding says whether
this Python is outside it; where it has none, the finding says only what pip showed: no wheel of the package for
this Python here, with the fix to use a Python the package publishes wheels for. A range is never guessed."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..compat.signatures import signature_context
from ..domain.versions import major_minor, mm_str, parse_version
from ..model.findings import Evidence, Finding, Fix
from ..remedies import installer_for, new_venv, pip_command
from ._paste import paste_or_skip, signature_hits
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

ROW = "pip-no-matching-distribution-any"  # the catalogue row whose hits this check judges


NO_WHEEL = Findings("diagnose.no-wheel-for-python", "PYTHON_VERSION_UNSUPPORTED",
                    kinds=("outside-range", "no-wheel-here"))


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _range(compat: Any, pkg: str, version: Optional[str]) -> Optional[Dict[str, str]]:
    """The table's row for ``pkg`` at ``version`` (its release is a prefix of the version). Without a version
    pip wanted the package's newest release, which the table does not name: unknown (None)."""
    rows = [r for r in ((signature_context(compat, "package_python_wheels") or {}).get("value") or [])
            if isinstance(r, dict) and _canonical(str(r.get("package", ""))) == _canonical(pkg)]
    for r in rows if version else []:
        rel = str(r.get("release", ""))
        if version == rel or version.startswith(rel + "."):
            return r
    return None


def _outside(py: str, row: Dict[str, str]) -> Optional[bool]:
    have, lo, hi = major_minor(py), major_minor(row.get("python_min")), major_minor(row.get("python_max"))
    if not have or not lo or not hi:
        return None
    return have < lo or have > hi


@check("diagnose.no-wheel-for-python", "pip found a wheel of each requested package for this Python",
       categories=("PYTHON_VERSION_UNSUPPORTED",), applies=PASTE_ONLY)
def check_no_wheel_for_python(ctx: CheckContext) -> List[Finding]:
    paste_or_skip(ctx)
    hits = [h for h in signature_hits(ctx.facts, ctx.compat) if h.signature.id == ROW and h.groups.get("pkg")]
    if not hits:
        raise SkipCheck("no pip 'No matching distribution' for a package outside torch's family in the paste")
    py_env = ctx.facts.pythons[0] if ctx.facts.pythons else None
    pyv = py_env.python_version if py_env else None
    if not pyv or not major_minor(pyv):
        raise SkipCheck("the paste does not say which Python pip ran under")
    seen: Dict[str, Tuple[str, Optional[str], Any]] = {}
    for h in hits:  # pip prints two lines per failure; one finding per package
        key = _canonical(h.groups["pkg"] or "")
        if key not in seen or (h.groups.get("version") and not seen[key][1]):
            seen[key] = (h.groups["pkg"] or "", h.groups.get("version"), h)
    mm = mm_str(pyv) or pyv
    inst = installer_for(ctx.facts, py_env)
    findings: List[Finding] = []
    for pkg, version, hit in seen.values():
        asked = f"{pkg}=={version}" if version else pkg
        ev = [Evidence("pythons[0].python_version", pyv),
              Evidence(f"paste.messages[{hit.index}]", hit.message, source=hit.signature.source)]
        row = _range(ctx.compat, pkg, version)
        out = _outside(pyv, row) if row else None
        if out is False:
            continue  # this Python is inside the release's range: the Python is not why pip found nothing
        if out:
            hi, lo = row["python_max"], row["python_min"]
            newer = parse_version(mm) is not None and parse_version(mm) > parse_version(hi)
            ev[0] = Evidence("pythons[0].python_version", pyv, expected=f"{lo} .. {hi}", source=row.get("source"))
            findings.append(NO_WHEEL.error(
                "outside-range", confidence="high",
                summary=(f"No wheel of {asked} for Python {mm}: {pkg} {row['release']} publishes wheels for "
                         f"Python {lo} to {hi}"),
                detail=("pip lists only the releases with a wheel for this interpreter, so it found no "
                        "distribution; " + ("this Python is newer than the release supports."
                                            if newer else "this Python is older than the release supports.")),
                evidence=ev,
                fix=Fix(f"Create the environment with Python {hi} (or another of {lo} to {hi}) for {pkg} "
                        f"{row['release']}, or pick a {pkg} release with wheels for Python {mm}",
                        [new_venv(ctx.facts, py_env, hi), pip_command(inst, "install", asked)]),
            ))
            continue
        available = (hit.groups.get("available") or "").strip()
        findings.append(NO_WHEEL.warning(
            "no-wheel-here", confidence="medium",
            summary=(f"No wheel of {asked} for Python {mm} here: pip found "
                     + (f"only {available}" if available and available != "none" else "no release of it")
                     + " for this interpreter"),
            detail=(f"envdoctor's table has no Python range for {pkg}"
                    + (f" {version}" if version else "")
                    + "; the package's files on PyPI list the Python versions (cpXY tags) it publishes wheels for. "
                      "A 32-bit Python or an unusual platform gives the same message."),
            evidence=ev,
            fix=Fix(f"Use a Python version that {pkg} publishes wheels for (see https://pypi.org/project/{pkg}/#files), "
                    "in a new environment",
                    [pip_command(inst, "index", "versions", pkg), pip_command(inst, "debug", "--verbose")]),
        ))
    return findings
