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


# ---- pip replaced the installed torch while installing a torch extension (issue 42 round 10: xformers#1146, pip
# uninstalling torch 2.4.1 to install xformers; ComfyUI#99 and xformers#802 tell the same in words). An extension's
# wheel pins the torch its compiled module is built for, so pip swaps torch when the release it picked is built
# for another one; an install that asked for torch itself is a torch change the user wanted, and is not judged.

REPLACED = Findings("diagnose.extension-replaced-torch", "THIRD_PARTY_EXTENSION_MISMATCH", kinds=("pip-swapped-torch",))


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@check(REPLACED, "An extension's install left the installed torch in place")
def check_extension_replaced_torch(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov = paste.provenance or {}
    replaced = (prov.get("paste.pip_replaced") or {}).get("value")
    if not replaced:
        raise SkipCheck("the paste shows no pip install that uninstalled torch", not_applicable="torch not replaced")
    from ..compat.torch_family import EXTENSION, torch_family

    try:
        table = torch_family(ctx.compat)
    except LookupError:
        raise SkipCheck("the torch family table is not in this matrix") from None
    old, _, new = str(replaced).partition(" -> ")
    if not _parses(old) or new and not _parses(new):
        raise SkipCheck(f"the torch versions pip showed ({replaced}) do not parse")
    if new and Version(new).base_version == Version(old).base_version:
        return []  # the same release reinstalled (--force-reinstall, another variant): not another torch
    collected = [_norm(n) for n in str((prov.get("paste.pip_collected") or {}).get("value") or "").split(",") if n]
    extensions = [r.distribution for r in table.rows if r.role == EXTENSION
                  and (_norm(r.distribution) in collected or any(_norm(m) in collected for m in r.modules))]
    asked = [_norm(a.partition("==")[0]) for a in
             str((prov.get("paste.install_requests") or {}).get("value") or "").split()]
    if not extensions or "torch" in asked:
        return []
    ext = extensions[0]
    from ..remedies import installer_for, pip_command

    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    return [REPLACED.warning(
        "pip-swapped-torch", confidence="medium",
        summary=(f"Installing {ext} made pip uninstall the installed torch {old}"
                 + (f" for torch {new}" if new else "") + f": the {ext} release pip picked is built for another torch"),
        detail=(f"{ext}'s wheels link torch's C++ library of one release and pin it, so pip replaces torch when the "
                f"release it picks is built for another one. The environment's torch (and companions built for "
                f"torch {old}) changed with it; pinning torch in the same command makes pip pick the {ext} release "
                f"built for torch {old}, or say that none exists."),
        evidence=[Evidence("paste.pip_replaced", replaced, expected=f"torch {old} kept",
                           source=str((prov.get("paste.pip_replaced") or {}).get("reader"))),
                  Evidence("paste.pip_collected", (prov.get("paste.pip_collected") or {}).get("value"))],
        fix=Fix(f"Install {ext} with torch pinned to {old}, so pip picks the {ext} release built for it (or build "
                f"{ext} from source against it)",
                [pip_command(installer_for(ctx.facts, py), "install", f"torch=={Version(old).public}", ext)]))]


def _parses(*versions: str) -> bool:
    try:
        for v in versions:
            Version(v)
    except InvalidVersion:
        return False
    return True


# ---- packages installed from an extension's wheel index built for another torch release (issue 42 round 10:
# rusty1s/pytorch_sparse#150, the torch-1.7.1 PyG index beside torch 1.7.0). PyG, DGL, OpenMMLab and FlashInfer
# publish one index per torch release (and CUDA); a wheel from another release's index links another torch.

INDEX = Findings("diagnose.extension-index", "THIRD_PARTY_EXTENSION_MISMATCH", kinds=("other-torch-index",))


@check(INDEX, "Extension wheels come from the index built for the installed torch")
def check_extension_index(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    said = (paste.provenance or {}).get("paste.extension_index") or {}
    if not said.get("value"):
        raise SkipCheck("the paste installs nothing from an extension's per-torch wheel index",
                        not_applicable="no extension index")
    head, _, pinned = str(said["value"]).partition("|")
    built, _, names = head.partition(" ")
    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    torch = pinned or (py.torch.version if py is not None and py.torch is not None else None)
    if not torch or not _parses(built, torch):
        raise SkipCheck("the paste does not say which torch the extension wheels are installed beside")
    have = Version(torch).release
    want = Version(built).release
    if have[:len(want)] == want:
        return []
    same_minor = have[:2] == want[:2]
    have_s = ".".join(str(x) for x in have[:max(len(want), 2)])
    return [INDEX.warning(
        "other-torch-index", confidence="low" if same_minor else "medium",
        summary=(f"{names} installed from the wheel index for torch {built}, but the paste's torch is {torch}"),
        detail=("The extension's index holds wheels built against one torch release; beside another torch they "
                "fail to import (undefined symbol, missing library) or misbehave. "
                + ("Within one minor release the wheels often still load: if the import works, this is not the "
                   "cause." if same_minor else "")),
        evidence=[Evidence("paste.extension_index", built, expected=have_s, source=str(said.get("reader"))),
                  Evidence("pythons[0].torch.version", torch)],
        fix=Fix(f"Install {names} from the index for torch {have_s} (the same URL with the installed torch's "
                "release and CUDA), or install the torch the index is built for", []))]


# ---- a torch extension release with no kernels for the paste's GPU (issue 42 round 10: FlashInfer before 0.1.6
# on a Tesla T4, sglang#931; the cited rows of ``context.extension_min_compute_capability``)

GPU = Findings("diagnose.extension-gpu", "THIRD_PARTY_EXTENSION_MISMATCH", kinds=("gpu-below-release",))


@check(GPU, "Each torch extension's release has kernels for the paste's GPUs")
def check_extension_gpu(ctx: CheckContext) -> List[Finding]:
    paste_or_skip(ctx)
    rows = [r for r in ((signature_context(ctx.compat, "extension_min_compute_capability") or {}).get("value") or [])
            if isinstance(r, dict)]
    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    pairs = [(r, py.package(r["package"])) for r in rows] if py is not None else []
    pairs = [(r, p) for r, p in pairs if p is not None and p.version and _parses(p.version)
             and Version(p.version) < Version(str(r["before"]))]
    if not pairs:
        raise SkipCheck("no torch extension release in the paste is listed with a least GPU architecture",
                        not_applicable="no listed extension release")
    out: List[Finding] = []
    for gi, g in enumerate(ctx.facts.driver.gpus):
        cc = g.compute_capability or (ctx.compat.gpu_compute_capability(g.name) if g.name else None)
        if not cc or not _parses(cc):
            continue
        for r, p in pairs:
            if Version(cc) >= Version(str(r["min_cc"])):
                continue
            out.append(GPU.error(
                "gpu-below-release", confidence="medium",
                summary=(f"{p.name} {p.version} has no kernels for the {g.name} (compute capability {cc}): its "
                         f"releases before {r['before']} are built for compute capability {r['min_cc']} and newer"),
                detail=("The extension's kernels are compiled for the architectures its release supports; on an "
                        "older GPU it fails when its kernels are first used (or refuses to start), whatever torch "
                        "and CUDA are installed."),
                evidence=[Evidence(f"pythons[0].packages.{p.name}", p.version, expected=f">= {r['before']}",
                                   source=r["source"]),
                          Evidence(f"driver.gpus[{gi}].compute_capability", cc, expected=f">= {r['min_cc']}")],
                fix=Fix(f"Use a {p.name} release with kernels for compute capability {cc} (the cited release notes "
                        f"say which), or turn the {p.name} backend off on this GPU", [], r["source"].split(" ")[0])))
            break
    return out
