"""Read package lists: `pip list`, `pip freeze`, `pip show`, `conda list`, `pip install` lines, "name: version"."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from ...model.facts import Package
from .base import LOOSE, STRUCTURED, Acc, Paste
from .collect_env import conda_variant, package_from_line

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
_LOOSE = re.compile(rf"^[\s*•-]*({_NAME})(?:\s+[Vv]ersion)?\s*(?::|==|\s)\s*v?(\d+(?:\.\d+)+(?:[a-z]+\d*)?(?:\+[\w.]+)?)"
                    r"\s*,?\s*$")
# collect_env's package rows pasted on their own: "[pip3] torch==2.3.0", "[conda] pytorch 2.4.1 py3.11_cuda12.1_0 pytorch"
_CE_ROW = re.compile(r"^\s*\[(pip3?|conda)\]\s+(.*)$")
# a conda transaction plan: "The following NEW packages will be INSTALLED:" then "  pytorch  pytorch/linux-64::pytorch-2.3.1-py3.11_cpu_0"
_PLAN_HEAD = re.compile(r"^\s*The following (?:NEW )?packages will be (INSTALLED|UPDATED|DOWNGRADED|SUPERSEDED)", re.I)
_PLAN_ROW = re.compile(rf"^\s+({_NAME})\s+(?:\S+::)?({_NAME})-(\d[\w.!]*)-(\S+?)(?:\s+(?:-->|->)\s+(?:\S+::)?"
                       rf"({_NAME})-(\d[\w.!]*)-(\S+))?(?:\s.*)?$")
_PLAN_SPEC = re.compile(r"^\s*-\s*((?:pytorch-cuda|cudatoolkit|cuda-toolkit|cuda|pytorch|torch|cpuonly)\b[^\s]*)\s*$", re.I)
# wheel file names: name-version(+local)-pyXY-abi-platform.whl (PEP 427)
_WHEEL = re.compile(r"(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9_.]*?)-(\d[\w.]*(?:\+[\w.]+)?)-(?:\d[\w.]*-)?(?:cp|py)\d+\w*-[\w.]+-[\w.]+\.whl")
_PIP_INSTALL = re.compile(r"\bpip3?\s+install\s+(.*)$")
_PIN = re.compile(rf"^({_NAME})(?:\[[^\]]*\])?={{2,3}}(\d[\w.+!-]*)$")
_INDEX_VARIANT = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(cu\d+|cpu|rocm[\d.]+)")
# Names whose "name: version" line is something else than a Python package
_NOT_PACKAGES = {"python", "python3", "cuda", "driver", "nvidia", "gcc", "g++", "clang", "nvcc", "os", "ubuntu",
                 "debian", "centos", "fedora", "release", "version", "kernel", "linux", "windows", "cudnn", "gpu",
                 "cmake", "conda", "pip", "pip3", "libc", "glibc", "driver-version", "cuda-version", "step",
                 "epoch", "iteration", "loss", "rank", "world-size", "node", "line", "port", "pid", "nvidia-smi",
                 "nvml", "build", "model", "lr", "acc", "time", "batch", "size", "id", "score", "value"}
_ALIASES = {"pytorch": "torch", "flash_attn": "flash-attn", "pytorch-nightly": "torch", "torch-nightly": "torch",
            "pytorch-gpu": "torch", "pytorch-cpu": "torch"}
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
        cm = _CE_ROW.match(line) if "[" in line[:8] else None
        if cm:
            _ce_row(acc, cm.group(1), cm.group(2))
            i += 1
            continue
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
                _conda_row(acc, m, STRUCTURED)
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
        m = _CONDA_ROW.match(line) if not found_list else None
        if m and m.group(4) and m.group(4).lower() in _CONDA_CHANNELS and _INTERESTING_CONDA.match(m.group(1)) \
                and _CONDA_BUILD.match(m.group(3)):
            # a header-less `conda list | grep torch` row: name, version, build string, channel
            _conda_row(acc, m, STRUCTURED - 1)
            found_conda = True
            i += 1
            continue
        m = _ROW.match(line)
        # not nvidia-smi's own banner ("NVIDIA-SMI 525.60.13"), which the torch-family pattern's nvidia-* takes
        if m and _INTERESTING.match(m.group(1)) and not m.group(3) and m.group(1).lower() not in _NOT_PACKAGES:
            acc.add_package(_pkg(m.group(1), m.group(2), "pip"), STRUCTURED - 1)
            found_list = True
            i += 1
            continue
        m = _LOOSE.match(line)
        # a short name with a float ("p: 0.0", "lr 0.001") is a tensor or argument dump, not a package
        if m and (len(m.group(1)) < 3 and not _INTERESTING.match(m.group(1))
                  or re.match(r"^0\.\d+$", m.group(2))):
            m = None
        if m and m.group(1).lower() not in _NOT_PACKAGES and not line.strip().startswith("$"):
            acc.add_package(_pkg(m.group(1), m.group(2)), LOOSE)
        i += 1
    _read_installs(paste, acc)
    _read_installed(paste, acc)
    _read_conda_plans(paste, acc)
    _read_wheels(paste, acc)
    if found_list:
        acc.add_found("pip list")
    if found_freeze:
        acc.add_found("pip freeze")
    if found_show:
        acc.add_found("pip show")
    if found_conda:
        acc.add_found("conda list")


# a header-less conda row: a channel conda lists packages from, a build string (py3.8_cpu_0, h7f98852_0, 0, cpu)
_CONDA_CHANNELS = {"pytorch", "nvidia", "conda-forge", "defaults", "pypi", "anaconda", "main", "pytorch-nightly"}
_CONDA_BUILD = re.compile(r"^(?:[a-z]+\d[\w.]*_\d+|py\d+\w*|\d+|cpu|cuda|h[0-9a-f]{7}\w*|pyh[0-9a-f]+\w*)$")
_INTERESTING_CONDA = re.compile(r"^(?:cpuonly|pytorch-mutex|pytorch-cuda|cudatoolkit|cuda-\S+)$|" +
                                _INTERESTING.pattern[1:], re.I)


def _conda_row(acc: Acc, m: re.Match[str], priority: int) -> None:
    """One `conda list` row (name, version, build string, channel); conda's `cpuonly` package, or the pytorch
    mutex's cpu build, pins every pytorch-channel package to its CPU build while it is installed."""
    name, build, channel = _name(m.group(1)), m.group(3), m.group(4) or ""
    if name == "cpuonly" or (name == "pytorch-mutex" and build.lower() == "cpu"):
        acc.put("torch.conda_cpuonly", True, priority, "conda list row: " + " ".join(m.group(0).split())[:120])
    variant = conda_variant(build) if channel != "pypi" else None
    acc.add_package(Package(name=name, version=m.group(2), installer="pip" if channel == "pypi" else "conda",
                            variant=variant, variant_evidence=f"conda build string {build}" if variant else None),
                    priority)


