"""Read `python -m torch.utils.collect_env` output, every format from PyTorch 1.0 to today."""

from __future__ import annotations

import re
from typing import List, Optional

from ...domain.variants import variant_of_cuda
from ...model.facts import Gpu, LibraryCopy, Package
from .base import STRUCTURED, Acc, Paste, first_version, last_version

# collect_env prints "Key: value" lines; None values print as "Could not collect" (replace_nones), some
# eras print "N/A" or "None". https://github.com/pytorch/pytorch/blob/main/torch/utils/collect_env.py
# "No CUDA" is what it prints for the runtime, GPU, driver and cuDNN fields when torch.cuda.is_available() is False
# and nvidia-smi gave none of them (collect_env.py pretty_str: all_dynamic_cuda_fields_missing): a GPU list it could
# not read, never a GPU named "No CUDA" (and not proof that the machine has none)
UNKNOWN = {"could not collect", "n/a", "none", "", "unknown", "no cuda"}
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 _/().-]{1,40}?)\s*:\s?(.*)$")
_MARKERS = ("PyTorch version:", "Is debug build:", "CUDA used to build PyTorch:", "Is CUDA available:",
            "GPU models and configuration:", "Nvidia driver version:", "cuDNN version:")
_GPU_LINE = re.compile(r"^\s*GPU\s*(\d+)\s*:\s*(.+?)\s*(?:\(UUID:.*)?$")
_PKG_LINE = re.compile(r"^\s*\[(pip3?|conda|uv)\]\s+(\S.*)$")
# conda build strings: "py3.8_cuda11.1_cudnn8.0.5_0", "py3.8_cpu_0", "cuda112py38h...", "cpu_py38h..."
_CONDA_CUDA = re.compile(r"cuda(\d+)\.?(\d)")


# the line collect_env prints before its report (collect_env.py main()): with it, one key line is enough, as in a
# report the reporter cut down to the lines that matter ("Collecting environment information..." then "PyTorch version:")
_BANNER = "Collecting environment information"


def is_collect_env(text: str) -> bool:
    return sum(1 for m in _MARKERS if m in text) >= (1 if _BANNER in text else 2)


def _value(v: str) -> Optional[str]:
    v = v.strip()
    return None if v.lower() in UNKNOWN else v


def _bool(v: str) -> Optional[bool]:
    low = v.strip().lower()
    if low in ("yes", "true"):
        return True
    if low in ("no", "false"):
        return False
    return None


def conda_variant(build: str) -> Optional[str]:
    """Variant from a conda build string: 'py3.8_cpu_0' -> 'cpu', 'py3.8_cuda11.1_cudnn8.0.5_0' -> 'cu111'."""
    low = build.lower()
    if "cpu" in low and "cuda" not in low:
        return "cpu"
    m = _CONDA_CUDA.search(low)
    if m:
        return variant_of_cuda(f"{m.group(1)}.{m.group(2)}")
    if "rocm" in low:
        return "rocm"
    return None


def package_from_line(kind: str, rest: str) -> Optional[Package]:
    """'[pip3] torch==2.2.1+cpu' or '[conda] pytorch 1.8.1 py3.8_cpu_0 pytorch' -> Package."""
    rest = rest.strip()
    if kind.startswith("pip") or kind == "uv":
        m = re.match(r"^([A-Za-z0-9][\w.-]*)\s*(?:==|\s)\s*(\S+)", rest)
        if not m:
            return None
        return Package(name=m.group(1).lower(), version=m.group(2), installer="pip")
    parts = rest.split()
    if len(parts) < 2:
        return None
    name = parts[0].lower()
    if name == "pytorch":  # the conda package of torch
        name = "torch"
    build = parts[2] if len(parts) > 2 else ""
    channel = parts[3] if len(parts) > 3 else ""
    variant = conda_variant(build) if channel != "pypi" else None
    return Package(name=name, version=parts[1], installer="conda" if channel != "pypi" else "pip",
                   variant=variant, variant_evidence=f"conda build string {build}" if variant else None)


def _todo(paste: Paste) -> List[int]:
    """The lines worth reading: around each collect_env key line, and every [pip3]/[conda] line."""
    lines = paste.lines
    keys = paste.with_any([k.lower() for k in _MARKERS])
    todo = set(paste.with_any(["[pip", "[conda]", "[uv]"]))
    for i in paste.distinct(keys, head=200, tail=50):
        # a collect_env report is ~30 key lines, then up to a few hundred library lines
        todo.update(range(max(0, i - 40), min(len(lines), i + 300)))
    return sorted(todo)


