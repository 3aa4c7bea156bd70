"""A framework other than torch in a release with no GPU build for the paste's platform (issue 42).

TensorFlow 2.10 was the last release with GPU support on native Windows: from 2.11 the Windows package is a CPU
build, so ``tf.config.list_physical_devices('GPU')`` is empty whatever CUDA and cuDNN are installed (the release
notes of 2.11.1 and tensorflow.org/install/pip; the cited value is ``context.tensorflow_native_windows_gpu_last``
of compat_data/error_signatures.json). The readers give the release (an issue template's field, a pin, the printed
version: diagnose/readers/frameworks.py) and the platform (host.os, host.wsl); WSL is Linux, and not judged here.
"""

from __future__ import annotations

from typing import List, Optional

from packaging.version import InvalidVersion, Version

from ..compat.signatures import signature_context
from ..model.findings import Evidence, Finding, Fix
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

PLATFORM = Findings("diagnose.framework-platform", "FRAMEWORK_CPU_ONLY_BUILD", kinds=("tensorflow-native-windows",))
WSL_DOC = "https://www.tensorflow.org/install/pip#windows-wsl2"


def _tensorflow(ctx: CheckContext) -> Optional[str]:
    for py in ctx.facts.pythons:
        for name in ("tensorflow", "tensorflow-gpu"):
            p = py.package(name)
            if p is not None and p.version:
                return p.version
    return None


@check(PLATFORM, "The framework in the paste has a GPU build for its platform")
def check_framework_platform(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    version = _tensorflow(ctx)
    if version is None:
        raise SkipCheck("the paste names no TensorFlow release", not_applicable="no framework release named")
    host = ctx.facts.host
    if host.wsl:
        return []  # WSL2 runs the Linux build, which has GPU support
    if host.os != "Windows":
        raise SkipCheck("the paste does not say the platform is native Windows")
    row = signature_context(ctx.compat, "tensorflow_native_windows_gpu_last")
    if not row:
        raise SkipCheck("the last TensorFlow release with a native-Windows GPU build is not in the catalogue")
    try:
        newer = Version(version) > Version(str(row["value"]) + ".999")
    except InvalidVersion:
        raise SkipCheck(f"TensorFlow version {version!r} does not parse") from None
    if not newer:
        return []
    prov = paste.provenance or {}
    where = (prov.get("host.os") or {}).get("reader")
    evidence = [Evidence("pythons[0].packages.tensorflow", version, expected=f"<= {row['value']} on native Windows",
                         source=row["source"]),
                Evidence("host.os", "Windows", source=where)]
    return [PLATFORM.error(
        "tensorflow-native-windows",
        f"TensorFlow {version} on native Windows has no GPU build: it runs on the CPU whatever CUDA is installed",
        confidence="high", evidence=evidence,
        detail=(f"TensorFlow {row['value']} was the last release with GPU support on native Windows; from the next "
                "release the Windows package is built without CUDA, so list_physical_devices('GPU') is empty and "
                "installing another CUDA or cuDNN changes nothing."),
        fix=Fix("Run TensorFlow in WSL2 (pip install tensorflow[and-cuda] there), or use TensorFlow "
                f"{row['value']} on native Windows (with CUDA 11.2 and cuDNN 8.1), or tensorflow-cpu with the "
                "DirectML plug-in", [], WSL_DOC))]


# ---- a torch extension's release beside a torch it was not built for (issue 42: an xformers dev build beside torch
# 2.7.1). The extension's release notes name the one torch its pre-built wheels are for (cited rows of
# ``context.extension_torch_builds``); a development build of a release (0.0.32.dev1073) comes before the release and
# is built from the same branch, so it is judged against that release's torch at low confidence.

RELEASE = Findings("diagnose.extension-release", "THIRD_PARTY_EXTENSION_MISMATCH", kinds=("other-torch",))


def _release_rows(compat) -> list:
    row = signature_context(compat, "extension_torch_builds") or {}
    return [r for r in (row.get("value") or []) if isinstance(r, dict)]


@check(RELEASE, "Each torch extension's release is built for the installed torch")
def check_extension_release(ctx: CheckContext) -> List[Finding]:
    paste_or_skip(ctx)
    rows = _release_rows(ctx.compat)
    if not rows:
        raise SkipCheck("no extension release is paired with a torch release in the catalogue")
    out: List[Finding] = []
    judged = False
    for py in ctx.facts.pythons:
        torch = py.torch.version if py.torch is not None else None
        if not torch:
            continue
        try:
            have = Version(torch).base_version
        except InvalidVersion:
            continue
        for pkg in py.packages:
            try:
                v = Version(pkg.version)
            except (InvalidVersion, TypeError):
                continue
            dev = v.is_devrelease or v.is_prerelease
            release = v.base_version if dev else v.public
            match = next((r for r in rows if r.get("package") == pkg.name and
                          (Version(str(r["release"])) == Version(release) if not dev else
                           str(r["release"]) == v.base_version)), None)
            if match is None:
                continue
            judged = True
            want = str(match["torch"])
            if want == have:
                continue
            what = f"{pkg.name} {pkg.version}" + (f" (a development build of {release})" if dev else "")
            evidence = [Evidence(f"pythons[0].packages.{pkg.name}", pkg.version, expected=f"built for torch {want}",
                                 source=match["source"]),
                        Evidence("pythons[0].torch.version", torch, expected=want)]
            summary = f"{what} is built for torch {want}, and the paste's torch is {torch}"
            fix = Fix(f"Install the {pkg.name} release built for torch {have} (its release notes name the torch), or "
                      f"the torch it was built for; pip install -U {pkg.name} resolves a pinned release for the "
                      "installed torch only when the index has one", [], match["source"])
            detail = (f"{pkg.name}'s pre-built wheels link torch's C++ library of one release: its {release} release "
                      f"is built for torch {want}, so torch {torch} may fail to load its kernels (or load them and "
                      "fail on a changed operator).")
            if dev:
                out.append(RELEASE.warning("other-torch", summary, confidence="low", evidence=evidence, fix=fix,
                                           detail=detail + " A development build is judged by the release it "
                                           "precedes, so this is a lead."))
            else:
                out.append(RELEASE.error("other-torch", summary, confidence="high", evidence=evidence, fix=fix,
                                         detail=detail))
    if not judged:
        raise SkipCheck("no torch extension release in the paste is paired with a torch release in the catalogue",
                        not_applicable="no paired extension release")
    return out
