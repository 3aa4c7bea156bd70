"""Environments built the way a user gets there, for the end-to-end tests of issue 17.

- ``overlay_venv``: a fresh venv whose site-packages links every entry of another venv's (a CUDA torch venv:
  several GB that are not copied), except the distributions named: those the test installs itself, with pip,
  as a user would.
- ``stub_wheel``: a real wheel file of an NVIDIA library at another version, holding a stub library file and
  the dist-info pip writes: `pip install --no-deps` of it is what a user's `--no-deps` install of an older
  nvidia-cudnn wheel leaves behind (the metadata pip and envdoctor read, a library file on disk).
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Iterable, List, Tuple


def run(argv: List[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def site_packages(python: str) -> Path:
    out = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    return Path(out)


def overlay_venv(root: Path, base_python: str, leave_out: Iterable[str] = (), leave_out_dirs: Iterable[str] = ()
                 ) -> str:
    """A venv at root (made by base_python's interpreter) whose site-packages symlinks the entries of
    base_python's, except names starting with one of ``leave_out`` and the nvidia/ subfolders in
    ``leave_out_dirs``; nvidia/ is a real folder so pip can install into it without touching the base venv."""
    proc = run([base_python, "-m", "venv", str(root)])
    assert proc.returncode == 0, proc.stderr
    python = str(root / "bin" / "python")
    ours, theirs = site_packages(python), site_packages(base_python)
    skip = tuple(leave_out)
    for entry in sorted(theirs.iterdir()):
        if entry.name in ("nvidia", "__pycache__") or (skip and entry.name.startswith(skip)) or \
                (ours / entry.name).exists():
            continue
        (ours / entry.name).symlink_to(entry)
    if (theirs / "nvidia").is_dir():
        (ours / "nvidia").mkdir(exist_ok=True)
        for sub in sorted((theirs / "nvidia").iterdir()):
            if sub.name not in set(leave_out_dirs):
                (ours / "nvidia" / sub.name).symlink_to(sub)
    return python


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def stub_wheel(dest: Path, name: str, version: str, files: List[Tuple[str, bytes]],
               requires: Iterable[str] = ()) -> Path:
    """A py3-none wheel of distribution ``name`` at ``version`` holding ``files`` (path, content)."""
    dist = f"{name.replace('-', '_')}-{version}"
    info = f"{dist}.dist-info"
    meta = "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                      "Summary: stub for envdoctor's tests"] + [f"Requires-Dist: {r}" for r in requires]) + "\n"
    wheel = "Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
    entries = list(files) + [(f"{info}/METADATA", meta.encode()), (f"{info}/WHEEL", wheel.encode())]
    record = [_record_line(p, d) for p, d in entries] + [f"{info}/RECORD,,"]
    path = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for p, d in entries:
            z.writestr(p, d)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def pip_install_no_deps(python: str, wheel: Path) -> None:
    """`python -m pip install --no-deps wheel`: the user's own step."""
    proc = run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q",
                str(wheel)], env=dict(os.environ, PIP_NO_INPUT="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
