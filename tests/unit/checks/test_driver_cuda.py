"""driver.cuda-compat against NVIDIA's CUDA compatibility document, case by case.

Rules (https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html, Table 1 and its note;
toolkit GA minimums from the CUDA release notes' Table 3): a driver at or above a toolkit's GA minimum runs it;
from CUDA 11 on, a driver at or above its major's floor (11.x: 450.80.02, 12.x: 525.60.13, 13.x: 580) runs any
minor of that major with limits; CUDA 10.x and older have no minor-version compatibility; forward
compatibility (cuda-compat) only on data-center GPUs
(https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html).
"""

from __future__ import annotations

from typing import List, Optional

from envdoctor.model.facts import Package
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge
from tests import machines as m

ARCH_1_12_CU102 = ["sm_37", "sm_50", "sm_60", "sm_70"]
ARCH_1_12_CU113 = ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]
ARCH_2_9_CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


def case(driver: Optional[str], ceiling: Optional[str], torch: str, cuda: str,
         gpu=("NVIDIA H100 80GB HBM3", "9.0"), arch: Optional[List[str]] = None, packages=()):
    f = m.facts(m.driver(driver, ceiling, [m.gpu(0, gpu[0], gpu[1])]),
                [m.torch_env(torch, cuda, arch or m.ARCH_2_1_TO_2_7, packages=list(packages))])
    report = judge(f, only=["driver.cuda-compat"])
    (check,) = report.checks
    assert check.status != CheckStatus.ERRORED, check.reason
    return check.findings


def test_cuda_10_has_no_minor_version_compatibility():
    (f,) = case("418.87.01", "10.1", "1.12.1+cu102", "10.2", ("Tesla V100-SXM2-16GB", "7.0"), ARCH_1_12_CU102)
    assert f.code == "driver.cuda-compat/too-old" and f.severity == Severity.ERROR
    assert "440.33" in f.summary and "minor-version" not in f.summary
    assert case("440.33.01", "10.2", "1.12.1+cu102", "10.2", ("Tesla V100-SXM2-16GB", "7.0"), ARCH_1_12_CU102) == []


def test_a_driver_exactly_at_each_floor_runs_through_minor_version_compatibility():
    for drv, ceiling, torch, cuda, floor, arch in (
            ("450.80.02", "11.0", "1.12.1+cu113", "11.3", "450.80.02", ARCH_1_12_CU113),
            ("525.60.13", "12.0", "2.5.1+cu124", "12.4", "525.60.13", None)):
        (f,) = case(drv, ceiling, torch, cuda, ("NVIDIA A100-SXM4-40GB", "8.0"), arch)
        assert (f.code, f.severity) == ("driver.cuda-compat/minor-compat", Severity.INFO), f.summary
        assert floor in f.summary
    # 13.x: the floor is also 13.0's own GA minimum, so nothing to say at all
    assert case("580.65.06", "13.0", "2.9.0+cu130", "13.0", arch=ARCH_2_9_CU130) == []


def test_below_the_floor_is_an_error():
    (f,) = case("450.51.06", "11.0", "1.12.1+cu113", "11.3", ("NVIDIA A100-SXM4-40GB", "8.0"), ARCH_1_12_CU113)
    assert f.severity == Severity.ERROR and "450.80.02" in f.summary
    (f,) = case("575.57.08", "12.9", "2.9.0+cu130", "13.0", arch=ARCH_2_9_CU130)
    assert f.severity == Severity.ERROR and "580.65.06" in f.summary


def test_driver_newer_than_any_branch_in_the_matrix_passes():
    assert case("700.10", None, "2.5.1+cu124", "12.4") == []


def test_unconfirmed_minimum_never_prints_none():
    # CUDA 13.4 is in the matrix without a confirmed GA minimum: a driver whose branch reports 13.4 runs it
    assert case("615.71.09", "13.4", "2.99.0+cu134", "13.4", arch=ARCH_2_9_CU130) == []
    (f,) = case("580.65.06", "13.0", "2.99.0+cu134", "13.4", arch=ARCH_2_9_CU130)
    assert (f.code, f.severity) == ("driver.cuda-compat/minor-compat", Severity.INFO)
    assert "None" not in f.summary and "None" not in f.fix.summary, (f.summary, f.fix.summary)


