"""Installed distributions read from their metadata files (faster than importlib.metadata's parsers), and what a
package's compiled files say about the CUDA variant it was built for."""

import os
import re
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

from .common import _exc_text, normalize_name
from .elf import elf_needed

# Distributions reported in full (location, requirements, installer, CUDA variant); the rest are
# name + version only.  Names are PEP 503-normalised.
FULL_DETAIL_NAMES = frozenset(
    [
        "torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm",
        "xformers", "flash-attn", "flash-attn-3", "bitsandbytes", "deepspeed", "apex", "jax", "jaxlib",
        "tensorflow", "tensorflow-gpu", "onnxruntime-gpu", "tensorrt", "vllm", "numpy",
        "cuda-toolkit", "cuda-bindings", "cuda-python", "cuda-pathfinder", "torch-tensorrt",
        "transformer-engine", "mamba-ssm", "causal-conv1d",
    ]
)
FULL_DETAIL_PREFIXES = ("nvidia-", "cupy", "jax-cuda", "tensorrt-", "transformer-engine-")
# Packages whose compiled files are scanned for the CUDA variant they were built against
# (nvidia-* wheels are named after their CUDA version, and scanning them is slow and useless).
VARIANT_SCAN_EXCLUDE_PREFIXES = ("nvidia-", "cuda-", "jax-cuda", "tensorrt")
# Packages that ship a plain-text version.py holding the full version with its local tag
# (torchvision: __version__ = '0.20.1+cu124'; torch also: cuda = '12.4').
VERSION_PY_PACKAGES = {"torch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio"}
MAX_SCAN_FILES = 400
MAX_BYTES_SCAN = 64 * 1024 * 1024  # bytes-search fallback (non-ELF files) only reads this much
_LIB_TOKEN = re.compile(
    rb"lib(?:cudart|torch_cuda|c10_cuda|torch_hip|c10_hip|amdhip64)"
    rb"(?:\.[0-9a-f]{8})?(?:-[0-9a-f]{8})?\.so(?:\.[0-9]+)*"
)


def _bytes_libs(path: str) -> List[str]:
    """Library names mentioned in a non-ELF (or unreadable-ELF) file, by plain byte search."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES_SCAN)
    except OSError:
        return []
    return sorted(set(m.group(0).decode("ascii", "replace") for m in _LIB_TOKEN.finditer(data)))


_CUDART = re.compile(r"^libcudart(?:\.[0-9a-f]{8}|-[0-9a-f]{8})?\.so\.(\d+)(?:\.(\d+))?")


def _read_version_py(location: str, package: str) -> Dict[str, Optional[str]]:
    """`__version__`, `cuda`, `hip` and `git_version` from <package>/version.py, read as text (never imported)."""
    out: Dict[str, Optional[str]] = {}
    try:
        with open(os.path.join(location, package, "version.py"), encoding="utf-8") as f:
            text = f.read(65536)
    except (OSError, UnicodeDecodeError):
        return out
    for key in ("__version__", "cuda", "hip", "git_version"):
        m = re.search(rf"^{re.escape(key)}\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if m:
            out[key] = m.group(1)
    return out


_COMPILED_FILE = re.compile(r"\.(?:so|pyd|dylib)$|\.so\.[^/\\]*$")


def _is_compiled(rel: str) -> bool:
    """A shared library or extension module by its name (x.so, x.pyd, x.dylib, libx.so.12)."""
    return _COMPILED_FILE.search(rel) is not None


def scan_compiled(location: str, files: List[str]) -> Dict[str, str]:
    """The libraries a package's compiled files link (DT_NEEDED, else a byte search) or are: library name -> the
    first file (relative to location) that links or is it. Which CUDA variant that makes is judged by envdoctor
    (probes/package_variants.py), not here."""
    compiled = [rel for rel in files if _is_compiled(rel)]
    # skip vendored copies of the CUDA runtime itself: their presence says nothing about linkage
    compiled = [rel for rel in compiled if not _CUDART.match(os.path.basename(rel))][:MAX_SCAN_FILES]
    where: Dict[str, str] = {}
    for rel in compiled:
        path = os.path.join(location, rel)
        needed = elf_needed(path)
        if needed is None:
            needed = _bytes_libs(path)
        for lib in needed:
            where.setdefault(os.path.basename(lib), rel)
        # a package that *contains* libtorch_cuda.so is itself a CUDA build of torch
        base = os.path.basename(rel)
        if base.startswith(("libtorch_cuda", "libc10_cuda", "libtorch_hip", "libc10_hip")):
            where.setdefault(base, rel)
    return where


def _metadata_headers(text: str) -> Dict[str, List[str]]:
    """The header fields of a METADATA/PKG-INFO file (RFC 822 style, up to the first blank line), read by hand:
    the email parser importlib.metadata uses costs about a millisecond a distribution, three times over."""
    fields: Dict[str, List[str]] = {}
    last: Optional[str] = None
    for line in text.splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and last is not None:  # a folded continuation line
            fields[last][-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = key.strip().lower()
        fields.setdefault(last, []).append(value.strip())
    return fields


def _dist_files(dist: Any) -> List[str]:
    """A distribution's compiled files, relative to its location (see _dist_files_sized)."""
    return [rel for rel, _size in _dist_files_sized(dist)]


