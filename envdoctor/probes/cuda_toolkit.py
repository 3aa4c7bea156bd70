"""CUDA toolkit probe: the nvcc on PATH, CUDA_HOME/CUDA_PATH, and the toolkit trees under /usr/local and /opt."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Mapping, Optional, Tuple, Union

from envdoctor.domain.versions import mm_str
from envdoctor.model.facts import CudaToolkit, ProbeStatus, Toolkits
from envdoctor.parsers.nvcc import parse_nvcc_version
from envdoctor.probes.registry import ProbeContext, probe
from envdoctor.probes.sysroot import SysRoot, root_and_env

NVCC_TIMEOUT_S = 15.0  # nvcc starts in well under a second; a network home directory can be slow


def parse_version_json(text: str) -> Optional[str]:
    """{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...} (CUDA >= 11.1) -> "12.4.1"."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    cuda = data.get("cuda") if isinstance(data, dict) else None
    v = cuda.get("version") if isinstance(cuda, dict) else None
    return v if isinstance(v, str) and v else None


def parse_version_txt(text: str) -> Optional[str]:
    """"CUDA Version 10.2.89" (CUDA <= 11.0) -> "10.2.89"."""
    m = re.search(r"CUDA Version\s+(\d+(?:\.\d+)+)", text)
    return m.group(1) if m else None


class _Finder:
    def __init__(self, runner, fs: SysRoot):
        self.runner = runner
        self.fs = fs
        self.problems: List[str] = []

    def nvcc_version(self, nvcc: str) -> Tuple[Optional[str], Optional[str]]:
        res = self.runner.run([nvcc, "--version"], timeout=NVCC_TIMEOUT_S)
        if not res.ok:
            self.problems.append(res.describe())
            return None, None
        parsed = parse_nvcc_version(res.stdout)
        if parsed is None:
            self.problems.append(f"`{nvcc} --version` printed no release line")
            return None, None
        return parsed

    def file_version(self, tree: str) -> Tuple[Optional[str], Optional[str]]:
        for name, parse in (("version.json", parse_version_json), ("version.txt", parse_version_txt)):
            text = self.fs.read_text(f"{tree}/{name}")
            full = parse(text) if text is not None else None
            if full:
                return mm_str(full) or full, full
        return None, None

    def tree(self, tree: str, found_via: str) -> Optional[CudaToolkit]:
        if not self.fs.isdir(tree):
            return None
        nvcc = f"{tree.rstrip('/')}/bin/nvcc"
        has_nvcc = self.fs.isfile(nvcc)
        version = full = None
        if has_nvcc:
            # the runner runs a path on this machine: under a test root that is the root-prefixed path
            version, full = self.nvcc_version(self.fs.host(nvcc))
        if version is None:
            version, full = self.file_version(tree)
        if version is None and not has_nvcc:
            return None  # a directory named cuda-* with neither nvcc nor a version file: not a toolkit
        return CudaToolkit(path=tree, nvcc_path=nvcc if has_nvcc else None, version=version,
                           version_full=full, found_via=found_via)


def _env_tree_problem(fs: SysRoot, value: str, found: Optional[CudaToolkit]) -> Optional[str]:
    """Why a CUDA_HOME / CUDA_PATH value is no toolkit to build with (torch.utils.cpp_extension runs
    $CUDA_HOME/bin/nvcc), or None."""
    if found is not None:
        return None if found.nvcc_path else "it has no bin/nvcc"
    if not fs.exists(value):
        return "no such directory"
    if not fs.isdir(value):
        return "not a directory"
    return "neither bin/nvcc nor version.json / version.txt there"


def _looks_like_toolkit(fs: SysRoot, tree: str) -> bool:
    return any(fs.exists(f"{tree}/{n}") for n in ("version.json", "version.txt", "include/cuda.h"))


