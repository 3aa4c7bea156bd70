"""What a paste's failing file or import belongs to, and the facts-based conditions the paste qualifiers of
checks/_paste.py read (split from it by size): the torch family's roles (compat_data/torch_family.json), which
import failed, a loaded library that is a pip wheel's, NCCL's /dev/shm segment, a driver reporting a CUDA above
its own branch."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ..compat.torch_family import COMPANION, EXTENSION, torch_family
from ..domain.variants import nvidia_wheel
from ..domain.versions import base_version, version_ge
from ..model.facts import Facts

if TYPE_CHECKING:
    from ..compat.queries import Compat


def prov(facts: Facts) -> Dict[str, Any]:
    return (facts.paste.provenance if facts.paste else None) or {}


def torch_import_failed(facts: Facts) -> bool:
    """The failure is torch's own import (a traceback through torch/__init__, or the reader's torch import that
    no other module's failing import ended)."""
    msgs = facts.paste.messages if facts.paste else []
    return any("torch/__init__" in m for m in msgs) or \
        ("paste.torch_import" in prov(facts) and not failed_elsewhere(facts))


def _family(compat: Compat) -> Any:
    try:
        return torch_family(compat)
    except LookupError:
        return None


def family_role_of_lib(compat: Compat, groups: Dict[str, Optional[str]]) -> Optional[str]:
    """The role (companion or extension, compat_data/torch_family.json) of the package a failing compiled file
    belongs to: the directory the message names it in (``vllm/_C.abi3.so`` is vLLM's, ``torchvision/_C.so``
    torchvision's), else the file's own name (``libtorchaudio.so``, a bare ``_C.so`` is torchvision's, the
    companion's, as the table says); None when neither is known."""
    table = _family(compat)
    if table is None:
        return None
    owner = groups.get("owner")
    if owner:
        row = table.role_of_module(owner)
        if row is not None or owner not in ("lib", "lib64", "site-packages", "dist-packages"):
            return row.role if row is not None else None
    row = table.role_of_library(groups.get("lib"))
    return row.role if row is not None else None


def extension_import(facts: Facts, compat: Compat) -> Optional[str]:
    """The third-party torch extension (vllm, xformers, flash-attn ...) whose import the paste shows failing
    (``paste.imports``: the modules its import statements, frames and import messages name), when torch's own
    import is not the one that failed; None otherwise."""
    table = _family(compat)
    seen = prov(facts).get("paste.imports")
    if table is None or not seen or torch_import_failed(facts):
        return None
    failed = (prov(facts).get("paste.failed_import") or {}).get("value")
    for name in [failed] if failed else str(seen.get("value") or "").split(","):
        row = table.role_of_module(name)
        if row is not None and row.role == EXTENSION:
            return row.distribution
    return None


def companion_import(facts: Facts, compat: Compat) -> Optional[str]:
    """The torch companion (torchvision, torchaudio) whose import the paste shows failing: the failed import
    readers/imports.py recorded; with none recorded and no third-party extension among the paste's imports, the one
    companion the paste's messages name (a reporter's "importing torchaudio" above the loader's error). None when
    torch's own import failed, or when no companion (or more than one) is named."""
    table = _family(compat)
    if table is None or torch_import_failed(facts):
        return None
    failed = (prov(facts).get("paste.failed_import") or {}).get("value")
    if failed:
        row = table.role_of_module(str(failed).split(".")[0])
        return row.distribution if row is not None and row.role == COMPANION else None
    names = [n for n in str((prov(facts).get("paste.imports") or {}).get("value") or "").split(",") if n]
    names += re.findall(r"[a-z_]+", " ".join(facts.paste.messages if facts.paste else []).lower())
    rows = [table.role_of_module(n) for n in dict.fromkeys(names)]
    if any(r is not None and r.role == EXTENSION for r in rows):
        return None
    named = {r.distribution for r in rows if r is not None and r.role == COMPANION}
    return named.pop() if len(named) == 1 else None


def loaded_pip_wheel(facts: Facts, groups: Dict[str, Optional[str]]) -> Optional[str]:
    """The pip NVIDIA wheel (nvidia-cudnn-cu12 9.5.1.17) whose version is the one a message says was loaded
    ("Loaded runtime CuDNN library: 9.5.1", "Found cuDNN version 90501"): the environment's own wheel is at
    the wrong version, not a foreign copy shadowing it. None when the paste lists no such wheel."""
    lib, loaded = (groups.get("lib") or "").lower().replace(" ", ""), groups.get("loaded") or ""
    if not lib or not loaded:
        return None
    want = cudnn_release(loaded)
    for py in facts.pythons:
        for p in py.packages:
            w = nvidia_wheel(p.name)
            if w and w[0].replace("-", "").startswith(lib) and release_tuple(p.version)[:len(want)] == want:
                return f"{p.name} {p.version}"
    return None