def test_forward_compatibility_offered_on_data_center_gpus_only():
    (dc,) = case("575.57.08", "12.9", "2.9.0+cu130", "13.0", arch=ARCH_2_9_CU130)
    assert "cuda-compat" in dc.fix.summary
    (geforce,) = case("575.57.08", "12.9", "2.9.0+cu130", "13.0", ("NVIDIA GeForce RTX 4090", "8.9"),
                      ARCH_2_9_CU130)
    assert "cuda-compat" not in geforce.fix.summary


def test_older_cuda_build_offered_only_if_it_has_kernels_for_the_gpu():
    # torch 1.12.1's cu102 build runs on 450.51 but carries no sm_80 kernels: no fix for an A100
    (f,) = case("450.51.06", "11.0", "1.12.1+cu113", "11.3", ("NVIDIA A100-SXM4-40GB", "8.0"), ARCH_1_12_CU113)
    assert not any("cu102" in c for c in f.fix.commands), f.fix.commands
    # a V100 (sm_70) has them
    (f,) = case("450.51.06", "11.0", "1.12.1+cu113", "11.3", ("Tesla V100-SXM2-16GB", "7.0"), ARCH_1_12_CU113)
    assert any("1.12.1+cu102" in c for c in f.fix.commands), f.fix.commands


def test_older_cuda_build_reinstalls_the_companions_with_it():
    (f,) = case("515.65.01", "11.7", "2.1.0+cu121", "12.1",
                packages=[Package("torchvision", "0.16.0+cu121"), Package("torchaudio", "2.1.0+cu121")])
    (cmd,) = [c for c in f.fix.commands if "pip install" in c]
    assert "torch==2.1.0 torchvision==0.16.0 torchaudio==2.1.0" in cmd
    assert cmd.endswith("--index-url https://download.pytorch.org/whl/cu118")


def test_only_the_ceiling_known():
    (f,) = case(None, "12.2", "2.5.1+cu124", "12.4")
    assert f.severity == Severity.INFO and "525.60.13" in f.summary
    (f,) = case(None, "11.4", "2.1.0+cu121", "12.1")
    assert f.severity == Severity.ERROR
    assert case(None, "12.4", "2.5.1+cu124", "12.4") == []


def test_driver_install_commands_are_valid_package_manager_lines():
    # the default test host is Ubuntu: apt only (other platforms: tests/unit/remedies/test_remedies.py)
    (f,) = case("515.65.01", "11.7", "2.1.0+cu121", "12.1")
    assert not [c for c in f.fix.commands if "dnf" in c]
    assert any(c.startswith("sudo apt-get install -y nvidia-driver-") for c in f.fix.commands)
    facts = m.facts(m.driver("515.65.01", "11.7", [m.gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]),
                    [m.torch_env("2.1.0+cu121", "12.1", m.ARCH_2_1_TO_2_7)],
                    host=m.host(distro_id="rocky", distro_version="9.3"))
    (f,) = judge(facts, only=["driver.cuda-compat"]).findings
    dnf = [c for c in f.fix.commands if "dnf" in c]
    assert dnf and all("dnf module enable -y nvidia-driver:" in c and "dnf install -y nvidia-open" in c for c in dnf)
    assert not [c for c in f.fix.commands if "apt-get" in c]


def test_cpu_build_fix_moves_every_installed_companion():
    from dataclasses import replace

    f = m.gpus_with_cpu_torch()
    py = f.pythons[0]
    f = replace(f, pythons=[replace(py, packages=py.packages + [Package("torchvision", "0.19.0+cpu"),
                                                                Package("torchaudio", "2.4.0+cpu")])])
    (finding,) = [x for x in judge(f).findings if x.category == "TORCH_CPU_ONLY_BUILD"]
    (cmd,) = finding.fix.commands
    assert "torch==2.4.0 torchvision==0.19.0 torchaudio==2.4.0 --index-url https://download.pytorch.org/whl/cu" in cmd
