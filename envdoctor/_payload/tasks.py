"""Stdlib-only script run inside the interpreter being diagnosed; prints exactly one JSON object on stdout."""

# This file runs under the *target* Python (3.8+ promised, 3.6+ in practice; possibly much older
# than envdoctor's own), so: stdlib only, typing-module annotations (no `list[str]`, no
# `from __future__ import annotations`), no syntax newer than 3.6, and no import of envdoctor.
# envdoctor itself never imports this module; tests may.
#
# Usage:  python _payload.py [--task NAME] [task options...]
#   --task inspect (default):  [--no-torch] [--deadline-s S]
#   --task pcie-load:          [--seconds S] [--mib M]  host->device pinned copies on every visible GPU
# Adding a task: write `def task_NAME(argv, state) -> dict` and register it in TASKS.
#
# Output envelope (one line of JSON on the original stdout):
#   {"envdoctor_payload": 1, "task": "inspect", "ok": true, "error": null,
#    "stage": null, "timed_out": false, "result": {...}, "duration_s": 1.2}

import os
import sys

# `python _payload.py` puts envdoctor/ first on sys.path, where our own modules would shadow
# top-level names for everything imported below (torch included): take it off before importing.
if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(
    os.path.abspath(__file__)
):
    del sys.path[0]

import json  # noqa: E402
import re  # noqa: E402
import struct  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from typing import Any, Dict, List, NamedTuple, Optional, Tuple  # noqa: E402

PAYLOAD_VERSION = 1

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

ENV_VARS = (
    "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
    "PYTORCH_CUDA_ALLOC_CONF", "NVIDIA_VISIBLE_DEVICES", "CONDA_PREFIX", "VIRTUAL_ENV", "PYTHONPATH",
    "PYTHONNOUSERSITE", "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING", "TORCH_CUDA_ARCH_LIST",
)

MAX_WARNINGS = 50
MAX_TEXT = 2000
MAX_SCAN_FILES = 400
MAX_BYTES_SCAN = 64 * 1024 * 1024  # bytes-search fallback (non-ELF files) only reads this much


def normalize_name(name: str) -> str:
    """PEP 503 normalisation (same rule as envdoctor.facts.normalize_name)."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _short(text: Any, limit: int = MAX_TEXT) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _exc_text(exc: BaseException) -> str:
    return _short("".join(traceback.format_exception_only(type(exc), exc)).strip())


# --------------------------------------------------------------------------- run state and output


class State:
    """Shared between the task (main thread) and the deadline watchdog."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.lock = threading.Lock()
        self.written = False
        self.stage: Optional[str] = None
        self.envelope: Dict[str, Any] = {
            "envdoctor_payload": PAYLOAD_VERSION,
            "task": None,
            "ok": False,
            "error": None,
            "stage": None,
            "timed_out": False,
            "result": {},
            "duration_s": None,
        }
        self.start = time.monotonic()
        self.timer: Optional[threading.Timer] = None

    def checkpoint(self) -> bool:
        """Write the envelope so far, marked ``checkpoint``, before a step that may kill the process
        (``import torch`` can segfault or hang in native code): what was read before it still comes back.
        A later envelope line (the final one) supersedes it."""
        with self.lock:
            if self.written:
                return True
            snapshot = dict(self.envelope, checkpoint=True, stage=self.stage,
                            duration_s=round(time.monotonic() - self.start, 3))
            try:
                text = json.dumps(snapshot, default=str, sort_keys=True)
            except Exception:  # a result we could not serialise yet: the final envelope still follows
                return False
            data = ("\n" + text + "\n").encode("ascii")
            while data:
                n = os.write(self.out_fd, data)
                data = data[n:]
            return True

    def emit(self) -> None:
        """Write the envelope once, whichever of the task or the watchdog finishes first."""
        with self.lock:
            if self.written:
                return
            self.written = True
            self.envelope["duration_s"] = round(time.monotonic() - self.start, 3)
            try:
                text = json.dumps(self.envelope, default=str, sort_keys=True)
            except Exception as e:  # a result we could not serialise: still one valid JSON object
                # (or the watchdog raced the task still filling the result): keep the verdict
                env = self.envelope
                text = json.dumps(
                    {"envdoctor_payload": PAYLOAD_VERSION, "task": env.get("task"), "ok": False,
                     "error": env.get("error") or "could not serialise the result: " + _exc_text(e),
                     "stage": env.get("stage"), "timed_out": env.get("timed_out"), "result": {}}
                )
            data = ("\n" + text + "\n").encode("ascii")
            while data:
                n = os.write(self.out_fd, data)
                data = data[n:]


def _start_watchdog(state: State, deadline_s: float) -> None:
    """Emit what was collected so far and exit when the task overruns (a hung import or CUDA init).

    This only helps when the hung code releases the GIL; envdoctor's subprocess timeout is the backstop.
    """

    def fire() -> None:
        stage = state.stage or "running"
        state.envelope["timed_out"] = True
        state.envelope["stage"] = stage
        state.envelope["error"] = f"timed out after {deadline_s:g} s while {stage}"
        try:
            state.emit()
        finally:
            os._exit(3)

    timer = threading.Timer(deadline_s, fire)
    timer.daemon = True
    timer.start()
    state.timer = timer


# --------------------------------------------------------------------------- ELF: DT_NEEDED without ldd

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
MAX_SECTIONS = 65536


class ElfLayout(NamedTuple):
    """Where the ELF header keeps what we read, per class (gABI "ELF Header": the fields after e_ident)."""

    header: int  # bytes of the header after e_ident
    offsets_fmt: str  # e_phoff, e_shoff
    offsets: Tuple[int, int]  # their slice of the header
    tables: Tuple[int, int]  # e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx (five halfwords)
    phdr: str  # one program header
    dyn: str  # one dynamic entry (d_tag, d_val)
    shdr: str  # one section header


ELF64 = ElfLayout(48, "QQ", (16, 32), (38, 48), "IIQQQQQQ", "qQ", "IIQQQQIIQQ")
ELF32 = ElfLayout(36, "II", (12, 20), (26, 36), "IIIIIIII", "iI", "IIIIIIIIII")


