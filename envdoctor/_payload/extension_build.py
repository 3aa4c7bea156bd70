"""What a compiled extension of torch says it was built for, read from its files and its own load: the build
metadata it ships (xformers/cpp_lib.json ...), the libraries it links (DT_NEEDED: libc10.so, libcudart.so.12), the
torch C++ symbols it needs and which of them the installed torch does not define, and the error its library gives
when loaded next to the imported torch (what torch.ops.load_library does: ctypes.CDLL)."""

import ast
import json
import os
import re
import time
from typing import Any, Callable, Dict, List, Optional

from .common import _exc_text, _short
from .elf import elf_defined_symbols, elf_read, elf_undefined_symbols

# Itanium C++ mangled names in torch's namespaces (c10::, at::, torch::, caffe2::), plain or const/volatile/ref
# qualified member functions (_ZNK...) and their typeinfo/vtables (_ZTIN..., _ZTVN...): the symbols that carry
# torch's C++ ABI. A change of torch renames or removes some of them; "undefined symbol: _ZN3c10..." follows.
TORCH_ABI_SYMBOL = re.compile(rb"_Z(?:T[ISV])?N[KVRO]*(?:3c10|2at|5torch|6caffe2)")
TORCH_LIBRARY = re.compile(r"^lib(?:c10|torch|shm)[A-Za-z0-9_]*\.so$")
MAX_UNRESOLVED = 20  # names kept per library (the count is kept whole)
LOAD_BUDGET_S = 20.0
MAX_LOADS = 64

# Build metadata an extension ships next to its code: distribution -> (file relative to its location, format,
# {fact: key path}). xformers writes cpp_lib.json at build time and its own loader compares it with the running
# torch ("xFormers was built for: PyTorch 2.x with CUDA 1208 (you have ...)", xformers/_cpp_lib.py); deepspeed
# writes git_version_info_installed.py with torch_info = {'version': '2.3', 'cuda_version': '12.1'}.
BUILD_INFO = {
    "xformers": ("xformers/cpp_lib.json", "json", {"torch": ("version", "torch"), "cuda": ("version", "cuda"),
                                                    "hip": ("version", "hip"), "python": ("version", "python")}),
    "deepspeed": ("deepspeed/git_version_info_installed.py", "assign",
                  {"torch": ("torch_info", "version"), "cuda": ("torch_info", "cuda_version")}),
}


def _dig(data: Any, path: Any) -> Optional[str]:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return None if data is None or isinstance(data, (dict, list)) else str(data)


