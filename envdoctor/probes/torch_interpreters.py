"""Interpreters with torch that envdoctor can see, for when the one it judged has none.

Read only when the judged interpreter has no torch (envdoctor's own environment, a system Python): the
report then names where torch does live instead of suggesting to install it in the wrong place. Looked at:
active and known conda environments, venvs under the current directory and the home directory (two levels
down, bounded), and ``python3``/``python`` on PATH. A prefix has torch when its site-packages holds
``torch/__init__.py`` (no interpreter is started for that); an interpreter on PATH is asked with
``importlib.util.find_spec`` (torch is never imported).
"""

from __future__ import annotations

import glob
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set

from envdoctor.probes.trust import untrusted_because

MAX_DIRS = 400  # directory entries looked at, all places together
MAX_FOUND = 5
PATH_CHECK_TIMEOUT_S = 5.0
HOME_VENV_DIRS = (".venvs", ".virtualenvs", "venvs", "envs", ".local/share/virtualenvs", ".pyenv/versions")
CONDA_ROOTS = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", ".conda")
_FIND_TORCH = "import importlib.util as u, sys; sys.stdout.write('yes' if u.find_spec('torch') else 'no')"


def _bin_python(prefix: str) -> Optional[str]:
    for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
        path = os.path.join(prefix, rel)
        if os.path.isfile(path):
            return path
    return None


def prefix_has_torch(prefix: str) -> bool:
    """torch/__init__.py in the prefix's site-packages (lib/pythonX.Y/site-packages, or Lib/ on Windows)."""
    patterns = ("lib/python3*/site-packages/torch/__init__.py", "lib/python3*/dist-packages/torch/__init__.py",
                "Lib/site-packages/torch/__init__.py")
    return any(glob.glob(os.path.join(glob.escape(prefix), p)) for p in patterns)


class _Budget:
    def __init__(self, n: int) -> None:
        self.left = n

    def listdir(self, path: str) -> List[str]:
        if self.left <= 0:
            return []
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return []
        names = names[: self.left]
        self.left -= len(names)
        return names


def _venvs_under(root: str, budget: _Budget, depth: int = 2) -> Iterable[str]:
    """Directories holding pyvenv.cfg (or conda-meta) at most ``depth`` levels under ``root``."""
    if not root or not os.path.isdir(root):
        return
    if os.path.isfile(os.path.join(root, "pyvenv.cfg")) or os.path.isdir(os.path.join(root, "conda-meta")):
        yield root
        return
    if depth == 0:
        return
    for name in budget.listdir(root):
        if name.startswith(".") and name not in (".venv", ".env", ".conda", ".venvs", ".virtualenvs"):
            continue
        if name in ("node_modules", "site-packages", "__pycache__", "proc", "sys"):
            continue
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            yield from _venvs_under(path, budget, depth - 1)


def _conda_envs(env: Mapping[str, str], home: Optional[str], budget: _Budget) -> Iterable[str]:
    for var in ["CONDA_PREFIX"] + [f"CONDA_PREFIX_{i}" for i in range(1, 10)]:
        if env.get(var):
            yield env[var]
    roots = [env.get("CONDA_ROOT"), env.get("MAMBA_ROOT_PREFIX")]
    if env.get("CONDA_EXE"):  # .../miniconda3/bin/conda
        roots.append(os.path.dirname(os.path.dirname(env["CONDA_EXE"])))
    if home:
        roots += [os.path.join(home, r) for r in CONDA_ROOTS]
        try:  # every environment conda created, as conda lists them
            with open(os.path.join(home, ".conda", "environments.txt"), encoding="utf-8", errors="replace") as f:
                for line in f.read(65536).splitlines():
                    if line.strip():
                        yield line.strip()
        except OSError:
            pass
    for root in roots:
        if root and os.path.isdir(root):
            yield root
            for name in budget.listdir(os.path.join(root, "envs")):
                yield os.path.join(root, "envs", name)


def _prefix_candidates(env: Mapping[str, str], cwd: Optional[str], budget: _Budget) -> Iterable[str]:
    home = env.get("HOME") or None
    yield from _conda_envs(env, home, budget)
    if env.get("VIRTUAL_ENV"):
        yield env["VIRTUAL_ENV"]
    if cwd:
        yield from _venvs_under(cwd, budget)
    if home:
        for rel in HOME_VENV_DIRS:
            for name in budget.listdir(os.path.join(home, rel)):
                yield os.path.join(home, rel, name)
        if home != cwd:
            yield from _venvs_under(home, budget)


def _same(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def find_torch_interpreters(env: Mapping[str, str], runner: Any, cwd: Optional[str],
                            exclude: Sequence[str] = (), limit: int = MAX_FOUND,
                            refused: Optional[Dict[str, str]] = None) -> List[str]:
    """Interpreters with torch installed, besides those in ``exclude`` (their prefixes or executables). One on a
    path another user owns or can write to (probes/trust.py) is neither run nor returned: it goes to ``refused``
    with the reason (a venv planted in the world-writable directory envdoctor runs from)."""
    refused = {} if refused is None else refused
    seen: Set[str] = {_same(p) for p in exclude if p}
    found: List[str] = []
    budget = _Budget(MAX_DIRS)
    for prefix in _prefix_candidates(env, cwd, budget):
        if len(found) >= limit:
            return found
        key = _same(prefix)
        if key in seen:
            continue
        seen.add(key)
        exe = _bin_python(prefix)
        if exe and prefix_has_torch(prefix):
            seen.add(_same(exe))
            why = untrusted_because(exe)
            if why:
                refused[exe] = why
            else:
                found.append(exe)
    for name in ("python3", "python"):
        if len(found) >= limit:
            break
        exe = runner.which(name) if runner is not None else None
        if not exe:
            continue
        real = _same(exe)
        if real in seen or _same(os.path.dirname(os.path.dirname(exe))) in seen:
            continue
        seen.add(real)
        why = untrusted_because(exe)
        if why:  # not even asked: asking runs it
            refused[exe] = why
            continue
        rr = runner.run([exe, "-c", _FIND_TORCH], timeout=PATH_CHECK_TIMEOUT_S)
        if rr.ok and rr.stdout.strip() == "yes":
            found.append(exe)
    return found