def elf_read(path: str, sections: bool = False) -> Optional[Dict[str, Any]]:
    """The dynamic section of an ELF shared object (needed, soname, rpath, runpath) and, with
    ``sections``, its section table ({name: (file offset, size)}); None when it is not a readable ELF file.

    Reads only the headers, the dynamic section and the string tables (libtorch_cuda.so is 500 MB+).
    Reference: System V gABI, "ELF Header", "Sections" and "Dynamic Section"; the layout readelf -d / -S prints.
    """
    try:
        with open(path, "rb") as f:
            ident = f.read(16)
            if len(ident) < 16 or ident[:4] != b"\x7fELF":
                return None
            is64 = ident[4] == 2
            end = "<" if ident[5] == 1 else ">"
            lay = ELF64 if is64 else ELF32
            hdr = f.read(lay.header)
            if len(hdr) < lay.header:
                return None
            phoff, shoff = struct.unpack(end + lay.offsets_fmt, hdr[lay.offsets[0]:lay.offsets[1]])
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack(end + "HHHHH",
                                                                         hdr[lay.tables[0]:lay.tables[1]])
            ph_fmt, dyn_fmt, sh_fmt = end + lay.phdr, end + lay.dyn, end + lay.shdr
            if phnum == 0 or phnum > 4096 or phentsize < struct.calcsize(ph_fmt):
                return None
            out: Dict[str, Any] = {"needed": [], "soname": None, "rpath": None, "runpath": None}
            loads = []  # (vaddr, offset, filesz)
            dynamic = None  # (offset, size)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                raw = table[i * phentsize: i * phentsize + struct.calcsize(ph_fmt)]
                if len(raw) < struct.calcsize(ph_fmt):
                    break
                fields = struct.unpack(ph_fmt, raw)
                if is64:
                    p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
                else:
                    p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
                if p_type == PT_LOAD:
                    loads.append((p_vaddr, p_offset, p_filesz))
                elif p_type == PT_DYNAMIC:
                    dynamic = (p_offset, p_filesz)
            if sections:
                out["sections"] = _elf_sections(f, shoff, shentsize, shnum, shstrndx, sh_fmt, is64)
            if dynamic is None:
                return out
            f.seek(dynamic[0])
            dyn = f.read(min(dynamic[1], 1 << 20))
            size = struct.calcsize(dyn_fmt)
            refs: List[Tuple[int, int]] = []  # (tag, string offset)
            strtab = strsz = None
            for i in range(0, len(dyn) - size + 1, size):
                tag, val = struct.unpack(dyn_fmt, dyn[i: i + size])
                if tag == DT_NULL:
                    break
                if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
                    refs.append((tag, val))
                elif tag == DT_STRTAB:
                    strtab = val
                elif tag == DT_STRSZ:
                    strsz = val
            if strtab is None:
                return out if not refs else None
            # DT_STRTAB is a virtual address: map it to a file offset through the PT_LOAD segments
            str_off = None
            for vaddr, offset, filesz in loads:
                if vaddr <= strtab < vaddr + filesz:
                    str_off = offset + (strtab - vaddr)
                    break
            if str_off is None:
                str_off = strtab  # unrelocated objects: the address is the offset
            f.seek(str_off)
            strings = f.read(min(strsz or (1 << 20), 16 << 20))
            for tag, off in refs:
                stop = strings.find(b"\0", off)
                if off >= len(strings) or stop < 0:
                    continue
                text = strings[off:stop].decode("utf-8", "replace")
                if tag == DT_NEEDED:
                    out["needed"].append(text)
                else:
                    out[{DT_SONAME: "soname", DT_RPATH: "rpath", DT_RUNPATH: "runpath"}[tag]] = text
            return out
    except (OSError, struct.error, ValueError, OverflowError):
        return None


def _elf_sections(f: Any, shoff: int, shentsize: int, shnum: int, shstrndx: int, sh_fmt: str,
                  is64: bool) -> Dict[str, Tuple[int, int]]:
    """{section name: (file offset, size)} from the section header table (empty when there is none)."""
    need = struct.calcsize(sh_fmt)
    if not shoff or shnum == 0 or shnum > MAX_SECTIONS or shentsize < need or shstrndx >= shnum:
        return {}
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    heads = []
    for i in range(shnum):
        raw = table[i * shentsize: i * shentsize + need]
        if len(raw) < need:
            break
        fields = struct.unpack(sh_fmt, raw)
        # (name offset, type, flags, addr, offset, size, ...): the same order in both classes
        heads.append((fields[0], fields[1], fields[4], fields[5]))
    if shstrndx >= len(heads):
        return {}
    _n, _t, str_off, str_size = heads[shstrndx]
    f.seek(str_off)
    names = f.read(min(str_size, 1 << 20))
    out = {}
    for name_off, sh_type, offset, size in heads:
        stop = names.find(b"\0", name_off)
        if name_off >= len(names) or stop < 0:
            continue
        name = names[name_off:stop].decode("utf-8", "replace")
        if name and sh_type != 8:  # SHT_NOBITS (.bss) occupies no file bytes
            out.setdefault(name, (offset, size))
    return out


def elf_needed(path: str) -> Optional[List[str]]:
    """The DT_NEEDED entries of an ELF shared object, or None when it is not a readable ELF file."""
    info = elf_read(path)
    return None if info is None else list(info["needed"])


# --------------------------------------------------------------------------- CUDA fat binaries

FATBIN_MAGIC = 0xBA55ED50  # the "fatBinaryHeader" magic nvcc writes into .nv_fatbin
FATBIN_KIND_PTX, FATBIN_KIND_CUBIN = 1, 2
MAX_FATBIN_ENTRIES = 200000


