"""torch.origin: which torch is imported and why (issue 17), on the payload's reader and on snapshots."""

from __future__ import annotations

import site
import sys
from dataclasses import replace
from pathlib import Path

from envdoctor._payload import torch_files
from envdoctor.model.facts import Facts, ModuleCopy, ModuleOrigin, Package
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

SNAPSHOT = FIXTURES / "snapshots" / "dev-container-no-driver.json"
PY = "/work/venvs/cuda/bin/python"
OWN = "/work/venvs/cuda/lib/python3.11/site-packages"
CPU = "/work/venvs/cpu/lib/python3.11/site-packages"


def fake_torch(root: Path, version: str) -> Path:
    pkg = root / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "version.py").write_text(f"__version__ = '{version}'\ncuda = None\n")
    return pkg


def origin(monkeypatch, tmp_path, entries, own, user=None, pythonpath=""):
    monkeypatch.setattr(sys, "path", [str(e) for e in entries])
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(own)])
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user or tmp_path / "no-user-site"))
    monkeypatch.setattr(site, "ENABLE_USER_SITE", user is not None)
    monkeypatch.setenv("PYTHONPATH", pythonpath)
    first = next(Path(e) / "torch" for e in entries if (Path(e) / "torch" / "__init__.py").is_file())
    return torch_files.module_origin("torch", str(first))


def test_payload_names_pythonpath_and_the_hidden_copy(monkeypatch, tmp_path):
    own, other = tmp_path / "venv-site", tmp_path / "other-venv-site"
    fake_torch(own, "2.14.1+cu130")
    fake_torch(other, "2.13.0+cpu")
    o = origin(monkeypatch, tmp_path, [other, own], own, pythonpath=str(other))
    assert (o["via"], o["entry"], o["entry_index"]) == ("PYTHONPATH", str(other), 0)
    assert [(c["via"], c["version"]) for c in o["copies"]] == [("PYTHONPATH", "2.13.0+cpu"),
                                                               ("site-packages", "2.14.1+cu130")]


def test_payload_names_the_pth_file(monkeypatch, tmp_path):
    own, extra = tmp_path / "venv-site", tmp_path / "checkout"
    own.mkdir()
    fake_torch(extra, "2.15.0a0+git1234")
    (own / "zz-dev.pth").write_text(f"# dev checkout\nimport os\n{extra}\n")
    o = origin(monkeypatch, tmp_path, [own, extra], own)
    assert o["via"] == "pth" and o["pth_file"] == str(own / "zz-dev.pth") and o["pth_dirs"] == 1


def test_payload_names_the_user_site(monkeypatch, tmp_path):
    own, user = tmp_path / "site", tmp_path / "home/.local/lib/python3.11/site-packages"
    fake_torch(own, "2.14.1+cu130")
    fake_torch(user, "2.4.0+cu121")
    o = origin(monkeypatch, tmp_path, [user, own], own, user=user)
    assert o["via"] == "user-site" and o["copies"][1]["via"] == "site-packages"


def test_payload_own_site_packages(monkeypatch, tmp_path):
    own = tmp_path / "site"
    fake_torch(own, "2.14.1+cu130")
    o = origin(monkeypatch, tmp_path, [own], own)
    assert o["via"] == "site-packages" and len(o["copies"]) == 1


# --------------------------------------------------------------------------- the check, on the real snapshot


def snapshot(via: str, entry: str, own_version=None, pythonpath=None, **kw) -> Facts:
    f = Facts.from_json(SNAPSHOT.read_text(encoding="utf-8"))
    py = f.pythons[0]
    copies = [ModuleCopy(entry, 0, via, "2.13.0+cpu", kw.get("pth_file"), kw.get("pth_dirs"))]
    if own_version:
        copies.append(ModuleCopy(OWN, 4, "site-packages", own_version))
    o = ModuleOrigin("torch", entry + "/torch", entry, 0, via, kw.get("pth_file"), kw.get("pth_dirs"), [OWN],
                     None, [entry] if pythonpath else [], copies)
    torch = replace(py.torch, version="2.13.0+cpu", cuda=None)
    env = dict(py.env, PYTHONPATH=pythonpath)
    return replace(f, pythons=[replace(py, torch=torch, torch_origin=o, env=env, is_venv=True)])


