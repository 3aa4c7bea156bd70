"""envdoctor imported from a zip (envdoctor.pyz): the bundled matrix is read inside it, the payload copied out.

A subprocess imports envdoctor from a zip of this tree's package (compat_data inside it, as scripts/build_pyz.py
lays it out), ahead of the installed one on sys.path; its dependencies come from the test interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.paths import REPO

PROBE = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from envdoctor.compat import bundled_dir, load_compat
from envdoctor.probes.payload_launch import payload_path
compat = load_compat()
folder = payload_path()
print(json.dumps({"module": __import__("envdoctor").__file__, "bundled": str(bundled_dir()),
                  "stems": compat.stems(), "as_of": compat.as_of, "payload": str(folder),
                  "payload_files": sorted(os.listdir(folder)), "same": str(payload_path()) == str(folder)}))
"""


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for f in sorted((REPO / "envdoctor").rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                zf.write(f, str(f.relative_to(REPO)))
        for f in sorted((REPO / "compat_data").glob("*.json")):
            zf.write(f, f"envdoctor/compat_data/{f.name}")


def test_matrix_read_in_the_zip_and_payload_copied_out_then_removed(tmp_path: Path) -> None:
    archive = tmp_path / "envdoctor.zip"
    _zip(archive)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = subprocess.run([sys.executable, "-c", PROBE, str(archive)], capture_output=True, text=True, timeout=120,
                       env={"TMPDIR": str(tmp), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["module"].startswith(str(archive))
    assert got["bundled"] == f"{archive}/envdoctor/compat_data"
    assert sorted(got["stems"]) == sorted(p.stem for p in (REPO / "compat_data").glob("*.json"))
    assert got["as_of"] == max(json.loads(p.read_text())["as_of"] for p in (REPO / "compat_data").glob("*.json"))
    assert got["payload"].startswith(str(tmp)) and got["same"]
    assert "__main__.py" in got["payload_files"] and "tasks.py" in got["payload_files"]
    assert list(tmp.iterdir()) == []  # the copy went at exit


def test_bundled_dir_of_an_installed_package_is_a_plain_folder() -> None:
    from envdoctor.compat import bundled_dir

    assert isinstance(bundled_dir(), Path) and bundled_dir().is_dir()
