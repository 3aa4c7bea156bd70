"""The interpreter and its installed metadata agree (issue 38): a venv whose python now starts another minor than
the one its pyvenv.cfg names, two metadata directories of one distribution in one site-packages, and compiled
files of another build left in a package's directory.

Each passes every version check (the metadata read first looks right) and then breaks as the other files are
used: the venv's packages sit in a lib/pythonX.Y the running Python never reads, `pip uninstall` removes one
version's files and leaves the other's, and the loader takes a library of the other build.
"""

from __future__ import annotations

import posixpath
import re
from typing import List, Optional

from ..domain.versions import base_version, parse_version
from ..model.facts import Package, ProbeStatus, PythonEnv, VenvConfig
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command, installer_for, pip_command, pip_install, untrusted_note
from ..remedies.platform import platform_of
from ..remedies.torch_plan import target_variant
from .base import PROBED, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS, applies=PROBED)

CATEGORY = "INTERPRETER_METADATA_MISMATCH"
VENV_DOC = "https://docs.python.org/3/library/venv.html"
METADATA = Findings("packages.metadata", CATEGORY, kinds=("venv-python", "two-dist-infos-{package}",
                                                          "stray-files-{package}"))


def _mm(version: Optional[str]) -> Optional[str]:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return m.group(0) if m else None


@check("packages.metadata", "The interpreter reads the packages installed for it, one build of each",
       categories=(CATEGORY,))
