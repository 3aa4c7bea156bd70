"""Library shadowing detection shared by libraries.shadowing and torch.import: which copy of a CUDA library
torch loads instead of its own wheel's, and the finding and fix that say so."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..domain.variants import nvidia_wheel
from ..domain.versions import parse_version
from ..model.facts import LibraryCopy, PythonEnv
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import drop_path_entry, export, pip_install, pth_line_removal, unset
from .base import Findings

# library family -> the nvidia-* wheel that ships it next to a pip-installed torch (the wheel may carry a
# -cu12 / -cu13 suffix); family names are those the payload gives (lib_family in _payload/libraries.py)
WHEELS = {
    "cudnn": "nvidia-cudnn", "cublas": "nvidia-cublas", "nccl": "nvidia-nccl",
    "nvjitlink": "nvidia-nvjitlink", "cudart": "nvidia-cuda-runtime", "cufft": "nvidia-cufft",
    "curand": "nvidia-curand", "cusparse": "nvidia-cusparse", "cusparselt": "nvidia-cusparselt",
    "cusolver": "nvidia-cusolver", "nvrtc": "nvidia-cuda-nvrtc", "nvshmem": "nvidia-nvshmem",
}
_LABEL = {"cudnn": "cuDNN", "cublas": "cuBLAS", "nccl": "NCCL", "nvjitlink": "nvJitLink", "cudart": "the CUDA runtime",
          "cufft": "cuFFT", "curand": "cuRAND", "cusparse": "cuSPARSE", "cusparselt": "cuSPARSELt",
          "cusolver": "cuSOLVER", "nvrtc": "NVRTC", "nvshmem": "NVSHMEM"}
# symbol prefix -> family, to tell which library an "undefined symbol" error is about
_SYMBOL_FAMILY = [("ncclx", "nccl"), ("nccl", "nccl"), ("cudnn", "cudnn"), ("cublas", "cublas"),
                  ("__nvjitlink", "nvjitlink"), ("nvjitlink", "nvjitlink"), ("cufft", "cufft"), ("curand", "curand"),
                  ("cusparselt", "cusparselt"), ("cusparse", "cusparse"), ("cusolver", "cusolver"),
                  ("nvrtc", "nvrtc"), ("nvshmem", "nvshmem"), ("cuda", "cudart")]
_UNDEFINED = re.compile(r"undefined symbol: ([A-Za-z_][A-Za-z0-9_]*)")
PRELOAD_VIAS = ("LD_PRELOAD", "/etc/ld.so.preload")

# libraries.shadowing's finding (torch.import reports the same when it explains an import error): a kind per
# library family, as the payload names it (lib_family in _payload.py)
SHADOWING = Findings("libraries.shadowing", "SYSTEM_LIB_SHADOWING", kinds=("{library}",))


def label(family: str) -> str:
    return _LABEL.get(family, family)


def wheel_version(py: PythonEnv, family: str) -> Tuple[Optional[str], Optional[str]]:
    """(version, wheel name) of the nvidia-* wheel that ships ``family``: installed, else torch's pin."""
    installed = installed_wheel(py, family)
    if installed:
        return installed
    return pinned_wheel(py, family)


def _is_family_wheel(name: str, family: str) -> bool:
    """Is ``name`` the wheel of ``family``: nvidia-cudnn, or nvidia-cudnn-cu12 for one CUDA major?"""
    prefix = WHEELS.get(family)
    w = nvidia_wheel(name)
    return bool(prefix) and (name.lower() == prefix or (w is not None and f"nvidia-{w[0]}" == prefix))


def installed_wheel(py: PythonEnv, family: str) -> Optional[Tuple[str, str]]:
    for p in py.packages:
        if _is_family_wheel(p.name, family):
            return p.version, p.name
    return None


def pinned_wheel(py: PythonEnv, family: str) -> Tuple[Optional[str], Optional[str]]:
    """(version, wheel name) torch's metadata pins for ``family`` (Requires-Dist nvidia-nccl-cu13==2.30.7)."""
    build = py.torch.build_files if py.torch else None
    for pin in (build.requires_pins if build else []):
        name, _, version = pin.partition("==")
        if _is_family_wheel(name, family) and version:
            return version, name.lower()
    return None, None