# the compiled files of each distribution object, read once per run: packages, extensions and the library files
# two wheels claim all read the same RECORDs. Keyed by id() with the object kept beside its answer: an id is reused
# once its object is freed, and a bare id key handed one distribution another's files (a stale entry after
# _DISTRIBUTIONS was read again: a test that passed alone failed in a full run, 2026-12-07)
_COMPILED_FILES: Dict[int, Tuple[Any, List[Tuple[str, Optional[int]]]]] = {}
_COMPILED_TOKEN = re.compile(r"\.(?:so|pyd|dylib)")  # in a RECORD line that can name a library


def _compiled_lines(record: str) -> List[str]:
    """The lines of ``record`` holding ".so", ".pyd" or ".dylib", each once: found by searching for those few
    tokens and widening each to its line (a line-anchored pattern, ``^.*\\.(?:so|...).*$``, backtracks over every
    character of every line: 38 ms on torch's RECORD here, against 1 ms)."""
    out = []
    end = -1
    for m in _COMPILED_TOKEN.finditer(record):
        if m.start() < end:  # a second token in a line already taken
            continue
        start = record.rfind("\n", 0, m.start()) + 1
        end = record.find("\n", m.end())
        if end < 0:
            end = len(record)
        out.append(record[start:end])
    return out


def _dist_files_sized(dist: Any) -> List[Tuple[str, Optional[int]]]:
    """(file relative to its location, recorded size or None) of each compiled file (_is_compiled) of a
    distribution: the only files any reader here looks at. RECORD is read directly (dist.files builds a
    PackagePath per line: 0.7 s for a CUDA torch environment), and only its lines that can name a library are
    parsed: torch's RECORD has some 17,000 lines of which about 60 do (a hash or a size never holds a dot)."""
    key = id(dist)
    cached = _COMPILED_FILES.get(key)
    if cached is not None and cached[0] is dist:
        return cached[1]
    import csv

    try:
        record = dist.read_text("RECORD")
    except Exception:
        record = None
    out: List[Tuple[str, Optional[int]]] = []
    if record:
        for row in csv.reader(_compiled_lines(record)):
            if row and row[0] and _is_compiled(row[0]):
                size = row[2].strip() if len(row) > 2 else ""
                out.append((row[0], int(size) if size.isdigit() else None))  # as PackagePath.size reads it
    else:
        try:
            out = [(str(p), getattr(p, "size", None)) for p in (dist.files or []) if _is_compiled(str(p))]
        except Exception:
            out = []
    _COMPILED_FILES[key] = (dist, out)
    return out


_DISTRIBUTIONS: Optional[List[Dict[str, Any]]] = None  # read once per run: packages and extensions share it
_DISTRIBUTIONS_LOCK = threading.Lock()


