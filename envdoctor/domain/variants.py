"""torch build variants: `cu124` <-> `12.4`, variant kind, the wheel index URL, the one CPU-build rule, inference."""

from __future__ import annotations

import re
from typing import Any, Optional, Tuple

from .versions import major_minor, mm_str, parse_version

# PyTorch names CUDA variants cu<major><minor>, the last digit being the minor: cu92 = 9.2, cu118 = 11.8,
# cu130 = 13.0 (https://download.pytorch.org/whl/). "cuda13" is a major-only variant (a package record, a
# wheel's Requires-Dist naming nvidia-*-cu13). "cu11"/"cu12"/"cu13" are major-only too: flash-attn's release
# wheels are tagged +cu12torch2.7cxx11abiTRUE (github.com/Dao-AILab/flash-attention/releases, v2.7 on), and no
# CUDA 1.x variant ever existed (PyTorch wrote CUDA 10 as cu100).
_CU = re.compile(r"^cu(\d{2,3})$")
_CUDA_MAJOR = re.compile(r"^cuda(\d+)|^cu(1\d)$")

# the local-version tags PyTorch's own indexes use
CPU = "cpu"


def local_tag(version: Optional[str]) -> Optional[str]:
    """The local version tag, normalised: '2.5.1+cu124' -> 'cu124', '2.3.1+CPU' -> 'cpu'; None without one."""
    v = parse_version(version)
    return v.local if v is not None and v.local else None


# a variant, alone or first in the local tag ('cu124', 'cu124.post1'); 'cu123torch2.4' names an extension's build
_VARIANT_TAG = re.compile(r"^(cu\d+|cpu|rocm\d+(?:\.\d+)*|xpu)(?:$|[.\-_])")


def variant_tag(version: Optional[str]) -> Optional[str]:
    """The PyTorch variant a local tag names ('2.5.1+cu124' -> 'cu124'); None for no tag or another tag
    (a source or NGC build's '2.6.0a0+gitabc123' names a commit, not a variant)."""
    m = _VARIANT_TAG.match(local_tag(version) or "")
    return m.group(1) if m else None


def cuda_of_variant(variant: Optional[str]) -> Optional[str]:
    """'cu124' -> '12.4', 'cu130' -> '13.0', 'cu92' -> '9.2'; None for anything else."""
    m = _CU.match((variant or "").strip().lower())
    if not m or _CUDA_MAJOR.match(m.group(0)):
        return None
    digits = m.group(1)
    return f"{int(digits[:-1])}.{digits[-1]}"


def variant_of_cuda(cuda: str) -> str:
    """'12.4' (or '12.4.1') -> 'cu124'; ValueError when ``cuda`` is not a version."""
    mm = major_minor(cuda, strict=True)
    if mm is None:
        raise ValueError(f"not a CUDA version: {cuda!r}")
    return f"cu{mm[0]}{mm[1]}"


def variant_cuda_major(variant: Optional[str]) -> Optional[int]:
    """'cu124' -> 12, 'cu130' -> 13, 'cu92' -> 9, 'cuda13' -> 13, 'cpu' -> None."""
    if not variant:
        return None
    cuda = cuda_of_variant(variant)
    if cuda:
        return int(cuda.split(".")[0])
    m = _CUDA_MAJOR.match(variant.strip().lower())
    return int(m.group(1) or m.group(2)) if m else None


def variant_kind(variant: Optional[str]) -> Optional[str]:
    """'cpu', 'cuda' (cuXY, cudaN), 'rocm' (rocmX.Y) or 'xpu'; None for an unknown or missing variant."""
    if not variant:
        return None
    v = variant.strip().lower()
    if v == CPU:
        return "cpu"
    if v.startswith("cu"):
        return "cuda"
    if v.startswith("rocm"):
        return "rocm"
    if v == "xpu":
        return "xpu"
    return None