def _read_installs(paste: Paste, acc: Acc) -> None:
    """`pip install torch==1.3.0 -f ...`: the pins were installed unless pip said it could not find them."""
    failed = set(m.lower() for m in re.findall(
        r"No matching distribution found for ([A-Za-z0-9][\w.-]*)", paste.text))
    wanted: Dict[str, str] = {}
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
        # every package the line asks for, pinned or not ("vllm", "flash-attn==2.7.4"): what pip was to find for
        # this Python (checks/diagnose_wheels.py judges them against the cited wheel table)
        for w in _requested(args):
            wanted.setdefault(w, line.strip()[:160])
        if vm:
            acc.put("pip.index_variant", vm.group(1), LOOSE, f"pip install index URL: {vm.group(0)}")
            if vm.group(1).startswith("cu"):
                acc.put("intent.cuda", vm.group(1), LOOSE, f"a CUDA index in a pip install line: {vm.group(0)}")
        acc.add_found("pip install command")
    if wanted:
        acc.put("paste.install_requests", " ".join(wanted), LOOSE, next(iter(wanted.values())))


# pip/uv install options that take a value: the token after them is not a package
_VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement", "-c",
                  "--constraint", "-t", "--target", "--prefix", "--root", "--python", "-p", "--index-strategy",
                  "--platform", "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary",
                  "--trusted-host", "--cache-dir", "--src", "--upgrade-strategy", "--progress-bar", "--index",
                  "--default-index", "--torch-backend", "--config-settings", "-C", "--log", "--proxy", "-e",
                  "--editable", "--resolution", "--prerelease", "--exclude-newer"}
_REQ = re.compile(rf"^({_NAME})(?:\[[^\]]*\])?(?:(==|>=|<=|~=|!=|<|>)\s*([\w.*+!-]+))?$")


def _requested(args: List[str]) -> List[str]:
    """The packages an install line asks for, as "name" or "name==version" (other specifiers keep the name)."""
    out, skip = [], False
    for raw in args:
        a = raw.strip("'\"")
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            skip = a in _VALUE_OPTIONS  # "--index-url=URL" carries its value itself
            continue
        if a in ("&&", "||", "|", ";", ">", "2>&1") or a.startswith(("#", ">")):
            break  # the next command, a pipe or a redirection
        if "/" in a or "\\" in a or a.endswith((".whl", ".tar.gz", ".zip")) or a in (".", ".."):
            continue  # a URL, a path or a file: not a name pip looks up
        m = _REQ.match(a)
        if m and not m.group(1).startswith("."):
            name = _name(m.group(1))
            out.append(f"{name}=={m.group(3)}" if m.group(2) == "==" else name)
    return out


_INSTALLED = re.compile(r"\bSuccessfully installed\s+(.+)$")
_DIST = re.compile(rf"^({_NAME}?)-(\d[\w.!]*(?:\+[\w.]+)?)$")


def _read_installed(paste: Paste, acc: Acc) -> None:
    """pip's own "Successfully installed torch-2.3.1+cpu torchvision-0.18.1": what the install resolved."""
    for i in paste.distinct(paste.with_any(["successfully installed"])):
        m = _INSTALLED.search(paste.lines[i])
        if not m:
            continue
        for item in m.group(1).split():
            d = _DIST.match(item)
            if d:
                version = d.group(2)
                variant = version.split("+", 1)[1] if "+" in version else None
                acc.add_package(Package(name=_name(d.group(1)), version=version, installer="pip", variant=variant,
                                        variant_evidence=f"pip: Successfully installed {item}" if variant else None),
                                STRUCTURED - 1)
        acc.add_found("pip install output")


