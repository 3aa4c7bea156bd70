"""envdoctor assert: config files, declared targets, requirement checks, the declared fleet judged by the
ordinary checks, JUnit output, and the command on a real torch 2.13.0 CPU venv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envdoctor.compat import bundled_dir, load_compat
from envdoctor.model.config import ConfigError, find_config, load_config
from envdoctor.model.facts import Facts, Package, ProbeStatus, PythonEnv, Targets, TorchInfo
from envdoctor.model.findings import CheckStatus
from envdoctor.model.targets import TargetError, parse_requirement, resolve_gpu, resolve_gpus
from envdoctor.report.junit import render_junit
from envdoctor.services.assertions import declared_driver, judge_declared, static_checks
from tests.conftest import MIXED_VARIANT_CHECKS


@pytest.fixture(scope="module")
def compat():
    return load_compat(bundled_dir())


# --------------------------------------------------------------------------- config


def test_config_found_upward_and_pyproject_without_table_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nrequire = ["torch>=2.4"]\n'
                                             'target-gpus = ["H100", "A100"]\ntarget-driver = "535.104.05"\n')
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.envdoctor]: skipped
    assert find_config(inner) == tmp_path / "pyproject.toml"
    cfg = load_config(start=inner)
    assert cfg.require == ["torch>=2.4"] and cfg.target_gpus == ["H100", "A100"]
    assert cfg.target_driver == "535.104.05"
    # envdoctor.toml wins in its directory, top-level keys allowed
    (inner / "envdoctor.toml").write_text('require = "cuda>=12.4"\nexpect-gpu = true\n')
    cfg = load_config(start=inner)
    assert cfg.require == ["cuda>=12.4"] and cfg.expect_gpu is True


@pytest.mark.parametrize("text, message", [
    ("[tool.envdoctor\n", "invalid TOML"),
    ('[tool.envdoctor]\nrequires = ["torch"]\n', "unknown key 'requires'"),
    ('[tool.envdoctor]\nrequire = [1]\n', "require must be a string or a list of strings"),
    ('[tool.envdoctor]\ntarget-driver = 535\n', "target-driver must be a string"),
])
def test_bad_config_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(start=tmp_path)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_explicit_config_must_exist_and_hold_the_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match="no \\[tool.envdoctor\\]"):
        load_config(tmp_path / "pyproject.toml")


# --------------------------------------------------------------------------- targets


def test_requirements_parse_or_fail_with_the_text() -> None:
    assert str(parse_requirement("torch>=2.4").specifier) == ">=2.4"
    with pytest.raises(TargetError, match="'torch>>>=x'"):
        parse_requirement("torch>>>=x")
    with pytest.raises(TargetError, match="markers"):
        parse_requirement("torch>=2; python_version<'3.9'")


def test_gpu_targets_resolve_by_model_family_or_arch(compat) -> None:
    assert resolve_gpu(compat, "H100").cc == "9.0"  # SXM, PCIe and NVL: one CC
    assert resolve_gpu(compat, "RTX 5090").cc == "12.0"
    assert resolve_gpu(compat, "Tesla K80").cc == "3.7"
    assert resolve_gpu(compat, "sm_90").cc == "9.0" and resolve_gpu(compat, "sm_120").cc == "12.0"
    assert [g.cc for g in resolve_gpus(compat, ["H100,A100", "L4"])] == ["9.0", "8.0", "8.9"]
    with pytest.raises(TargetError, match="not in the matrix"):
        resolve_gpu(compat, "Voodoo 5")
    with pytest.raises(TargetError, match="compute capability 9.9"):
        resolve_gpu(compat, "sm_99")


# --------------------------------------------------------------------------- the checks


def _env(torch_version="2.5.1+cu124", cuda="12.4", arch=None, cudnn=90100, python="3.11.7",
         packages=None) -> PythonEnv:
    arch = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"] if arch is None else arch
    pkgs = [Package("torch", torch_version)] + list(packages or [])
    return PythonEnv(status=ProbeStatus.OK, executable="/venv/bin/python", python_version=python,
                     packages=pkgs, torch=TorchInfo(version=torch_version, cuda=cuda, arch_list=arch,
                                                    cudnn_version=cudnn, cuda_available=False))


def _judge(compat, env, requirements=(), driver=None, gpus=()):
    targets = resolve_gpus(compat, list(gpus))
    facts = Facts(driver=declared_driver(driver, targets), pythons=[env],
                  targets=Targets(requirements=list(requirements), target_driver=driver,
                                  target_gpus=[g.given for g in targets], source="test"))
    return judge_declared(facts, compat)


def _codes(report):
    return sorted((f.code, f.severity) for f in report.findings)


def test_requirements_met_unmet_and_missing(compat) -> None:
    env = _env(packages=[Package("numpy", "1.26.4")])
    ok = _judge(compat, env, ["torch>=2.4", "python>=3.10", "cuda>=12.1", "cudnn>=9", "numpy<2"])
    assert _codes(ok) == []
    passed = {c.id for c in ok.checks if c.status == CheckStatus.PASSED}
    assert {"requirements.torch", "requirements.python", "requirements.cuda", "requirements.cudnn",
            "requirements.packages"} <= passed
    bad = _judge(compat, env, ["torch>=3", "python<3.11", "cuda>=12.8", "cudnn>=9.5", "flash-attn"])
    got = {f.code: f for f in bad.findings}
    assert set(got) == {"requirements.torch/unmet", "requirements.python/unmet", "requirements.cuda/unmet",
                        "requirements.cudnn/unmet", "requirements.packages/unmet"}
    torch_f = got["requirements.torch/unmet"]
    assert torch_f.category == "REQUIREMENT_UNMET" and torch_f.severity == "error"
    assert "'torch>=3'" in torch_f.summary and "2.5.1+cu124" in torch_f.summary
    assert torch_f.evidence[0].path == "targets.requirements[0]"
    # never an unpinned torch: no release in the matrix satisfies torch>=3, so recommend is the way (issue 17)
    assert torch_f.fix.commands == ["envdoctor recommend"]
    assert "not installed" in got["requirements.packages/unmet"].summary
    assert "9.1.0" in got["requirements.cudnn/unmet"].summary  # 90100 read as cuDNN 9.1.0


def test_cpu_build_has_no_cuda_for_a_cuda_requirement(compat) -> None:
    env = _env("2.13.0+cpu", cuda=None, arch=[], cudnn=None)
    report = _judge(compat, env, ["cuda>=12"])
    f = next(f for f in report.findings if f.code == "requirements.cuda/unmet")
    assert "not a CUDA build" in f.summary


def test_declared_fleet_is_judged_by_the_ordinary_checks(compat) -> None:
    # cu124 on a 535 fleet: CUDA 12.x minor-version compatibility (info), not an error
    r = _judge(compat, _env(), driver="535.104.05", gpus=["H100"])
    assert ("driver.cuda-compat/minor-compat", "info") in _codes(r)
    assert not r.has_at_least("error")
    # cu128 on a 470 fleet: a newer CUDA major than the driver runs
    r = _judge(compat, _env("2.7.1+cu128", "12.8", arch=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]),
               driver="470.256.02", gpus=["A100"])
    assert ("driver.cuda-compat/too-old", "error") in _codes(r)
    # no sm_90 kernels for an H100 fleet
    r = _judge(compat, _env(arch=["sm_70", "sm_75", "sm_80", "sm_86"]), driver="550.54.14", gpus=["H100"])
    assert ("torch.gpu-arch/missing", "error") in _codes(r)
    # a CPU build for a GPU fleet
    r = _judge(compat, _env("2.13.0+cpu", cuda=None, arch=[], cudnn=None), gpus=["H100"])
    assert ("torch.cuda-build/cpu-only", "error") in _codes(r)


def test_assert_runs_only_static_checks() -> None:
    ids = [c.id for c in static_checks()]
    assert "torch.gpu-arch" in ids and "requirements.torch" in ids
    assert not any(i.startswith(("gpu.", "pcie.", "host.", "storage.", "interconnect.")) for i in ids)
    assert "driver.present" not in ids


def test_requirement_checks_skip_without_targets(compat) -> None:
    from envdoctor.checks import all_checks, run_checks

    results = run_checks(Facts(pythons=[_env()]), compat, [c for c in all_checks() if c.area == "requirements"])
    assert results and all(r.status == CheckStatus.SKIPPED and "declared" in r.reason for r in results)


def test_junit_one_testcase_per_requirement_and_check(compat) -> None:
    r = _judge(compat, _env(), ["torch>=3", "python>=3.10"], driver="535.104.05", gpus=["H100"])
    root = ET.fromstring(render_junit(r))
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    names = [c.get("name") for c in cases]
    assert names[:2] == ["require torch>=3", "require python>=3.10"]
    assert set(names[2:]) == {c.id for c in r.checks}
    assert int(suite.get("tests")) == len(cases)
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert "require torch>=3" in failed and "requirements.torch" in failed
    assert "require python>=3.10" not in failed
    assert int(suite.get("failures")) == len(failed)
    assert int(suite.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)


# --------------------------------------------------------------------------- the command, on a real venv


def _run(args, cwd, **kw):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "envdoctor", "assert"] + args, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300, **kw)


@pytest.mark.slow
def test_assert_on_the_cpu_venv(cpu_venv, tmp_path: Path) -> None:
    py = ["--python", cpu_venv.python]
    # the conftest venv may hold torchvision 0.28.0 from PyPI (a cu130 build) next to the +cpu torch: that
    # CUDA_VARIANT_MIXED error is real, and the only error allowed besides the requirements judged here
    ok = _run(py + ["--require", "torch>=2.4", "--format", "json"], tmp_path)
    found = json.loads(ok.stdout)["findings"]
    errors = {f["category"] for f in found if f["severity"] == "error" and f.get("caused_by") is None}
    assert errors <= {"CUDA_VARIANT_MIXED"} and ok.returncode == (1 if errors else 0), ok.stdout + ok.stderr
    # torchvision's binary that does not load next to this torch is that variant's consequence, not a second cause
    assert all(f.get("caused_by") == "packages.cuda-variant/mixed" for f in found
               if f["category"] == "THIRD_PARTY_EXTENSION_MISMATCH"), ok.stdout
    ok = _run(py + ["--require", "torch>=2.4"] + [a for c in MIXED_VARIANT_CHECKS for a in ("--ignore", c)],
              tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _run(py + ["--require", "torch>=3"], tmp_path)
    assert bad.returncode == 1 and "'torch>=3'" in bad.stdout and "REQUIREMENT_UNMET" in bad.stdout
    gpu = _run(py + ["--target-gpus", "H100", "--format", "json"], tmp_path)
    assert gpu.returncode == 1
    doc = json.loads(gpu.stdout)
    assert "TORCH_CPU_ONLY_BUILD" in {f["category"] for f in doc["findings"]}
    assert doc["facts"]["driver"]["source"] == "declared" and doc["facts"]["targets"]["target_gpus"] == ["H100"]
    spec = _run(py + ["--require", "torch>>>=x"], tmp_path)
    assert spec.returncode == 2 and spec.stdout == "" and len(spec.stderr.strip().splitlines()) == 1
    assert "torch>>>=x" in spec.stderr
    # the same requirements from a project file, found upward from a subdirectory
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nrequire = ["torch>=3"]\n')
    sub = tmp_path / "src"
    sub.mkdir()
    again = _run(py, sub)
    assert again.returncode == 1 and "'torch>=3'" in again.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nrequire = ["torch>=2.4"]\n'
                                             'ignore = ["packages.cuda-variant", "packages.extension-build"]\n')
    assert _run(py, sub).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\ntarget-gpus = ["H100"]\n')
    assert _run(py, sub).returncode == 1
    junit = _run(py + ["--format", "junit"], sub)
    assert junit.returncode == 1
    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert any(c.get("name") == "torch.cuda-build" and c.find("failure") is not None
               for c in suite.findall("testcase"))
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor\n")
    broken = _run(py, sub)
    assert broken.returncode == 2 and len(broken.stderr.strip().splitlines()) == 1
    assert "invalid TOML" in broken.stderr
    missing = _run(py + ["--config", str(tmp_path / "nope.toml")], tmp_path)
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_family_named_fleet_gets_the_forward_compat_note(compat) -> None:
    env = _env("2.14.1+cu130", "13.0", arch=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], cudnn=92400)
    r = _judge(compat, env, driver="535.104.05", gpus=["H100", "A100"])
    f = next(f for f in r.findings if f.code == "driver.cuda-compat/too-old")
    assert "cuda-compat" in f.fix.summary and "cu126" in f.fix.summary
    r = _judge(compat, env, driver="535.104.05", gpus=["RTX 4090"])
    f = next(f for f in r.findings if f.code == "driver.cuda-compat/too-old")
    assert "cuda-compat" not in f.fix.summary  # GeForce: no forward compatibility


@pytest.mark.slow
def test_assert_cu130_build_for_a_535_fleet(cuda_venv, tmp_path: Path) -> None:
    out = _run(["--python", cuda_venv.python, "--target-driver", "535.104.05", "--target-gpus", "H100,A100",
                "--format", "json", "--no-config"], tmp_path)
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    codes = {f["code"] for f in doc["findings"]}
    assert "driver.cuda-compat/too-old" in codes
    assert doc["facts"]["pythons"][0]["torch"]["cuda"] == "13.0"


# --------------------------------------------------------------------------- empty and impossible targets


@pytest.mark.parametrize("driver, gpus, message", [
    (None, [""], "name no GPU"),
    (None, [" , "], "name no GPU"),
    ("", [], "target driver is empty"),
    ("999.1", [], "not a released NVIDIA driver"),
    ("580", [], "is a driver branch (R580), not a driver version"),
    ("R535", [], "is a driver branch (R535)"),
])
def test_empty_or_impossible_targets_are_refused(compat, driver, gpus, message) -> None:
    from envdoctor.services.assertions import validate_targets

    with pytest.raises(TargetError) as e:
        validate_targets(compat, [], driver, gpus)
    assert message in str(e.value) and "\n" not in str(e.value)
    # a real driver on a branch newer than the matrix is still accepted (the matrix may be older than the fleet)
    assert validate_targets(compat, [], "620.10.01", ["H100"])[1] == "620.10.01"


@pytest.mark.parametrize("args", [["--target-gpus", ""], ["--target-driver", "R999.1"],
                                  ["--target-driver", "999.1"], ["--target-driver", "580"],
                                  ["--target-driver", ""]])
def test_assert_cli_empty_or_impossible_targets_exit_2(tmp_path: Path, args) -> None:
    out = subprocess.run([sys.executable, "-m", "envdoctor", "assert", "--no-config", *args],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2, (args, out.stdout[-800:], out.stderr)
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1


def test_matrix_and_recommend_refuse_a_bare_branch() -> None:
    for argv in (["matrix", "max-cuda", "580"], ["recommend", "--driver", "580", "--gpu", "H100", "--python", "3.11"]):
        out = subprocess.run([sys.executable, "-m", "envdoctor", *argv], capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and "driver branch (R580)" in out.stderr, (argv, out.stdout, out.stderr)