def cudnn_release(version: Optional[str]) -> Tuple[int, ...]:
    """A cuDNN version as printed (8.0.5, or the integer form: 8700 = 8.7.0, 7301 = 7.3.1, 90501 = 9.5.1) as a
    release tuple; () when it is neither."""
    v = (version or "").strip()
    if v.isdigit() and len(v) >= 4:
        n = int(v)
        v = f"{n // 10000}.{n // 100 % 100}.{n % 100}" if n >= 10000 else f"{n // 1000}.{n // 100 % 10}.{n % 100}"
    return release_tuple(v)


def loaded_newer_than_built(groups: Dict[str, Optional[str]]) -> bool:
    """A message's library loaded at run time (``loaded``) is a newer release than the one the program was
    built against (``compiled``): no older copy shadowing the right one, the build is for another release."""
    loaded, compiled = cudnn_release(groups.get("loaded")), cudnn_release(groups.get("compiled"))
    return bool(loaded) and bool(compiled) and loaded > compiled


def cudnn_named_is_loaded(facts: Facts, groups: Dict[str, Optional[str]]) -> bool:
    """The cuDNN the reporter names as installed (readers/cuda_named.py, ``paste.cudnn_named``) is, to its minor,
    the one a message says was loaded, older than the build's (``loaded``/``compiled``): no other copy was found
    first, the machine lacks the cuDNN the build needs (jax-ml/jax#6517, PaddlePaddle/Paddle#37349)."""
    named = cudnn_release((prov(facts).get("paste.cudnn_named") or {}).get("value"))
    loaded, compiled = cudnn_release(groups.get("loaded")), cudnn_release(groups.get("compiled"))
    return len(named) >= 2 and len(loaded) >= 2 and named[:2] == loaded[:2] and bool(compiled) and loaded < compiled


def _ort_packages(facts: Facts) -> Tuple[bool, bool, bool]:
    """(a package list is shown, the CPU package onnxruntime is in it, onnxruntime-gpu is in it)."""
    names = {p.name.lower().replace("_", "-") for py in facts.pythons for p in py.packages}
    return bool(names), "onnxruntime" in names, "onnxruntime-gpu" in names


_ORT_BOTH_SAID = ("ort-both-packages-installed", "ort-cpu-package-beside-gpu-said")


def _ort_both_said(facts: Facts, compat: Any) -> bool:
    """A catalogue row that reads both onnxruntime packages in words matches a message of the paste."""
    rows = [sig for sig in (getattr(compat, "signatures", None) or []) if sig.id in _ORT_BOTH_SAID]
    return any(sig.search(m) for sig in rows for m in (facts.paste.messages if facts.paste else []))