def read(paste: Paste, acc: Acc) -> None:
    if not is_collect_env(paste.text):
        return
    lines = paste.lines
    era = None
    n = len(lines)
    cuda_none = False
    torch_absent = False
    todo = _todo(paste)
    t = 0
    done = -1
    while t < len(todo):
        i = todo[t]
        t += 1
        if i <= done:
            continue
        line = lines[i]
        m = _KEY.match(line)
        if not m:
            pm = _PKG_LINE.match(line)
            if pm:
                pkg = package_from_line(pm.group(1), pm.group(2))
                if pkg:
                    acc.add_package(pkg, STRUCTURED)
            continue
        key, raw = m.group(1).strip(), m.group(2)
        val = _value(raw)
        k = key.lower()
        if k == "pytorch version":
            if not val:
                torch_absent = True  # "PyTorch version: N/A": torch did not import, so there is no build to judge
            if val:
                acc.put("torch.version", val, STRUCTURED, "collect_env")
                mm = re.match(r"(\d+\.\d+)", val)
                era = mm.group(1) if mm else era
        elif k == "is debug build":
            acc.put("torch.debug", _bool(raw), STRUCTURED, "collect_env")
        elif k == "cuda used to build pytorch":
            if val:
                acc.put("torch.cuda", first_version(val) or val, STRUCTURED, "collect_env")
            else:
                cuda_none = True
        elif k == "rocm used to build pytorch":
            if val:
                acc.put("torch.hip", val, STRUCTURED, "collect_env")
        elif k == "os":
            if val:
                acc.put("host.distro_name", re.sub(r"\s*\((?:x86_64|aarch64|arm64|AMD64)\)\s*$", "", val),
                        STRUCTURED, "collect_env")
                acc.put("host.os", "Windows" if "windows" in val.lower() else
                        ("Darwin" if "mac" in val.lower() else "Linux"), STRUCTURED, "collect_env")
                arch = re.search(r"\((x86_64|aarch64|arm64|AMD64)\)", val)
                if arch:
                    acc.put("host.machine", arch.group(1), STRUCTURED, "collect_env")
        elif k == "gcc version":
            if val:
                acc.put("host.gcc_version", last_version(val), STRUCTURED, "collect_env")
        elif k == "clang version":
            if val:
                acc.put("host.clang_version", first_version(val), STRUCTURED, "collect_env")
        elif k == "libc version":
            if val and "glibc" in val:
                acc.put("host.glibc_version", first_version(val), STRUCTURED, "collect_env")
        elif k == "python version":
            if val:
                acc.put("python.version", first_version(val), STRUCTURED, "collect_env")
        elif k == "python platform":
            if val:
                acc.put("python.platform", val, STRUCTURED, "collect_env")
        elif k == "is cuda available":
            acc.put("torch.cuda_available", _bool(raw), STRUCTURED, "collect_env")
        elif k == "cuda runtime version":
            # collect_env reads this from `nvcc --version`: the toolkit on PATH, not torch's runtime
            if val:
                acc.put("toolkit.version", ".".join(val.split(".")[:2]), STRUCTURED, "collect_env")
                acc.put("toolkit.version_full", first_version(val), STRUCTURED, "collect_env")
        elif k == "cuda_module_loading set to":
            if val:
                acc.put_env("CUDA_MODULE_LOADING", val, STRUCTURED, "collect_env", f"CUDA_MODULE_LOADING set to: {val}")
        elif k == "nvidia driver version":
            if val:
                acc.put("driver.version", first_version(val), STRUCTURED, "collect_env")
        elif k == "gpu models and configuration":
            gpus: List[Gpu] = []
            first = raw.strip()
            j = i + 1
            candidates = [first] if first else []
            while j < n and _GPU_LINE.match(lines[j]):
                candidates.append(lines[j])
                j += 1
            for c in candidates:
                g = _GPU_LINE.match(c)
                if g:
                    gpus.append(Gpu(index=int(g.group(1)), name=g.group(2).strip()))
                elif _value(c):  # PyTorch 1.0-era: the single GPU's name alone
                    gpus.append(Gpu(index=len(gpus), name=c.strip()))
            acc.set_gpus(gpus, STRUCTURED)
            done = j - 1
            continue
        elif k == "cudnn version":
            paths = []
            if val and "probably one of" not in val.lower():
                paths.append(val)
            j = i + 1
            while j < n and re.match(r"^\s*(?:/|[A-Za-z]:\\)\S*cudnn", lines[j]):
                paths.append(lines[j].strip())
                j += 1
            for p in paths:
                ver = re.search(r"(?:\.so\.|cudnn[_\w]*?)(\d+(?:\.\d+)+)", p)
                acc.libraries.append(LibraryCopy(name="cudnn", path=p if ("/" in p or "\\" in p) else None,
                                                 version=ver.group(1) if ver else first_version(p),
                                                 origin="system"))
            done = j - 1
            continue
        else:
            pm = _PKG_LINE.match(line)
            if pm:
                pkg = package_from_line(pm.group(1), pm.group(2))
                if pkg:
                    acc.add_package(pkg, STRUCTURED)
    if cuda_none and not torch_absent and not acc.get("torch.hip"):
        # "CUDA used to build PyTorch: None/Could not collect" is torch.version.cuda == None: a CPU build
        acc.put("torch.cpu_build", True, STRUCTURED, "collect_env: CUDA used to build PyTorch: None")
    acc.add_found(f"collect_env output (PyTorch {era} format)" if era else "collect_env output")