def fatbin_archs(path: str, offset: int, size: int) -> Dict[str, Any]:
    """The GPU architectures compiled into a .nv_fatbin section, walking entry headers only.

    The section is a run of fat binaries (one per compiled .cu file, 8-byte aligned), each a 16-byte
    header (magic u32, version u16, header size u16, payload size u64) followed by entries whose
    headers start with kind u16 (1 PTX, 2 cubin), u16, header size u32, payload size u64, and hold
    the SM version as u32 at byte 28. This layout is not documented by NVIDIA: it is what cuobjdump
    lists and what open readers (e.g. n-eiling/cuda-fatbin-decompression) parse; it was checked here
    against torch.cuda.get_arch_list() of torch 2.14.1+cu130. Payloads (possibly compressed) are skipped,
    so a 300 MB section costs a few thousand small reads.

    Returns {"sass": {sm: number of fat binaries holding it}, "ptx": {...}, "fatbins": N} or "error".
    """
    sass: Dict[int, int] = {}
    ptx: Dict[int, int] = {}
    fatbins = entries = 0
    stop = offset + size
    try:
        with open(path, "rb") as f:
            pos = offset
            while pos + 16 <= stop:
                f.seek(pos)
                head = f.read(16)
                if len(head) < 16:
                    break
                magic, _ver, hsize, fsize = struct.unpack("<IHHQ", head)
                if magic != FATBIN_MAGIC:
                    # padding between fat binaries: find the next header in the next 64 KiB
                    f.seek(pos)
                    window = f.read(min(65536, stop - pos))
                    found = window.find(struct.pack("<I", FATBIN_MAGIC), 1)
                    if found < 0:
                        break
                    pos += found
                    continue
                fatbins += 1
                here_sass, here_ptx = set(), set()
                entry, fend = pos + hsize, min(pos + hsize + fsize, stop)
                while entry + 32 <= fend and entries < MAX_FATBIN_ENTRIES:
                    f.seek(entry)
                    eh = f.read(32)
                    if len(eh) < 32:
                        break
                    kind, _u, ehsize, esize = struct.unpack("<HHIQ", eh[:16])
                    arch = struct.unpack("<I", eh[28:32])[0]
                    entries += 1
                    if kind == FATBIN_KIND_CUBIN:
                        here_sass.add(arch)
                    elif kind == FATBIN_KIND_PTX:
                        here_ptx.add(arch)
                    if ehsize == 0:
                        break
                    entry += ehsize + esize
                for a in here_sass:
                    sass[a] = sass.get(a, 0) + 1
                for a in here_ptx:
                    ptx[a] = ptx.get(a, 0) + 1
                pos = pos + hsize + fsize if fsize else pos + 16
    except (OSError, struct.error, ValueError, OverflowError) as e:
        return {"error": f"reading {path}: {_exc_text(e)}"}
    return {"sass": sass, "ptx": ptx, "fatbins": fatbins, "entries": entries}


def arch_list_from_fatbin(scan: Dict[str, Any]) -> Tuple[Optional[List[str]], List[str]]:
    """(the build's arch list, architectures only some kernels carry) from a fatbin_archs() result.

    torch's arch list (TORCH_CUDA_ARCH_LIST) is compiled into every .cu file, so it is what at least
    half of the fat binaries carry; a few kernels add their own (sm_89, sm_103 ...), listed apart.
    """
    n = scan.get("fatbins") or 0
    if not n:
        return None, []
    main: List[Tuple[int, str]] = []
    partial: List[Tuple[int, str]] = []
    for table, prefix in ((scan.get("sass") or {}, "sm_"), (scan.get("ptx") or {}, "compute_")):
        for arch, count in table.items():
            name = f"{prefix}{arch}"
            (main if count * 2 >= n else partial).append((arch, name))
    # sm_ entries before compute_ entries of the same arch, as torch orders them
    return [name for _a, name in sorted(main, key=lambda x: (x[0], x[1].startswith("compute")))], \
        [name for _a, name in sorted(partial)]


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


# --------------------------------------------------------------------------- distributions


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
    """A distribution's files, relative to its location: RECORD's first column read directly (dist.files
    builds a PackagePath per line: 0.7 s for a CUDA torch environment), dist.files for other layouts."""
    import csv

    try:
        record = dist.read_text("RECORD")
    except Exception:
        record = None
    if record:
        return [row[0] for row in csv.reader(record.splitlines()) if row and row[0]]
    try:
        return [str(p) for p in (dist.files or [])]
    except Exception:
        return []


_DISTRIBUTIONS: Optional[List[Dict[str, Any]]] = None  # read once per run: packages and extensions share it
_DISTRIBUTIONS_LOCK = threading.Lock()


