"""CUDA libraries the dynamic loader could pick before torch's wheels (LD_PRELOAD, LD_LIBRARY_PATH, conda), the
ones mapped into this process after `import torch`, and each one's version from the file."""

import os
import re
from typing import Any, Dict, List, Optional, Tuple

from .elf import elf_read

# the families torch's pip wheels ship as nvidia-* wheels; libcuda (the driver) is the system's by design
_SHIPPED_LIB = re.compile(
    r"^lib(cudnn\w*|cublas(?:Lt)?|nccl|nvJitLink|cudart|cufft|curand|cusparse(?:Lt)?|cusolver|nvrtc|nvshmem\w*)"
    r"(?:[.-][0-9a-f]{8})?\.so(?:\.([0-9][0-9.]*))?$"
)
# libraries that carry their own version in plain text (NCCL prints it with NCCL_DEBUG=INFO);
# checked: libnccl.so.2 of nvidia-nccl-cu13 2.30.7 holds "NCCL version 2.30.7+cuda13.3"
_VERSION_TEXT = {"nccl": re.compile(rb"NCCL version (\d+\.\d+\.\d+)")}
_REAL_NAME_VERSION = re.compile(r"\.so\.(\d+\.\d+(?:\.\d+)*)$")


def lib_family(basename: str) -> Optional[str]:
    m = _SHIPPED_LIB.match(basename) or _MAPPED_LIB.match(basename)
    if not m:
        return None
    family = m.group(1).lower()
    if family == "cusparselt":
        return family
    for prefix in ("cudnn", "cublas", "cusparse", "nvshmem"):
        if family.startswith(prefix):
            return prefix
    return family


def library_version(path: str, family: Optional[str],
                    owners: Optional[Dict[str, Tuple[str, str]]] = None) -> Tuple[Optional[str], Optional[str]]:
    """(version, where it came from) of one library file, from the file rather than its link name:
    the owning wheel's metadata, a version string inside it, or the real file's full name
    (libcublas.so.12.4.5.8). libnccl.so.2 says "2" about NCCL 2.27.7: that is never used."""
    real = os.path.realpath(path)
    owner = (owners or {}).get(real)
    if owner:
        return owner[1], f"metadata of the {owner[0]} wheel"
    pattern = _VERSION_TEXT.get(family or "")
    if pattern is not None:
        found = _find_in_file(real, pattern)
        if found:
            return found, "text inside the file"
    m = _REAL_NAME_VERSION.search(os.path.basename(real))
    if m:
        return m.group(1), "full file name of " + os.path.basename(real)
    return None, None


def _find_in_file(path: str, pattern: Any) -> Optional[str]:
    import mmap

    try:
        with open(path, "rb") as f:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                m = pattern.search(mm)
                return m.group(1).decode("ascii") if m else None
    except (OSError, ValueError):
        return None


def _split_preload(value: str) -> List[str]:
    # ld.so(8): LD_PRELOAD entries are separated by spaces or colons; /etc/ld.so.preload by whitespace
    return [p for p in re.split(r"[:\s]+", value or "") if p]


def _resolve(name: str, dirs: List[str]) -> Optional[str]:
    for d in dirs:
        candidate = os.path.join(d, name)
        if os.path.isfile(candidate):
            return candidate
    return None


DEFAULT_LIB_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                    "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
MAX_DIR_ENTRIES = 5000


def _candidate(path: Optional[str], name: str, via: str, origin: str,
               owners: Optional[Dict[str, Tuple[str, str]]]) -> Dict[str, Any]:
    family = lib_family(os.path.basename(path or name))
    rec: Dict[str, Any] = {"name": family or os.path.basename(path or name), "path": path, "via": via,
                           "origin": origin, "soname": None, "version": None, "version_source": None}
    if path and os.path.isfile(path):
        elf = elf_read(path)
        rec["soname"] = elf.get("soname") if elf else None
        rec["version"], rec["version_source"] = library_version(path, family, owners)
    return rec


