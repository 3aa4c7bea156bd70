"""The interpreter's files (issue 30): pyvenv.cfg and dangling links, the PATH pip's shebang, and the payload's
report of every copy of a distribution (probes/interpreter_files.py, _payload/dists.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from envdoctor._payload import dists as D
from envdoctor.probes.interpreter_files import path_pip, shebang_interpreter, venv_config
from tests.fakes.runner import FakeRunner


def layout(root: Path, cfg: str, links: dict) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(cfg)
    for name, target in links.items():
        os.symlink(target, root / "bin" / name)
    return root / "bin" / "python"


def test_a_venv_with_a_dangling_link_is_read_from_its_files(tmp_path: Path) -> None:
    exe = layout(tmp_path / "v", "home = /gone/bin\nInclude-System-Site-Packages = True\nversion_info = 3.12.3.final.0\n",
                 {"python": "python3.12", "python3.12": "/gone/bin/python3.12", "pythonx": "/bin/sh"})
    (tmp_path / "v" / "bin" / "pip").write_text("#!/v/bin/python\n")
    v = venv_config(str(exe), FakeRunner(which={"python3.12": "/usr/bin/python3.12"}))
    assert (v.root, v.home, v.home_exists, v.version) == (str(tmp_path / "v"), "/gone/bin", False, "3.12.3.final.0")
    assert v.include_system_site_packages is True and v.cfg["include-system-site-packages"] == "True"
    assert [(Path(link.path).name, link.target, link.resolves) for link in v.links] == [
        ("python", "python3.12", False), ("python3.12", "/gone/bin/python3.12", False)]
    assert v.same_minor_python == "/usr/bin/python3.12"
    assert venv_config("/usr/bin/env") is None  # not in a venv
    # the python3.12 on PATH is an activated venv's: the repair names that venv's base instead
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    base = tmp_path / "base" / "bin"
    base.mkdir(parents=True)
    (base / "python3.12").write_text("#!/bin/sh\n")
    (other / "pyvenv.cfg").write_text(f"home = {base}\n")
    os.symlink(base / "python3.12", other / "bin" / "python3.12")
    via_venv = venv_config(str(exe), FakeRunner(which={"python3.12": str(other / "bin" / "python3.12")}))
    assert via_venv.same_minor_python == str(base / "python3.12")


def test_shebang_forms(tmp_path: Path) -> None:
    plain, env, long = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    plain.write_text("#!/srv/venv/bin/python3\nimport sys\n")
    env.write_text("#!/usr/bin/env python3\n")
    # distlib's launcher for an interpreter path longer than a shebang allows (pip's own console scripts)
    long.write_text("#!/bin/sh\n'''exec' \"/very/long path/bin/python\" \"$0\" \"$@\"\n' '''\n")
    assert shebang_interpreter(str(plain)) == "/srv/venv/bin/python3"
    assert shebang_interpreter(str(env)) == "python3"
    assert shebang_interpreter(str(long)) == "/very/long path/bin/python"


def test_path_pip_is_compared_with_the_judged_interpreter(tmp_path: Path) -> None:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    os.symlink(sys.executable, venv / "python")
    os.symlink("python", venv / "python3")
    own = venv / "pip"
    own.write_text(f"#!{venv / 'python3'}\n")
    other = tmp_path / "pip"
    other.write_text(f"#!{sys.executable}\n")
    mine = path_pip(str(venv / "python"), FakeRunner(which={"pip": str(own)}))
    assert (mine.interpreter, mine.same_interpreter) == (str(venv / "python3"), True)
    # the base's pip resolves to the same file as the venv's python, yet is another environment
    theirs = path_pip(str(venv / "python"), FakeRunner(which={"pip": str(other)}))
    assert (theirs.interpreter, theirs.same_interpreter) == (sys.executable, False)
    assert path_pip(str(venv / "python"), FakeRunner(which={})) is None
    assert path_pip(str(venv / "python"), FakeRunner(which={"pip": str(tmp_path / "gone")})).error
    # a pyenv shim is a bash script that picks the Python when it runs: unknown, never "runs /usr/bin/bash"
    shim = tmp_path / "shims" / "pip"
    shim.parent.mkdir()
    shim.write_text('#!/usr/bin/env bash\nset -e\nexec "$(pyenv root)/libexec/pyenv" exec "$program" "$@"\n')
    got = path_pip(str(venv / "python"), FakeRunner(which={"pip": str(shim), "bash": "/usr/bin/bash"}))
    assert got.interpreter is None and got.same_interpreter is None and "bash wrapper" in got.error


def _dist_info(root: Path, name: str, version: str, requires=()) -> None:
    d = root / f"{name}-{version}.dist-info"
    d.mkdir(parents=True)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    (d / "METADATA").write_text(meta)
    (d / "RECORD").write_text(f"{name}/__init__.py,,\n")


def test_every_copy_of_a_distribution_is_reported(tmp_path: Path, monkeypatch) -> None:
    venv, base = tmp_path / "venv", tmp_path / "base"
    _dist_info(venv, "torch", "2.5.1")
    _dist_info(base, "torch", "2.4.1")
    _dist_info(base, "torchvision", "0.19.1", ["torch==2.4.1"])
    _dist_info(venv, "six", "1.16.0")
    _dist_info(base, "six", "1.15.0")
    monkeypatch.setattr(sys, "path", [str(venv), str(base)])
    monkeypatch.setattr(D, "_DISTRIBUTIONS", None)
    pkgs = {p["name"]: p for p in D.collect_packages([])}
    assert pkgs["torch"]["location"] == str(venv)
    assert pkgs["torch"]["shadowed"] == [{"location": str(base), "version": "2.4.1", "requires": None}]
    assert "shadowed" not in pkgs["torchvision"]
    assert pkgs["six"] == {"name": "six", "version": "1.16.0",
                           "shadowed": [{"location": str(base), "version": "1.15.0", "requires": None}]}


def test_two_metadata_directories_in_one_folder_stray_files_and_dependents_requirements(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    # issue 38: both dist-infos named, compiled files no RECORD claims listed, a torch dependent's Requires-Dist kept
    site = tmp_path / "site"
    _dist_info(site, "torch", "2.13.0")
    (site / "torch-2.13.0.dist-info" / "RECORD").write_text("torch/__init__.py,,\ntorch/lib/libc10.so,,\n")
    _dist_info(site, "torch", "2.12.0")
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "torch" / "lib" / "libc10.so").write_bytes(b"\0")
    (site / "torch" / "lib" / "libtorch_cuda.so").write_bytes(b"\0")
    _dist_info(site, "accelerate", "1.0.0", ["torch>=2.0.0", "numpy<3", "pytest; extra == \"dev\""])
    _dist_info(site, "pillow", "11.0.0", ["olefile; extra == \"fpx\""])
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(D, "_DISTRIBUTIONS", None)
    pkgs = {p["name"]: p for p in D.collect_packages([])}
    torch = pkgs["torch"]
    copies = {torch["dist_info"]} | {c["dist_info"] for c in torch["shadowed"]}
    assert copies == {"torch-2.13.0.dist-info", "torch-2.12.0.dist-info"}
    assert torch["unrecorded_files"] == ["torch/lib/libtorch_cuda.so"]
    assert pkgs["accelerate"]["requires"] == ["torch>=2.0.0", "numpy<3", "pytest; extra == \"dev\""]
    assert pkgs["pillow"] == {"name": "pillow", "version": "11.0.0"}  # not a torch dependent: name and version


def test_site_minors_and_a_base_of_the_venvs_minor_when_the_link_starts_another(tmp_path: Path) -> None:
    from envdoctor.probes.interpreter_files import venv_config

    root = tmp_path / "v"
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    (root / "bin" / "python").symlink_to(sys.executable)

    class Which:
        def which(self, name):
            return "/opt/py311/bin/python3.11" if name == "python3.11" else None

    cfg = venv_config(str(root / "bin" / "python"), Which(), running="3.12.1")
    assert cfg.site_minors == ["3.11"]
    assert cfg.same_minor_python == "/opt/py311/bin/python3.11"
    assert venv_config(str(root / "bin" / "python"), Which(), running="3.11.2").same_minor_python is None


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="owners and modes are POSIX's; root owns all")
def test_a_base_on_path_another_user_can_change_is_never_named(tmp_path: Path) -> None:
    # issue 40: the venv-repair fix runs the python3.X PATH gives; one in a directory every user can write to
    # (not sticky) is a file another user could have planted: it is recorded as untrusted, never as the base
    from envdoctor.probes.interpreter_files import venv_config

    root = tmp_path / "v"
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    (root / "bin" / "python").symlink_to(sys.executable)
    shared = tmp_path / "shared"
    shared.mkdir()
    planted = shared / "python3.11"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    shared.chmod(0o777)
    try:
        cfg = venv_config(str(root / "bin" / "python"), FakeRunner(which={"python3.11": str(planted)}),
                          running="3.12.1")
    finally:
        shared.chmod(0o755)
    assert cfg.same_minor_python is None
    assert cfg.same_minor_untrusted == f"{planted}: {shared} is writable by every user"