def check_metadata(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    judged = False
    for i, py in enumerate(ctx.facts.pythons):
        if py.status != ProbeStatus.OK or not (py.packages or (py.venv is not None and py.venv.version)):
            continue  # (nothing read to compare: no installed distribution, no pyvenv.cfg version)
        judged = True
        if py.venv is not None:
            found = _venv_python(ctx, i, py, py.venv)
            if found is not None:
                findings.append(found)
        for pkg in py.packages:
            found = _two_dist_infos(ctx, i, py, pkg)
            if found is not None:
                findings.append(found)
            if pkg.unrecorded_files:
                findings.append(_stray_files(ctx, i, py, pkg))
    if not judged:
        raise SkipCheck("no interpreter answered with its installed distributions or a venv's pyvenv.cfg: nothing "
                        "to compare")
    return findings


def _venv_python(ctx: CheckContext, i: int, py: PythonEnv, venv: VenvConfig) -> Optional[Finding]:
    """pyvenv.cfg names Python X.Y, the venv's python now starts another minor: its base was upgraded in place
    (/usr/bin/python3, Homebrew's python@3 link) and the venv's links follow it."""
    made, runs = _mm(venv.version), _mm(py.python_version)
    if not made or not runs or made == runs:
        return None
    name = py.executable or "the interpreter"
    held = [m for m in venv.site_minors or [] if m != runs]
    where = (f"{venv.root}/lib/python{made}/site-packages" if made in (venv.site_minors or [made])
             else f"{venv.root}/lib/python{held[0]}/site-packages" if held else f"{venv.root}/lib/python{made}")
    word = venv.same_minor_python or f"python{made}"
    shell = platform_of(ctx.facts, py).shell
    links = [link.path for link in venv.links]
    cmds = []
    if links:  # `venv --upgrade` keeps an existing link (symlink_or_copy skips it): the stale ones go first
        cmds.append(command("rm", "-f", "--", *links, shell=shell, what="a link path"))
    system = ["--system-site-packages"] if venv.include_system_site_packages else []
    if venv.same_minor_untrusted:
        cmds = []  # the python3.X PATH gives can be changed by another user: no command runs it (untrusted_note)
    else:
        cmds.append(command(word, "-m", "venv", "--upgrade", *system, venv.root, shell=shell,
                            what="the venv path"))
    missing = "" if venv.same_minor_python or venv.same_minor_untrusted else \
        f"; no {word} was found on PATH: install Python {made} first"
    return METADATA.error(
        "venv-python", subject=py.executable,
        summary=(f"{name} now starts Python {py.python_version}, but the venv {venv.root} was made with Python "
                 f"{venv.version} (pyvenv.cfg): its packages sit in {where}, which Python {runs} never reads"),
        detail=("A venv's python is a link to its base interpreter; when that base is upgraded in place (the "
                "distribution's python3, Homebrew's python@3) the link starts the new minor, which looks for "
                f"packages in lib/python{runs} only. Everything installed there looks missing (torch included), "
                "and compiled packages for one minor do not load in another. Re-pointing the links at a Python "
                f"{made} brings them back without reinstalling anything{missing}; or make a new venv on "
                f"Python {runs} and reinstall its packages there.{untrusted_note(venv)}"),
        evidence=[Evidence(f"pythons[{i}].python_version", py.python_version, expected=f"{made}.x",
                           source=name),
                  Evidence(f"pythons[{i}].venv.version", venv.version, source=f"{venv.root}/pyvenv.cfg"),
                  Evidence(f"pythons[{i}].venv.site_minors", venv.site_minors),
                  Evidence(f"pythons[{i}].venv.links", [f"{link.path} -> {link.target}" for link in venv.links]
                           or None)],
        fix=Fix(f"Re-point the venv's python links at Python {made} ({word}): `venv --upgrade` keeps the "
                "installed packages", cmds, VENV_DOC),
    )


def _two_dist_infos(ctx: CheckContext, i: int, py: PythonEnv, pkg: Package) -> Optional[Finding]:
    # (two of the same version are one install described twice: Debian's python3-cryptography ships both a
    # dist-info and an egg-info of 38.0.4 in /usr/lib/python3/dist-packages)
    same = [c for c in pkg.shadowed or [] if c.location and pkg.location and c.version != pkg.version and
            posixpath.normpath(c.location) == posixpath.normpath(pkg.location)]
    if not same:
        return None
    name = py.executable or "the interpreter"
    versions = [pkg.version] + [c.version or "?" for c in same]
    dirs = [d for d in [pkg.dist_info] + [c.dist_info for c in same] if d]
    files = _files_version(py, pkg)
    keep = files or max(versions, key=lambda v: parse_version(v) or parse_version("0"))
    # the metadata of the version not kept goes by hand (`pip uninstall` of a second copy whose RECORD names files
    # the first one's uninstall already removed answers "No files were found to uninstall" and leaves it), then
    # one forced install of the version kept lays its files over whatever the other left
    copies = [(pkg.version, pkg.dist_info)] + [(c.version or "", c.dist_info) for c in same]
    stale = [d for v, d in copies if d and v != keep]
    cmds = []
    if stale and all(d for _v, d in copies):
        cmds.append(command("rm", "-rf", "--", *[posixpath.join(pkg.location or "", d) for d in stale],
                            shell=platform_of(ctx.facts, py).shell, what="a metadata path"))
    else:  # which directory is which is not known: uninstall every copy pip finds
        cmds += [pip_command(installer_for(ctx.facts, py), "uninstall", "-y", pkg.name) for _ in copies]
    pin = f"{pkg.name}=={base_version(keep) or keep}"
    variant = target_variant(ctx.facts, ctx.compat, py, base_version(keep) or keep) if pkg.name == "torch" else None
    cmds.append(pip_install(ctx.facts, py, [pin], variant, force=True, no_deps=True))
    return METADATA.error(
        f"two-dist-infos-{pkg.name}", subject=py.executable,
        summary=(f"{pkg.location} holds {len(same) + 1} metadata directories of {pkg.name} ("
                 + ", ".join(dirs or versions) + f"): pip and importlib.metadata see {pkg.version}"
                 + (f", the files are {files}" if files and files != pkg.version else "")),
        detail=("An interrupted upgrade, an install with --ignore-installed or --target over an existing copy, or "
                "two installers (pip and conda, pip and uv) leave one dist-info per version. Which one "
                "importlib.metadata reads first depends on the directory order; `pip uninstall` removes the files "
                "of one RECORD and leaves the other's, and a later install lays a third over both."),
        evidence=[Evidence(f"pythons[{i}].packages.{pkg.name}.version", pkg.version, source=pkg.dist_info),
                  Evidence(f"pythons[{i}].packages.{pkg.name}.shadowed",
                           [f"{c.version} ({c.dist_info or c.location})" for c in same], expected="none")]
        + ([Evidence(f"pythons[{i}].torch.build_files.version", files, source="torch/version.py")] if files else []),
        fix=Fix(f"Remove the metadata of the {pkg.name} that is not installed and reinstall {pkg.name} {keep} over "
                f"its files in {name} (its requirements are left as they are)", cmds),
    )


def _files_version(py: PythonEnv, pkg: Package) -> Optional[str]:
    """Which version the package's own files are (torch/version.py), when they say."""
    if pkg.name != "torch" or py.torch is None:
        return None
    b = py.torch.build_files
    return (b.version if b is not None else None) or (py.torch.version if py.torch.imported else None)


def _stray_files(ctx: CheckContext, i: int, py: PythonEnv, pkg: Package) -> Finding:
    stray = list(pkg.unrecorded_files or [])
    keep = base_version(pkg.version) or pkg.version
    variant = target_variant(ctx.facts, ctx.compat, py, keep) if pkg.name == "torch" else None
    where = posixpath.join(pkg.location or "", posixpath.dirname(stray[0]))
    loaded = any(lib.path and any(lib.path.endswith("/" + rel) for rel in stray) for lib in py.loaded_libraries)
    return METADATA(
        f"stray-files-{pkg.name}", Severity.ERROR if loaded else Severity.WARNING, subject=py.executable,
        summary=(f"{len(stray)} compiled file(s) in {where} belong to no installed distribution's RECORD, next to "
                 f"{pkg.name} {pkg.version}'s own: files of another build (first: {stray[0]})"),
        detail=("An install over another build that did not uninstall it first (--ignore-installed, --target, "
                "copying files, an interrupted upgrade) leaves the old build's libraries beside the new ones. "
                "torch and extensions find their libraries by name in that folder, so the stale one can be loaded "
                "(a CUDA build's libtorch_cuda.so next to a CPU build), and `pip uninstall` never removes it."),
        evidence=[Evidence(f"pythons[{i}].packages.{pkg.name}.unrecorded_files", stray, expected="none",
                           source=f"{pkg.name}'s RECORD")],
        items=stray if len(stray) > 1 else [],
        fix=Fix(f"Remove the files no RECORD claims from {where}, then reinstall {pkg.name} {keep} over its own (the "
                "other build may have overwritten some of them)",
                [command("rm", "-f", "--", *[posixpath.join(pkg.location or "", rel) for rel in stray],
                         shell=platform_of(ctx.facts, py).shell, what="a file path"),
                 pip_install(ctx.facts, py, [f"{pkg.name}=={keep}"], variant, force=True, no_deps=True)]),
    )
