"""Broken environments for issue 38 (static tier), built cheaply from a venv with torch (the cpu_venv fixture or
/work/cpuvenv) without touching it.

``linked_copy`` makes a new venv from the same base Python and fills its site-packages with hard links to the
source venv's files (``cp -al``: seconds, no space): a real venv with the same torch, whose files pip can remove
or replace (pip unlinks a file before writing it, so the source's files are never rewritten). Where hard links
cannot be made (another filesystem), the test skips.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import List, Optional

import pytest


def run(argv: List[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def purelib(python: str) -> Path:
    return Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())


def base_python(python: str) -> str:
    """The base interpreter of a venv's python (sys._base_executable), to make a sibling venv from."""
    out = run([python, "-c", "import sys; print(getattr(sys, '_base_executable', None) or sys.executable)"])
    return out.stdout.strip()


def linked_copy(source_python: str, root: Path, base: Optional[str] = None) -> str:
    """A venv at ``root`` made by ``base`` (default: the source venv's base Python), without pip of its own, whose
    site-packages holds hard links to every file of the source venv's; returns its python."""
    base = base or base_python(source_python)
    proc = run([base, "-m", "venv", "--without-pip", str(root)])
    if proc.returncode != 0:
        pytest.skip(f"cannot make a venv with {base}: {proc.stderr.strip()[-200:]}")
    python = str(root / "bin" / "python")
    src, dest = purelib(source_python), purelib(python)
    proc = run(["cp", "-al", f"{src}/.", f"{dest}/"])
    if proc.returncode != 0:
        pytest.skip(f"cannot hard-link {src} into {dest}: {proc.stderr.strip()[-200:]}")
    return python


def fake_dist_info(site: Path, name: str, version: str, requires: List[str] = (), files: List[str] = ()) -> Path:
    """A metadata directory as pip writes it (METADATA, INSTALLER, RECORD), for a distribution whose files are
    ``files`` (already there, or none)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
                                             + [f"Requires-Dist: {r}" for r in requires]) + "\n")
    (info / "INSTALLER").write_text("pip\n")
    rel = info.name
    (info / "RECORD").write_text("\n".join([f"{f},," for f in files] + [f"{rel}/METADATA,,", f"{rel}/INSTALLER,,",
                                                                         f"{rel}/RECORD,,"]) + "\n")
    return info