def ort_both_packages_shown(facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """The paste's package list holds both onnxruntime (the CPU package) and onnxruntime-gpu."""
    _, cpu, gpu = _ort_packages(facts)
    return cpu and gpu


def ort_cpu_package_alone_shown(facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """The paste's package list holds the CPU package onnxruntime and no onnxruntime-gpu."""
    _, cpu, gpu = _ort_packages(facts)
    return cpu and not gpu


def ort_packages_not_shown(facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """Neither onnxruntime package is in the paste's package list (or none is shown), and no line says both are
    installed: which is installed is unknown."""
    _, cpu, gpu = _ort_packages(facts)
    return not cpu and not gpu and not _ort_both_said(facts, compat)


def index_variant_not_published(facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """The pip line's PyTorch index names a CUDA variant (``.../whl/cu131``) that the requested torch release was
    not published for (compat_data/torch.json ``cuda_variants``, where the release's row lists them): pip then
    finds "versions: none" whatever the Python (issue 42, round 19: comfyui-trellis2-001)."""
    hit = prov(facts).get("pip.index_variant")
    variant, version = str(hit.get("value")) if hit else "", groups.get("version") or ""
    if groups.get("pkg") != "torch" or not variant.startswith("cu") or not version or compat is None:
        return False
    try:
        rel = compat.torch_release(base_version(version) or "")
    except Exception:  # noqa: BLE001 - a version the matrix cannot parse is not judged
        return False
    return bool(rel is not None and rel.cuda_variants and variant not in rel.cuda_variants)


def gpu_below_named_sm(facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """A GPU of the paste has a compute capability (its own, or its name's in compat_data/gpus.json) below the SM
    the message names (the ``sm`` capture: "89" is 8.9, "120" is 12.0): that GPU cannot run those kernels at all
    (round 25: SageAttention's "SM89 kernel is not available" is a build problem on an sm_89 card)."""
    sm = groups.get("sm") or ""
    if not sm.isdigit() or len(sm) < 2:
        return False
    named = (int(sm[:-1]), int(sm[-1]))
    for g in facts.driver.gpus or []:
        cc = g.compute_capability
        if not cc and g.name and compat is not None:
            try:
                cc = compat.gpu_compute_capability(g.name)
            except Exception:  # noqa: BLE001 - an unknown GPU is not judged
                cc = None
        have = release_tuple(cc)
        if len(have) >= 2 and have[:2] < named:
            return True
    return False


# qualifiers by their `when` name, for _paste.holds (kept here: _paste.py is at the check-module size limit)
PREDICATES_BY_WHEN: Dict[str, Callable[[Facts, Any, Dict[str, Optional[str]]], bool]] = {
    "index_variant_not_published": index_variant_not_published, "gpu_below_named_sm": gpu_below_named_sm,
    "cudnn_named_is_loaded": lambda facts, compat, groups: cudnn_named_is_loaded(facts, groups),
    "companion_import": lambda facts, compat, groups: companion_import(facts, compat) is not None,
    "extension_import": lambda facts, compat, groups: extension_import(facts, compat) is not None,
    "loaded_newer_than_built": lambda facts, compat, groups: loaded_newer_than_built(groups),
    # the driver's CUDA ceiling above its branch's; the driver runs every runtime of the program's CUDA major
    "driver_cuda_above_branch": lambda facts, compat, groups: driver_cuda_above_branch(facts, compat),
    "driver_runs_program_cuda": lambda facts, compat, groups: driver_runs_program_cuda(facts, compat),
    "container_driver_age_unproven":
        lambda facts, compat, groups: container_driver_age_unproven(facts, compat),
    "driver_cuda_covers_torch_cuda": lambda facts, compat, groups: driver_cuda_covers_torch_cuda(facts),
    "ort_both_packages_shown": ort_both_packages_shown, "ort_cpu_package_alone_shown": ort_cpu_package_alone_shown,
    "ort_packages_not_shown": ort_packages_not_shown}


def framework_named(facts: Facts, pattern: re.Pattern[str]) -> bool:
    """A framework other than torch (``pattern``) is named in the paste's messages, the packages it imports or
    runs in (``paste.imports``), or its package list."""
    msgs = facts.paste.messages if facts.paste else []
    imports = str((prov(facts).get("paste.imports") or {}).get("value") or "").split(",")
    return any(pattern.search(m) for m in msgs + imports) or \
        any(pattern.search(p.name) for py in facts.pythons for p in py.packages)


def release_tuple(version: Optional[str]) -> Tuple[int, ...]:
    m = re.match(r"\d+(?:\.\d+)*", version or "")
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def failed_elsewhere(facts: Facts) -> bool:
    """The paste's first load error ended the import of a module other than torch (``import torch`` worked,
    the next line's ``import flash_attn_2_cuda`` failed): readers/imports.py's ``paste.failed_import``."""
    failed = (prov(facts).get("paste.failed_import") or {}).get("value")
    return bool(failed) and str(failed).split(".")[0] != "torch"
# NCCL naming its network transport as what failed (a NCCL WARN about NET/Socket or IB, a connect or socket call,
# no usable interface): the generic "unhandled system error" beside it is the transport, not /dev/shm
NCCL_TRANSPORT = re.compile(r"NCCL WARN (?:NET/(?:Socket|IB) ?: ?(?!No device found)|Call to (?:ibv_|connect)|Connect to)|"
                            r"socketStartConnect|Connect to \S+ failed|Socket creation failed|no socket interface found",
                            re.I)
NCCL_SHM = re.compile(r"(?:creating|allocate|open) shared memory segment[^\n]{0,20}/dev/shm/nccl|/dev/shm/nccl-\S+ "
                       r"(?:failed|[^\n]{0,40}No space left)|Unable to allocate shared memory[^\n]{0,40}/dev/shm", re.I)


def driver_cuda_above_branch(facts: Facts, compat: Compat) -> bool:
    """The paste's driver reports a CUDA ceiling its own branch does not reach (driver 460.80 saying CUDA 11.3,
    which needs 465.19): nvidia-smi's ceiling comes from the loaded libcuda, so a newer user-space libcuda (a
    forward-compatibility copy) sits on an older kernel driver."""
    d = facts.driver
    if not d.version or not d.cuda_driver_version or compat is None:
        return False
    try:
        req = compat.cuda_requirement(d.cuda_driver_version)
    except Exception:  # noqa: BLE001 - no CUDA table: nothing to compare with
        return False
    return bool(req and req.min_driver and version_ge(d.version, req.min_driver) is False)


def driver_cuda_covers_torch_cuda(facts: Facts) -> bool:
    """The paste's driver CUDA ceiling is at or above torch's build CUDA (driver's CUDA 11.3, torch cu111): torch's
    own kernels load there (its wheels carry SASS, and PTX no newer than its CUDA), so PTX the driver cannot JIT
    comes from code built beside it, a torch extension compiled on the machine (issue 42, round 13)."""
    py = facts.pythons[0] if facts.pythons else None
    torch_cuda = release_tuple(py.torch.cuda if py and py.torch else None)[:2]
    driver_cuda = release_tuple(facts.driver.cuda_driver_version)[:2]
    return len(torch_cuda) == 2 and len(driver_cuda) == 2 and driver_cuda >= torch_cuda


def driver_runs_program_cuda(facts: Facts, compat: Compat) -> bool:
    """The paste's driver is new enough for every CUDA runtime of the major the program needs, so an "insufficient
    driver" error (cudaErrorInsufficientDriver, 35) does not come from the driver's age (issue 42, round 8: driver
    550.78 in a container whose NVIDIA variables were malformed). The major is the highest the paste names for the
    program (torch's CUDA, the CUDA build asked for, "CUDA 12" or a cuXYZ tag: readers/cuda_named.py); with none
    named, the newest major of the matrix, which every older runtime is below. The driver must reach that major's
    minor-version compatibility floor (525.60.13 for every 12.x). WSL is left out: there the Windows driver is
    reached through /usr/lib/wsl/lib, and a Linux driver's libcuda in front of it gives the same error."""
    d = facts.driver
    if not d.version or compat is None or facts.host.wsl:
        return False
    majors = program_cuda_majors(facts)
    try:
        if not majors:  # the matrix's newest CUDA major: a program of any release runs on that major's floor driver
            majors = [int(compat.newest_cuda().split(".")[0])]
    except Exception:  # noqa: BLE001 - no CUDA table: nothing to compare with
        return False
    return _driver_reaches_floor(facts, compat, max(majors))


def program_cuda_majors(facts: Facts) -> List[int]:
    """The CUDA majors the paste names for the program (torch's, the build asked for, "CUDA 12", a cuXYZ tag); a
    CUDA that is only the driver's nvidia-smi ceiling said back ("compatible with cuda 11.4?") is not (round 26)."""
    majors = []
    py = facts.pythons[0] if facts.pythons else None
    ceiling = facts.driver.cuda_driver_version or ""
    named = (prov(facts).get("paste.cuda_named") or {}).get("value")
    needed = str((prov(facts).get("paste.cuda_needed") or {}).get("value") or "")
    if named is not None and ceiling and needed == ceiling:
        named = None
    for v in (py.torch.cuda if py and py.torch else None, (prov(facts).get("intent.cuda") or {}).get("value"), named):
        m = re.match(r"\s*(?:cu)?(\d{2})", str(v or ""))
        if m:
            majors.append(int(m.group(1)))
    return majors


def _driver_reaches_floor(facts: Facts, compat: Compat, major: int) -> bool:
    windows = (facts.host.os or "").lower().startswith("windows")
    try:
        floor = compat.minor_compat_floor(major, "windows" if windows else "linux")
    except Exception:  # noqa: BLE001 - no major with a floor: nothing to compare with
        return False
    return bool(floor) and version_ge(facts.driver.version, floor[0]) is True


def container_driver_age_unproven(facts: Facts, compat: Compat) -> bool:
    """In a container, a driver not shown, or (no CUDA named for the program) one that runs the major before the
    newest but not the newest: "insufficient driver" is as much the container (rounds 26-27: unraid, Singularity)."""
    d = facts.driver
    if compat is None or facts.host.wsl or facts.host.container is None:
        return False
    if not d.version:
        return True  # no driver shown: its age is not in the paste, whatever CUDA the reporter names
    if program_cuda_majors(facts):
        return False
    try:
        newest = int(compat.newest_cuda().split(".")[0])
    except Exception:  # noqa: BLE001 - no CUDA table
        return False
    return _driver_reaches_floor(facts, compat, newest - 1) and not _driver_reaches_floor(facts, compat, newest)


# a build that may be a Python extension's against torch (issue 42): torch named, a setup.py / pip build, torch's
# cpp_extension or DeepSpeed's op builder, or nvcc refusing the C++ standard those builders pass (-std=c++17 in
# torch 2.1 .. 2.x, DeepSpeed's op_builder; -std=c++20 in torch 2.13's torch/utils/cpp_extension.py): a plain
# `make` of a CUDA project holds none of them
_EXTENSION_BUILD = re.compile(r"\b(?:py)?torch\b|\bsetup\.py\b|\bpip3? install\b|cpp_extension|deepspeed|"
                              r"Value '?c\+\+\d\d'? is not defined for option '?std", re.I)


def extension_build_named(facts: Facts) -> bool:
    """The paste's build may be a torch extension's: torch in its facts, or a message naming such a build."""
    py = facts.pythons[0] if facts.pythons else None
    if py is not None and (py.torch is not None or py.package("torch") is not None):
        return True
    return any(_EXTENSION_BUILD.search(m) for m in (facts.paste.messages if facts.paste else []))