def _distribution_records() -> Optional[List[Dict[str, Any]]]:
    """Every installed distribution in sys.path order, read once: name, version, Requires-Dist, installer,
    location, and the distribution object (for _dist_files); None without importlib.metadata."""
    global _DISTRIBUTIONS
    with _DISTRIBUTIONS_LOCK:
        if _DISTRIBUTIONS is not None:
            return _DISTRIBUTIONS
        try:
            from importlib import metadata  # Python 3.8+
        except ImportError:
            return None
        out = []
        for dist in metadata.distributions():
            try:
                wheel_metadata = dist.read_text("METADATA")
                headers = _metadata_headers(wheel_metadata or dist.read_text("PKG-INFO") or "")
                name = (headers.get("name") or [None])[0]
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

    ``with_files(normalized_name, requires)`` says which distributions' file lists to read (None: all).
    """
    records = _distribution_records()
    if records is None:
        return _iter_distributions_fallback(), "importlib.metadata unavailable; read dist-info directories"
    out = []
    for r in records:
        want = with_files is None or with_files(normalize_name(r["name"]), r["requires"])
        rec = {k: v for k, v in r.items() if k != "dist"}
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


def collect_packages(
    errors: List[str], owners: Optional[Dict[str, Tuple[str, str]]] = None
) -> List[Dict[str, Any]]:
    """Installed distributions; fills ``owners`` (real path of a CUDA wheel's library -> (name, version))."""
    dists, note = _iter_distributions(lambda key, _requires: _full_detail(key))
    if note:
        errors.append(note)
    seen = set()
    out = []
    for d in dists:
        key = normalize_name(d["name"])
        if key in seen:  # shadowed by an earlier sys.path entry: not what `import` sees
            continue
        seen.add(key)
        if not _full_detail(key):
            out.append({"name": key, "version": d["version"]})
            continue
        if owners is not None and d["location"] and key.startswith(("nvidia-", "cuda-")):
            for rel in d["files"]:
                if _is_compiled(rel):
                    owners[os.path.realpath(os.path.join(d["location"], rel))] = (key, d["version"])
        rec = {"name": key, "version": d["version"], "location": d["location"], "requires": d["requires"],
               "installer": d["installer"]}
        try:
            rec["variant_inputs"] = package_evidence(key, d["location"], d["files"])
        except Exception as e:
            errors.append(f"variant of {key}: {_exc_text(e)}")
        out.append(rec)
    out.sort(key=lambda r: r["name"])
    return out


def shared_library_files(prefixes: Tuple[str, ...] = ("nvidia-", "cuda-")) -> List[Dict[str, Any]]:
    """Library files that two or more NVIDIA wheels claim in their RECORD (nvidia-cudnn-cu12 and -cu13 both
    unpack nvidia/cudnn/lib/libcudnn.so.9), with the wheel whose recorded size the file on disk has: the one
    installed last, whose build torch actually loads. pip warns about none of this."""
    try:
        from importlib import metadata  # Python 3.8+
    except ImportError:
        return []
    claims: Dict[str, List[Dict[str, Any]]] = {}
    seen = set()
    for dist in metadata.distributions():
        try:
            name = normalize_name(dist.metadata["Name"] or "")
            if not name.startswith(prefixes) or name in seen:
                continue
            seen.add(name)
            for f in dist.files or []:
                if not _is_compiled(str(f)):
                    continue
                path = os.path.realpath(str(dist.locate_file(f)))
                claims.setdefault(path, []).append({"name": name, "version": dist.version or "",
                                                    "size": getattr(f, "size", None)})
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


# --------------------------------------------------------------------------- torch's build, read from its files

TORCH_NATIVE_LIBS = ("libtorch_cuda.so", "libtorch_hip.so")


def torch_dir(errors: List[str]) -> Optional[str]:
    """The torch package directory `import torch` would use, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError) as e:
        errors.append(f"find_spec('torch'): {_exc_text(e)}")
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return str(locations[0])
    return os.path.dirname(spec.origin) if spec.origin else None


def _norm_path(path: str) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path or ".")))


def _pth_paths(sitedir: str) -> List[Tuple[str, str, int]]:
    """(the directory a line adds, the .pth file, how many directories that file adds) for every .pth file in
    sitedir, read as site.addpackage() does: a line starting with "import" runs code, "#" is a comment, any
    other line is a directory added when it exists."""
    out: List[Tuple[str, str, int]] = []
    try:
        names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
    except OSError:
        return out
    for name in names[:200]:
        pth = os.path.join(sitedir, name)
        try:
            with open(pth, encoding="utf-8", errors="replace") as f:
                lines = f.read(65536).splitlines()
        except OSError:
            continue
        dirs = [ln.rstrip() for ln in lines
                if ln.strip() and not ln.startswith("#") and not ln.startswith(("import ", "import\t"))]
        for d in dirs:
            out.append((_norm_path(os.path.join(sitedir, d)), pth, len(dirs)))
    return out


def _dist_version(entry: str, name: str) -> Optional[str]:
    """The Version of distribution ``name`` installed in sys.path entry ``entry`` (its dist-info METADATA)."""
    try:
        names = os.listdir(entry)
    except OSError:
        return None
    for d in sorted(names):
        if d.endswith(".dist-info") and normalize_name(d.split("-")[0]) == name:
            try:
                with open(os.path.join(entry, d, "METADATA"), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break
            except OSError:
                continue
    return None


def module_origin(name: str, location: Optional[str]) -> Optional[Dict[str, Any]]:
    """Where package ``name`` is imported from (its directory ``location``), which sys.path entry put it first and
    why that entry is on sys.path: the interpreter's own site-packages, PYTHONPATH, the user site, a .pth file,
    or something else (sitecustomize, a sys.path edit); with every other copy on sys.path and its version."""
    import site

    if not location:
        return None
    try:
        own = [_norm_path(p) for p in site.getsitepackages()]
    except Exception:  # virtualenv < 20 has no getsitepackages()
        own = []
    try:
        user = _norm_path(site.getusersitepackages())
    except Exception:
        user = None
    user_on = bool(getattr(site, "ENABLE_USER_SITE", False))
    pythonpath = [_norm_path(p) for p in (os.environ.get("PYTHONPATH") or "").split(os.pathsep) if p]
    pth: Dict[str, Tuple[str, int]] = {}
    for sitedir in own + ([user] if user and user_on else []):
        for d, f, n in _pth_paths(sitedir):
            pth.setdefault(d, (f, n))

    def why(entry: str) -> Tuple[str, Optional[str], Optional[int]]:
        e = _norm_path(entry)
        if e in pythonpath:
            return "PYTHONPATH", None, None
        if e in own:
            return "site-packages", None, None
        if user and e == user:
            return "user-site", None, None
        if e in pth:
            return "pth", pth[e][0], pth[e][1]
        if entry in ("", "."):
            return "current-directory", None, None
        return "other", None, None

    parent = _norm_path(os.path.dirname(os.path.abspath(location)))
    first: Optional[int] = None
    copies: List[Dict[str, Any]] = []
    for k, entry in enumerate(sys.path):
        e = _norm_path(entry)
        if first is None and (e == parent or os.path.realpath(e) == os.path.realpath(parent)):
            first = k
        if os.path.isfile(os.path.join(e, name, "__init__.py")):
            via, pth_file, pth_dirs = why(entry)
            vp = _read_version_py(e, name)
            copies.append({"entry": entry, "index": k, "via": via, "pth_file": pth_file, "pth_dirs": pth_dirs,
                           "version": vp.get("__version__") or _dist_version(e, name)})
    via, pth_file, pth_dirs = why(sys.path[first]) if first is not None else ("other", None, None)
    return {"name": name, "location": location, "entry": sys.path[first] if first is not None else parent,
            "entry_index": first, "via": via, "pth_file": pth_file, "pth_dirs": pth_dirs,
            "site_packages": own, "user_site": user if user_on else None, "pythonpath": pythonpath,
            "copies": copies}


def _pins(requires: Optional[List[str]]) -> List[str]:
    """Requires-Dist lines for nvidia-* / cuda-* wheels, without markers: "nvidia-nccl-cu13==2.27.7"."""
    out = []
    for req in requires or []:
        if "extra ==" in req:
            continue
        name_part = req.split(";")[0].strip()
        if re.match(r"^(nvidia-|cuda-)", name_part, re.I):
            out.append(re.sub(r"\s+", "", name_part.replace("(", "").replace(")", "")))
    return out


def torch_build_files(location: str, packages: List[Dict[str, Any]]) -> Dict[str, Any]:
    """What torch's files say about its build, read before (and whether or not) it is imported:
    version.py, the distribution's nvidia-* pins, the libraries libtorch_cuda.so links and the GPU
    architectures compiled into it.  Survives an import that crashes, hangs or is skipped (--no-torch)."""
    t0 = time.monotonic()
    info: Dict[str, Any] = {"location": location}
    vp = _read_version_py(os.path.dirname(location), os.path.basename(location))
    info["version"] = vp.get("__version__")
    info["cuda"] = vp.get("cuda")
    info["hip"] = vp.get("hip")
    info["git_version"] = vp.get("git_version")
    dist = next((p for p in packages if p.get("name") == "torch"), None)
    info["dist_version"] = dist.get("version") if dist else None
    info["requires_pins"] = _pins(dist.get("requires")) if dist else []
    for name in TORCH_NATIVE_LIBS:
        path = os.path.join(location, "lib", name)
        if not os.path.isfile(path):
            continue
        info["native_library"] = path
        elf = elf_read(path, sections=True)
        if elf is None:
            info["native_library_error"] = "not a readable ELF file"
            break
        info["needed"] = elf["needed"]
        info["rpath"] = elf["rpath"]
        info["runpath"] = elf["runpath"]
        fat = (elf.get("sections") or {}).get(".nv_fatbin")
        if fat is not None:
            scan = fatbin_archs(path, fat[0], fat[1])
            if "error" in scan:
                info["arch_list_error"] = scan["error"]
            else:
                arch, partial = arch_list_from_fatbin(scan)
                info["arch_list"] = arch
                info["arch_list_partial"] = partial
                info["fatbin_count"] = scan["fatbins"]
        elif name == "libtorch_cuda.so":
            info["arch_list_error"] = "no .nv_fatbin section in " + name
        break
    info["read_seconds"] = round(time.monotonic() - t0, 3)
    return info


# --------------------------------------------------------------------------- CUDA extensions of torch, read from their files

# Distributions whose compiled files are read for the GPU architectures they carry even when their
# metadata does not say Requires-Dist: torch (some wheels leave it out so that pip keeps the user's torch).
EXTENSION_NAMES = frozenset([
    "torchvision", "torchaudio", "xformers", "flash-attn", "flash-attn-3", "vllm", "bitsandbytes", "apex",
    "deepspeed", "mamba-ssm", "causal-conv1d", "transformer-engine", "torch-tensorrt", "torch-scatter",
    "torch-sparse", "torch-cluster", "torchao", "sglang", "flashinfer-python",
])
EXTENSION_MAX_LIBRARIES = 64  # libraries whose section tables are read per run
EXTENSION_MAX_MB = 8192  # total size of those files; only headers and fat-binary entry headers are read
EXTENSION_TIME_BUDGET_S = 10.0  # one library takes ~0.1 s (libtorch_cuda.so, 500 MB: 0.12 s here)
_TORCH_REQ = re.compile(r"^\s*torch\s*(?:$|[\s<>=!~;(\[])", re.I)


def _requires_torch(requires: Optional[List[str]]) -> bool:
    """A Requires-Dist: torch that is not behind an extra (an extra is optional: no compiled link to torch)."""
    return any(_TORCH_REQ.match(r) and "extra ==" not in r and "extra==" not in r for r in requires or [])


def _extension_files(files: List[str]) -> List[str]:
    """Compiled files of an extension, without vendored copies (auditwheel's <pkg>.libs/, the CUDA runtime)."""
    out = []
    for rel in files:
        if not _is_compiled(rel):
            continue
        parts = rel.replace("\\", "/").split("/")
        if any(p.endswith(".libs") for p in parts[:-1]) or _CUDART.match(parts[-1]) or lib_family(parts[-1]):
            continue
        out.append(rel)
    return sorted(out)


def _names(table: Dict[int, int], prefix: str) -> List[str]:
    return [f"{prefix}{a}" for a in sorted(table)]


def _torch_dependents() -> List[Dict[str, Any]]:
    """_iter_distributions(), but reading the file lists (RECORD) only of the distributions that matter here:
    reading every RECORD of a large environment costs more than the libraries' headers."""
    dists, _note = _iter_distributions(lambda key, requires: key in EXTENSION_NAMES or _requires_torch(requires))
    return dists


def extension_library_archs(path: str) -> Dict[str, Any]:
    """sass (sm_XX cubins) and ptx (compute_XX) lists of one library, from its .nv_fatbin entry headers.

    An architecture counts when any fat binary carries it; ``partial`` lists those fewer than half carry
    (a few kernels built for one GPU only, as torch's arch_list_from_fatbin() sets apart).
    """
    elf = elf_read(path, sections=True)
    if elf is None:
        return {"skipped": "not a readable ELF file"}
    fat = (elf.get("sections") or {}).get(".nv_fatbin")
    if fat is None:
        return {"fatbins": 0, "sass": [], "ptx": []}
    scan = fatbin_archs(path, fat[0], fat[1])
    if "error" in scan:
        return {"skipped": scan["error"]}
    _main, partial = arch_list_from_fatbin(scan)
    return {"fatbins": scan["fatbins"], "sass": _names(scan["sass"], "sm_"),
            "ptx": _names(scan["ptx"], "compute_"), "partial": partial}


def extension_archs(
    max_libraries: int = EXTENSION_MAX_LIBRARIES, max_mb: int = EXTENSION_MAX_MB,
    budget_s: float = EXTENSION_TIME_BUDGET_S,
) -> Dict[str, Any]:
    """The GPU architectures compiled into the CUDA extensions of torch that are installed here.

    Every distribution that requires torch (or is a known extension: EXTENSION_NAMES) has its compiled files
    read, headers and section tables only, within ``max_libraries`` files, ``max_mb`` MB of them and
    ``budget_s`` seconds; a library left out is listed with the reason.
    """
    t0 = time.monotonic()
    dists = _torch_dependents()
    libraries: List[Dict[str, Any]] = []
    seen = set()
    done = 0
    total = 0
    truncated: Optional[str] = None
    for d in dists:
        key = normalize_name(d["name"])
        if key in seen:  # shadowed by an earlier sys.path entry
            continue
        seen.add(key)
        if key in ("torch", "triton", "pytorch-triton") or key.startswith(("nvidia-", "cuda-")):
            continue
        if key not in EXTENSION_NAMES and not _requires_torch(d["requires"]):
            continue
        if not d["location"]:
            continue
        for rel in _extension_files(d["files"]):
            path = os.path.normpath(os.path.join(d["location"], rel))
            rec: Dict[str, Any] = {"distribution": key, "version": d["version"], "path": path}
            libraries.append(rec)
            try:
                size = os.path.getsize(path)
            except OSError as e:
                rec["skipped"] = f"cannot stat: {_exc_text(e)}"
                continue
            if truncated is None:
                if done >= max_libraries:
                    truncated = f"library budget spent ({max_libraries} libraries read)"
                elif (total + size) > max_mb * 1024 * 1024:
                    truncated = f"size budget spent ({max_mb} MB of libraries read)"
                elif time.monotonic() - t0 > budget_s:
                    truncated = f"time budget spent ({budget_s:g} s)"
            if truncated is not None:
                rec["skipped"] = "not read: " + truncated
                continue
            done += 1
            total += size
            try:
                rec.update(extension_library_archs(path))
            except Exception as e:  # a damaged file: say so, read the next
                rec["skipped"] = f"reading it: {_exc_text(e)}"
    return {"libraries": libraries, "truncated": truncated, "read_libraries": done,
            "read_mb": round(total / (1024 * 1024), 1), "read_seconds": round(time.monotonic() - t0, 3)}


# --------------------------------------------------------------------------- CUDA libraries outside torch's wheels

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


# --------------------------------------------------------------------------- torch


def _record_warnings(caught: List[Any], into: List[str]) -> None:
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, ResourceWarning)):
            continue  # noise from unrelated modules, not a fact about the stack
        text = _short(str(w.message))
        if text not in into and len(into) < MAX_WARNINGS:
            into.append(text)


