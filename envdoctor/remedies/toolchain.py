"""Host-compiler install commands per platform, for nvcc's gcc limit."""

from __future__ import annotations

from typing import List, Optional

from ..model.facts import Facts
from .platform import platform_of
from .shell import Raw, command, comment_line, export, quote


def host_compiler_install(facts: Facts, major: int) -> List[str]:
    """Install gcc ``major`` next to the system one and point nvcc at it (NVCC_CCBIN is read by
    torch.utils.cpp_extension and CMake's CUDA support; CC/CXX by setuptools)."""
    plat = platform_of(facts)
    n = str(major)
    fam = plat.family
    point = [export("CC", f"gcc-{n}"), export("CXX", f"g++-{n}"), export("NVCC_CCBIN", f"/usr/bin/gcc-{n}")]
    if fam == "rhel":
        # Red Hat ships newer and older compilers as gcc-toolset-N Software Collections, enabled per shell
        return [command("sudo", "dnf", "install", "-y", f"gcc-toolset-{n}"),
                command("source", f"/opt/rh/gcc-toolset-{n}/enable", comment="then build in this shell")]
    if fam == "suse":
        return [command("sudo", "zypper", "install", "-y", f"gcc{n}", f"gcc{n}-c++")] + point
    if fam == "arch":
        return [command("sudo", "pacman", "-S", "--needed", f"gcc{n}")] + point
    if fam == "fedora":
        return [comment_line(f"Fedora packages one gcc: build in a container (or toolbox) with gcc {n}, or use a "
                             "CUDA toolkit that accepts this gcc")]
    if plat.windows:
        return []
    # Ubuntu/Debian, and the default when the distribution is unknown
    return [command("sudo", "apt-get", "install", "-y", f"gcc-{n}", f"g++-{n}")] + point


def cuda_toolkit_first(version: str, root: Optional[str] = None, var: str = "CUDA_HOME") -> str:
    """Put the CUDA ``version`` toolkit ("12.4") first for extension builds: ``root`` (a toolkit found on this
    machine), else its default install path; ``var`` is the variable torch reads it from (CUDA_HOME or CUDA_PATH)."""
    root = root or f"/usr/local/cuda-{version}"
    return command("export", f"{var}={root}", Raw("PATH=" + quote(f"{root}/bin") + ":$PATH"))