def is_gpu_variant_tag(tag: Optional[str]) -> bool:
    """Is a local tag one of PyTorch's GPU variants (cuXY or rocmX.Y)?"""
    return variant_kind(tag) in ("cuda", "rocm")


def index_url(variant: str) -> str:
    """The PyTorch wheel index of a variant: 'cu124' -> 'https://download.pytorch.org/whl/cu124'."""
    return f"https://download.pytorch.org/whl/{variant.strip().lower()}"


def torch_variant(torch: Any) -> Optional[str]:
    """The build variant of an inspected (or pasted) torch: 'cu124', 'cpu', 'rocm6.2', or None when it cannot be told.

    ``torch`` is a ``facts.TorchInfo`` (duck-typed: this layer imports no facts). In order: the local version tag;
    torch.version.hip; torch.version.cuda; a torch that imported and said no CUDA (cuda None, an arch list read);
    version.py and torch/lib read from disk without CUDA or HIP (no libtorch_cuda.so / libtorch_hip.so).
    """
    if torch is None:
        return None
    tag = variant_tag(torch.version)
    if tag:
        return tag
    if torch.hip:
        return "rocm" + (mm_str(torch.hip) or "")
    if torch.cuda:
        mm = major_minor(torch.cuda)
        return f"cu{mm[0]}{mm[1]}" if mm else None
    if torch.cuda is None and torch.import_error is None and torch.arch_list is not None:
        return CPU
    b = getattr(torch, "build_files", None)
    if b is not None and b.version and not b.cuda and not b.hip and not b.native_library:
        return CPU
    return None


def is_cpu_build(torch: Any) -> Optional[bool]:
    """The one CPU-build rule: True for a CPU-only torch, False for a CUDA/ROCm/XPU build, None when unknown."""
    kind = variant_kind(torch_variant(torch))
    return None if kind is None else kind == "cpu"


def package_variant(version: Optional[str], recorded: Optional[str], platform: Optional[str],
                    default_variant: Optional[str]) -> Optional[str]:
    """The variant of a torch-family wheel: its local tag, else what was read from its files (``recorded``),
    else, with no local tag on Linux x86_64 (or an unknown platform), PyPI's default variant for its release
    (PyPI's Linux x86_64 torch wheels are CUDA builds; elsewhere they are CPU builds: README "Key facts")."""
    tag = variant_tag(version)
    if tag:
        return tag
    if recorded:
        return recorded
    if local_tag(version):  # a source or vendor build (+git..., +nv24.04) is no PyPI wheel
        return None
    if default_variant and is_linux_x86(platform) is not False:
        return default_variant
    return None


def is_linux_x86(platform: Optional[str]) -> Optional[bool]:
    """Is a sysconfig platform ('linux-x86_64') Linux x86_64? None when the platform is unknown."""
    if not platform:
        return None
    p = platform.lower().replace("_", "-")
    return p.startswith("linux") and "x86-64" in p


# NVIDIA's CUDA runtime wheels carry the CUDA major in their name: nvidia-cudnn-cu12, nvidia-nccl-cu13
# (https://pypi.org/user/nvidia/); torch's Requires-Dist pins them.
_NVIDIA_WHEEL = re.compile(r"^nvidia-([a-z0-9-]+?)-cu(\d+)$")


def nvidia_wheel(name: str) -> Optional[Tuple[str, int]]:
    """'nvidia-cudnn-cu12' -> ('cudnn', 12); 'nvidia_nccl_cu13' -> ('nccl', 13); None for any other name."""
    m = _NVIDIA_WHEEL.match(re.sub(r"[-_.]+", "-", (name or "").strip().lower()))
    return (m.group(1), int(m.group(2))) if m else None


def nvidia_wheel_cuda_major(name: str) -> Optional[int]:
    """'nvidia-cudnn-cu12' -> 12; None for a name that is not one of NVIDIA's per-CUDA-major wheels."""
    w = nvidia_wheel(name)
    return w[1] if w else None