class _DistInfo:
    """A ``*.dist-info`` directory read as importlib.metadata's PathDistribution reads it (the three methods used
    here): importing importlib.metadata costs 50 ms here (email, pathlib, zipfile...), a third of what this
    payload does without torch."""

    def __init__(self, entry: str, name: str) -> None:
        self._entry = entry
        self._dir = os.path.join(entry, name)

    def read_text(self, filename: str) -> Optional[str]:
        try:
            with open(os.path.join(self._dir, filename), encoding="utf-8") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            return None

    def locate_file(self, path: str) -> str:
        return _pure_path(os.path.join(self._entry, path) if path else self._entry)

    requires = None  # a dist-info's Requires-Dist is read from METADATA (see _distribution_records)
    files = None  # only read where RECORD is missing: then importlib.metadata is used (see _light_distributions)


def _pure_path(path: str) -> str:
    """str(pathlib.PurePosixPath(path)): repeated and trailing slashes and "." parts dropped, ".." kept."""
    lead = "//" if path.startswith("//") and not path.startswith("///") else ("/" if path.startswith("/") else "")
    parts = [p for p in path.split("/") if p and p != "."]
    return (lead + "/".join(parts)) or "."


def _light_distributions() -> Optional[List[Any]]:
    """importlib.metadata.distributions() without importing it, where that is plain: every sys.path entry a
    directory (or absent), every distribution there a ``*.dist-info`` directory with a RECORD, and no import
    hook on sys.meta_path that finds distributions of its own. The same objects in the same order
    (sys.path order, then each directory's listing order, as importlib.metadata's FastPath lists it); None
    where anything is not plain (an .egg-info, a zip on sys.path, a custom finder): then importlib.metadata
    itself answers."""
    if os.name == "nt":  # pathlib's Windows spellings: left to importlib.metadata
        return None
    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and getattr(finder, "__module__", "") not in (
                "_frozen_importlib_external", "importlib._bootstrap_external", "_frozen_importlib"):
            return None
    out: List[Any] = []
    for entry in sys.path:
        root = entry or "."
        if root.lower().endswith(".egg"):  # an unpacked egg: its EGG-INFO is a distribution too
            return None
        try:
            names = os.listdir(root)
        except NotADirectoryError:
            return None  # a zip or an egg file on sys.path
        except OSError:
            continue  # absent or unreadable: importlib.metadata finds nothing there either
        for name in names:
            low = name.lower()
            if low.endswith(".egg-info"):
                return None
            if low.endswith(".dist-info"):
                if not os.path.isdir(os.path.join(root, name)) or not os.path.isfile(
                        os.path.join(root, name, "RECORD")):
                    return None
                out.append(_DistInfo(root, name))
    return out


def _distribution_records() -> Optional[List[Dict[str, Any]]]:
    """Every installed distribution in sys.path order, read once: name, version, Requires-Dist, installer,
    location, and the distribution object (for _dist_files); None without importlib.metadata."""
    global _DISTRIBUTIONS
    with _DISTRIBUTIONS_LOCK:
        if _DISTRIBUTIONS is not None:
            return _DISTRIBUTIONS
        dists = _light_distributions()
        if dists is None:
            try:
                from importlib import metadata  # Python 3.8+
            except ImportError:
                return None
            dists = list(metadata.distributions())
        out = []
        for dist in dists:
            try:
                wheel_metadata = dist.read_text("METADATA")
                headers = _metadata_headers(wheel_metadata or dist.read_text("PKG-INFO") or "")
                name = (headers.get("name") or [""])[0]
                if not name:
                    continue
                version = (headers.get("version") or [""])[0]
                if wheel_metadata:  # (None without Requires-Dist lines, as dist.requires says)
                    requires: Optional[List[str]] = headers.get("requires-dist")
                else:  # an egg-info layout: requires.txt, as importlib.metadata translates it
                    requires = list(dist.requires) if dist.requires is not None else None
                try:
                    location: Optional[str] = str(dist.locate_file(""))
                except Exception:
                    location = None
                try:
                    installer = (dist.read_text("INSTALLER") or "").strip() or None
                except Exception:
                    installer = None
                out.append({"name": name, "version": version, "location": location, "requires": requires,
                            "installer": installer, "dist": dist})
            except Exception:
                continue
        _DISTRIBUTIONS = out
        return out


