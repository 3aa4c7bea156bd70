"""What a compiled extension of torch says it was built for, read from its files and its own load: the build
metadata it ships (xformers/cpp_lib.json ...), the libraries it links (DT_NEEDED: libc10.so, libcudart.so.12), the
torch C++ symbols it needs and which of them the installed torch does not define, and the error its library gives
when loaded next to the imported torch (what torch.ops.load_library does: ctypes.CDLL)."""

import ast
import json
import os
import re
import time
from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: F401  (Tuple: in a type comment)

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
# writes git_version_info_installed.py with torch_info = {'version': '2.3', 'cuda_version': '12.1'} (torch's
# major.minor only) and installed_ops = {'cpu_adam': 1, 'fused_adam': False, ...}: its OpBuilder.load() checks
# torch_info only for an op it installed pre-compiled, and JIT-compiles every other op against the running torch
# (microsoft/DeepSpeed op_builder/builder.py, load() and validate_torch_version). "compiled" is the fact key whose
# value is a dict of {name: truthy}: the names compiled into the wheel ([] when none was).
BUILD_INFO = {  # type: Dict[str, Tuple[str, str, Dict[str, Any]]]
    "xformers": ("xformers/cpp_lib.json", "json", {"torch": ("version", "torch"), "cuda": ("version", "cuda"),
                                                    "hip": ("version", "hip"), "python": ("version", "python")}),
    "deepspeed": ("deepspeed/git_version_info_installed.py", "assign",
                  {"torch": ("torch_info", "version"), "cuda": ("torch_info", "cuda_version"),
                   "compiled": ("installed_ops",)}),
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
        if fact == "compiled":
            ops = data.get(keys[0]) if isinstance(data, dict) else None
            out[fact] = sorted(str(k) for k, v in ops.items() if v) if isinstance(ops, dict) else None
        else:
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


def _load_one(path: str) -> Dict[str, Any]:
    import ctypes

    try:
        ctypes.CDLL(path)
        return {"loaded": True}
    except OSError as e:
        return {"loaded": False, "load_error": _short(str(e))}
    except Exception as e:  # a static initialiser that throws through dlopen: the same verdict
        return {"loaded": False, "load_error": _exc_text(e)}


def _signal_name(status: int) -> Optional[str]:
    if not os.WIFSIGNALED(status):
        return None
    import signal

    try:
        return signal.Signals(os.WTERMSIG(status)).name
    except ValueError:
        return f"signal {os.WTERMSIG(status)}"


def load_extensions(scan: Optional[Dict[str, Any]], budget_s: float = LOAD_BUDGET_S,
                    max_loads: int = MAX_LOADS, on_load: Optional[Callable[[str], None]] = None) -> None:
    """Load each extension library that links torch next to the imported torch, as torch.ops.load_library does
    (ctypes.CDLL: dlopen with RTLD_NOW, so every symbol must resolve now), and record ``loaded`` and the exact
    ``load_error``. Python's module initialisation is not run: only the loader's verdict.

    The loads run in a forked child of this process (torch already imported there): a static initialiser that
    aborts (a C++ exception through dlopen) or hangs costs the child, not the payload, and is itself the verdict
    on that library. Where there is no fork (Windows) they run here. Libraries beyond ``max_loads`` or the
    ``budget_s`` are marked with ``load_skipped``."""
    if not scan:
        return
    todo = [rec for rec in scan.get("libraries") or []
            if not rec.get("skipped") and rec.get("path") and links_torch(rec)]
    for rec in todo[max_loads:]:
        rec["load_skipped"] = f"load budget spent ({max_loads} libraries loaded)"
    todo = todo[:max_loads]
    if not todo:
        return
    if not hasattr(os, "fork"):
        t0 = time.monotonic()
        for rec in todo:
            if time.monotonic() - t0 > budget_s:
                rec["load_skipped"] = f"load budget spent ({budget_s:g} s)"
                continue
            if on_load is not None:
                on_load(rec["path"])
            rec.update(_load_one(rec["path"]))
        return
    _load_forked(todo, budget_s, on_load)


def _load_forked(todo: List[Dict[str, Any]], budget_s: float, on_load: Optional[Callable[[str], None]]) -> None:
    import select
    import signal

    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as e:
        os.close(r)
        os.close(w)
        for rec in todo:
            rec["load_skipped"] = "could not fork a process to load it in: " + _exc_text(e)
        return
    if pid == 0:  # the child: one line when a load starts, one with its verdict; never the parent's exit handlers
        try:
            os.close(r)
            for k, rec in enumerate(todo):
                os.write(w, (json.dumps({"k": k}) + "\n").encode("utf-8"))
                os.write(w, (json.dumps(dict(_load_one(rec["path"]), k=k)) + "\n").encode("utf-8"))
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + budget_s
    started: Optional[int] = None
    buf = b""
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                timed_out = True
                break
            chunk = os.read(r, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line.decode("utf-8"))
                k = msg.pop("k")
                if msg:
                    todo[k].update(msg)
                    started = None
                else:
                    started = k
                    if on_load is not None:
                        on_load(todo[k]["path"])
    finally:
        os.close(r)
    if timed_out:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        _pid, status = os.waitpid(pid, 0)
    except OSError:
        status = 0
    died = _signal_name(status) if not timed_out else None
    for k, rec in enumerate(todo):
        if "loaded" in rec:
            continue
        if k == started and died:
            rec["loaded"] = False
            rec["load_error"] = f"loading it killed the process ({died})"
        elif k == started and timed_out:
            rec["load_skipped"] = f"still loading after {budget_s:g} s (stopped)"
        else:
            rec["load_skipped"] = f"load budget spent ({budget_s:g} s)" if timed_out else "not loaded (the loader stopped)"
