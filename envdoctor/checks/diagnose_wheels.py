"""Paste check: pip found no distribution of a package (other than torch's family, which torch.python-version judges
against torch.json) and the paste says which Python pip ran under (issue 29). Where the cited table
(error_signatures.json context ``package_python_wheels``) has the release's Python range, the finding says whether
this Python is outside it; where it has none, the finding says only what pip showed: no wheel of the package for
this Python here, with the fix to use a Python the package publishes wheels for. A range is never guessed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..compat.signatures import signature_context
from ..domain.versions import major_minor, mm_str, parse_version
from ..model.findings import Evidence, Finding, Fix
from ..remedies import installer_for, new_venv, pip_command
from ._paste import paste_or_skip, signature_hits
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

if TYPE_CHECKING:
    from ..compat.queries import Compat

CHECKS: List[Check] = []
check = registrar(CHECKS)

ROW = "pip-no-matching-distribution-any"  # the catalogue row whose hits this check judges


NO_WHEEL = Findings("diagnose.no-wheel-for-python", "PYTHON_VERSION_UNSUPPORTED",
                    kinds=("outside-range", "no-wheel-here"))


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _range(compat: Compat, pkg: str, version: Optional[str]) -> Optional[Dict[str, str]]:
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
    asked = str(((ctx.facts.paste.provenance or {}).get("paste.install_requests") or {}).get("value") or "").split()
    if not hits and not asked:
        raise SkipCheck("no pip 'No matching distribution' and no install of a package outside torch's family in "
                        "the paste")
    py_env = ctx.facts.pythons[0] if ctx.facts.pythons else None
    pyv = py_env.python_version if py_env else None
    if not pyv or not major_minor(pyv):
        raise SkipCheck("the paste does not say which Python pip ran under")
    if not hits:
        return _installs_outside_the_table(ctx, asked, pyv, py_env)
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


def _newest(compat: Compat, pkg: str) -> Optional[Dict[str, str]]:
    rows = [r for r in ((signature_context(compat, "package_python_wheels") or {}).get("value") or [])
            if isinstance(r, dict) and _canonical(str(r.get("package", ""))) == _canonical(pkg)
            and parse_version(str(r.get("release", ""))) is not None]
    return max(rows, key=lambda r: parse_version(str(r["release"]))) if rows else None


def _installs_outside_the_table(ctx: CheckContext, asked: List[str], pyv: str, py_env: Any) -> List[Finding]:
    """An install line (no pip error in the paste) asking for a package under a Python its releases do not
    publish wheels for, by the cited table: a pinned release whose range leaves this Python out, or an unpinned
    one where this Python is newer than the newest release's range (pip would fall back to an older release
    for an older Python, so only "newer" fails). Packages the table does not hold are not judged."""
    said = (ctx.facts.paste.provenance or {}).get("paste.install_requests") or {}
    source = ": ".join(str(said[k]) for k in ("where", "reader") if said.get(k))  # "line 4: uv pip install ..."
    mm = mm_str(pyv) or pyv
    inst = installer_for(ctx.facts, py_env)
    findings: List[Finding] = []
    # the release pip's own log shows it picked for an unpinned request ("Collecting tensorrt" then the file
    # tensorrt-8.6.1.post1.tar.gz) is judged as if pinned
    picked = dict(r.partition("==")[::2] for r in str(((ctx.facts.paste.provenance or {}).get("paste.pip_resolved")
                                                        or {}).get("value") or "").split())
    for want in asked:
        pkg, _, version = want.partition("==")
        if not version and picked.get(_canonical(pkg)):
            version = picked[_canonical(pkg)]
            want = f"{pkg}=={version}"
        row = _range(ctx.compat, pkg, version) if version else _newest(ctx.compat, pkg)
        if row is None or not _outside(pyv, row):
            continue
        lo, hi = row["python_min"], row["python_max"]
        if not version and not parse_version(mm) > parse_version(hi):
            continue  # older than the newest range: pip picks an older release that has wheels for it
        what = f"{pkg} {version}" if version else f"{pkg}'s newest release envdoctor knows ({row['release']})"
        findings.append(NO_WHEEL.warning(
            "outside-range", confidence="medium",
            summary=f"Installing {want} under Python {mm}: {what} publishes wheels for Python {lo} to {hi}",
            detail=("The paste installs it under a Python outside the range the release documents, so pip (or uv) "
                    "finds no wheel for it, or for one of its dependencies, and the install fails or builds from "
                    "source. " + ("" if version else f"A release newer than {row['release']} may have added "
                                  f"Python {mm}: `pip index versions {pkg}` under this Python lists what it can "
                                  "install.")),
            evidence=[Evidence("pythons[0].python_version", pyv, expected=f"{lo} .. {hi}", source=row.get("source")),
                      Evidence("paste.install_requests", want, source=source or None)],
            fix=Fix(f"Create the environment with Python {hi} (or another of {lo} to {hi}) and install {pkg} there",
                    [new_venv(ctx.facts, py_env, hi), pip_command(inst, "install", want)]),
        ))
    return findings
