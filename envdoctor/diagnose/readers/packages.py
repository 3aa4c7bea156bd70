"""Read package lists: `pip list`, `pip freeze`, `pip show`, `conda list`, `pip install` lines, "name: version"."""

from __future__ import annotations

import re
from typing import List, Optional

from ...facts import Package
from .base import LOOSE, STRUCTURED, Acc, Paste
from .collect_env import conda_variant

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_PIP_LIST_HEAD = re.compile(r"^\s*Package\s+Version\b")
_DASHES = re.compile(r"^\s*-{3,}\s+-{3,}")
_ROW = re.compile(rf"^\s*({_NAME})\s+(\d[\w.+!-]*)(?:\s+(\S.*))?$")
_FREEZE = re.compile(rf"^\s*({_NAME})\s*==\s*(\d[\w.+!-]*)\s*$")
_SHOW_NAME = re.compile(rf"^\s*Name:\s*({_NAME})\s*$")
_SHOW_VERSION = re.compile(r"^\s*Version:\s*(\d[\w.+!-]*)\s*$")
_CONDA_HEAD = re.compile(r"^#\s*packages in environment at", re.I)
_CONDA_ROW = re.compile(rf"^\s*({_NAME})\s+(\d[\w.+!-]*)\s+(\S+)(?:\s+(\S+))?\s*$")
# "- torch: 2.1.2+cpu -> 2.2.1+cpu (" in upgrade logs; the right-hand side is what is installed now
_UPGRADE = re.compile(rf"^[\s*-]*({_NAME})\s*:\s*\S+\s*->\s*(\d[\w.+!-]*)")
# "torch: 2.3.0", "flash-attn: 2.5.7", "- torch==2.1.0", "Pytorch: 1.4"
_LOOSE = re.compile(rf"^[\s*•-]*({_NAME})\s*(?::|==|\s)\s*v?(\d+(?:\.\d+)+(?:[a-z]+\d*)?(?:\+[\w.]+)?)\s*,?\s*$")
_PIP_INSTALL = re.compile(r"\bpip3?\s+install\s+(.*)$")
_PIN = re.compile(rf"^({_NAME})(?:\[[^\]]*\])?={{2,3}}(\d[\w.+!-]*)$")
_INDEX_VARIANT = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(cu\d+|cpu|rocm[\d.]+)")
# Names whose "name: version" line is something else than a Python package
_NOT_PACKAGES = {"python", "python3", "cuda", "driver", "nvidia", "gcc", "g++", "clang", "nvcc", "os", "ubuntu",
                 "debian", "centos", "fedora", "release", "version", "kernel", "linux", "windows", "cudnn", "gpu",
                 "cmake", "conda", "pip", "pip3", "libc", "glibc", "driver-version", "cuda-version", "step",
                 "epoch", "iteration", "loss", "rank", "world-size", "node", "line", "port", "pid"}
_ALIASES = {"pytorch": "torch", "flash_attn": "flash-attn"}
# Rows accepted from a header-less `pip list | grep ...` fragment: torch-family and CUDA wheels only
_INTERESTING = re.compile(r"^(?:torch\w*|pytorch\w*|triton|xformers|flash[-_]attn|nvidia-\S+|bitsandbytes|"
                          r"apex|deepspeed|vllm|jax\w*|tensorflow\S*|onnxruntime\S*|mmcv\S*|spconv\S*|"
                          r"torch-\S+|cupy\S*|numpy|transformers|accelerate|exllama\S*)$", re.I)


def _name(raw: str) -> str:
    low = raw.lower()
    return _ALIASES.get(low, low)


def _pkg(name: str, version: str, installer: Optional[str] = None, location: Optional[str] = None) -> Package:
    return Package(name=_name(name), version=version, installer=installer, location=location)


# A line that can hold a package (a list row, "name==version", "name: version") has at most a handful of
# words: only those lines (and block headers) meet the seven regexes below.
def _todo(paste: Paste) -> List[int]:
    short = [i for i, ln in enumerate(paste.lines) if ln and len(ln) < 160 and len(ln.split(None, 5)) <= 5]
    short = paste.distinct(short, head=8000, tail=2000)
    return sorted(set(short) | set(paste.with_any(["package", "->", "name:"])))


