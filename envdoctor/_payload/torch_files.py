"""torch read from its files, before (and whether or not) it is imported: where it is imported from and why, its
build (version.py, pins, DT_NEEDED, arch list), and the GPU architectures of its CUDA extensions."""

import os
import re
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .common import _exc_text, normalize_name
from .dists import _CUDART, _is_compiled, _iter_distributions, _read_version_py
from .elf import arch_list_from_fatbin, elf_read, fatbin_archs
from .extension_build import library_links, read_build_info, resolve_torch_symbols
from .libraries import lib_family

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
    budget_s: float = EXTENSION_TIME_BUDGET_S, torch_location: Optional[str] = None,
) -> Dict[str, Any]:
    """The GPU architectures compiled into the CUDA extensions of torch that are installed here, and what each
    was built for (extension_build: its build metadata, DT_NEEDED, the torch symbols it needs that the torch at
    ``torch_location`` does not define).

    Every distribution that requires torch (or is a known extension: EXTENSION_NAMES) has its compiled files
    read, headers and section tables only, within ``max_libraries`` files, ``max_mb`` MB of them and
    ``budget_s`` seconds; a library left out is listed with the reason.
    """
    t0 = time.monotonic()
    dists = _torch_dependents()
    libraries: List[Dict[str, Any]] = []
    builds: List[Dict[str, Any]] = []
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
        build = read_build_info(key, d["location"])
        if build is not None:
            builds.append(build)
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
                if "skipped" not in rec:
                    rec.update(library_links(path))
            except Exception as e:  # a damaged file: say so, read the next
                rec["skipped"] = f"reading it: {_exc_text(e)}"
    unresolved_why = resolve_torch_symbols(libraries, torch_location)
    return {"libraries": libraries, "truncated": truncated, "read_libraries": done, "builds": builds,
            "symbols_unresolved_reason": unresolved_why,
            "read_mb": round(total / (1024 * 1024), 1), "read_seconds": round(time.monotonic() - t0, 3)}


_EXTENSION_SUFFIXES = (".py", ".pyc", ".so", ".pyd")
CWD_SHADOW_MAX_ENTRIES = 20000  # a data directory with millions of files is not listed whole


def cwd_shadows(cwd: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """Files or packages in the working directory named like a module this process has imported (torch and what
    it pulled in: the standard library's ``numbers``, ``queue``, ``typing``..., numpy, sympy). A run started here
    (``python -c``, a notebook, ``python train.py`` from its own directory) has that directory first on sys.path,
    so ``import torch`` there loads the local file instead and fails or misbehaves. This payload itself runs
    without the directory on sys.path, so its own import worked; a module found before the path (built-in, frozen)
    cannot be shadowed and is left out. None when the directory cannot be read."""
    try:
        cwd = cwd or os.getcwd()
        names = []
        with os.scandir(cwd) as it:
            for n, entry in enumerate(it):
                if n >= CWD_SHADOW_MAX_ENTRIES:
                    break
                # only an entry named like a loaded module is looked at further (a data directory's files cost
                # no stat on this path, which runs before the payload answers)
                if entry.name.partition(".")[0] in sys.modules:
                    names.append((entry.name, entry.is_dir(follow_symlinks=True)))
    except (OSError, ValueError):
        return None
    found: List[Dict[str, Any]] = []
    seen = set()
    for name, is_dir in sorted(names):
        if is_dir:
            if not name.isidentifier() or not os.path.isfile(os.path.join(cwd, name, "__init__.py")):
                continue  # a namespace folder loses to a regular module anywhere on sys.path
            module = name
        else:
            stem, dot, _ext = name.partition(".")
            if not dot or not name.endswith(_EXTENSION_SUFFIXES) or not stem.isidentifier():
                continue
            if name.endswith(".pyc") and name != stem + ".pyc":
                continue  # a cached cpython-311.pyc in a folder other than __pycache__ is still a module by name
            module = stem
        if module in seen:
            continue
        mod = sys.modules.get(module)
        if mod is None:
            continue
        spec = getattr(mod, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if origin in ("built-in", "frozen"):
            continue
        loaded = getattr(mod, "__file__", None) or origin
        path = os.path.join(cwd, name)
        try:
            if loaded and os.path.realpath(loaded).startswith(os.path.realpath(path)):
                continue  # this process loaded it from there itself: not a stranger
        except (OSError, ValueError):
            pass
        seen.add(module)
        found.append({"module": module, "path": path, "hides": loaded})
    return {"cwd": cwd, "shadows": found}