def _iter_distributions(with_files: Any = None) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """Every installed distribution in sys.path order (the first of a name is the one imported).

    ``with_files(normalized_name, requires)`` says which distributions' file lists to read (None: all); a
    record's ``files`` are its compiled files only (_dist_files_sized).
    """
    records = _distribution_records()
    if records is None:
        return _iter_distributions_fallback(), "importlib.metadata unavailable; read dist-info directories"
    out = []
    for r in records:
        want = with_files is None or with_files(normalize_name(r["name"]), r["requires"])
        rec = dict(r)
        rec["files"] = _dist_files(r["dist"]) if want else []
        out.append(rec)
    return out, None


def _iter_distributions_fallback() -> List[Dict[str, Any]]:
    out = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for d in sorted(names):
            if not d.endswith(".dist-info"):
                continue
            fields: Dict[str, Any] = {}
            requires = []
            try:
                with open(os.path.join(entry, d, "METADATA"), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if not line.strip():
                            break
                        key, _, value = line.partition(":")
                        if key == "Requires-Dist":
                            requires.append(value.strip())
                        elif key in ("Name", "Version"):
                            fields[key] = value.strip()
            except OSError:
                continue
            if "Name" in fields:
                out.append({"name": fields["Name"], "version": fields.get("Version", ""), "location": entry,
                            "requires": requires, "installer": None, "files": []})
    return out


def _full_detail(key: str) -> bool:
    return key in FULL_DETAIL_NAMES or key.startswith(FULL_DETAIL_PREFIXES)


def package_evidence(
    key: str, location: Optional[str], files: List[str]
) -> Dict[str, Any]:
    """What one distribution's files say about the CUDA variant it was built for, read without importing it:
    its version.py (torch, torchvision, torchaudio) and the libraries its compiled files link. The version and
    Requires-Dist are in the package record already."""
    evidence: Dict[str, Any] = {}
    if location and key in VERSION_PY_PACKAGES:
        vp = _read_version_py(location, VERSION_PY_PACKAGES[key])
        if vp:
            evidence["version_py"] = vp
            evidence["version_py_file"] = VERSION_PY_PACKAGES[key] + "/version.py"
    if location and files and not key.startswith(VARIANT_SCAN_EXCLUDE_PREFIXES):
        evidence["linked"] = scan_compiled(location, files)
    return evidence


_TORCH_REQUIREMENT = re.compile(r"^\s*torch(?![A-Za-z0-9._-])", re.I)


def depends_on_torch(requires: Optional[List[str]]) -> bool:
    """Whether a Requires-Dist list names torch itself (not torchvision, not torch-foo), not behind an extra:
    a companion, an extension or a trainer (accelerate, deepspeed), whose requirements are judged with torch's."""
    return any(_TORCH_REQUIREMENT.match(line or "") and "extra ==" not in line and "extra==" not in line
               for line in requires or [])


def _dist_info_name(dist: Any) -> Optional[str]:
    """The metadata directory's name (torch-2.13.0.dist-info), as _DistInfo or importlib's PathDistribution hold
    it."""
    where = getattr(dist, "_dir", None) or getattr(dist, "_path", None)
    return os.path.basename(str(where).rstrip("/\\")) if where else None


def unrecorded_files(location: Optional[str], files: List[str], claimed: set) -> List[str]:
    """Compiled files on disk in the directories where a distribution's RECORD puts its compiled files, that no
    RECORD read here claims: files of another build left in the package directory (a CUDA build's
    torch/lib/libtorch_cuda.so after a --ignore-installed or interrupted install of a CPU build over it)."""
    if not location or not files:
        return []
    dirs = sorted(set(os.path.dirname(rel) for rel in files if _is_compiled(rel)))[:64]
    out = []
    for rel_dir in dirs:
        if rel_dir.startswith("..") or rel_dir.split("/")[0].endswith((".dist-info", ".data")):
            continue  # a file outside site-packages (bin/...), or metadata
        try:
            names = os.listdir(os.path.join(location, rel_dir))
        except OSError:
            continue
        for name in names:
            rel = rel_dir + "/" + name if rel_dir else name
            if _is_compiled(name) and rel not in claimed and os.path.isfile(os.path.join(location, rel)):
                out.append(rel)
    return sorted(out)[:50]


def collect_packages(
    errors: List[str], owners: Optional[Dict[str, Tuple[str, str]]] = None
) -> List[Dict[str, Any]]:
    """Installed distributions; fills ``owners`` (real path of a CUDA wheel's library -> (name, version))."""
    dists, note = _iter_distributions(lambda key, _requires: _full_detail(key))
    if note:
        errors.append(note)
    seen: Dict[str, Dict[str, Any]] = {}
    out = []
    claimed: Dict[str, set] = {}  # location -> compiled files the RECORDs read there claim
    for d in dists:
        for rel in d["files"]:
            claimed.setdefault(d["location"] or "", set()).add(rel)
    for d in dists:
        key = normalize_name(d["name"])
        if key in seen:  # shadowed by an earlier sys.path entry: not what `import` sees, but still there (a venv
            # with include-system-site-packages sees the base's copy after its own): every copy is reported
            copy = {"location": d["location"], "version": d["version"], "requires": d["requires"]}
            if d["location"] and d["location"] == seen[key].get("_location"):
                # two metadata directories of one distribution in one site-packages: name both
                copy["dist_info"] = _dist_info_name(d.get("dist"))
                seen[key].setdefault("dist_info", _dist_info_name(seen[key].get("_dist")))
            seen[key].setdefault("shadowed", []).append(copy)
            continue
        if not _full_detail(key):
            seen[key] = {"name": key, "version": d["version"]}
            if depends_on_torch(d["requires"]):  # an extension or trainer: its requirements are judged too
                seen[key].update(location=d["location"], requires=d["requires"], installer=d["installer"])
            seen[key].update(_dist=d.get("dist"), _location=d["location"])
            out.append(seen[key])
            continue
        if owners is not None and d["location"] and key.startswith(("nvidia-", "cuda-")):
            for rel in d["files"]:
                if _is_compiled(rel):
                    owners[os.path.realpath(os.path.join(d["location"], rel))] = (key, d["version"])
        rec = {"name": key, "version": d["version"], "location": d["location"], "requires": d["requires"],
               "installer": d["installer"], "_dist": d.get("dist"), "_location": d["location"]}
        seen[key] = rec
        try:
            rec["variant_inputs"] = package_evidence(key, d["location"], d["files"])
        except Exception as e:
            errors.append(f"variant of {key}: {_exc_text(e)}")
        try:
            stray = unrecorded_files(d["location"], d["files"], claimed.get(d["location"] or "", set()))
            if stray:
                rec["unrecorded_files"] = stray
        except Exception as e:
            errors.append(f"files of {key}: {_exc_text(e)}")
        out.append(rec)
    for rec in out:
        rec.pop("_dist", None)
        where = rec.pop("_location", None)
        if "dist_info" in rec:  # (a name-and-version record says where, once it has a second copy there)
            rec.setdefault("location", where)
    out.sort(key=lambda r: r["name"])
    return out


def shared_library_files(prefixes: Tuple[str, ...] = ("nvidia-", "cuda-")) -> List[Dict[str, Any]]:
    """Library files that two or more NVIDIA wheels claim in their RECORD (nvidia-cudnn-cu12 and -cu13 both
    unpack nvidia/cudnn/lib/libcudnn.so.9), with the wheel whose recorded size the file on disk has: the one
    installed last, whose build torch actually loads. pip warns about none of this."""
    records = _distribution_records()  # names and versions read by hand once (the email parser: 0.4 s here)
    if records is None:
        return []
    claims: Dict[str, List[Dict[str, Any]]] = {}
    seen = set()
    for r in records:
        try:
            name = normalize_name(r["name"])
            if not name.startswith(prefixes) or name in seen or not r["location"]:
                continue
            seen.add(name)
            for rel, size in _dist_files_sized(r["dist"]):
                if not _is_compiled(rel):
                    continue
                path = os.path.realpath(os.path.join(r["location"], rel))
                claims.setdefault(path, []).append({"name": name, "version": r["version"] or "", "size": size})
        except Exception:
            continue
    out = []
    for path, who in sorted(claims.items()):
        if len(who) < 2:
            continue
        try:
            size = os.path.getsize(path)
        except OSError:
            size = None
        owners = [w["name"] for w in who if size is not None and w["size"] == size]
        out.append({"path": path, "size": size, "claimants": who, "owner": owners[0] if len(owners) == 1 else None})
    return out