def _assignments(text: str) -> Dict[str, Any]:
    """Top-level ``name = <literal>`` lines of a generated Python file, read as literals (never executed)."""
    out: Dict[str, Any] = {}
    for m in re.finditer(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+)$", text, re.M):
        try:
            out[m.group(1)] = ast.literal_eval(m.group(2).strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


def read_build_info(key: str, location: Optional[str]) -> Optional[Dict[str, Any]]:
    """The build metadata file of distribution ``key`` (BUILD_INFO), as {"distribution", "file", "torch", "cuda",
    ...}; None when it ships none of a known kind or the file is absent; with "error" when it cannot be read."""
    spec = BUILD_INFO.get(key)
    if spec is None or not location:
        return None
    rel, fmt, fields = spec
    path = os.path.join(location, rel)
    if not os.path.isfile(path):
        return None
    out: Dict[str, Any] = {"distribution": key, "file": path}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
        data = json.loads(text) if fmt == "json" else _assignments(text)
    except (OSError, ValueError) as e:
        out["error"] = _exc_text(e)
        return out
    for fact, keys in fields.items():
        out[fact] = _dig(data, keys)
    return out


def library_links(path: str) -> Dict[str, Any]:
    """DT_NEEDED of one extension library and the torch C++ symbols it needs ("_torch_symbols", dropped from the
    facts once resolved: an extension needs thousands)."""
    elf = elf_read(path)
    if elf is None:
        return {}
    out: Dict[str, Any] = {"needed": list(elf["needed"])}
    undefined = elf_undefined_symbols(path, TORCH_ABI_SYMBOL)
    if undefined is not None:
        out["torch_symbols"] = len(undefined)
        out["_torch_symbols"] = undefined
    return out


def torch_libraries(torch_location: Optional[str]) -> List[str]:
    """torch's own shared libraries (torch/lib/libc10*.so, libtorch*.so, libshm*.so)."""
    if not torch_location:
        return []
    lib = os.path.join(torch_location, "lib")
    try:
        names = sorted(os.listdir(lib))
    except OSError:
        return []
    return [os.path.join(lib, n) for n in names if TORCH_LIBRARY.match(n)]


def resolve_torch_symbols(libraries: List[Dict[str, Any]], torch_location: Optional[str]) -> Optional[str]:
    """Set ``unresolved_symbols``/``unresolved_count`` on every library record that needs torch symbols: those
    the installed torch's libraries do not define, so that the loader refuses the extension ("undefined symbol").
    Returns why they could not be resolved, or None."""
    wanted = [rec for rec in libraries if rec.get("_torch_symbols")]
    for rec in libraries:
        if "_torch_symbols" in rec and not rec["_torch_symbols"]:
            rec.pop("_torch_symbols")
    if not wanted:
        return None
    libs = torch_libraries(torch_location)
    why = None
    defined = set()
    if not libs:
        why = "torch's libraries (torch/lib/libc10.so, libtorch*.so) were not found"
    for path in libs:
        got = elf_defined_symbols(path, TORCH_ABI_SYMBOL)
        if got is None:
            why = f"the dynamic symbols of {os.path.basename(path)} could not be read"
            break
        defined.update(got)
    for rec in wanted:
        names = rec.pop("_torch_symbols")
        if why is not None:
            continue
        missing = [n for n in names if n not in defined]
        rec["unresolved_count"] = len(missing)
        rec["unresolved_symbols"] = missing[:MAX_UNRESOLVED]
        rec["symbols_checked_against"] = [os.path.basename(p) for p in libs]
    return why


def links_torch(rec: Dict[str, Any]) -> bool:
    """Does this library link torch (DT_NEEDED on its libraries, or torch's C++ symbols): the ones worth loading."""
    return bool(rec.get("torch_symbols")) or any(TORCH_LIBRARY.match(os.path.basename(n))
                                                 for n in rec.get("needed") or [])


def load_extensions(scan: Optional[Dict[str, Any]], budget_s: float = LOAD_BUDGET_S,
                    max_loads: int = MAX_LOADS, on_load: Optional[Callable[[str], None]] = None) -> None:
    """Load each extension library that links torch, in this process where torch is imported, as
    torch.ops.load_library does (ctypes.CDLL: dlopen with RTLD_NOW, so every symbol must resolve now), and record
    ``loaded`` and the exact ``load_error``. Python's module initialisation is not run: only the loader's verdict.
    Libraries beyond the budget are marked with ``load_skipped``."""
    if not scan:
        return
    import ctypes

    t0 = time.monotonic()
    done = 0
    for rec in scan.get("libraries") or []:
        if rec.get("skipped") or not rec.get("path") or not links_torch(rec):
            continue
        if done >= max_loads or time.monotonic() - t0 > budget_s:
            rec["load_skipped"] = f"load budget spent ({done} libraries loaded in {time.monotonic() - t0:.1f} s)"
            continue
        done += 1
        if on_load is not None:
            on_load(rec["path"])
        try:
            ctypes.CDLL(rec["path"])
            rec["loaded"] = True
        except OSError as e:
            rec["loaded"] = False
            rec["load_error"] = _short(str(e))
        except Exception as e:  # a static initialiser that throws through dlopen: the same verdict
            rec["loaded"] = False
            rec["load_error"] = _exc_text(e)
