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
