"""PEP 508 marker variables of the judged interpreter, shared by the checks that evaluate Requires-Dist lines
(packages.torch-requires, packages.requires-dist)."""

from __future__ import annotations

from typing import Dict, Optional

from ..model.facts import PythonEnv


def marker_environment(py: PythonEnv, machine: Optional[str] = None) -> Dict[str, str]:
    """PEP 508 marker variables of the judged interpreter, from its facts (not envdoctor's own interpreter)."""
    plat = (py.platform or "").lower()
    if plat.startswith("linux"):
        system, sys_platform, os_name = "Linux", "linux", "posix"
    elif plat.startswith(("win", "mingw")):
        system, sys_platform, os_name = "Windows", "win32", "nt"
    elif plat.startswith("macosx"):
        system, sys_platform, os_name = "Darwin", "darwin", "posix"
    else:
        system, sys_platform, os_name = "", "", ""
    arch = plat.rsplit("-", 1)[-1] if "-" in plat else (machine or "")
    arch = {"amd64": "AMD64" if system == "Windows" else "x86_64", "win32": "x86"}.get(arch, arch)
    version = py.python_version or ""
    mm = ".".join(version.split(".")[:2])
    impl = py.implementation or "CPython"
    return {"python_version": mm, "python_full_version": version, "platform_system": system,
            "sys_platform": sys_platform, "os_name": os_name, "platform_machine": arch,
            "implementation_name": impl.lower(), "platform_python_implementation": impl,
            "platform_release": "", "platform_version": "", "implementation_version": version, "extra": ""}