def library_candidates(env: Dict[str, Optional[str]], conda_prefixes: List[str],
                       owners: Optional[Dict[str, Tuple[str, str]]] = None,
                       preload_file: str = "/etc/ld.so.preload") -> List[Dict[str, Any]]:
    """CUDA libraries the dynamic loader could pick before torch's own wheels: every LD_PRELOAD and
    /etc/ld.so.preload entry (loaded first, whatever RPATH says), and copies in LD_LIBRARY_PATH
    directories and conda prefixes. Read whether or not torch imports: they are why it may not."""
    ld_dirs = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d]
    out: List[Dict[str, Any]] = []
    seen = set()
    preload_sources = [("LD_PRELOAD", env.get("LD_PRELOAD") or "")]
    try:
        with open(preload_file, encoding="utf-8", errors="replace") as f:
            text = "\n".join(line.split("#", 1)[0] for line in f.read(65536).splitlines())
        preload_sources.append((preload_file, text))
    except OSError:
        pass
    for via, value in preload_sources:
        for entry in _split_preload(value):
            path = entry if "/" in entry else _resolve(entry, ld_dirs + list(DEFAULT_LIB_DIRS))
            if path and not os.path.isfile(path):
                path = None  # ld.so ignores a preload it cannot open ("cannot be preloaded ... ignored")
            out.append(_candidate(path, entry, via, library_origin(path or entry, conda_prefixes), owners))
    dirs = [("LD_LIBRARY_PATH", d) for d in ld_dirs] + [("conda", os.path.join(p, "lib")) for p in conda_prefixes]
    for via, d in dirs:
        try:
            names = sorted(os.listdir(d))[:MAX_DIR_ENTRIES]
        except OSError:
            continue
        for name in names:
            if not _SHIPPED_LIB.match(name):
                continue
            path = os.path.join(d, name)
            real = os.path.realpath(path)
            if real in seen or not os.path.isfile(path):
                continue
            seen.add(real)
            out.append(_candidate(path, name, via, library_origin(path, conda_prefixes), owners))
    return out


_MAPPED_LIB = re.compile(
    r"^lib(cudnn\w*|cublas(?:Lt)?|nccl|nvJitLink|cudart|cuda)(?:[.-][0-9a-f]{8})?\.so(?:\.([0-9][0-9.]*))?$"
)


def library_origin(path: str, conda_prefixes: List[str]) -> str:
    norm = path.replace("\\", "/")
    if "/torch/lib/" in norm:
        return "torch"
    if "/site-packages/" in norm or "/dist-packages/" in norm:
        return "wheel"  # nvidia-* wheels (site-packages/nvidia/...) or a wheel's vendored copy
    for prefix in conda_prefixes:
        if prefix and norm.startswith(prefix.rstrip("/") + "/"):
            return "conda"
    return "system"


def loaded_libraries(
    conda_prefixes: List[str],
    owners: Optional[Dict[str, Tuple[str, str]]] = None,
    maps_path: str = "/proc/self/maps",
) -> Tuple[Optional[List[Dict[str, Any]]], Optional[str]]:
    """CUDA libraries mapped into this process, with where they came from and their version.

    Copies are named by major only (libcudnn.so.9, libnccl.so.2): the version comes from the file
    (library_version: the owning wheel's metadata, a version string inside it, the real file's name).
    """
    try:
        # under LC_ALL=C an old Python would decode as ASCII and choke on a non-ASCII path
        with open(maps_path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return None, f"cannot read {maps_path}: {e}"
    seen = set()
    out = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        path = parts[5].strip()
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        m = _MAPPED_LIB.match(os.path.basename(path))
        if not m or path in seen:
            continue
        seen.add(path)
        family = m.group(1).lower()
        name = "cudnn" if family.startswith("cudnn") else "cublas" if family.startswith("cublas") else family
        link_major = m.group(2)
        version, source = library_version(path, name, owners)
        if version and link_major and source and source.startswith("metadata") and not (
                version + ".").startswith(link_major.split(".")[0] + "."):
            version, source = None, None  # a wheel that owns a copy of another library's major: not its version
        out.append({"name": name, "path": path, "version": version, "version_source": source,
                    "origin": library_origin(path, conda_prefixes)})
    return out, None
