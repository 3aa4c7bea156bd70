"""The interpreter's own packaging: pip can run in it (and the `pip` on PATH is its own), and a venv that sees the
base's packages (include-system-site-packages) imports one consistent torch set."""

from __future__ import annotations

from typing import List

from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command, installer_for, pip_command, pip_install
from ..remedies.python import pip_bootstrap
from ..remedies.torch_plan import target_variant
from ._interpreter import in_own_site, split_companions, venv_other_minor
from .base import PROBED, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

PIP = Findings("packages.pip", "PIP_UNAVAILABLE", kinds=("missing", "path-pip-elsewhere", "externally-managed",
                                                         "externally-managed-no-override"))
PEP668_DOC = "https://packaging.python.org/specifications/externally-managed-environments/"
ENSUREPIP_DOC = "https://docs.python.org/3/library/ensurepip.html"


@check(PIP, "pip runs in the judged interpreter, and `pip` on PATH is its own", categories=("PIP_UNAVAILABLE",),
       applies=PROBED)
def check_pip(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    judged = False
    for i, py in enumerate(ctx.facts.pythons):
        if py.status != "ok" or py.has_pip is None:
            continue
        judged = True
        name = py.executable or "the interpreter"
        inst = installer_for(ctx.facts, py)
        if py.has_pip is False and inst.tool == "pip" and not venv_other_minor(py):
            # (a venv whose python now starts another minor has its pip in the lib/pythonX.Y it no longer reads:
            # packages.metadata/venv-python says so, and its fix brings pip back with the rest)
            findings.append(PIP.warning(
                "missing",
                summary=f"{name} has no pip: `{name} -m pip` fails with 'No module named pip'",
                detail=("A venv made with --without-pip (or a distribution's Python without its pip package) cannot "
                        "install anything with pip; every pip fix in this report starts with ensurepip, which "
                        "installs the pip bundled with the interpreter, offline."
                        + ("" if py.has_ensurepip is not False else
                           " ensurepip is not importable here either: install the distribution's python3-venv / "
                           "python3-pip package, or use uv (`uv pip install --python ...` needs no pip inside).")),
                evidence=[Evidence(f"pythons[{i}].has_pip", False, expected="True"),
                          Evidence(f"pythons[{i}].has_ensurepip", py.has_ensurepip)],
                fix=Fix("Install pip into the interpreter with ensurepip" if py.has_ensurepip is not False and
                        not py.externally_managed else "Install pip from the distribution's package (ensurepip "
                        "cannot run here)", [str(pip_bootstrap(inst))], ENSUREPIP_DOC),
            ))
        if py.externally_managed and py.package("torch") is not None and inst.tool == "pip" and py.has_pip:
            findings.append(_externally_managed(i, py, name, inst))
        pp = py.path_pip
        # the active environment's own `pip` going elsewhere is the trap (a conda env without pip, a venv without
        # pip under an activated base); with --python the PATH was never this interpreter's, and every fix here
        # already runs `<that python> -m pip`: nothing to say (the fact stays in the JSON, pythons[i].path_pip)
        active = (py.requested_as or "").startswith("$")
        if pp is not None and pp.same_interpreter is False and pp.interpreter and active:
            findings.append(PIP(
                "path-pip-elsewhere", Severity.WARNING,
                summary=(f"`pip` on PATH ({pp.path}) runs {pp.interpreter}, not {name}: `pip install` there "
                         "installs into another environment"),
                detail=("A pip script runs the interpreter its first line names. Use the judged interpreter's "
                        "own pip through `python -m pip`, as every fix here does."),
                evidence=[Evidence(f"pythons[{i}].path_pip.path", pp.path),
                          Evidence(f"pythons[{i}].path_pip.interpreter", pp.interpreter, expected=name,
                                   source=f"the first line of {pp.path}")],
                fix=Fix(f"Install with {name} -m pip (not the bare `pip`)",
                        [pip_command(inst, "--version")]),
            ))
    if not judged:
        raise SkipCheck("whether the interpreter has pip is unknown (no interpreter answered, or older facts)")
    return findings


SYSTEM_SITE = Findings("packages.system-site", "VENV_SYSTEM_SITE_MIXED", kinds=("{package}", "two-torches"))


@check(SYSTEM_SITE, "A venv that sees the base's packages imports one consistent torch set",
       categories=("VENV_SYSTEM_SITE_MIXED",), applies=PROBED)
def check_system_site(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    judged = False
    for i, py in enumerate(ctx.facts.pythons):
        torch_pkg = py.package("torch")
        if torch_pkg is None or not torch_pkg.location or py.site_packages is None:
            continue
        judged = True
        name = py.executable or "the interpreter"
        split = split_companions(ctx.compat, py)
        hidden = [c for c in torch_pkg.shadowed or [] if in_own_site(py, c.location) is False]
        if hidden and not split and in_own_site(py, torch_pkg.location):
            findings.append(_two_torches(i, py, name, torch_pkg, hidden))
        for s in split:
            pkg, t = s.package, s.torch
            other_torch = next((c for c in t.shadowed or [] if c.location == pkg.location), None)
            torches = [f"torch {t.version} at {t.location} (imported)"] + [
                f"torch {c.version} at {c.location} (shadowed)" for c in t.shadowed or []]
            pairs = f", which pairs with torch {other_torch.version} there" if other_torch else ""
            # Which set to keep: the torch that is imported decides (it is what runs, and it is the copy the
            # user installed on purpose where the venv's own comes first). When a matching copy of the companion
            # is already installed but hidden by a mismatched one in this environment, uninstalling the hiding
            # copy leaves a consistent set with no download; otherwise the matching companion is installed next to
            # torch, where it then shadows the base's copy (pip installs into the venv and leaves the base alone).
            inst = installer_for(ctx.facts, py)
            if s.match is not None and in_own_site(py, pkg.location):
                fix = Fix(f"Uninstall {name}'s {pkg.name} {pkg.version}: the {pkg.name} {s.match.version} at "
                          f"{s.match.location} then imported pairs with torch {t.version}",
                          [pip_command(inst, "uninstall", "-y", pkg.name)])
            else:
                tver = (t.version or "").split("+")[0]
                pin = f"{pkg.name}=={s.want}" if s.want else pkg.name
                variant = target_variant(ctx.facts, ctx.compat, py, tver) if pkg.name not in (
                    "triton", "pytorch-triton") else None
                fix = Fix(f"Install the {pkg.name} that pairs with torch {t.version} into {name} itself: it then "
                          f"comes before the base's {pkg.name} {pkg.version}",
                          [pip_install(ctx.facts, py, [f"torch=={tver}", pin], variant)])
            findings.append(SYSTEM_SITE.error(
                pkg.name,
                summary=(f"{name} imports torch {t.version} from {t.location} but {pkg.name} {pkg.version} from "
                         f"{pkg.location}{pairs}: two sets mixed"),
                detail=("A venv made with --system-site-packages sees the base interpreter's packages after its "
                        "own: a companion installed only in the base is imported next to the venv's torch. Its "
                        "compiled operators are built for the other torch ('operator torchvision::nms does not "
                        "exist'). Torches seen: " + "; ".join(torches) + "."),
                evidence=[Evidence(f"pythons[{i}].packages.torch", f"{t.version} at {t.location}"),
                          Evidence(f"pythons[{i}].packages.{pkg.name}", f"{pkg.version} at {pkg.location}",
                                   expected=f"{s.want or 'the release'} that pairs with torch {t.version}"),
                          Evidence(f"pythons[{i}].packages.torch.shadowed",
                                   [f"{c.version} at {c.location}" for c in t.shadowed or []] or None),
                          Evidence(f"pythons[{i}].venv.include_system_site_packages",
                                   py.venv.include_system_site_packages if py.venv else None)],
                fix=fix,
            ))
    if not judged:
        raise SkipCheck("no torch distribution with a known location and site-packages (or older facts)")
    return findings



def _two_torches(i: int, py, name: str, torch_pkg, hidden) -> Finding:
    """The venv's own torch hides the base's and every companion pairs with it: one consistent set is imported,
    so this is a note; it names both because the venv's copy is often one that pip pulled in as a dependency over
    the base's build (a container's tuned torch reused through --system-site-packages)."""
    inst = installer_for(None, py)
    other = hidden[0]
    return SYSTEM_SITE.info(
        "two-torches",
        summary=(f"{name} sees two torches: its own {torch_pkg.version} at {torch_pkg.location} (imported) and the "
                 f"base's {other.version} at {other.location} (hidden)"),
        detail=("The set imported is consistent. If the base's torch is the one meant (a container's build reused "
                "with --system-site-packages), uninstalling the venv's copy brings it back; the venv's companions, "
                "if any, must then pair with it."),
        evidence=[Evidence(f"pythons[{i}].packages.torch", f"{torch_pkg.version} at {torch_pkg.location}"),
                  Evidence(f"pythons[{i}].packages.torch.shadowed", [f"{c.version} at {c.location}" for c in hidden])],
        fix=Fix("Only if the base's torch is the one meant: uninstall the venv's copy",
                [pip_command(inst, "uninstall", "-y", "torch")]),
    )


def _externally_managed(i: int, py, name: str, inst) -> Finding:
    """torch in a Python that PEP 668 marks EXTERNALLY-MANAGED (a distribution's python3, its python3-torch, or a
    --break-system-packages install): pip >= 23.0 refuses to change it. Every pip fix here carries the override
    (remedies/python.pip_command); pip 23.0 itself enforces the marker but has no override yet (23.0.1 added it:
    pip's changelog), so there only a venv works."""
    pip = py.package("pip")
    version = pip.version if pip is not None else None
    stuck = version is not None and version.split("+")[0] in ("23.0", "23.0.0")
    evidence = [Evidence(f"pythons[{i}].externally_managed", True, source="EXTERNALLY-MANAGED in its stdlib"),
                Evidence(f"pythons[{i}].packages.pip", version)]
    if stuck:
        return PIP.warning(
            "externally-managed-no-override",
            summary=(f"{name} is EXTERNALLY-MANAGED (PEP 668) and its pip {version} refuses to install there with no "
                     "override (pip 23.0.1 added --break-system-packages): no pip fix can run in it"),
            detail="Install into a venv made from it (its packages stay the distribution's), or upgrade the "
                   "distribution's pip package.",
            evidence=evidence,
            fix=Fix("Make a venv that sees the system's packages and install there",
                    [command(name, "-m", "venv", "--system-site-packages", ".venv")], PEP668_DOC))
    return PIP.info(
        "externally-managed",
        summary=(f"{name} is EXTERNALLY-MANAGED (PEP 668): pip refuses to install or uninstall there, so every pip "
                 "fix in this report carries --break-system-packages"),
        detail=("The distribution owns this Python's packages; changing them with pip can break its own tools. A "
                "venv made from it with --system-site-packages keeps torch visible and takes pip's changes apart."),
        evidence=evidence,
        fix=Fix("To keep the distribution's packages untouched: a venv that sees them, and install there",
                [command(name, "-m", "venv", "--system-site-packages", ".venv")], PEP668_DOC))
