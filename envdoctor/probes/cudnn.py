"""System CUDA libraries probe: cuDNN version from its headers, and libcudnn/cublas/nccl/... copies from `ldconfig -p`."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import os
import platform
import re
from typing import List, Optional, Tuple, Union

from envdoctor.model.facts import LibraryCopy, ProbeStatus, SystemLibraries
from envdoctor.probes.registry import ProbeContext, probe
from envdoctor.probes.sysroot import SysRoot

LDCONFIG_TIMEOUT_S = 10.0

# soname stem -> LibraryCopy.name; exact stems so libcublasLt / libcudnn_ops are not mistaken for these
LIBRARIES = {
    "libcudnn": "cudnn",
    "libcublas": "cublas",
    "libnccl": "nccl",
    "libnvJitLink": "nvjitlink",
    "libcudart": "cudart",
    "libcuda": "cuda",
}

HEADER_DIRS = (
    "/usr/include",
    "/usr/include/x86_64-linux-gnu",
    "/usr/include/aarch64-linux-gnu",
    "/usr/include/sbsa-linux-gnu",
    "/usr/local/cuda/include",
    "/usr/local/cuda-*/include",
    "/usr/local/cuda-*/targets/*/include",
    "/opt/cuda/include",
)

_DEFINE = re.compile(r"^\s*#\s*define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)", re.M)
# "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9"
_LDCONFIG_LINE = re.compile(r"^\s*(?P<soname>\S+)\s+\((?P<flags>[^)]*)\)\s+=>\s+(?P<path>\S.*?)\s*$")
_SO_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)*)$")


def parse_cudnn_header(text: str) -> Optional[str]:
    """"9.1.0" from cudnn_version.h (cuDNN >= 8) or cudnn.h (<= 7): CUDNN_MAJOR/MINOR/PATCHLEVEL."""
    found = {k: v for k, v in _DEFINE.findall(text)}
    if "MAJOR" not in found:
        return None
    return ".".join([found["MAJOR"], found.get("MINOR", "0"), found.get("PATCHLEVEL", "0")])


def parse_ldconfig_p(text: str) -> List[Tuple[str, str, str]]:
    """(soname, flags, path) per line of `ldconfig -p`."""
    out = []
    for line in text.splitlines():
        m = _LDCONFIG_LINE.match(line)
        if m:
            out.append((m.group("soname"), m.group("flags"), m.group("path")))
    return out


def _stem(soname: str) -> str:
    return soname.split(".so", 1)[0]


def _find_cudnn_header(fs: SysRoot) -> Tuple[Optional[str], Optional[str]]:
    for pattern in HEADER_DIRS:
        for d in sorted(fs.glob(pattern)):
            # Debian/Ubuntu packages install cudnn_version_v9.h and point cudnn_version.h at it (alternatives)
            versioned = fs.glob(f"{d}/cudnn_version_v*.h")
            names = ["cudnn_version.h"] + sorted(os.path.basename(p) for p in versioned)
            names.append("cudnn.h")
            for name in names:
                path = f"{d}/{name}"
                text = fs.read_text(path)
                version = parse_cudnn_header(text) if text is not None else None
                if version:
                    return version, path
    return None, None


def _ldconfig(runner, fs: SysRoot) -> Tuple[Optional[List[LibraryCopy]], Optional[str]]:
    exe = runner.which("ldconfig")
    if exe is None:
        # ldconfig lives in /sbin, which is not on a normal user's PATH
        for cand in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
            if fs.live and os.path.exists(cand):
                exe = cand
                break
    if exe is None:
        return None, "ldconfig not found"
    res = runner.run([exe, "-p"], timeout=LDCONFIG_TIMEOUT_S)
    if not res.ok:
        return None, res.describe()
    libs: List[LibraryCopy] = []
    seen = set()
    is_64bit = platform.architecture()[0] == "64bit"
    for soname, flags, path in parse_ldconfig_p(res.stdout):
        name = LIBRARIES.get(_stem(soname))
        if name is None:
            continue
        # 32-bit copies (libc6 without x86-64/AArch64) are never what a Python process loads
        if flags.strip() == "libc6" and is_64bit:
            continue
        real = fs.realpath(path)
        if (name, real) in seen:
            continue
        seen.add((name, real))
        version, source = library_file_version(fs.host(real), name)
        libs.append(LibraryCopy(name=name, path=real, version=version, origin="system", version_source=source,
                                soname=soname))
    return libs, None


# NCCL carries its version as text ("NCCL version 2.27.7+cuda12.9", printed under NCCL_DEBUG=INFO); the
# payload reads wheel and preloaded copies by the same rule in the target (_payload/libraries.library_version;
# tests/unit/probes/test_payload_pins.py holds the two to the same answers)
_NCCL_TEXT = re.compile(rb"NCCL version (\d+\.\d+\.\d+)")


def library_file_version(path: str, name: str) -> Tuple[Optional[str], Optional[str]]:
    """(version, where it came from) of a library file: the real file's full name (libcublas.so.12.4.5.8) or,
    for NCCL, the version text inside it. A SONAME's major alone (libnccl.so.2: "2") is not a version."""
    m = _SO_VERSION.search(os.path.basename(path))
    if m and "." in m.group(1):
        return m.group(1), f"full file name of {os.path.basename(path)}"
    if name == "nccl":
        import mmap

        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                m = _NCCL_TEXT.search(mm)
                found = m.group(1).decode("ascii") if m else None  # (read before the map closes)
        except (OSError, ValueError):
            found = None
        if found:
            return found, "text inside the file"
    return None, None


@probe("system_libraries", failed=lambda reason: SystemLibraries(status=ProbeStatus.FAILED, reason=reason))
def collect_system_libraries(ctx: ProbeContext) -> SystemLibraries:
    return probe_system_libraries(ctx.runner, root=ctx.fs)


def probe_system_libraries(runner, root: Union[str, SysRoot] = "/") -> SystemLibraries:
    """Absent when neither a cuDNN header nor any of the libraries is installed."""
    fs = SysRoot.of(root)
    version, header = _find_cudnn_header(fs)
    libs, problem = _ldconfig(runner, fs)
    if libs is None and version is None:
        return SystemLibraries(status=ProbeStatus.FAILED, reason=f"no cuDNN header found; {problem}")
    if not libs and version is None:
        return SystemLibraries(
            status=ProbeStatus.ABSENT, reason="no cuDNN header and no CUDA libraries in the ldconfig cache",
            libraries=[],
        )
    names = sorted({lib.name for lib in libs or []})
    reason = f"cuDNN {version} ({header})" if version else "no cuDNN header"
    reason += f"; ldconfig lists {', '.join(names) or 'none of cudnn/cublas/nccl/nvjitlink/cudart/cuda'}"
    if problem:
        reason += f"; {problem}"
    return SystemLibraries(status=ProbeStatus.OK, reason=reason, cudnn_version=version, cudnn_path=header,
                           libraries=libs or [])
