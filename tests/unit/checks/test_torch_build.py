"""torch_build's checks (torch.gpu-arch, torch.cuda-build, torch.python-version) judged on machine
snapshots: a passing, a failing and a skipped case each."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.model.facts import Targets
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m
from tests.unit.checks.judged import found, problems, result


def test_rtx5090_with_cu124_names_sm120_and_a_cu128_plus_build():
    f = problems(m.rtx5090_cu124())["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    assert "sm_120" in f.summary and "2.6.0+cu124" in f.summary
    cmd = f.fix.commands[0]
    assert "--index-url https://download.pytorch.org/whl/cu12" in cmd and "torch==" in cmd
    assert any("not compatible with the current PyTorch" in str(e.value) for e in f.evidence)


def test_arch_check_passes_for_hopper_and_skips_without_gpus():
    assert result(m.healthy_a100(), "torch.gpu-arch").status == CheckStatus.PASSED
    assert result(m.cpu_torch_cuda_vision(), "torch.gpu-arch").status == CheckStatus.SKIPPED


def test_arch_from_matrix_when_the_paste_has_no_arch_list():
    f = m.rtx5090_cu124()
    py = f.pythons[0]
    f = replace(f, pythons=[replace(py, torch=replace(py.torch, arch_list=None, warnings=[]))])
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in problems(f)


def test_cpu_build_on_gpu_box_fix_uses_cuda_index():
    f = problems(m.gpus_with_cpu_torch())["TORCH_CPU_ONLY_BUILD"]
    assert f.severity == Severity.ERROR
    assert "2.4.0+cpu" in f.summary
    assert f.fix.commands == [
        "/opt/venv/bin/python -m pip install --force-reinstall torch==2.4.0 --index-url https://download.pytorch.org/whl/cu121"]
    assert result(m.healthy_a100(), "torch.cuda-build").status == CheckStatus.PASSED
    no_torch = replace(m.healthy_a100(), pythons=[replace(m.healthy_a100().pythons[0], torch=None)])
    assert result(no_torch, "torch.cuda-build").status == CheckStatus.SKIPPED


def test_python_newer_than_any_torch_release():
    base = m.healthy_a100()
    py = replace(base.pythons[0], python_version="3.99.0", torch=None, packages=[])
    x = problems(replace(base, pythons=[py]))["PYTHON_VERSION_UNSUPPORTED"]
    assert "3.99.0" in x.summary


# --------------------------------------------------------------------------- the whole findings, and the skips


def test_missing_arch_whole_finding_and_no_cuda_build_skips():
    res = result(m.rtx5090_cu124(), "torch.gpu-arch")
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "torch.gpu-arch/missing",
                                                            "GPU_ARCH_NOT_IN_TORCH_BUILD", Severity.ERROR)
    assert f.summary.startswith("torch 2.6.0+cu124 has no kernels for GPU 0 (NVIDIA GeForce RTX 5090), compute "
                                "capability 12.0 (sm_120)")
    assert [(e.path, e.value) for e in f.evidence[:2]] == [
        ("driver.gpus[0].compute_capability", "12.0"),
        ("pythons[0].torch.arch_list", ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"])]
    skipped = result(m.gpus_with_cpu_torch(), "torch.gpu-arch")
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no CUDA build of torch to judge")


def test_cpu_build_on_gpus_whole_finding_and_a_box_without_gpus_skips():
    res = result(m.gpus_with_cpu_torch(), "torch.cuda-build")
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "torch.cuda-build/cpu-only",
                                                            "TORCH_CPU_ONLY_BUILD", Severity.ERROR)
    assert [(e.path, e.value) for e in f.evidence] == [
        ("pythons[0].torch.version", "2.4.0+cpu"), ("pythons[0].torch.cuda", None),
        ("driver.gpus", ["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"])]
    skipped = result(m.cpu_torch_cuda_vision(), "torch.cuda-build")
    assert skipped.status == CheckStatus.SKIPPED and skipped.reason.startswith("no NVIDIA GPU seen on this machine")


def test_python_too_new_whole_finding_passes_a_supported_one_and_skips_without_an_interpreter():
    base = m.healthy_a100()
    res = result(replace(base, pythons=[replace(base.pythons[0], python_version="3.99.0", torch=None, packages=[])]),
                 "torch.python-version")
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "torch.python-version/too-new",
                                                            "PYTHON_VERSION_UNSUPPORTED", Severity.WARNING)
    assert f.summary.startswith("Python 3.99.0 is newer than any torch release in this matrix supports")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].python_version", "3.99.0")]
    assert (result(base, "torch.python-version").status, result(base, "torch.python-version").findings) == (
        CheckStatus.PASSED, [])
    skipped = result(replace(base, pythons=[replace(base.pythons[0], python_version=None)]), "torch.python-version")
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no interpreter inspected")


# --------------------------------------------------------------------------- torch.python-version on a Python with no torch
# (issue 17): too old as well as too new, with the newest torch that has a wheel for it, from compat_data/torch.json's
# cited Python ranges


def test_python_39_without_torch_is_too_old_for_the_newest_torch():
    (x,) = found(m.python_without_torch("3.9.18"), "torch.python-version/")
    assert x.code == "torch.python-version/too-old" and x.severity == Severity.WARNING
    assert "3.10 to 3.15" in x.summary and "torch 2.8.0" in x.summary
    assert x.fix.commands == [f"{m.NO_TORCH_PY} -m pip install torch==2.8.0"]
    assert "python3.10 -m venv" in x.fix.summary
    assert x.evidence[0].source  # the torch.json row's citation


def test_python_27_is_served_by_an_old_release_and_311_by_the_newest():
    (x,) = found(m.python_without_torch("2.7.18"), "torch.python-version/")
    assert "torch 1.4" in x.summary  # the last release with 2.7 wheels in the matrix (1.4: 2.7 .. 3.8)
    assert found(m.python_without_torch("3.11.7"), "torch.python-version/") == []


def test_too_new_python_names_the_range():
    (x,) = found(m.python_without_torch("3.16.0"), "torch.python-version/")
    assert x.code == "torch.python-version/too-new" and "3.10 to 3.15" in x.summary


def test_declared_torch_requirement_is_the_asked_for_torch():
    targets = Targets(requirements=["torch>=2.9"])
    (x,) = found(m.python_without_torch("3.9.18", targets), "torch.python-version/")
    assert "torch>=2.9" in x.summary and x.code == "torch.python-version/too-old"
    assert found(m.python_without_torch("3.9.18", Targets(requirements=["torch<2.9"])), "torch.python-version/") == []