def inspect_torch(state: State, errors: List[str]) -> Optional[Dict[str, Any]]:
    """Import torch and read its build and CUDA state; None when torch is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError) as e:
        spec = None
        errors.append(f"find_spec('torch'): {_exc_text(e)}")
    if spec is None:
        return None
    info: Dict[str, Any] = {"warnings": [], "devices": []}
    state.envelope["result"]["torch"] = info  # visible to the watchdog as it fills
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        state.stage = "importing torch"
        t0 = time.monotonic()
        try:
            import torch  # noqa: F401  (the whole point of this payload)
        except BaseException as e:  # SystemExit, OSError from dlopen...: all are facts
            info["import_seconds"] = round(time.monotonic() - t0, 3)
            info["import_error"] = _exc_text(e)
            _record_warnings(caught, info["warnings"])
            return info
        info["import_seconds"] = round(time.monotonic() - t0, 3)
        state.stage = "reading torch build information"
        _torch_build(torch, info, errors)
        state.stage = "initialising CUDA in torch"
        _torch_cuda(torch, info, errors)
        _record_warnings(caught, info["warnings"])
    state.stage = "reading loaded libraries"
    return info


def _guard(errors: List[str], what: str, fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except Exception as e:
        errors.append(f"{what}: {_exc_text(e)}")
        return default


def _str_or_none(v: Any) -> Optional[str]:
    return None if v is None else str(v)


def _torch_build(torch: Any, info: Dict[str, Any], errors: List[str]) -> None:
    version = getattr(torch, "version", None)
    info["version"] = _str_or_none(getattr(torch, "__version__", None))
    info["cuda"] = _str_or_none(getattr(version, "cuda", None))
    info["hip"] = _str_or_none(getattr(version, "hip", None))
    info["git_version"] = _str_or_none(getattr(version, "git_version", None))
    debug = getattr(version, "debug", None)
    info["debug"] = debug if isinstance(debug, bool) else None
    abi = _guard(errors, "torch cxx11 abi", lambda: torch._C._GLIBCXX_USE_CXX11_ABI)
    info["cxx11_abi"] = bool(abi) if abi is not None else None
    cudnn = None
    try:
        cudnn = torch.backends.cudnn.version()
    except Exception as e:  # a cuDNN that fails to load is itself worth seeing
        errors.append(f"torch.backends.cudnn.version(): {_exc_text(e)}")
    info["cudnn_version"] = cudnn if isinstance(cudnn, int) and not isinstance(cudnn, bool) else None
    nccl = None
    if info["cuda"] or info["hip"]:
        try:
            v = torch.cuda.nccl.version()
            nccl = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
        except Exception as e:
            errors.append(f"torch.cuda.nccl.version(): {_exc_text(e)}")
    info["nccl_version"] = nccl
    # torch.cuda.get_arch_list() returns [] whenever CUDA is unavailable; the compiled-in arch flags
    # are a property of the build, so read them directly (torch/cuda/__init__.py, get_arch_list)
    arch = None
    flags_fn = getattr(getattr(torch, "_C", None), "_cuda_getArchFlags", None)
    if flags_fn is not None:
        flags = _guard(errors, "torch._C._cuda_getArchFlags()", flags_fn)
        if isinstance(flags, str):
            arch = flags.split()
        elif flags is None and not info["cuda"] and not info["hip"]:
            arch = []
    if arch is None:
        got = _guard(errors, "torch.cuda.get_arch_list()", lambda: torch.cuda.get_arch_list())
        arch = list(got) if got is not None else None
    info["arch_list"] = arch


def _torch_cuda(torch: Any, info: Dict[str, Any], errors: List[str]) -> None:
    with warnings.catch_warnings(record=True) as init_warnings:
        warnings.simplefilter("always")
        try:
            available = bool(torch.cuda.is_available())
        except Exception as e:
            available = None
            info["cuda_init_error"] = _exc_text(e)
        info["cuda_available"] = available
        if available is False:
            # the exact reason: torch.cuda._lazy_init raises it ("Found no NVIDIA driver on your
            # system...", "CUDA driver initialization failed...", "Torch not compiled with CUDA enabled")
            try:
                torch.cuda._lazy_init()
            except BaseException as e:
                info["cuda_init_error"] = _short(str(e).strip() or type(e).__name__)
        count = _guard(errors, "torch.cuda.device_count()", lambda: torch.cuda.device_count())
        info["device_count"] = int(count) if isinstance(count, int) else None
        if available:
            for i in range(info["device_count"] or 0):
                dev: Dict[str, Any] = {"index": i}
                props = _guard(errors, f"torch.cuda.get_device_properties({i})",
                               lambda i=i: torch.cuda.get_device_properties(i))
                if props is not None:
                    dev["name"] = _str_or_none(getattr(props, "name", None))
                    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
                    dev["capability"] = f"{major}.{minor}" if major is not None else None
                    mem = getattr(props, "total_memory", None)
                    dev["total_memory_bytes"] = int(mem) if mem is not None else None
                info["devices"].append(dev)
    for w in init_warnings:
        text = str(w.message)
        # torch turns the C++ "CUDA initialization: ..." TORCH_WARN into this UserWarning
        if not info.get("cuda_init_error") and "CUDA initialization" in text:
            info["cuda_init_error"] = _short(text)
    _record_warnings(init_warnings, info["warnings"])


# --------------------------------------------------------------------------- loaded libraries

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


# --------------------------------------------------------------------------- tasks


def _interpreter_facts() -> Dict[str, Any]:
    import platform
    import sysconfig

    base_prefix = getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))
    conda_prefix = os.environ.get("CONDA_PREFIX")
    is_conda = os.path.isdir(os.path.join(sys.prefix, "conda-meta")) or os.path.isdir(
        os.path.join(base_prefix, "conda-meta"))
    return {
        "python_version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": sysconfig.get_platform(),
        "prefix": sys.prefix,
        "base_prefix": base_prefix,
        "is_venv": sys.prefix != base_prefix or hasattr(sys, "real_prefix"),
        # PEP 668: the distribution manages this Python's packages (pip refuses to install into it); a venv
        # made from it is not managed
        "externally_managed": sys.prefix == base_prefix and os.path.isfile(
            os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")),
        "is_conda": is_conda,
        "conda_prefix": conda_prefix,
        "sys_path": list(sys.path),
        "env": dict((k, os.environ.get(k)) for k in ENV_VARS),
    }


def read_files(state: State, errors: List[str], owners: Dict[str, Tuple[str, str]], env: Dict[str, Optional[str]],
               prefixes: List[str], location: Optional[str], stage: List[Optional[str]]) -> Dict[str, Any]:
    """What the files say, without importing anything: installed distributions, torch's build files, the GPU
    architectures of its extensions, CUDA libraries outside its wheels. ``stage[0]`` says what is being read."""
    out: Dict[str, Any] = {}
    stage[0] = "reading installed distributions"
    out["packages"] = collect_packages(errors, owners)
    stage[0] = "reading library files that two wheels claim"
    out["shared_library_files"] = _guard(errors, "library files two wheels claim", shared_library_files)
    stage[0] = "reading torch's build from its files"
    # a damaged install: the import says more
    out["torch_build"] = _guard(errors, "reading torch's build files",
                                lambda: torch_build_files(location, out["packages"])) if location else None
    stage[0] = "reading the GPU architectures of torch's CUDA extensions"
    out["extensions"] = _guard(errors, "extension architectures", extension_archs)
    stage[0] = "looking for CUDA libraries outside torch's wheels"
    out["library_candidates"] = _guard(errors, "library candidates",
                                       lambda: library_candidates(env, prefixes, owners))
    stage[0] = None
    return out


def _version_py_build(location: str) -> Dict[str, Any]:
    """torch's version.py alone (microseconds): what a crash in the first moments of `import torch` keeps,
    before read_files has read the rest of its build."""
    vp = _read_version_py(os.path.dirname(location), os.path.basename(location))
    return {"location": location, "version": vp.get("__version__"), "cuda": vp.get("cuda"), "hip": vp.get("hip"),
            "git_version": vp.get("git_version")}


def task_inspect(argv: List[str], state: State) -> Dict[str, Any]:
    """Interpreter, installed distributions and, unless --no-torch, torch and its CUDA state.

    The files are read first (0.2 s in a CUDA venv since they are read once, by hand) and checkpointed, then
    torch is imported. With --overlap, `import torch` starts first in the main thread and the files are read
    in a second thread while it runs; their facts join the envelope, and a checkpoint, as soon as they are read.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="_payload.py --task inspect")
    parser.add_argument("--no-torch", action="store_true", help="do not import torch")
    parser.add_argument("--sequential", action="store_true",
                        help="read the files, then import torch (the default; kept for scripts)")
    parser.add_argument("--overlap", action="store_true",
                        help="import torch while a second thread reads the files")
    opts = parser.parse_args(argv)
    # Measured (docs/measurements.md, 6 paired runs on the CUDA venv, 2 loaded cores): the reader thread made
    # the payload 0.66 s slower (median of paired differences), not faster: `import torch` is mostly Python
    # module execution that holds the GIL, and the thread's reads (0.2 s now) contend for it. Sequential stays
    # the default; --overlap keeps the concurrent path for machines where it pays.
    opts.sequential = opts.sequential or not opts.overlap
    result = state.envelope["result"]
    errors: List[str] = []
    result["errors"] = errors
    state.stage = "reading interpreter facts"
    result.update(_interpreter_facts())
    result["torch_inspected"] = not opts.no_torch
    prefixes = [p for p in (result.get("conda_prefix"), sys.prefix if result["is_conda"] else None) if p]
    owners: Dict[str, Tuple[str, str]] = {}
    location = torch_dir(errors)
    result["torch_origin"] = _guard(errors, "where torch is imported from", lambda: module_origin("torch", location))
    stage: List[Optional[str]] = [None]
    if opts.no_torch or location is None or opts.sequential:
        result.update(read_files(state, errors, owners, result["env"], prefixes, location, stage))
        if opts.no_torch or location is None:
            result["torch"] = None
            result["loaded_libraries"] = []
            return result
        reader = None
    else:
        result["torch_build"] = _version_py_build(location)
        reader = _start_reader(state, errors, owners, result, prefixes, location, stage)
    state.stage = "importing torch"
    state.checkpoint()  # a segfault or a hang inside `import torch` still leaves what was read by then
    result["torch"] = inspect_torch(state, errors)
    if reader is not None:
        state.stage = (stage[0] or "reading files") + " (after importing torch)"
        reader.join()
    if result["torch"] is not None:
        state.stage = "reading loaded libraries"
        libs, err = loaded_libraries(prefixes, owners)
        result["loaded_libraries"] = libs or []
        if err:
            errors.append(err)
    else:
        result["loaded_libraries"] = []
    return result


