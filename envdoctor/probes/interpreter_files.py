"""What the judged interpreter's files say without running it: its venv's pyvenv.cfg and bin/python* links (all that
is left to read when the link dangles), and the interpreter that the `pip` on PATH runs (its shebang, not run)."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, Dict, List, Optional

from envdoctor.model.facts import InterpreterLink, PathPip, VenvConfig
from envdoctor.probes.trust import untrusted_because

MAX_CFG_BYTES = 65536
_PYTHON_NAME = re.compile(r"^python(?:\d+(?:\.\d+)?)?(?:\.exe)?$")


def venv_root(executable: str) -> Optional[str]:
    """The venv holding ``executable`` (PEP 405: pyvenv.cfg beside it or one directory up), else None; the link
    itself is not followed (a venv's python is a link to its base, whose directory is not the venv)."""
    if not executable or os.sep not in executable:
        return None
    here = os.path.dirname(os.path.abspath(executable))
    for d in (here, os.path.dirname(here)):
        if os.path.isfile(os.path.join(d, "pyvenv.cfg")):
            return d
    return None


def read_pyvenv_cfg(root: str) -> Dict[str, str]:
    """``key = value`` lines of pyvenv.cfg, as site.venv() reads them (keys lower-cased)."""
    out: Dict[str, str] = {}
    try:
        with open(os.path.join(root, "pyvenv.cfg"), encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_CFG_BYTES)
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _links(root: str) -> List[InterpreterLink]:
    out = []
    for sub in ("bin", "Scripts"):
        d = os.path.join(root, sub)
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            path = os.path.join(d, name)
            if not _PYTHON_NAME.match(name) or not os.path.islink(path):
                continue
            try:
                target: Optional[str] = os.readlink(path)
            except OSError:
                target = None
            out.append(InterpreterLink(path=path, target=target, resolves=os.path.isfile(path)))
    return out


def site_minors(root: str) -> List[str]:
    """The X.Y of each lib/pythonX.Y/site-packages folder under a venv (POSIX layout; Windows' Lib/site-packages
    names no version)."""
    try:
        names = sorted(os.listdir(os.path.join(root, "lib")))
    except OSError:
        return []
    out = []
    for name in names:
        m = re.match(r"^python(\d+\.\d+)t?$", name)
        if m and os.path.isdir(os.path.join(root, "lib", name, "site-packages")):
            out.append(m.group(1))
    return out


def venv_config(executable: str, runner: Any = None, running: Optional[str] = None) -> Optional[VenvConfig]:
    """The venv of ``executable`` as its files say; None when it is not in a venv. ``running``: the Python
    version the interpreter answered with, when it did ("3.12.1")."""
    root = venv_root(executable)
    if root is None:
        return None
    cfg = read_pyvenv_cfg(root)
    home = cfg.get("home") or None
    version = cfg.get("version") or cfg.get("version_info") or None
    system = cfg.get("include-system-site-packages")
    links = _links(root)
    same_minor = untrusted = None
    mm = re.match(r"(\d+)\.(\d+)", version or "")
    run_mm = re.match(r"(\d+)\.(\d+)", running or "")
    other_minor = bool(mm and run_mm and mm.group(0) != run_mm.group(0))
    if mm and runner is not None and (other_minor or any(link.resolves is False for link in links)):
        # a base to rebuild the venv with: the same minor version (its site-packages is lib/python3.X)
        name = f"python{mm.group(1)}.{mm.group(2)}"
        found = runner.which(name)
        if found and not any(os.path.abspath(found) == os.path.abspath(link.path) for link in links):
            same_minor = _base_of(found, name)
            # a base another user can change is never named in a fix (the venv-repair command runs it): issue 40
            why = untrusted_because(found) or untrusted_because(same_minor)
            if why is not None:
                untrusted, same_minor = f"{found}: {why}", None
    return VenvConfig(root=root, cfg=cfg, home=home, home_exists=os.path.isdir(home) if home else None,
                      version=version,
                      include_system_site_packages=None if system is None else system.lower() == "true",
                      links=links, same_minor_python=same_minor, same_minor_untrusted=untrusted,
                      site_minors=site_minors(root))


def _base_of(python: str, name: str) -> str:
    """``python`` itself, or, when it is another venv's (an activated one first on PATH), that venv's base
    interpreter of the same name: the venv to repair should not depend on a second venv."""
    root = venv_root(python)
    home = read_pyvenv_cfg(root).get("home") if root else None
    base = os.path.join(home, name) if home else None
    return base if base and os.path.isfile(base) else python


def shebang_interpreter(path: str) -> Optional[str]:
    """The interpreter a script's first line runs: ``#!/venv/bin/python3``, ``#!/usr/bin/env python3`` (as the
    word), or distlib's launcher for long paths (``#!/bin/sh`` then ``'''exec' "/long/path/python" "$0" "$@"``)."""
    with open(path, "rb") as f:
        head = f.read(4096).decode("utf-8", "replace").splitlines()
    if not head or not head[0].startswith("#!"):
        return None
    words = head[0][2:].strip().split()
    if not words:
        return None
    if words[0] in ("/bin/sh", "/usr/bin/sh") and len(head) > 1 and head[1].startswith("'''exec'"):
        try:
            rest = shlex.split(head[1][len("'''exec'"):])
        except ValueError:
            return None
        return rest[0] if rest else None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        return words[-1]
    return words[0]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish"})


def path_pip(executable: Optional[str], runner: Any) -> Optional[PathPip]:
    """The `pip` on PATH (None: there is none) and whether the interpreter it runs is ``executable``: the same
    directory (a venv's python and its base resolve to the same file, yet are different environments) and the
    same file once links are resolved."""
    found = runner.which("pip") if runner is not None else None
    if not found:
        return None
    try:
        interp = shebang_interpreter(found)
    except OSError as e:
        return PathPip(path=found, error=f"{type(e).__name__}: {e}")
    if interp is None:
        return PathPip(path=found, error="its first line names no interpreter (not a pip script?)")
    if os.path.basename(interp) in SHELLS:
        # a pyenv/asdf shim or a wrapper script: the Python it runs is chosen when it runs (`pyenv which pip`),
        # not written in the file, so which environment it installs into is unknown here, not "another one"
        return PathPip(path=found, error=f"a {os.path.basename(interp)} wrapper (a pyenv/asdf shim?): the "
                       "interpreter it runs is chosen at run time")
    if os.sep not in interp and runner is not None:  # `#!/usr/bin/env python3`: the one PATH gives
        interp = runner.which(interp) or interp
    same = None
    if executable and os.sep in interp:
        same = (os.path.dirname(os.path.abspath(interp)) == os.path.dirname(os.path.abspath(executable))
                and _same_file(interp, executable))
    return PathPip(path=found, interpreter=interp, same_interpreter=same)
