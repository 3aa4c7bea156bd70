"""Hand-built machine snapshots for the core checks (values modelled on real machines; see each builder)."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

from envdoctor.model.facts import (
    Container,
    CudaToolkit,
    Driver,
    Facts,
    Gpu,
    Host,
    Package,
    PcieLink,
    ProbeStatus,
    PythonEnv,
    Targets,
    Toolkits,
    Topology,
    TorchDevice,
    TorchInfo,
)

GiB = 1024**3

# torch.cuda.get_arch_list() of the default PyPI wheels (shared/reference/README.md "Key facts")
ARCH_2_1_TO_2_7 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def gpu(index: int, name: str, cc: str, mem_gib: int = 80, **kw) -> Gpu:
    return Gpu(index=index, name=name, compute_capability=cc, memory_total_bytes=mem_gib * GiB,
               memory_used_bytes=0, pci_bus_id=f"00000000:{index + 0x18:02X}:00.0", **kw)


def driver(version: Optional[str], cuda: Optional[str], gpus: List[Gpu]) -> Driver:
    return Driver(status=ProbeStatus.OK, source="nvml", version=version, cuda_driver_version=cuda,
                  kernel_module_version=version, gpus=gpus)


def host(**kw) -> Host:
    base = dict(status=ProbeStatus.OK, os="Linux", distro_id="ubuntu", distro_version="22.04",
                kernel="5.15.0-105-generic", machine="x86_64", cpu_logical_count=64, memory_total_bytes=512 * GiB,
                container=Container(runtime=None), wsl=False, gcc_version="11.4.0")
    base.update(kw)
    return Host(**base)


def torch_env(version: str, cuda: Optional[str], arch: Optional[List[str]], packages: List[Package] = (),
              python: str = "3.10.12", available: Optional[bool] = True, devices: List[TorchDevice] = (),
              **torch_kw) -> PythonEnv:
    pkgs = [Package("torch", version)] + list(packages)
    return PythonEnv(status=ProbeStatus.OK, executable="/opt/venv/bin/python", python_version=python,
                     platform="linux-x86_64", packages=pkgs,
                     torch=TorchInfo(version=version, cuda=cuda, arch_list=arch, cuda_available=available,
                                     device_count=len(devices), devices=list(devices), **torch_kw))


def facts(drv: Driver, pythons: List[PythonEnv], toolkits: Optional[Toolkits] = None, **kw) -> Facts:
    return Facts(envdoctor_version="test", origin="snapshot", driver=drv, pythons=pythons, host=kw.pop("host", host()),
                 toolkits=toolkits or Toolkits(status=ProbeStatus.ABSENT, reason="no nvcc"), **kw)


def h100_old_driver() -> Facts:
    """H100 with driver 515.65.01 and torch 2.1.0+cu121: below the CUDA 12 minor-version floor."""
    return facts(driver("515.65.01", "11.7", [gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]),
                 [torch_env("2.1.0+cu121", "12.1", ARCH_2_1_TO_2_7, available=False,
                            cuda_init_error="The NVIDIA driver on your system is too old (found version 11070).")])


def rtx5090_cu124() -> Facts:
    """RTX 5090 (sm_120) with torch 2.6.0+cu124, whose arch list stops at sm_90."""
    warning = ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
               "installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 "
               "sm_80 sm_86 sm_90.")
    return facts(driver("570.124.06", "12.8", [gpu(0, "NVIDIA GeForce RTX 5090", "12.0", 32)]),
                 [torch_env("2.6.0+cu124", "12.4", ARCH_2_1_TO_2_7, warnings=[warning],
                            devices=[TorchDevice(0, "NVIDIA GeForce RTX 5090", "12.0")])])


def gpus_with_cpu_torch() -> Facts:
    """Two A100s, driver 550, torch 2.4.0+cpu."""
    return facts(driver("550.54.15", "12.4", [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"),
                                              gpu(1, "NVIDIA A100-SXM4-80GB", "8.0")]),
                 [torch_env("2.4.0+cpu", None, [], available=False)])


def cpu_torch_cuda_vision() -> Facts:
    """torch 2.2.1+cpu next to torchvision 0.17.1 from PyPI (a cu121 build); a CPU box without a driver."""
    return facts(Driver(status=ProbeStatus.ABSENT, reason="NVML library (libnvidia-ml.so.1) not found"),
                 [torch_env("2.2.1+cpu", None, [], packages=[Package("torchvision", "0.17.1")], available=False)])


def healthy_a100() -> Facts:
    """A100 80GB, driver 550.54.15, torch 2.5.1+cu121 with its companions."""
    return facts(driver("550.54.15", "12.4", [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]),
                 [torch_env("2.5.1+cu121", "12.1", ARCH_2_1_TO_2_7,
                            packages=[Package("torchvision", "0.20.1+cu121"), Package("triton", "3.1.0")],
                            devices=[TorchDevice(0, "NVIDIA A100-SXM4-80GB", "8.0")])])


def h100_minor_compat() -> Facts:
    """H100 on driver 535.104.05 running torch 2.5.1+cu124 through minor-version compatibility."""
    return facts(driver("535.104.05", "12.2", [gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]),
                 [torch_env("2.5.1+cu124", "12.4", ARCH_2_1_TO_2_7,
                            devices=[TorchDevice(0, "NVIDIA H100 80GB HBM3", "9.0")])])


def with_nvcc(f: Facts, version: str, full: str) -> Facts:
    tk = CudaToolkit(path=f"/usr/local/cuda-{version}", nvcc_path=f"/usr/local/cuda-{version}/bin/nvcc",
                     version=version, version_full=full, found_via="PATH")
    return replace(f, toolkits=Toolkits(status=ProbeStatus.OK, on_path=tk, installed=[tk]))


SCENARIOS = {
    "h100-old-driver": (h100_old_driver, "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    "rtx5090-cu124": (rtx5090_cu124, "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    "gpus-cpu-torch": (gpus_with_cpu_torch, "TORCH_CPU_ONLY_BUILD"),
    "cpu-torch-cuda-vision": (cpu_torch_cuda_vision, "CUDA_VARIANT_MIXED"),
    "healthy-a100": (healthy_a100, None),
    "h100-minor-compat": (h100_minor_compat, None),
}


def driverless_a100() -> Facts:
    """An A100 SXM4 80GB on the PCI bus and no NVIDIA driver: sysfs lists a function of vendor 0x10de, class 0x0302
    (3D controller), described from sysfs as "3D controller: [10de:20b2]" (no word "NVIDIA"; the ids of
    tests/fixtures/lspci/a100-x8_lspci-nn.txt); NVML absent; torch 2.5.1+cu121 cannot initialise CUDA."""
    return facts(Driver(status=ProbeStatus.ABSENT, reason="NVML library (libnvidia-ml.so.1) not found"),
                 [torch_env("2.5.1+cu121", "12.1", ARCH_2_1_TO_2_7, available=False,
                            cuda_init_error="Found no NVIDIA driver on your system.")],
                 topology=Topology(status=ProbeStatus.OK, nvidia_pci_devices=["0000:17:00.0 0x0302"],
                                   pcie_links=[PcieLink(bdf="0000:17:00.0", description="3D controller: [10de:20b2]")]))


NO_TORCH_PY = "/root/.pyenv/versions/3.9.18/bin/python3.9"


def python_without_torch(version: str, targets: Optional[Targets] = None) -> Facts:
    """A snapshot of one interpreter of Python ``version`` with no torch (and no packages) installed."""
    py = PythonEnv(status=ProbeStatus.OK, executable=NO_TORCH_PY, python_version=version, platform="linux-x86_64",
                   requested_as="--python", packages=[])
    return Facts(envdoctor_version="test", origin="snapshot", pythons=[py], targets=targets)

