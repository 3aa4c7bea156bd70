"""Shared helpers of the paste checks: signature matching over a pasted report and "skip unless a paste"."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..compat.signatures import Signature, normalise, signature_context, signatures_from
from ..compat.torch_family import COMPANION
from ..domain.fastclass import dataclass
from ..domain.variants import CPU, is_cpu_build, nvidia_wheel, package_variant, variant_kind
from ..domain.versions import base_version, major_minor
from ..model.catalogue import CAUSES
from ..model.facts import Facts
from ._families import families_as_fallback
from ._paste_context import CONTEXT_WHEN, context_holds
from ._paste_roles import (
    NCCL_SHM,
    NCCL_TRANSPORT,
    PREDICATES_BY_WHEN,
    failed_elsewhere,
    family_role_of_lib,
    framework_named,
    loaded_pip_wheel,
    prov,
    torch_import_failed,
)
from .base import CheckContext, SkipCheck

if TYPE_CHECKING:
    from ..compat.queries import Compat


@dataclass(frozen=True)
class Hit:
    signature: Signature
    index: int  # into facts.paste.messages
    message: str
    matched: str
    groups: Dict[str, Optional[str]]
    category: str
    confidence: str
    also: bool = False  # a further cause the same message proves (the row's "also"), not its own category


def _pkg_variant(facts: Facts, compat: Compat, name: str) -> Optional[str]:
    """Variant of a torch-family package: local tag, the package's own record, else PyPI's default."""
    if not facts.pythons:
        return None
    py = facts.pythons[0]
    pkg = py.package(name)
    version = pkg.version if pkg else (py.torch.version if name == "torch" and py.torch else None)
    if version is None:
        return None
    known = package_variant(version, pkg.variant if pkg else None, py.platform, None)
    if known:
        return known
    if name == "torch" and is_cpu_build(py.torch):
        return CPU
    if compat is None:
        return None
    try:  # no local tag: the PyPI wheel, whose Linux x86_64 build is the release's default variant
        torch_v = version if name == "torch" else compat.torch_for_companion(name, version)
        rel = compat.torch_release(torch_v) if torch_v else None
    except Exception:  # noqa: BLE001 - compat lookups on odd versions must not break the check
        return None
    return package_variant(version, None, py.platform, rel.default_variant if rel else None)


def _python_outside(facts: Facts, compat: Compat, version: Optional[str]) -> bool:
    if not version or compat is None or not facts.pythons or not facts.pythons[0].python_version:
        return False
    try:
        rel = compat.torch_release(base_version(version) or "")
    except Exception:  # noqa: BLE001
        return False
    if rel is None:
        return False
    py = major_minor(facts.pythons[0].python_version)
    lo, hi = major_minor(rel.python_min), major_minor(rel.python_max)
    return bool((lo and py < lo) or (hi and py > hi))


def nvidia_two_majors(facts: Facts) -> List[str]:
    """NVIDIA library wheels installed for two CUDA majors at once (nvidia-cublas-cu11 and -cu12): both
    unpack into site-packages/nvidia/<lib>/lib, and the last installed wins."""
    seen: Dict[str, set] = {}
    for py in facts.pythons:
        for p in py.packages:
            w = nvidia_wheel(p.name)
            if w:
                seen.setdefault(w[0], set()).add(w[1])
    return sorted(lib for lib, majors in seen.items() if len(majors) > 1)


def older_major_build(facts: Facts, compat: Compat, groups: Dict[str, Optional[str]]) -> bool:
    """A framework other than torch, named in the paste (onnxruntime, MXNet, TensorFlow ...), failed to load a
    CUDA runtime library of another CUDA major than the environment's: its build is for that major
    (onnxruntime-gpu 1.17's default build wants libcublasLt.so.11), a library the environment lacks
    (CUDA_LIBRARY_VERSION_MISMATCH; one build wanting a major is not two packages of different variants).
    With no framework named, the compiled module is unknown (the catalogue row's extension reading stays).
    The environment's major is what the paste shows (torch's CUDA, nvidia-*-cuXX wheels, nvcc); where it shows
    none, the CUDA major of the newest torch release's default build in the matrix stands for a current
    environment, so only a library of an older major counts then."""
    major = _soname_cuda_major(groups.get("lib") or "")
    if (major is None or not holds("not_torch_import", facts, compat, groups)
            or not framework_named(facts, _OTHER_FRAMEWORK_NAMED)):
        return False
    env: set = set()
    for py in facts.pythons:
        if py.torch is not None and py.torch.cuda:
            env.add(py.torch.cuda.split(".")[0])
        for p in py.packages:
            w = nvidia_wheel(p.name)
            if w:
                env.add(str(w[1]))
    tk = facts.toolkits.on_path
    if tk is not None and tk.version:
        env.add(tk.version.split(".")[0])
    if env:
        return str(major) not in env
    try:
        releases = sorted((r for r in compat.torch_releases() if r.default_variant),
                          key=lambda r: tuple(int(x) for x in r.minor.split(".")))
    except Exception:  # noqa: BLE001 - no matrix: no current major to compare with
        return False
    from ..domain.variants import cuda_of_variant

    newest = cuda_of_variant(releases[-1].default_variant) if releases else None
    return bool(newest) and major < int(str(newest).split(".")[0])


def holds(when: str, facts: Facts, compat: Compat, groups: Dict[str, Optional[str]], message: str = "") -> bool:
    """The named conditions a catalogue row's alternatives may use (``message``: the matched message)."""
    host = facts.host
    if when == "cpu_build_said_of_torch":  # the CPU build said in words is torch's: the line names no other framework
        return bool(_TORCH_NAMED.search(message)) and not _OTHER_FRAMEWORK_NAMED.search(message)
    if when == "wsl":
        return bool(host.wsl)
    if when == "in_container":
        return bool(host.container and host.container.runtime)
    if when == "in_container_no_gpu":
        return bool(host.container and host.container.runtime and host.container.gpu_device_nodes == [])
    if when == "variants_differ":
        t = variant_kind(_pkg_variant(facts, compat, "torch"))
        if t is None:
            return False
        return any(variant_kind(_pkg_variant(facts, compat, c)) not in (None, t) for c in ("torchvision", "torchaudio"))
    if when == "not_torch_import":
        msgs = facts.paste.messages if facts.paste else []
        return not any("torch/__init__" in m or "torch._C" in m for m in msgs) and \
            ("paste.torch_import" not in prov(facts) or failed_elsewhere(facts))
    if when == "driver_packages_changed":
        return bool(facts.paste and "driver.packages_changed" in (facts.paste.provenance or {}))
    if when == "mig_enabled":  # a GPU in MIG mode, or a MIG device the paste names (nvidia-smi -L, a MIG UUID)
        return any(g.mig_mode_current for g in facts.driver.gpus) or "paste.mig_device" in prov(facts)
    if when == "nvidia_wheels_two_majors":
        return bool(nvidia_two_majors(facts))
    if when == "python_outside_requested_torch":
        return _python_outside(facts, compat, groups.get("version"))
    if when == "always":
        return True
    if when == "torch_import":  # the failure is torch's own import (a traceback through torch/__init__)
        return torch_import_failed(facts)
    if when == "windows_build_named":  # a Windows (Insider) build number in the paste: the WSL reading wins
        return bool(host.wsl) and "host.windows_build" in prov(facts)
    if when == "wsl_kernel_too_old":
        return wsl_kernel_too_old(facts, compat) is not None
    if when == "lib_in_pip_wheel":  # the failing NVIDIA library is a pip nvidia-* wheel's copy
        return bool(re.search(r"(?:site-packages|dist-packages)/+(?:[^/\s]+/+\.\./+)*nvidia/|/nvidia/\w+/lib/",
                              groups.get("path") or ""))
    if when == "lib_in_system_path":  # ... or a system / image / conda copy beside torch's wheel libraries
        return bool(system_lib_path(groups.get("path") or ""))
    if when == "lib_cuda_major_differs":
        return lib_cuda_major_differs(facts, groups)
    if when == "older_major_build":
        return older_major_build(facts, compat, groups)
    if when == "cudnn_missing_outside_torch":  # the library that would not load is cuDNN, for a program other than torch
        return bool(re.match(r"libcudnn", groups.get("lib") or "")) and holds("not_torch_import", facts, compat, groups)
    if when == "docker_run_without_shm":  # a pasted `docker run` gave neither --shm-size nor --ipc=host
        hit = prov(facts).get("container.shm_given")
        return hit is not None and hit.get("value") is False
    if when == "nccl_shm_segment_failed":  # NCCL's "Last error" (in any message) is a /dev/shm segment it could not make
        msgs = facts.paste.messages if facts.paste else []
        return any(NCCL_SHM.search(m) for m in msgs)
    if when == "nccl_transport_failed":  # a NCCL WARN (or socket/connect line) names the network transport as what failed
        msgs = facts.paste.messages if facts.paste else []
        return any(NCCL_TRANSPORT.search(m) for m in msgs)
    if when == "docker_run_with_shm":  # a pasted `docker run` gave --shm-size or --ipc=host: /dev/shm is not the cause
        hit = prov(facts).get("container.shm_given")
        return hit is not None and hit.get("value") is True
    if when == "job_without_gpus":  # a pasted srun/salloc/sbatch (or #SBATCH lines) that asked for no GPU
        hit = prov(facts).get("paste.job.gpus_requested")
        return hit is not None and hit.get("value") is False
    if when == "xformers_not_built_for_torch":  # xformers' operators did not load: a build for another torch
        return row_in_paste(facts, compat, ("xformers-built-for-other-torch",))
    if when == "vgpu_named":  # a vGPU the paste names (readers/nvidia_smi.py _VGPU), or NVML's vGPU mode
        return "paste.vgpu" in prov(facts) or any((g.virtualization_mode or "").upper() in ("VGPU", "HOST_VGPU")
                                                  for g in facts.driver.gpus)
    if when == "no_nvidia_gpu_said":
        return no_nvidia_gpu_said(facts)
    if when == "open_module_refused_gpu":  # NVRM's open nvidia.ko refused the GPU (data-center gate, no GSP)
        return row_in_paste(facts, compat, ("nvrm-open-module-datacenter-only", "nvrm-open-module-needs-gsp"))
    if when == "gsp_firmware_missing":  # NVRM found no GSP firmware image of its version (issue 42, kbsys)
        return row_in_paste(facts, compat, ("nvrm-gsp-firmware-missing",))
    if when == "in_kubernetes":  # a pod, a cluster or a Kubernetes GPU resource named in the paste (issue 42)
        return bool(host.container and host.container.runtime == "kubernetes")
    if when == "gpu_memory_mostly_free":  # cuDNN's "Memory usage: F bytes free, T bytes total" with F >= T/2
        msgs = facts.paste.messages if facts.paste else []
        for m in msgs:
            mm = _MEMORY_USAGE.search(m)
            if mm and int(mm.group(2)) > 0:
                return int(mm.group(1)) * 2 >= int(mm.group(2))
        return False
    if when == "container_started_without_gpus":
        return bool(host.container and host.container.runtime and host.container.gpu_device_nodes == [])
    if when == "lib_of_companion":
        return family_role_of_lib(compat, groups) == COMPANION
    if when in PREDICATES_BY_WHEN:  # companion_import, cudnn_named_is_loaded ... (_paste_roles.py)
        return PREDICATES_BY_WHEN[when](facts, compat, groups)
    if when == "loaded_lib_is_pip_wheel":
        return loaded_pip_wheel(facts, groups) is not None
    if when in CONTEXT_WHEN:  # where the program ran decides the cause (issue 42, checks/_paste_context.py)
        return context_holds(when, facts, compat, groups, message)
    if when.startswith("capture:") and "~" in when:
        name, pattern = when[len("capture:"):].split("~", 1)
        value = groups.get(name) or ""
        return bool(re.search(pattern, value))
    return False


# a line saying a CPU build got installed names whose: torch's, or another framework's (FRAMEWORK_CPU_ONLY_BUILD)
_TORCH_NAMED = re.compile(r"\b(?:py)?torch\b", re.I)
_OTHER_FRAMEWORK_NAMED = re.compile(r"\b(?:jax(?:lib)?|tensorflow|tf|dgl|faiss|paddle\w*|onnxruntime\w*|"
                                    r"lightgbm|catboost|xgboost|mxnet|cupy|dlib|llama[-_.]cpp\w*|numpyro)\b", re.I)


def row_in_paste(facts: Facts, compat: Compat, ids: Tuple[str, ...]) -> bool:
    """Whether a message of the paste matches one of the catalogue rows ``ids``: a qualifier that depends on what
    another row recognised asks that row, rather than keeping a copy of its pattern."""
    rows = [sig for sig in (compat.signatures or []) if sig.id in ids] if compat is not None else []
    return any(sig.search(m) for sig in rows for m in (facts.paste.messages if facts.paste else []))
# XLA's cuda_dnn.cc prints the GPU's memory after a failed cuDNN handle (jax, TensorFlow)
_MEMORY_USAGE = re.compile(r"Memory usage: (\d+) bytes free, (\d+) bytes total")

_SYSTEM_LIB = re.compile(r"^(?:/usr/local/cuda[\w.-]*/|/usr/lib(?:64)?/|/usr/local/lib/|/opt/conda/lib/|"
                         r"/opt/nvidia/|[^\s]*/envs/[^/\s]+/lib/(?!python))")


def system_lib_path(path: str) -> bool:
    """A library path outside the pip wheels: /usr/local/cuda/lib64, /usr/lib/x86_64-linux-gnu, an image's
    or conda env's lib/ (not its site-packages)."""
    return bool(path) and "site-packages" not in path and "dist-packages" not in path and \
        bool(_SYSTEM_LIB.match(path))


def _soname_cuda_major(lib: str) -> Optional[int]:
    """The CUDA major a CUDA runtime library's soname carries (libcublas.so.11 -> 11, libcudart.so.12 -> 12);
    None for libraries versioned on their own (cuDNN, NCCL)."""
    m = re.match(r"lib(?:cublas|cublasLt|cudart|cusparse|cufft|curand|cusolver|nvrtc|nvJitLink)\w*\.so\.(\d+)", lib)
    if not m:
        return None
    major = int(m.group(1))
    # cuFFT/cuRAND/cuSPARSE/cuSOLVER sonames count their own majors, not CUDA's
    if lib.startswith(("libcufft", "libcurand", "libcusolver", "libcusparse")):
        return None
    return major


def lib_cuda_major_differs(facts: Facts, groups: Dict[str, Optional[str]]) -> bool:
    t = facts.pythons[0].torch if facts.pythons else None
    major = _soname_cuda_major(groups.get("lib") or "")
    if major is None or t is None or not t.cuda:
        return False
    try:
        return int(t.cuda.split(".")[0]) != major
    except ValueError:
        return False


def wsl_kernel_too_old(facts: Facts, compat: Compat) -> Optional[Tuple[str, str, str]]:
    """(kernel, minimum, source) when the paste's WSL kernel is older than the minimum GPU compute needs."""
    kernel = facts.host.kernel or ""
    if "microsoft" not in kernel.lower() or compat is None:
        return None
    row = signature_context(compat, "wsl_min_kernel") or {}
    minimum = row.get("value")
    m = re.match(r"(\d+(?:\.\d+)+)", kernel)
    if not minimum or not m:
        return None
    have = tuple(int(x) for x in m.group(1).split("."))
    want = tuple(int(x) for x in minimum.split("."))
    return (m.group(1), minimum, row.get("source", "")) if have < want else None


_HITS_MEMO: Dict[str, Any] = {}


def signature_hits(facts: Facts, compat: Compat) -> List[Hit]:
    """Every (message, signature) match, with the category the facts make most likely.

    Several checks ask for the hits of one paste: the last answer is kept (keyed by the facts object, which
    checks never change), and each message is whitespace-normalised once, not once per signature.
    """
    if facts.paste is None:
        return []
    sigs = signatures_from(compat)
    memo = _HITS_MEMO.get("last")
    if memo is not None and memo[0] is facts and memo[1] is sigs:
        return list(memo[2])
    hits: List[Hit] = []
    for i, message in enumerate(facts.paste.messages):
        norm = normalise(message)
        for sig in sigs:
            m = sig.regex.search(norm)
            if not m:
                continue
            groups = m.groupdict()
            category, confidence, used = sig.category, sig.confidence, sig
            for alt in sig.alternatives:
                if holds(alt.when, facts, compat, groups, norm):
                    category, confidence = alt.category, alt.confidence
                    if alt.severity or alt.explanation or alt.fix:  # the context changes the meaning itself
                        used = replace(sig, severity=alt.severity or sig.severity, settle=alt.settle or sig.settle,
                                       explanation=alt.explanation or sig.explanation, fix=alt.fix or sig.fix)
                    break
            matched = m.group(0) or norm  # a family's lookaheads match no text: what it read is the message
            hits.append(Hit(used, i, message, matched, groups, category, confidence))
            for extra in sig.also:  # further causes the same message proves, each qualified on its own
                # ... except a consequence of the cause a context's own reading named (its explanation says it)
                if used is not sig and extra.category in CAUSES.get(category, ()):
                    continue
                if extra.category != category and holds(extra.when, facts, compat, groups, norm):
                    hits.append(Hit(sig, i, message, matched, groups, extra.category, extra.confidence, True))
    _HITS_MEMO["last"] = (facts, sigs, tuple(families_as_fallback(hits, compat)))  # a family: the last resort
    return list(_HITS_MEMO["last"][2])


def no_nvidia_gpu_said(facts: Facts) -> bool:
    """The reporter says the machine has no NVIDIA GPU (readers/nvidia_smi.py read_no_gpu_said), or the paste is
    from macOS (no CUDA build of torch exists there): a CPU build of torch is the right one."""
    return "paste.no_nvidia_gpu" in prov(facts) or (facts.host.os or "").lower() in ("darwin", "macos")


def paste_or_skip(ctx: CheckContext) -> Any:
    paste = ctx.facts.paste
    if paste is None:
        raise SkipCheck("judges pasted reports only (`envdoctor diagnose`); a live probe reads these facts itself", not_applicable="judged in pastes only")
    return paste
