"""The interpreter itself (issue 30), on venvs built the way users get there: a venv whose base Python was removed,
a pip-less venv, a --system-site-packages venv mixing its torch with the base's companions, and an executable .pth
line that puts another site-packages first. Each is probed for real (the payload runs in it), judged, its printed
fix is run, and the same check is green afterwards with the (fake) torch importable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv
from envdoctor.probes import python_env as pe
from envdoctor.probes.runner import Runner
from envdoctor.services.collect import judge

# every test here builds a venv (python -m venv), and three run their fix's ensurepip and pip: the slow tier
# (tests/conftest.py refuses a venv build in the fast tier)
pytestmark = pytest.mark.slow

MM = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _runner(first: Optional[Path] = None) -> Runner:
    # PATH: this interpreter's directory (a python3.X to rebuild a venv with), after ``first`` (an activated venv)
    dirs = ([str(first)] if first else []) + [os.path.dirname(sys.executable), "/usr/bin", "/bin"]
    env = dict(os.environ, PATH=os.pathsep.join(dirs))
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return Runner(env=env)


def site_of(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                         text=True, timeout=60, check=True)
    return Path(out.stdout.strip())


def fake_dist(site: Path, name: str, version: str, requires: List[str] = (), init: str = "") -> None:
    """A package directory and its *.dist-info (METADATA, RECORD, INSTALLER), as pip leaves them."""
    pkg = site / name
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(init or f"__version__ = {version!r}\n")
    if name in ("torch", "torchvision", "torchaudio"):
        (pkg / "version.py").write_text(f"__version__ = {version!r}\ncuda = None\nhip = None\ngit_version = 'fake'\n")
    info = site / f"{name}-{version.split('+')[0]}.dist-info"
    info.mkdir()
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"] + [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n\n")
    (info / "INSTALLER").write_text("pip\n")
    record = [f"{name}/__init__.py,,", f"{info.name}/METADATA,,", f"{info.name}/INSTALLER,,", f"{info.name}/RECORD,,"]
    if (pkg / "version.py").exists():
        record.append(f"{name}/version.py,,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def private_base(tmp: Path) -> Path:
    """A Python installation of our own (the real binary copied, the standard library linked in, an empty
    site-packages), so that a test can install into the base, make venvs from it and delete it."""
    base = tmp / "base"
    real = Path(sys.base_prefix)
    exe_name = f"python{MM}"
    real_exe = real / "bin" / exe_name
    if os.name == "nt" or not real_exe.is_file():
        pytest.skip(f"no {real_exe} to copy a base interpreter from")
    (base / "bin").mkdir(parents=True)
    shutil.copy2(real_exe, base / "bin" / exe_name)
    stdlib = Path(sysconfig.get_paths(vars={"base": str(real), "installed_base": str(real)})["stdlib"])
    lib = base / "lib" / stdlib.name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages"):
            (lib / entry.name).symlink_to(entry)
    (lib / "site-packages").mkdir()
    probe = subprocess.run([str(base / "bin" / exe_name), "-c", "import sys; print(sys.prefix)"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 or Path(probe.stdout.strip()) != base:
        pytest.skip(f"a copied interpreter does not take {base} as its prefix here: {probe.stdout}{probe.stderr}")
    return base / "bin" / exe_name


def make_venv(python: Path, root: Path, *flags: str) -> Path:
    subprocess.run([str(python), "-m", "venv", *flags, str(root)], check=True, capture_output=True, timeout=300)
    return root / "bin" / "python"


def probe(python: Path, activated: bool = False) -> PythonEnv:
    runner = _runner(python.parent if activated else None)
    return pe.who_is_judged(pe.probe_python(str(python), runner, timeout_s=60.0), [], runner.environment(),
                            runner, cwd="/nonexistent")


def finding(report, code: str):
    got = [f for f in report.findings if f.code == code]
    assert len(got) == 1, [f.code for f in report.findings]
    return got[0]


def status(report, check_id: str) -> str:
    return next(c for c in report.checks if c.id == check_id).status


def run_fix(commands: List[str]) -> None:
    for cmd in commands:
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300,
                              env=_runner().environment())
        assert proc.returncode == 0, (cmd, proc.stdout, proc.stderr)


# --------------------------------------------------------------------------- a venv whose base Python is gone


def dangling_venv(tmp: Path) -> Path:
    base = private_base(tmp)
    python = make_venv(base, tmp / "venv", "--without-pip")
    fake_dist(site_of(python), "torch", "2.5.1+cpu")
    shutil.rmtree(base.parent.parent)  # the base Python removed: bin/python now leads nowhere
    assert python.is_symlink() and not python.exists()
    return python


def test_a_venv_whose_base_was_removed_is_judged_and_its_fix_repairs_it(tmp_path: Path, compat) -> None:
    python = dangling_venv(tmp_path)
    env = probe(python)
    assert env.status == ProbeStatus.ABSENT and env.failure == "not_found"
    assert "no such file" not in (env.reason or "").lower() and "dangling" in env.reason
    v = env.venv
    assert v is not None and v.root == str(tmp_path / "venv") and v.version and v.version.startswith(MM)
    assert v.home == str(tmp_path / "base" / "bin") and v.home_exists is False
    assert v.include_system_site_packages is False and v.cfg["version"] == v.version
    assert {Path(link.path).name for link in v.links if link.resolves is False} >= {"python", f"python{MM}"}
    on_path = shutil.which(f"python{MM}", path=_runner().environment()["PATH"])
    if sys.prefix != sys.base_prefix:  # this test runs in a venv: its base is named, not a second venv
        home = next(ln.split("=", 1)[1].strip() for ln in (Path(sys.prefix) / "pyvenv.cfg").read_text().splitlines()
                    if ln.split("=", 1)[0].strip() == "home")
        on_path = os.path.join(home, f"python{MM}") if os.path.isfile(os.path.join(home, f"python{MM}")) else on_path
    assert v.same_minor_python == on_path
    report = judge(Facts(pythons=[env]), compat)
    f = finding(report, "torch.interpreter/venv-base-missing")
    assert (f.category, f.severity) == ("TARGET_PYTHON_UNUSABLE", "error")
    assert f"is a link to {tmp_path / 'base' / 'bin'}" in f.summary and "no longer exists" in f.summary
    ev = {e.path: e.value for e in f.evidence}
    assert ev["pythons[0].venv.home"] == str(tmp_path / "base" / "bin")
    assert ev["pythons[0].venv.version"] == v.version
    rm, upgrade = f.fix.commands
    assert rm.startswith("rm -f -- ") and str(python) in rm
    assert upgrade == f"{v.same_minor_python} -m venv --upgrade {tmp_path / 'venv'}"
    assert not any(g.category == "TORCH_NOT_INSTALLED" for g in report.findings)  # never another Python judged
    run_fix(f.fix.commands)
    fixed = probe(python)
    assert fixed.status == ProbeStatus.OK and fixed.torch is not None and fixed.torch.imported is True
    assert fixed.torch.version == "2.5.1+cpu"
    after = judge(Facts(pythons=[fixed]), compat)
    assert status(after, "torch.interpreter") == "passed"
    assert not any(g.category == "TARGET_PYTHON_UNUSABLE" for g in after.findings)


def test_the_cli_judges_a_dangling_venv_named_or_active(tmp_path: Path) -> None:
    python = dangling_venv(tmp_path)
    env = _runner().environment()
    for how, argv, extra in (("--python", ["--python", str(python)], {}),
                             ("folder", ["--python", str(tmp_path / "venv")], {}),
                             ("$VIRTUAL_ENV", [], {"VIRTUAL_ENV": str(tmp_path / "venv")})):
        proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", *argv, "--format", "json", "--data",
                               str(tmp_path)], capture_output=True, text=True, timeout=120, env=dict(env, **extra))
        assert proc.returncode == 1, (how, proc.stdout[-2000:], proc.stderr)
        report = json.loads(proc.stdout)
        codes = [f["code"] for f in report["findings"]]
        assert "torch.interpreter/venv-base-missing" in codes, (how, codes)
        assert report["facts"]["pythons"][0]["executable"] == str(python), how  # not python3 on PATH
        assert "TORCH_NOT_INSTALLED" not in [f["category"] for f in report["findings"]], how


# --------------------------------------------------------------------------- a venv without pip


def test_a_venv_without_pip_gets_ensurepip_first_and_the_fix_installs_pip(tmp_path: Path, compat) -> None:
    python = make_venv(Path(sys.executable), tmp_path / "nopip", "--without-pip")
    env = probe(python)
    assert env.status == ProbeStatus.OK and env.has_pip is False and env.has_ensurepip is True
    report = judge(Facts(pythons=[env]), compat)
    f = finding(report, "packages.pip/missing")
    assert (f.category, f.severity) == ("PIP_UNAVAILABLE", "warning")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].has_pip", False),
                                                       ("pythons[0].has_ensurepip", True)]
    assert f.fix.commands == [f"{python} -m ensurepip --upgrade --default-pip"]
    # every pip fix elsewhere in the report starts with ensurepip: torch is not installed here
    no_torch = finding(report, "torch.interpreter/no-torch")
    assert no_torch.fix.commands[0].startswith(f"{python} -m ensurepip --upgrade --default-pip && {python} -m pip install torch==")
    run_fix(f.fix.commands)
    fake_dist(site_of(python), "torch", "2.5.1+cpu")
    fixed = probe(python, activated=True)  # the venv activated: its own new pip is the one on PATH
    assert fixed.has_pip is True and fixed.torch is not None and fixed.torch.imported is True
    assert fixed.path_pip.path == str(python.parent / "pip") and fixed.path_pip.same_interpreter is True
    after = judge(Facts(pythons=[fixed]), compat)
    assert status(after, "packages.pip") == "passed"
    assert not any(g.code.startswith("packages.pip/missing") for g in after.findings)


# --------------------------------------------------------------------------- --system-site-packages, two sets


def system_site_venv(tmp: Path, venv_torch: Optional[str], venv_vision: Optional[str]) -> Dict[str, Path]:
    base = private_base(tmp)
    base_site = site_of(base)
    fake_dist(base_site, "torch", "2.4.1+cpu")
    fake_dist(base_site, "torchvision", "0.19.1+cpu", ["torch==2.4.1"])
    python = make_venv(base, tmp / "venv", "--system-site-packages", "--without-pip")
    site = site_of(python)
    if venv_torch:
        fake_dist(site, "torch", venv_torch)
    if venv_vision:
        fake_dist(site, "torchvision", venv_vision, [f"torch=={venv_torch or '2.5.1'}".split("+")[0]])
    return {"python": python, "site": site, "base_site": base_site}


def test_a_system_site_venv_with_its_own_torch_and_the_base_companion_names_both(tmp_path: Path, compat) -> None:
    paths = system_site_venv(tmp_path, "2.5.1+cpu", None)
    env = probe(paths["python"])
    torch_pkg, tv = env.package("torch"), env.package("torchvision")
    assert (torch_pkg.version, torch_pkg.location) == ("2.5.1+cpu", str(paths["site"]))
    assert [(c.version, c.location) for c in torch_pkg.shadowed] == [("2.4.1+cpu", str(paths["base_site"]))]
    assert (tv.version, tv.location, tv.shadowed) == ("0.19.1+cpu", str(paths["base_site"]), None)
    assert env.venv.include_system_site_packages is True
    report = judge(Facts(pythons=[env]), compat)
    f = finding(report, "packages.system-site/torchvision")
    assert (f.category, f.severity) == ("VENV_SYSTEM_SITE_MIXED", "error")
    assert f.summary == (f"{paths['python']} imports torch 2.5.1+cpu from {paths['site']} but torchvision 0.19.1+cpu "
                         f"from {paths['base_site']}, which pairs with torch 2.4.1+cpu there: two sets mixed")
    assert f"torch 2.4.1+cpu at {paths['base_site']} (shadowed)" in f.detail
    # the venv's torch is kept: the pairing torchvision goes into the venv (ensurepip first: no pip there)
    want = compat.companions("2.5.1").torchvision
    assert f.fix.commands == [f"{paths['python']} -m ensurepip --upgrade --default-pip && {paths['python']} -m pip install "
                              f"torch==2.5.1 torchvision=={want} --index-url https://download.pytorch.org/whl/cpu"]
    # one cause, one finding: packages.companions leaves this companion to packages.system-site
    assert not any(g.code.startswith("packages.companions/") for g in report.findings)


def test_a_system_site_venv_whose_own_companion_hides_the_matching_one_uninstalls_it(tmp_path: Path,
                                                                                    compat) -> None:
    # the venv holds a torchvision for another torch; the base's torch imports with the base's matching one hidden
    paths = system_site_venv(tmp_path, None, "0.20.1+cpu")
    env = probe(paths["python"])
    assert env.package("torch").location == str(paths["base_site"])
    assert [c.version for c in env.package("torchvision").shadowed] == ["0.19.1+cpu"]
    report = judge(Facts(pythons=[env]), compat)
    f = finding(report, "packages.system-site/torchvision")
    py = paths["python"]
    assert f.fix.commands == [f"{py} -m ensurepip --upgrade --default-pip && {py} -m pip uninstall -y torchvision"]
    assert "torchvision 0.19.1+cpu at" in f.fix.summary
    run_fix(f.fix.commands)  # offline: ensurepip, then pip uninstalls the venv's copy only
    fixed = probe(py)
    assert fixed.package("torchvision").version == "0.19.1+cpu" and fixed.torch.imported is True
    after = judge(Facts(pythons=[fixed]), compat)
    assert status(after, "packages.system-site") == "passed"
    assert not any(g.category in ("VENV_SYSTEM_SITE_MIXED", "COMPANION_VERSION_MISMATCH") for g in after.findings)
    assert (paths["base_site"] / "torchvision" / "__init__.py").is_file()  # the base was left alone


# --------------------------------------------------------------------------- an executable .pth line


def pth_venv(tmp: Path) -> Dict[str, Path]:
    python = make_venv(Path(sys.executable), tmp / "venv", "--without-pip")
    site = site_of(python)
    fake_dist(site, "torch", "2.5.1+cpu")
    other = tmp / "other" / "site-packages"
    other.mkdir(parents=True)
    fake_dist(other, "torch", "2.0.0+cpu")
    # harmless ones beside it: a hook that changes no sys.path entry, like distutils-precedence.pth and
    # _virtualenv.pth, and a plain directory line (appended after the site-packages)
    (site / "distutils-precedence.pth").write_text(
        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'\n")
    (site / "_virtualenv.pth").write_text("import os\n")
    (tmp / "extra").mkdir()
    (site / "extra.pth").write_text(str(tmp / "extra") + "\n")
    return {"python": python, "site": site, "other": other}


@pytest.mark.parametrize("alone", [True, False], ids=["file-is-the-line", "one-line-of-several"])
def test_an_executable_pth_line_that_puts_another_site_packages_first_is_removed(tmp_path: Path, compat,
                                                                                alone: bool) -> None:
    paths = pth_venv(tmp_path)
    pth = paths["site"] / "zz-other.pth"
    line = f"import sys; sys.path.insert(0, {str(paths['other'])!r})"
    pth.write_text(line + "\n" if alone else f"# keep\n{tmp_path / 'extra'}\n{line}\n")
    env = probe(paths["python"])
    assert env.torch.version == "2.0.0+cpu"  # the other torch is imported
    rec = next(x for x in env.pth_exec if x.file == str(pth))
    assert (rec.line_no, rec.line, rec.file_lines) == ((1, line, 1) if alone else (3, line, 2))
    (added,) = rec.added
    assert (added.path, added.index, added.before_own_site, added.holds_torch) == (str(paths["other"]), 0, True, True)
    report = judge(Facts(pythons=[env]), compat)
    f = finding(report, "torch.pth-exec/reorders-sys-path")
    assert (f.category, f.severity) == ("PTH_EXEC_SYS_PATH", "error")
    assert f.summary == (f"{pth} line {rec.line_no} runs code at every start of {paths['python']} that puts "
                         f"{paths['other']} (sys.path[0], holds torch) before its own site-packages")
    assert f.evidence[0].source == f"{pth}:{rec.line_no}"
    assert f.fix.commands == ([f"rm -- {pth}"] if alone else [f"sed -i 3d -- {pth}"])
    origin = next(g for g in report.findings if g.category == "PYTHON_PACKAGE_SHADOWED")
    assert origin.caused_by == f.code  # the torch from elsewhere follows from the line
    assert origin.fix.commands == f.fix.commands  # and its fix is the cause's
    # the standard hooks are judged by what they do: nothing of theirs is a finding
    assert len([g for g in report.findings if g.category == "PTH_EXEC_SYS_PATH"]) == 1
    run_fix(f.fix.commands)
    if not alone:
        assert pth.read_text() == f"# keep\n{tmp_path / 'extra'}\n"
    fixed = probe(paths["python"])
    assert fixed.torch.version == "2.5.1+cpu" and fixed.torch.imported is True
    after = judge(Facts(pythons=[fixed]), compat)
    assert status(after, "torch.pth-exec") == "passed" and status(after, "torch.origin") == "passed"


def test_the_new_facts_round_trip_through_json(tmp_path: Path) -> None:
    paths = pth_venv(tmp_path)
    (paths["site"] / "zz.pth").write_text(f"import sys; sys.path.insert(0, {str(paths['other'])!r})\n")
    env = probe(paths["python"])
    assert env.pth_exec and env.venv and env.site_packages and env.has_pip is False
    facts = Facts(pythons=[env])
    assert Facts.from_json(facts.to_json()) == facts