def _start_reader(state: State, errors: List[str], owners: Dict[str, Tuple[str, str]], result: Dict[str, Any],
                  prefixes: List[str], location: str, stage: List[Optional[str]]) -> threading.Thread:
    """read_files in a daemon thread; its facts join ``result`` (and a checkpoint) when they are all read."""
    # what the reader imports, imported here first: two threads importing the same modules at once (the
    # reader and `import torch`) can meet in importlib's module locks
    import csv  # noqa: F401
    import importlib.util  # noqa: F401
    from importlib import metadata  # noqa: F401

    def work() -> None:
        mine: List[str] = []
        try:
            files = read_files(state, mine, owners, result["env"], prefixes, location, stage)
        except Exception as e:  # read_files guards each part; this is a bug in it: say so, keep the rest
            files = {}
            mine.append(f"reading files: {_exc_text(e)}")
        with state.lock:
            result.update(files)
            errors.extend(mine)
        for _ in range(3):  # the main thread may be filling torch's facts: a dump that raced it is retried
            if state.checkpoint():
                break

    reader = threading.Thread(target=work, name="envdoctor-payload-files", daemon=True)
    reader.start()
    return reader


def task_pcie_load(argv: List[str], state: State) -> Dict[str, Any]:
    """Copy pinned host memory to every visible GPU for --seconds, so that the links train up to
    their top PCIe generation while envdoctor samples them through NVML (links idle at Gen1)."""
    import argparse

    parser = argparse.ArgumentParser(prog="_payload.py --task pcie-load")
    parser.add_argument("--seconds", type=float, default=1.5, help="how long to keep the copies going")
    parser.add_argument("--mib", type=int, default=64, help="size of each copy")
    opts = parser.parse_args(argv)
    result = state.envelope["result"]
    result["ran"] = False
    state.stage = "importing torch"
    try:
        import torch  # only here: the payload stays stdlib-only at import
    except Exception as e:
        result["reason"] = "import torch failed: " + _exc_text(e)
        return result
    state.stage = "initialising CUDA"
    if not torch.cuda.is_available():
        result["reason"] = "torch.cuda.is_available() is False (torch {}, CUDA {})".format(
            torch.__version__, getattr(torch.version, "cuda", None))
        return result
    count = torch.cuda.device_count()
    state.stage = "allocating pinned buffers"
    nbytes = max(1, opts.mib) * 1024 * 1024
    bufs = []
    devices = []
    for i in range(count):
        # CUDA numbers devices FASTEST_FIRST by default, not in NVML's PCI order (CUDA C Programming Guide,
        # CUDA_DEVICE_ORDER): each device is named by its PCI bus id, never by cuda:i alone
        entry = {"index": i, "name": None, "pci_bus_id": None, "bytes": 0}
        devices.append(entry)
        try:  # per device: one GPU that cannot be used (busy, no memory, lost) must not stop the others
            props = torch.cuda.get_device_properties(i)
            entry["name"] = props.name
            if all(hasattr(props, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
                entry["pci_bus_id"] = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}"
            host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
            dev = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{i}")
            bufs.append((i, host, dev, torch.cuda.Stream(device=i)))
        except Exception as e:
            entry["error"] = _exc_text(e)
    state.stage = "copying host to device"
    start = time.monotonic()
    result["load_started_s"] = round(start - state.start, 3)
    while bufs and time.monotonic() - start < opts.seconds:
        issued = []
        for item in list(bufs):  # all devices' copies in flight together, so every link carries traffic
            try:
                with torch.cuda.stream(item[3]):
                    item[2].copy_(item[1], non_blocking=True)
                issued.append(item)
            except Exception as e:
                devices[item[0]]["error"] = _exc_text(e)
                bufs.remove(item)
        for item in issued:
            try:
                item[3].synchronize()
                devices[item[0]]["bytes"] += nbytes
            except Exception as e:
                devices[item[0]]["error"] = _exc_text(e)
                bufs.remove(item)
    elapsed = time.monotonic() - start
    for d in devices:
        d["gb_per_s"] = round(d["bytes"] / elapsed / 1e9, 2) if elapsed > 0 and d["bytes"] else None
    result["ran"] = True
    result["seconds"] = round(elapsed, 3)
    result["devices"] = devices
    return result


TASKS = {"inspect": task_inspect, "pcie-load": task_pcie_load}


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Keep stdout for our one JSON line: everything else anyone prints (torch, .pth files, C code
    # writing to fd 1) goes to stderr for the rest of this process.
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    state = State(out_fd)
    rc = 0
    try:
        task = "inspect"
        deadline: Optional[float] = None
        rest: List[str] = []
        i = 0
        while i < len(argv):
            if argv[i] == "--task" and i + 1 < len(argv):
                task = argv[i + 1]
                i += 2
            elif argv[i] == "--deadline-s" and i + 1 < len(argv):
                deadline = float(argv[i + 1])
                i += 2
            else:
                rest.append(argv[i])
                i += 1
        state.envelope["task"] = task
        if deadline is not None and deadline > 0:
            _start_watchdog(state, deadline)
        fn = TASKS.get(task)
        if fn is None:
            state.envelope["error"] = "unknown task {!r} (known: {})".format(task, ", ".join(sorted(TASKS)))
            rc = 2
        else:
            result = fn(rest, state)
            state.envelope["result"] = result
            state.envelope["ok"] = True
            state.stage = None
    except SystemExit as e:  # argparse errors
        state.envelope["error"] = f"bad arguments (exit {e.code}); see stderr"
        rc = 2
    except BaseException as e:
        state.envelope["error"] = _exc_text(e)
        state.envelope["stage"] = state.stage
        traceback.print_exc()
        rc = 1
    state.emit()
    if state.timer is not None:
        state.timer.cancel()  # torch's atexit handlers must not trip the watchdog after we answered
    return rc


if __name__ == "__main__":
    sys.exit(main())
