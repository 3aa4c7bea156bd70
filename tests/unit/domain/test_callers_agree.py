"""The modules that call envdoctor.domain agree with it: the defects that came from their own copies stay fixed."""

from __future__ import annotations

import pytest

from envdoctor.checks import packages, pcie, run_checks, torch_build
from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    Driver,
    Facts,
    Gpu,
    Package,
    PcieLink,
    ProbeStatus,
    PythonEnv,
    Topology,
    TorchInfo,
)
from envdoctor.report.facts_view import _torch_line


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _run(facts, compat, module, check_id):
    (res,) = run_checks(facts, compat, [c for c in module.CHECKS if c.id == check_id])
    return res


def _gpu_box(py: PythonEnv, bus: str = "00000000:3B:00.0") -> Facts:
    return Facts(driver=Driver(status=ProbeStatus.OK, version="550.54.15", cuda_driver_version="12.4",
                               gpus=[Gpu(index=0, name="NVIDIA A100-SXM4-80GB", pci_bus_id=bus,
                                         compute_capability="8.0")]),
                 pythons=[py])


def test_console_and_check_agree_on_a_cpu_build_without_a_cpu_tag(compat):
    # a PyPI wheel for a platform with CPU wheels only: no +cpu tag, imported, torch.version.cuda None
    py = PythonEnv(status=ProbeStatus.OK, executable="/venv/bin/python", python_version="3.11.9",
                   torch=TorchInfo(version="2.5.1", cuda=None, arch_list=[], cuda_available=False))
    assert "CPU build" in _torch_line(py)  # was "torch CUDA unknown"
    res = _run(_gpu_box(py), compat, torch_build, "torch.cuda-build")
    assert [f.code for f in res.findings] == ["torch.cuda-build/cpu-only"]


def test_pcie_link_finds_the_gpu_of_an_address_without_the_function(compat):
    # the GPU's address as torch and Xid lines write it (no function), its link as lspci writes it
    facts = _gpu_box(PythonEnv(), bus="0000:3b:00")
    facts = Facts(driver=facts.driver, topology=Topology(status=ProbeStatus.OK, pcie_links=[
        PcieLink("3b:00.0", description="3D controller: NVIDIA Corporation GA100 [10de:20b2]", cap_speed_gts=16.0,
                 cap_width=16, sta_speed_gts=16.0, sta_width=8),
        PcieLink("3b:00.1", description="Audio device: NVIDIA Corporation [10de:1aef]", cap_speed_gts=16.0,
                 cap_width=16, sta_speed_gts=16.0, sta_width=8),
    ]))
    res = _run(facts, compat, pcie, "pcie.link")
    width = [f for f in res.findings if f.code == "pcie.link/width"]
    assert len(width) == 1 and "GPU 0 (NVIDIA A100-SXM4-80GB)" in width[0].summary, res.findings
    assert "GPU at" not in width[0].summary  # not listed a second time as an unknown GPU
    assert not [f for f in res.findings if f.code == "pcie.link/other-device"]  # its audio function is the GPU


def test_a_major_only_cuda_tag_is_not_cuda_1_2(compat):
    # flash-attn's release wheels carry the CUDA major only: +cu12torch2.7cxx11abiTRUE
    py = PythonEnv(status=ProbeStatus.OK, executable="/venv/bin/python", python_version="3.11.9",
                   platform="linux-x86_64",
                   torch=TorchInfo(version="2.7.1+cu126", cuda="12.6", arch_list=["sm_80"], cxx11_abi=True),
                   packages=[Package(name="torch", version="2.7.1+cu126"),
                             Package(name="flash-attn", version="2.8.1+cu12torch2.7cxx11abiTRUE")])
    res = _run(_gpu_box(py), compat, packages, "packages.extensions")
    assert res.findings == [], res.findings  # was "built for CUDA 1.2"
    wrong = PythonEnv(**{**py.__dict__, "packages": [Package(name="torch", version="2.7.1+cu126"),
                                                     Package(name="flash-attn", version="2.8.1+cu11torch2.7cxx11abiTRUE")]})
    (f,) = _run(_gpu_box(wrong), compat, packages, "packages.extensions").findings
    assert "built for CUDA 11" in f.summary