def read(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    n = len(lines)
    found_list = found_freeze = found_show = found_conda = False
    todo = _todo(paste)
    t = 0
    i = -1
    while t < len(todo):
        if todo[t] < i:
            t += 1
            continue
        i = todo[t]
        t += 1
        line = lines[i]
        if _PIP_LIST_HEAD.match(line) and i + 1 < n and _DASHES.match(lines[i + 1]):
            i += 2
            while i < n:
                m = _ROW.match(lines[i])
                if not m:
                    break
                loc = m.group(3).strip() if m.group(3) and ("/" in m.group(3) or "\\" in m.group(3)) else None
                acc.add_package(_pkg(m.group(1), m.group(2), "pip", loc), STRUCTURED)
                i += 1
            found_list = True
            continue
        if _CONDA_HEAD.match(line):
            i += 1
            while i < n:
                row = lines[i]
                if row.startswith("#") or not row.strip():
                    i += 1
                    continue
                m = _CONDA_ROW.match(row)
                if not m:
                    break
                channel = m.group(4) or ""
                variant = conda_variant(m.group(3)) if channel != "pypi" else None
                acc.add_package(Package(name=_name(m.group(1)), version=m.group(2),
                                        installer="pip" if channel == "pypi" else "conda", variant=variant,
                                        variant_evidence=f"conda build string {m.group(3)}" if variant else None),
                                STRUCTURED)
                i += 1
            found_conda = True
            continue
        sm = _SHOW_NAME.match(line)
        if sm and i + 1 < n:
            vm = _SHOW_VERSION.match(lines[i + 1])
            if vm:
                loc = None
                requires = None
                for j in range(i + 2, min(n, i + 12)):
                    if lines[j].startswith("Location:"):
                        loc = lines[j].split(":", 1)[1].strip() or None
                    elif lines[j].startswith("Requires:"):
                        req = lines[j].split(":", 1)[1].strip()
                        requires = [r.strip() for r in req.split(",") if r.strip()] if req else []
                acc.add_package(Package(name=_name(sm.group(1)), version=vm.group(1), location=loc,
                                        requires=requires, installer="pip"), STRUCTURED)
                found_show = True
                i += 2
                continue
        m = _FREEZE.match(line)
        if m:
            acc.add_package(_pkg(m.group(1), m.group(2), "pip"), STRUCTURED)
            found_freeze = True
            i += 1
            continue
        m = _UPGRADE.match(line)
        if m:
            acc.add_package(_pkg(m.group(1), m.group(2)), LOOSE)
            i += 1
            continue
        m = _ROW.match(line)
        if m and _INTERESTING.match(m.group(1)) and not m.group(3):
            acc.add_package(_pkg(m.group(1), m.group(2), "pip"), STRUCTURED - 1)
            found_list = True
            i += 1
            continue
        m = _LOOSE.match(line)
        if m and m.group(1).lower() not in _NOT_PACKAGES and not line.strip().startswith("$"):
            acc.add_package(_pkg(m.group(1), m.group(2)), LOOSE)
        i += 1
    _read_installs(paste, acc)
    if found_list:
        acc.add_found("pip list")
    if found_freeze:
        acc.add_found("pip freeze")
    if found_show:
        acc.add_found("pip show")
    if found_conda:
        acc.add_found("conda list")


def _read_installs(paste: Paste, acc: Acc) -> None:
    """`pip install torch==1.3.0 -f ...`: the pins were installed unless pip said it could not find them."""
    failed = set(m.lower() for m in re.findall(
        r"No matching distribution found for ([A-Za-z0-9][\w.-]*)", paste.text))
    for i in paste.distinct(paste.with_any(["install"])):
        line = paste.lines[i]
        m = _PIP_INSTALL.search(line)
        if not m:
            continue
        args = m.group(1).split()
        vm = _INDEX_VARIANT.search(m.group(1))
        for a in args:
            a = a.strip("'\"")
            p = _PIN.match(a)
            if not p:
                continue
            name, version = _name(p.group(1)), p.group(2)
            if name in failed:
                acc.requested[name] = version
                continue
            variant = None
            if "+" in version:
                variant = version.split("+", 1)[1]
            acc.add_package(Package(name=name, version=version, installer="pip", variant=variant,
                                    variant_evidence="local version tag" if variant else None), LOOSE - 1)
        if vm:
            acc.put("pip.index_variant", vm.group(1), LOOSE, "pip install index URL")
        acc.add_found("pip install command")