def symbol_family(error: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """(family, symbol) of the first "undefined symbol: X" in an error text."""
    m = _UNDEFINED.search(error or "")
    if not m:
        return None, None
    symbol = m.group(1)
    low = symbol.lower()
    # C++ mangled names (_ZN...) say nothing about a C library: only plain C entry points are mapped
    for prefix, family in _SYMBOL_FAMILY:
        if low.startswith(prefix):
            return family, symbol
    return None, symbol


def _versions_differ(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return None
    n = min(len(va.release), len(vb.release), 3)
    return va.release[:n] != vb.release[:n]


def unpreload_commands(py: PythonEnv, lib: LibraryCopy) -> Tuple[str, List[str]]:
    """(fix summary, commands) that take one preloaded library out of the loader's way.

    The commands come from envdoctor.remedies (quoted).
    """
    entry = lib.path or lib.name
    if lib.via == "LD_PRELOAD":
        value = (py.env or {}).get("LD_PRELOAD") or ""
        rest = [e for e in re.split(r"[:\s]+", value) if e and e != entry and e != lib.path]
        if rest:
            return (f"Take {entry} out of LD_PRELOAD (where it is set: the shell profile, the job script, the "
                    "container's ENV) so torch loads its own copy",
                    [export("LD_PRELOAD", ":".join(rest))])
        return (f"Unset LD_PRELOAD (it preloads {entry}) where it is set: the shell profile, the job script, the "
                "container's ENV; torch then loads its own copy", [unset("LD_PRELOAD")])
    return (f"Remove the line {entry} from /etc/ld.so.preload (it preloads into every process on this machine)",
            ["sudoedit /etc/ld.so.preload"])


@dataclass(frozen=True)
class Shadow:
    """One library the loader takes instead of torch's wheel copy."""

    lib: LibraryCopy
    family: str
    wheel: Optional[str]
    wheel_version: Optional[str]
    how: str  # "preloaded", "loaded", "search-path", "fallback" (torch's wheel is missing)
    explains_import_error: bool


def shadows(py: PythonEnv, system: Optional[List[LibraryCopy]] = None) -> List[Shadow]:
    """The shadowing copies for one interpreter with a CUDA build of torch (pure; used by torch.import too).

    ``system``: the copies in the system linker cache (facts.system_libraries), which the loader falls back
    to when the wheel torch pins is not installed.
    """
    t = py.torch
    if t is None or not t.cuda:
        return []
    fam_err, _sym = symbol_family(t.import_error)
    out: List[Shadow] = []
    seen = set()
    build = t.build_files
    needed = set(build.needed or []) if build else set()

    def add(lib: LibraryCopy, how: str) -> None:
        family = lib.name
        if family not in WHEELS or (family, lib.path) in seen:
            return
        version, wheel = wheel_version(py, family)
        if wheel is None and not (lib.soname and lib.soname in needed):
            return  # torch does not ship this library here (a conda or system build of torch)
        seen.add((family, lib.path))
        out.append(Shadow(lib, family, wheel, version, how, fam_err == family))

    for lib in py.library_candidates:
        if lib.via in PRELOAD_VIAS and lib.path:  # (no path: the file does not exist and ld.so skips it)
            add(lib, "preloaded")
    for lib in py.loaded_libraries:
        if lib.origin in ("system", "conda") and not any(s.lib.path == lib.path for s in out):
            add(lib, "loaded")
    if not t.imported and build is not None and build.rpath is None:
        # without DT_RPATH, LD_LIBRARY_PATH is searched before torch's own DT_RUNPATH (ld.so(8), "Shared
        # object dependencies"); with DT_RPATH (torch 2.x wheels), torch's own directories come first
        for lib in py.library_candidates:
            if lib.via == "LD_LIBRARY_PATH" and lib.soname and lib.soname in needed:
                add(lib, "search-path")
    if not t.imported and fam_err and not any(s.family == fam_err for s in out) and not installed_wheel(py, fam_err):
        # torch pins a wheel for this library and it is not installed: its RPATH directory is empty, so the
        # loader went on to LD_LIBRARY_PATH and the system cache (ld.so(8)) and found an older copy
        pinned, wheel = pinned_wheel(py, fam_err)
        fallback = [c for c in py.library_candidates if c.via in ("LD_LIBRARY_PATH", "conda")] + list(system or [])
        lib = next((c for c in fallback if c.name == fam_err), None)
        if pinned and lib is not None:
            seen.add((fam_err, lib.path))
            out.append(Shadow(lib, fam_err, wheel, pinned, "fallback", True))
    return out


def _ld_hit(py: PythonEnv, path: Optional[str]) -> Optional[str]:
    value = (py.env or {}).get("LD_LIBRARY_PATH") or ""
    for d in (d for d in value.split(":") if d):
        if path and path.startswith(d.rstrip("/") + "/"):
            return d
    return None


def shadow_finding(i: int, py: PythonEnv, s: Shadow) -> Finding:
    lib = s.lib
    name = label(s.family)
    version = f"{name} {lib.version}" if lib.version else f"{name}, version unknown"
    wheel = f"its {s.wheel} wheel ({s.wheel_version})" if s.wheel else "the copy its wheels ship"
    differs = _versions_differ(lib.version, s.wheel_version)
    where = f"pythons[{i}].loaded_libraries" if s.how == "loaded" else f"pythons[{i}].library_candidates"
    ev = [Evidence(f"{where}.{s.family}", lib.path or lib.name, expected=f"the {s.wheel or 'wheel'} copy in site-packages"),
          Evidence(f"{where}.{s.family}.version", lib.version, source=lib.version_source),
          Evidence(f"pythons[{i}].packages.{s.wheel or WHEELS[s.family]}", s.wheel_version)]
    if s.explains_import_error:
        ev.append(Evidence(f"pythons[{i}].torch.import_error", py.torch.import_error if py.torch else None))
    cmds: List[str] = []
    if s.how == "fallback":
        summary = (f"torch pins {s.wheel}=={s.wheel_version} but it is not installed, so the loader falls back to "
                   f"{lib.path} ({version})")
        fix_summary = f"Install the {name} wheel torch pins, so torch loads its own copy"
        cmds = [pip_install(None, py, [f"{s.wheel}=={s.wheel_version}"])]
        detail = ("torch's libraries look for their CUDA libraries in the nvidia-* wheels' directories first "
                  "(RPATH); when a wheel is missing the loader goes on to LD_LIBRARY_PATH and the system cache "
                  "and takes whatever copy it finds there.")
        ev[-1] = Evidence(f"pythons[{i}].torch.build_files.requires_pins", f"{s.wheel}=={s.wheel_version}",
                          expected="installed")
    elif s.how == "preloaded":
        var = lib.via or "LD_PRELOAD"
        ev.insert(0, Evidence(f"pythons[{i}].env.LD_PRELOAD" if var == "LD_PRELOAD" else "/etc/ld.so.preload",
                              (py.env or {}).get("LD_PRELOAD") if var == "LD_PRELOAD" else lib.path))
        summary = (f"{var} loads {lib.path or lib.name} ({version}) into every process before torch's own "
                   f"{name}, {wheel}")
        fix_summary, cmds = unpreload_commands(py, lib)
        detail = ("A preloaded library is loaded before anything else and answers for its SONAME "
                  f"({lib.soname or 'its name'}), so torch's own copy is never used, whatever RPATH says "
                  "(ld.so(8)). Reinstalling torch does not change that.")
    else:
        hit = _ld_hit(py, lib.path)
        where = f"LD_LIBRARY_PATH entry {hit}" if hit else f"the {lib.origin or 'system'} library path"
        folder = hit or (lib.path or "").rsplit("/", 1)[0] or "?"  # one cause per folder: findings.group_by_cause
        cause = f"torch {'loaded' if s.how == 'loaded' else 'would load'} CUDA libraries from {where}" + (
            "" if hit else f" ({folder})") + " instead of its own wheels' copies"
        base = (lib.path or lib.name).rsplit("/", 1)[-1]  # the folder is the cause's; the wheel's copy: -v
        item = base if lib.version and lib.version in base else f"{base} ({lib.version or 'version unknown'})"
        summary = (f"torch {'loaded' if s.how == 'loaded' else 'would load'} {name} from {lib.path} ({version}), "
                   f"found through {where}, instead of {wheel}")
        detail = ("A library directory earlier on LD_LIBRARY_PATH (or in the system linker path) wins over "
                  "the copy torch was built and tested with. Version skew shows up as 'cuDNN version "
                  "incompatibility', undefined symbols such as __nvJitLinkAddData_12_1, or silent slowdowns.")
        if hit:
            ev.insert(0, Evidence(f"pythons[{i}].env.LD_LIBRARY_PATH", (py.env or {}).get("LD_LIBRARY_PATH")))
            cmds.append(drop_path_entry(None, "LD_LIBRARY_PATH", (py.env or {}).get("LD_LIBRARY_PATH") or "", hit))
            fix_summary = f"Remove {hit} from LD_LIBRARY_PATH so torch loads the CUDA libraries its wheels ship"
        else:
            fix_summary = (f"Take the CUDA libraries in {folder} out of the loader's path (the ld.so.conf entry "
                           "that names it, then `sudo ldconfig`), or match their versions to the wheels'")
    if s.explains_import_error:
        summary += ": `import torch` fails on it"
    severity = Severity.ERROR if (s.explains_import_error or differs) else Severity.WARNING
    grouped = {"cause": cause, "item": item} if s.how in ("loaded", "search-path") else {}
    return SHADOWING(
        s.family, severity,
        summary=summary,
        detail=detail,
        evidence=ev,
        fix=Fix(fix_summary, cmds),
        **grouped,
    )


# --------------------------------------------------------------------------- a torch from outside the environment

ORIGIN_VIA = {"PYTHONPATH": "PYTHONPATH", "user-site": "the user site (PEP 370, ~/.local)",
              "pth": "a .pth file", "current-directory": "the current directory",
              "other": "a sys.path edit (sitecustomize, usercustomize, PYTHONSTARTUP or the program itself)"}


def _same_dir(a: Optional[str], b: Optional[str]) -> bool:
    import posixpath

    return bool(a and b) and posixpath.normpath(a) == posixpath.normpath(b)


def foreign_torch(py: PythonEnv):
    """The ModuleOrigin of a torch imported from outside the interpreter's own site-packages, else None."""
    o = py.torch_origin
    if o is None or o.via in (None, "site-packages") or o.location is None:
        return None
    if any(_same_dir(o.entry, d) for d in o.site_packages):
        return None  # PYTHONPATH naming the environment's own site-packages changes nothing
    return o


def own_torch(py: PythonEnv):
    """The copy of torch in the interpreter's own site-packages that the imported one hides, if any."""
    o = py.torch_origin
    if o is None:
        return None
    return next((c for c in o.copies if c.via == "site-packages" or any(_same_dir(c.entry, d) for d in o.site_packages)),
                None)


def origin_fix(py: PythonEnv) -> Tuple[str, List[str]]:
    """(summary, commands) that make the interpreter import its own torch again (or one installed into it)."""
    from ..domain.variants import torch_variant
    from ..domain.versions import base_version
    from ..remedies import command

    o = foreign_torch(py)
    if o is None:
        return "", []
    own = own_torch(py)
    where = py.executable or "the interpreter"
    cmds: List[str] = []
    if o.via == "PYTHONPATH":
        value = (py.env or {}).get("PYTHONPATH") or ""
        hit = next((d for d in value.split(":") if _same_dir(d, o.entry)), None)
        cmds.append(drop_path_entry(None, "PYTHONPATH", value, hit) if hit else unset("PYTHONPATH"))
        summary = (f"Take {o.entry} out of PYTHONPATH where it is set (the shell profile, the job script, the "
                   "container's ENV)")
    elif o.via == "user-site":
        cmds.append(export("PYTHONNOUSERSITE", "1"))
        summary = f"Set PYTHONNOUSERSITE=1 so {where} no longer adds the user site {o.entry}"
    elif o.via == "pth" and o.pth_file:
        if o.pth_dirs == 1:
            cmds.append(command("rm", o.pth_file))
            summary = f"Remove {o.pth_file}, the .pth file that adds {o.entry} to sys.path"
        else:
            summary = f"Remove the line for {o.entry} from {o.pth_file} (the .pth file that adds it to sys.path)"
    elif (line := _pth_exec_line(py, o.entry)) is not None:
        cmds.append(pth_line_removal(line.file, line.line_no, line.file_lines))
        summary = f"Remove line {line.line_no} of {line.file}, the .pth code that inserts {o.entry} into sys.path"
    else:
        summary = (f"Find what puts {o.entry} first on sys.path ({ORIGIN_VIA.get(o.via or 'other', o.via)}) and "
                   "remove it")
    if own is not None:
        return summary + f"; {where} then imports its own torch {own.version or ''}".rstrip(), cmds
    # nothing of its own: install torch into the environment itself first (pip would otherwise see the other
    # copy as installed and do nothing), pinned to the build in use, then drop the other entry
    version = base_version(py.torch.version if py.torch else None)
    if not version:
        return summary, cmds
    variant = torch_variant(py.torch)
    install = pip_install(None, py, [f"torch=={version}"], variant)
    if o.via == "PYTHONPATH":
        install = "env -u PYTHONPATH " + install
    elif o.via == "user-site":
        install = "PYTHONNOUSERSITE=1 " + install
    return (f"Install torch {version} into {where} itself (its site-packages has none), then: "
            + summary[0].lower() + summary[1:]), [install] + cmds


def _pth_exec_line(py: PythonEnv, entry: Optional[str]):
    """The executable .pth line (PythonEnv.pth_exec) that added ``entry`` to sys.path, if one did."""
    return next((ln for ln in py.pth_exec or [] if ln.line_no >= 1 and any(_same_dir(a.path, entry)
                                                                          for a in ln.added)), None)


def or_origin_fix(py: PythonEnv, fix: Fix) -> Fix:
    """``fix``, unless the torch judged is imported from outside the environment: then installing into the
    environment changes nothing, and the fix is torch.origin's (the finding it follows from)."""
    o = foreign_torch(py)
    if o is None:
        return fix
    summary, commands = origin_fix(py)
    return Fix(f"Caused by torch.origin/{o.via or 'other'}: {summary[0].lower() + summary[1:]}; installing into the "
               "environment does not help while the other torch comes first", commands)
