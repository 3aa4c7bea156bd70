"""Checks judged on the machine snapshots (tests/machines.py) across modules: each scenario gets exactly its category,
and the cases that span checks (driver, torch_build and packages have their own files)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.model.facts import Container, Driver, Facts, LibraryCopy, Package, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge
from tests import machines as m
from tests.unit.checks.judged import problems, result


@pytest.mark.parametrize("name", sorted(m.SCENARIOS))
def test_scenario_gets_exactly_its_category(name):
    build, category = m.SCENARIOS[name]
    found = problems(build())
    assert set(found) == ({category} if category else set()), {k: v.summary for k, v in found.items()}


def test_h100_driver_515_with_cu121_is_too_old_with_numbers():
    f = problems(m.h100_old_driver())["DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert f.code == "driver.cuda-compat/too-old"
    assert f.severity == Severity.ERROR
    assert "515.65.01" in f.summary and "2.1.0+cu121" in f.summary
    assert "530.30.02" in f.summary and "525.60.13" in f.summary  # GA minimum and the 12.x floor
    # the fix offers the cu118 build, which 515 runs through CUDA 11 minor-version compatibility
    assert any("whl/cu118" in c for c in f.fix.commands)
    assert any(e.path == "driver.version" and e.value == "515.65.01" for e in f.evidence)


def test_minor_version_compatibility_is_info_naming_its_limits():
    report = judge(m.h100_minor_compat())
    (f,) = [f for f in report.findings if f.about == "DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert (f.severity, f.category) == (Severity.INFO, "NOTE")
    assert f.code == "driver.cuda-compat/minor-compat"
    assert "535.104.05" in f.summary and "550.54.14" in f.summary and "525.60.13" in f.summary
    assert "PTX" in f.detail and "docs.nvidia.com/deploy/cuda-compatibility" in f.detail


def test_ptx_only_gpu_on_minor_compat_driver_is_an_error():
    # An L40S-like sm_89 GPU on a build with only sm_80 SASS + compute_80 PTX... sm_86 SASS covers 8.9, so use
    # a Hopper GPU and a build that only carries compute_80 PTX for it.
    f = m.h100_minor_compat()
    py = f.pythons[0]
    f = replace(f, pythons=[replace(py, torch=replace(py.torch, arch_list=["sm_80", "compute_80"]))])
    found = problems(f)
    assert found["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].code == "driver.cuda-compat/ptx-needs-newer-driver"


def test_driver_check_skips_without_cuda_torch_and_without_driver():
    assert result(m.gpus_with_cpu_torch(), "driver.cuda-compat").status == CheckStatus.SKIPPED
    no_driver = replace(m.healthy_a100(), driver=Driver(status=ProbeStatus.ABSENT, reason="no NVML"))
    assert result(no_driver, "driver.cuda-compat").status == CheckStatus.SKIPPED


def test_cuda_newer_than_matrix_is_unknown_not_error():
    f = m.healthy_a100()
    py = f.pythons[0]
    f = replace(f, driver=replace(f.driver, version="580.65.06", kernel_module_version="580.65.06",
                                  cuda_driver_version="13.0"),
                pythons=[replace(py, torch=replace(py.torch, version="9.9.0+cu139", cuda="13.9"),
                                 packages=[Package("torch", "9.9.0+cu139")])])
    report = judge(f)
    assert not [x for x in report.findings if x.severity == Severity.ERROR]
    (info,) = [x for x in report.findings if x.code == "driver.cuda-compat/unknown-cuda"]
    assert "unknown to this matrix" in info.summary
    # a newer CUDA *major* than the driver's ceiling is known to fail, matrix or not
    newer_major = replace(f, driver=replace(f.driver, version="550.54.15", kernel_module_version="550.54.15",
                                            cuda_driver_version="12.4"))
    assert problems(newer_major)["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].code == "driver.cuda-compat/too-old"


def test_shadowed_cudnn_from_ld_library_path():
    f = m.healthy_a100()
    py = f.pythons[0]
    py = replace(py, packages=py.packages + [Package("nvidia-cudnn-cu12", "9.1.0.70")],
                 loaded_libraries=[LibraryCopy("cudnn", "/opt/cudnn-8.9/lib/libcudnn.so.8", "8.9.7", "system")],
                 env={"LD_LIBRARY_PATH": "/opt/cudnn-8.9/lib:/usr/local/lib"})
    found = problems(replace(f, pythons=[py]))["SYSTEM_LIB_SHADOWING"]
    assert found.severity == Severity.ERROR
    assert "/opt/cudnn-8.9/lib" in found.summary
    assert found.fix.commands == ["export LD_LIBRARY_PATH=/usr/local/lib"]
    ok = replace(py, loaded_libraries=[LibraryCopy(
        "cudnn", "/opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "9", "wheel")])
    assert result(replace(f, pythons=[ok]), "libraries.shadowing").status == CheckStatus.PASSED
    assert result(m.healthy_a100(), "libraries.shadowing").status == CheckStatus.SKIPPED


def test_nvcc_major_mismatch_names_affected_extensions():
    f = m.with_nvcc(m.healthy_a100(), "11.8", "11.8.89")
    py = f.pythons[0]
    f = replace(f, pythons=[replace(py, packages=py.packages + [Package("flash-attn", "2.6.3")])])
    x = problems(f)["NVCC_TORCH_CUDA_MISMATCH"]
    assert x.severity == Severity.WARNING and "flash-attn" in x.summary and "11.8" in x.summary
    assert result(m.with_nvcc(m.healthy_a100(), "12.1", "12.1.105"), "toolchain.nvcc-torch").status == \
        CheckStatus.PASSED
    assert result(m.healthy_a100(), "toolchain.nvcc-torch").status == CheckStatus.SKIPPED


def test_host_gcc_too_new_for_nvcc():
    f = m.with_nvcc(m.healthy_a100(), "12.1", "12.1.105")
    bad = replace(f, host=replace(f.host, gcc_version="13.2.0"))
    x = problems(bad)["HOST_COMPILER_TOO_NEW"]
    assert "gcc <= 12" in x.summary and any("gcc-12" in c for c in x.fix.commands)
    assert result(f, "toolchain.host-compiler").status == CheckStatus.PASSED
    assert result(m.healthy_a100(), "toolchain.host-compiler").status == CheckStatus.SKIPPED


def test_container_without_gpu_runtime():
    f = replace(m.healthy_a100(), driver=Driver(status=ProbeStatus.ABSENT, reason="NVML library not found"))
    f = replace(f, host=replace(f.host, container=Container(runtime="docker", evidence="/.dockerenv",
                                                             gpu_device_nodes=[])))
    found = problems(f)
    assert found["CONTAINER_NO_GPU_RUNTIME"].severity == Severity.ERROR
    assert any("--gpus all" in c for c in found["CONTAINER_NO_GPU_RUNTIME"].fix.commands)
    assert result(m.healthy_a100(), "platform.container-gpu").status == CheckStatus.SKIPPED  # not a container
    with_gpus = replace(m.healthy_a100(), host=replace(m.healthy_a100().host, container=Container(
        runtime="docker", gpu_device_nodes=["/dev/nvidia0", "/dev/nvidiactl"])))
    assert result(with_gpus, "platform.container-gpu").status == CheckStatus.PASSED
    assert result(replace(m.healthy_a100(), host=replace(m.healthy_a100().host, status=ProbeStatus.SKIPPED,
                                                          container=None)),
                  "platform.container-gpu").status == CheckStatus.SKIPPED


def test_wsl_without_driver_and_with_linux_module():
    base = m.healthy_a100()
    f = replace(base, host=replace(base.host, wsl=True, kernel="5.15.153.1-microsoft-standard-WSL2"),
                driver=Driver(status=ProbeStatus.ABSENT, reason="libcuda not found"))
    assert "WSL_SPECIFIC" in problems(f)
    f2 = replace(base, host=replace(base.host, wsl=True))
    assert "kernel driver" in problems(f2)["WSL_SPECIFIC"].summary  # kernel_module_version set inside WSL
    res = result(base, "platform.wsl")  # not WSL: nothing to judge, so no check mark
    assert (res.status, res.reason) == (CheckStatus.SKIPPED, "not WSL: nothing to judge")
    wsl_ok = replace(base, host=replace(base.host, wsl=True, kernel="5.15.153.1-microsoft-standard-WSL2"),
                     driver=replace(base.driver, kernel_module_version=None))
    assert result(wsl_ok, "platform.wsl").status == CheckStatus.PASSED
    assert result(replace(base, host=replace(base.host, wsl=None)), "platform.wsl").status == CheckStatus.SKIPPED


def test_snapshot_roundtrip_gives_same_findings():
    for name, (build, _cat) in m.SCENARIOS.items():
        f = build()
        again = Facts.from_json(f.to_json())
        assert again == f, name
        assert [x.code for x in judge(again).findings] == [x.code for x in judge(f).findings]


def test_pasted_old_torch_without_cuda_fact_is_judged_from_its_pypi_default():
    """A paste with torch 1.3.0 (no local tag) and driver 410.48: the PyPI wheel was cu101 (needs 418.39)."""
    from envdoctor.model.facts import PasteSource, TorchInfo

    base = m.healthy_a100()
    py = replace(base.pythons[0], platform=None, packages=[Package("torch", "1.3.0")],
                 torch=TorchInfo(version="1.3.0"))
    f = replace(base, origin="paste", paste=PasteSource(),
                driver=replace(base.driver, version="410.48", kernel_module_version=None, cuda_driver_version=None),
                pythons=[py])
    x = problems(f)["DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert x.severity == Severity.WARNING and x.confidence == "medium"  # inferred, not read
    assert "410.48" in x.summary and "418.39" in x.summary and "cu101" in x.summary
    # releases before 1.13 had no per-variant index: the fix uses the documented find-links form
    assert "torch==1.3.0+cu100 -f https://download.pytorch.org/whl/torch_stable.html" in " ".join(x.fix.commands)
    # a live snapshot never guesses: torch.version.cuda None there means the probe saw a CPU build or nothing
    assert result(replace(f, origin="snapshot"), "driver.cuda-compat").status == CheckStatus.SKIPPED


def test_torch_that_fails_to_import_is_reported_not_called_a_cpu_build():
    base = m.healthy_a100()
    py = base.pythons[0]
    err = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'typing_extensions'"
    from envdoctor.model.facts import TorchInfo

    broken = replace(py, packages=[Package("torch", "2.14.1")], torch=TorchInfo(version="2.14.1", import_error=err))
    found = problems(replace(base, pythons=[broken]))
    assert set(found) == {"TORCH_IMPORT_FAILED"}, {k: v.summary for k, v in found.items()}
    x = found["TORCH_IMPORT_FAILED"]
    assert "typing_extensions" in x.summary and x.fix.commands[0].endswith("-m pip install typing-extensions")
    assert result(base, "torch.import").status == CheckStatus.PASSED
    assert result(replace(base, pythons=[replace(py, torch=None)]), "torch.import").status == CheckStatus.SKIPPED


def test_cases_report_one_finding_with_every_line_and_its_evidence():
    from envdoctor.checks.base import Cases, Findings
    from envdoctor.model.findings import Evidence, Severity

    rule = Findings("area.rule", "INTERCONNECT", kinds=("k", "narrow"))
    cases = Cases()
    assert cases.report(rule.warning, "k", "nothing: {}") == []  # the rule caught nothing: no finding
    cases.add("GPU 0: x8 of x16", [Evidence("driver.gpus[0].pcie_width_current", 8)], "0000:17:00.0")
    cases.add("GPU 1: x4 of x16", [Evidence("driver.gpus[1].pcie_width_current", 4),
                                   Evidence("topology.pcie_links[3].sta_width", 4)])
    [f] = cases.report(rule.info, "narrow", "Links: {}; idle", detail="d")
    assert (f.code, f.severity, f.detail) == ("area.rule/narrow", Severity.INFO, "d")
    assert f.summary == "Links: GPU 0: x8 of x16; GPU 1: x4 of x16; idle"
    assert [e.path for e in f.evidence] == ["driver.gpus[0].pcie_width_current", "driver.gpus[1].pcie_width_current",
                                            "topology.pcie_links[3].sta_width"]
    assert cases.keys == ["0000:17:00.0"]


def test_cuda_visible_devices_hiding_every_gpu():
    base = m.healthy_a100()
    py = base.pythons[0]
    py = replace(py, env={"CUDA_VISIBLE_DEVICES": ""}, torch=replace(py.torch, device_count=0, cuda_available=False))
    x = problems(replace(base, pythons=[py]))["NO_GPU_VISIBLE"]
    assert x.fix.commands[0] == "unset CUDA_VISIBLE_DEVICES"
    no_gpus = replace(base, driver=replace(base.driver, gpus=[]))
    assert "NO_GPU_VISIBLE" in problems(no_gpus)