@probe("toolkits", failed=lambda reason: Toolkits(status=ProbeStatus.FAILED, reason=reason))
def collect_toolkits(ctx: ProbeContext) -> Toolkits:
    return probe_toolkits(ctx.runner, root=ctx.fs, env=ctx.env)


def probe_toolkits(runner, root: Union[str, SysRoot] = "/", env: Optional[Mapping[str, str]] = None) -> Toolkits:
    """Absent when there is no nvcc on PATH and no toolkit tree in the usual places."""
    fs, env = root_and_env(root, env)
    finder = _Finder(runner, fs)
    installed: Dict[str, CudaToolkit] = {}  # keyed by the resolved tree, so cuda -> cuda-13.0 counts once
    links: List[str] = []

    def add(tree: str, via: str) -> Optional[CudaToolkit]:
        tree = tree.rstrip("/") or "/"
        key = fs.realpath(tree)
        if key in installed:
            return installed[key]
        # name the toolkit by its real directory (/usr/local/cuda-13.0), not the /usr/local/cuda link
        tk = finder.tree(key, via)
        if tk is not None and key != tree:
            links.append(f"{tree} -> {key}")
        if tk is not None:
            installed[key] = tk
        return tk

    cuda_home, cuda_path = env.get("CUDA_HOME"), env.get("CUDA_PATH")
    env_problems: Dict[str, str] = {}
    for var, value in (("CUDA_HOME", cuda_home), ("CUDA_PATH", cuda_path)):
        if value:
            found = add(value, var)
            why = _env_tree_problem(fs, value, found)
            if why:
                env_problems[var] = why
                finder.problems.append(f"{var}={value} is not a CUDA toolkit ({why})")
    candidates = ["/usr/local/cuda"] + sorted(fs.glob("/usr/local/cuda-*") + fs.glob("/opt/cuda*"))
    for tree in candidates:
        add(tree, "/usr/local" if tree.startswith("/usr/local") else "/opt")

    on_path: Optional[CudaToolkit] = None
    nvcc = runner.which("nvcc")
    if nvcc:
        version, full = finder.nvcc_version(nvcc)
        real = fs.realpath(nvcc)
        tree: Optional[str] = None
        if os.path.basename(os.path.dirname(real)) == "bin":
            cand = os.path.dirname(os.path.dirname(real))
            if _looks_like_toolkit(fs, cand):
                tree = cand
        if tree is None and full:
            # a wrapper script (/usr/local/bin/nvcc -> exec /usr/local/cuda-13.0/bin/nvcc): match by version
            same = [t for t in installed.values() if t.version_full == full]
            if len(same) == 1:
                tree = same[0].path
        on_path = CudaToolkit(path=tree, nvcc_path=nvcc, version=version, version_full=full, found_via="PATH")
        if tree is None:
            installed.setdefault(f"PATH:{nvcc}", on_path)

    toolkits = list(installed.values())
    if on_path is None and not toolkits:
        reason = "no nvcc on PATH and no CUDA toolkit in CUDA_HOME, CUDA_PATH, /usr/local/cuda* or /opt/cuda*"
        if finder.problems:
            reason += "; " + "; ".join(finder.problems)
        return Toolkits(status=ProbeStatus.ABSENT, reason=reason, cuda_home_env=cuda_home, cuda_path_env=cuda_path,
                        env_problems=env_problems)
    parts = []
    if on_path is not None:
        parts.append(f"nvcc on PATH is {on_path.version or 'of unknown version'} ({nvcc})")
    else:
        parts.append("no nvcc on PATH")
    parts.append(f"{len(toolkits)} toolkit(s) installed")
    parts.extend(links)
    parts.extend(finder.problems)
    return Toolkits(
        status=ProbeStatus.OK,
        reason="; ".join(parts),
        on_path=on_path,
        installed=toolkits,
        cuda_home_env=cuda_home,
        cuda_path_env=cuda_path,
        env_problems=env_problems,
    )
