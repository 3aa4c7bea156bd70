"""Reader for the toolchain in a paste: `nvcc --version`, gcc banners and loose "CUDA x.y.z" mentions."""

from __future__ import annotations

import re

from ...parsers.nvcc import parse_nvcc_version
from .base import LOOSE, STRUCTURED, Acc, Paste

_GCC = re.compile(r"^\s*(?:gcc|cc|g\+\+|c\+\+)(?:-\d+)?(?:\.exe)?\s+\([^)]*\)\s+(\d+\.\d+(?:\.\d+)?)")
_GCC_LOOSE = re.compile(r"\bgcc(?: version)?\s*[:=]?\s*(?:gcc\s*)?(?:\([^)]*\)\s*)?(\d+\.\d+(?:\.\d+)?)", re.I)
# CMake's configure log names the compilers it found: "-- The CXX compiler identification is GNU 13.2.0", "-- The
# CUDA compiler identification is NVIDIA 12.1.105" (printed by cmake after running each compiler)
_CMAKE_ID = re.compile(r"The (C|CXX|CUDA) compiler identification is (GNU|NVIDIA|Clang) (\d+\.\d+(?:\.\d+)?)")
_CUDA_LOOSE = re.compile(r"\bCUDA(?:\s+toolkit)?\s*[:=]?\s*v?(\d+\.\d+\.\d+)\b", re.I)
# nvcc's release said in words ("my nvcc --version is 10.0", "nvcc -V: 11.5", "nvcc shows 12.1"): the toolkit on
# PATH, which builds extensions (issue 42, round 19: pyg-004)
_NVCC_SAID = re.compile(r"\bnvcc(?:\s+(?:--version|-V|version))?\s*(?:is|=|:|says|shows|reports|gives)\s*(?:CUDA\s*|release\s*|V)?"
                        r"(\d{1,2}\.\d)(?:\.\d+)?\b(?!\.\d)", re.I)


def read_toolchain(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    nv_lines = paste.with_any(["cuda compilation tools"])
    nv = parse_nvcc_version("\n".join(lines[i] for i in nv_lines[:5])) if nv_lines else None
    if nv:
        acc.put("toolkit.version", nv[0], STRUCTURED, "nvcc --version")
        acc.put("toolkit.version_full", nv[1], STRUCTURED, "nvcc --version")
        acc.add_found("nvcc --version")
    for i in paste.distinct(paste.with_any(["gcc", "cuda", "cc ", "c++", "compiler identification", "nvcc"])):
        line = lines[i]
        said = None if nv else _NVCC_SAID.search(line)
        if said:
            acc.put("toolkit.version", said.group(1), LOOSE, f"nvcc's release in words: {said.group(0)}")
            acc.add_found("nvcc's release in words")
        if "Linux version" in line or "[GCC" in line:
            continue  # the compiler that built the kernel or Python, not the host's
        m = _CMAKE_ID.search(line)
        if m:
            lang, vendor, version = m.groups()
            if vendor == "GNU" and lang in ("C", "CXX"):
                acc.put("host.gcc_version", version, STRUCTURED - 1, f"CMake: {m.group(0)}")
            elif vendor == "NVIDIA" and lang == "CUDA":
                acc.put("toolkit.version", ".".join(version.split(".")[:2]), STRUCTURED - 1, f"CMake: {m.group(0)}")
                acc.put("toolkit.version_full", version, STRUCTURED - 1, f"CMake: {m.group(0)}")
            acc.add_found("CMake's compiler identification")
            continue
        m = _GCC.match(line)
        if m:
            acc.put("host.gcc_version", m.group(1), STRUCTURED, "gcc --version")
            acc.add_found("gcc --version")
            continue
        m = _GCC_LOOSE.search(line)
        if m:
            acc.put("host.gcc_version", m.group(1), LOOSE, line.strip())
        m = _CUDA_LOOSE.search(line)
        if m and "Version:" not in line:
            acc.put("toolkit.version", ".".join(m.group(1).split(".")[:2]), LOOSE, line.strip())
            acc.put("toolkit.version_full", m.group(1), LOOSE, line.strip())