def result(f: Facts):
    report = judge(f)
    (res,) = [c for c in report.checks if c.id == "torch.origin"]
    return res, report


def test_the_real_snapshot_without_origin_facts_is_skipped():
    res, _ = result(Facts.from_json(SNAPSHOT.read_text(encoding="utf-8")))
    assert res.status == CheckStatus.SKIPPED and "older envdoctor" in res.reason


def test_stale_pythonpath_hiding_the_venvs_torch_is_the_root_cause():
    f = snapshot("PYTHONPATH", CPU, "2.14.1+cu130", pythonpath=CPU)
    py = f.pythons[0]
    vision = Package("torchvision", "0.29.1", variant="cu130", variant_evidence="torchvision/version.py")
    f = replace(f, pythons=[replace(py, packages=py.packages + [vision])])
    res, report = result(f)
    (x,) = res.findings
    assert x.code == "torch.origin/PYTHONPATH" and x.severity == Severity.ERROR
    assert x.category == "PYTHON_PACKAGE_SHADOWED"
    assert "2.13.0+cpu" in x.summary and CPU in x.summary and "2.14.1+cu130" in x.summary
    assert x.fix.commands == ["unset PYTHONPATH"]
    # the facts about the other torch are not passed off as the venv's: what follows from it is under it, and
    # no fix reinstalls into the venv while PYTHONPATH wins
    following = [f for f in report.findings if f.category in ("CUDA_VARIANT_MIXED", "COMPANION_VERSION_MISMATCH")]
    assert len(following) == 2
    for f in following:
        assert f.caused_by == x.code and f.fix.commands == ["unset PYTHONPATH"], f
    assert x in report.problems


def test_pythonpath_with_other_entries_keeps_them():
    res, _ = result(snapshot("PYTHONPATH", CPU, "2.14.1+cu130", pythonpath=f"/opt/lib:{CPU}"))
    assert res.findings[0].fix.commands == ["export PYTHONPATH=/opt/lib"]


def test_venv_without_its_own_torch_gets_a_pinned_install_first():
    res, _ = result(snapshot("PYTHONPATH", CPU, None, pythonpath=CPU))
    (x,) = res.findings
    assert x.severity == Severity.WARNING and "has no torch" in x.summary
    install, drop = x.fix.commands
    assert install == (f"env -u PYTHONPATH {PY} -m pip install torch==2.13.0 --index-url "
                       "https://download.pytorch.org/whl/cpu")
    assert drop == "unset PYTHONPATH"


def test_user_site_and_pth_fixes():
    res, _ = result(snapshot("user-site", "/root/.local/lib/python3.11/site-packages", "2.14.1+cu130"))
    assert res.findings[0].fix.commands == ["export PYTHONNOUSERSITE=1"]
    res, _ = result(snapshot("pth", "/src/torch-checkout", "2.14.1+cu130", pth_file=f"{OWN}/dev.pth", pth_dirs=1))
    assert res.findings[0].fix.commands == [f"rm {OWN}/dev.pth"] and "dev.pth" in res.findings[0].summary


def test_an_editable_checkout_on_a_pth_without_an_own_copy_is_a_note():
    res, _ = result(snapshot("pth", "/src/pytorch", None, pth_file=f"{OWN}/__editable__.torch.pth", pth_dirs=1))
    (x,) = res.findings
    assert (x.severity, x.category, x.about) == (Severity.INFO, "NOTE", "PYTHON_PACKAGE_SHADOWED")


def test_torch_from_own_site_packages_passes():
    res, _ = result(snapshot("site-packages", OWN, None))
    assert res.status == CheckStatus.PASSED