def _ce_row(acc: Acc, kind: str, rest: str) -> None:
    """One `[pip3] name==version` or `[conda] name version build channel` row of collect_env, on its own."""
    pkg = package_from_line(kind, rest)
    if pkg is not None and pkg.version[:1].isdigit():
        acc.add_package(Package(**{**pkg.__dict__, "name": _name(pkg.name)}), STRUCTURED)


def _read_conda_plans(paste: Paste, acc: Acc) -> None:
    """A conda transaction plan: what it installs (with the build string's cpu/cuda variant) and the specs asked
    for (a `pytorch-cuda=12.1` spec is the intent to use CUDA)."""
    lines = paste.lines
    n = len(lines)
    for i in paste.distinct(paste.with_any(["packages will be", "specs:", "conda install", "mamba install"])):
        line = lines[i]
        im = re.search(r"\b(?:conda|mamba|micromamba)\s+install\b.*?\b((?:pytorch-cuda|cudatoolkit|cuda-toolkit)"
                       r"\s*=+\s*[\d.]+)", line)
        if im:
            acc.put("intent.cuda", im.group(1).replace(" ", ""), LOOSE, f"conda spec in `{line.strip()[:120]}`")
            continue
        if re.search(r"(?:added|updated) / (?:updated|removed) specs:|specs:\s*$", line, re.I):
            for j in range(i + 1, min(n, i + 30)):
                sm = _PLAN_SPEC.match(lines[j])
                if not sm:
                    if lines[j].strip():
                        break
                    continue
                spec = sm.group(1)
                if re.match(r"(?:pytorch-cuda|cudatoolkit|cuda-toolkit|cuda)\b", spec, re.I):
                    acc.put("intent.cuda", spec, LOOSE, f"conda spec {spec}")
            continue
        if not _PLAN_HEAD.match(line):
            continue
        acc.add_found("a conda transaction plan")
        for j in range(i + 1, min(n, i + 400)):
            row = lines[j]
            if not row.strip():
                if j > i + 1:
                    break
                continue
            m = _PLAN_ROW.match(row)
            if not m:
                break
            name, version, build = (m.group(5), m.group(6), m.group(7)) if m.group(5) else m.group(2, 3, 4)
            key = _name(name)
            if key == "cpuonly":
                acc.put("torch.conda_cpuonly", True, STRUCTURED, f"conda plan installs {row.strip()}")
                continue
            if key in ("pytorch-cuda", "cudatoolkit"):
                acc.put("intent.cuda", f"{key}={version}", LOOSE, f"conda plan installs {row.strip()}")
            variant = conda_variant(build)
            acc.add_package(Package(name=key, version=version, installer="conda", variant=variant,
                                    variant_evidence=f"conda build string {build}" if variant else None),
                            STRUCTURED - 1)


def _read_wheels(paste: Paste, acc: Acc) -> None:
    """Wheel file names are facts: `flash_attn-2.6.3+cu123torch2.4cxx11abiTRUE-cp311-cp311-linux_x86_64.whl`
    names the package, its version and (in the local tag) the build it was made for."""
    for i in paste.distinct(paste.with_any([".whl"])):
        for m in _WHEEL.finditer(paste.lines[i]):
            name = _name(m.group(1).replace("_", "-"))
            version = m.group(2)
            variant = version.split("+", 1)[1] if "+" in version else None
            evidence = f"wheel file name {m.group(0)}" if variant else None
            if name == "torch" and variant is None and _DEFAULT_INDEX_CPU.search(m.group(0)) and \
                    not _CUDA_INDEX.search(paste.text):
                # PyPI's torch wheels for Windows and macOS carry no local tag and are CPU builds (for years the
                # only CUDA-less wheels on the default index; CUDA builds come from download.pytorch.org as
                # +cuXXX); a size of a few hundred MB, not GBs, says the same
                size = _WHEEL_SIZE.search(paste.lines[i][m.end():m.end() + 40])
                variant = "cpu"
                evidence = (f"wheel file name {m.group(0)} from the default index: PyPI's Windows/macOS torch wheels "
                            "are CPU builds" + (f" (its size {size.group(1)} fits a CPU build)" if size else ""))
                acc.put("torch.cpu_build", True, LOOSE, evidence)
            acc.add_package(Package(name=name, version=version, installer="pip", variant=variant,
                                    variant_evidence=evidence), LOOSE - 1)
            acc.add_found("wheel file names")


_DEFAULT_INDEX_CPU = re.compile(r"-(?:win_amd64|win32|win_arm64|macosx_[\w.]+)\.whl$")
_CUDA_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(?:cu|rocm)\d|\+cu\d{2,3}-")
_WHEEL_SIZE = re.compile(r"^\s*\(?(\d+(?:\.\d+)?\s*[kM]B)\)?")
