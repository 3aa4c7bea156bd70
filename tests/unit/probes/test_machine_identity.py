"""What the machine is: no NVIDIA hardware vs NVIDIA hardware without a driver vs a container not given the GPUs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.model.config import ConfigError, load_config
from envdoctor.model.facts import Container, Driver, Facts, Host, PcieLink, PythonEnv, Topology, TorchInfo
from envdoctor.model.findings import Severity
from envdoctor.probes.pcie import _from_sysfs, nvidia_pci_devices
from envdoctor.services.collect import judge

ABSENT = Driver(status="absent", reason="NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed",
                nvml_error="LIBRARY_NOT_FOUND")
CPU_TORCH = PythonEnv(status="ok", executable="/venv/bin/python", python_version="3.11.7",
                      torch=TorchInfo(version="2.13.0+cpu", cuda=None, cuda_available=False))
CUDA_TORCH = PythonEnv(status="ok", executable="/venv/bin/python", python_version="3.11.7",
                       torch=TorchInfo(version="2.14.1+cu130", cuda="13.0", cuda_available=False,
                                       cuda_init_error="Found no NVIDIA driver on your system."))


def sysfs(root: Path, devices: dict) -> str:
    """devices: bdf -> (vendor, device, class)."""
    for bdf, (vendor, device, cls) in devices.items():
        d = root / "sys/bus/pci/devices" / bdf
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
        (d / "class").write_text(cls + "\n")
    return str(root)


def facts(devices, python=CPU_TORCH, container=None, links=()) -> Facts:
    return Facts(driver=ABSENT, pythons=[python],
                 host=Host(status="ok", os="Linux", container=container),
                 topology=Topology(status="absent", nvidia_pci_devices=devices, pcie_links=list(links)))


def codes(f: Facts, expect: bool = False):
    return {x.code: x for x in judge(f, expect_gpu=expect).findings}


# --------------------------------------------------------------------------- the probe


def test_nvidia_pci_devices_by_vendor_id(tmp_path):
    root = sysfs(tmp_path, {"0000:00:00.0": ("0x8086", "0x29c0", "0x060000"),
                            "0000:17:00.0": ("0x10de", "0x2330", "0x030200"),
                            "0000:17:00.1": ("0x10de", "0x22a3", "0x040300")})
    assert nvidia_pci_devices(root) == ["0000:17:00.0 0x0302", "0000:17:00.1 0x0403"]
    assert nvidia_pci_devices(sysfs(tmp_path / "cpu", {"0000:00:04.0": ("0x1af4", "0x1001", "0x010000")})) == []
    assert nvidia_pci_devices(str(tmp_path / "nothing")) is None  # sysfs not there: unknown, not "none"


def test_this_machine_has_no_nvidia_hardware_or_says_so():
    devices = nvidia_pci_devices("/")
    if devices:  # pragma: no cover - only on a machine with NVIDIA hardware
        assert all(" 0x" in d for d in devices)
    else:
        assert devices in ([], None)


# --------------------------------------------------------------------------- the verdicts


def test_no_nvidia_hardware_cpu_torch_is_fine_and_says_so():
    report = judge(facts([]))
    got = {x.code: x for x in report.findings}
    x = got["driver.hardware/none"]
    # no check mark that claims a driver: driver.present is skipped with the reason
    present = next(c for c in report.checks if c.id == "driver.present")
    assert present.status == "skipped" and "no NVIDIA hardware" in present.reason
    assert x.severity == Severity.INFO and "CPU work is fine" in x.summary and "2.13.0+cpu" in x.summary
    assert not [f for f in got.values() if f.severity == Severity.ERROR]


def test_no_nvidia_hardware_in_a_container_is_not_a_container_without_gpus():
    # before: NO_NVIDIA_DRIVER error + CONTAINER_NO_GPU_RUNTIME error on a CPU machine in docker
    got = codes(facts([], container=Container(runtime="docker", gpu_device_nodes=[])))
    assert "platform.container-gpu/no-runtime" not in got and "driver.present/absent" not in got
    assert not [f for f in got.values() if f.severity == Severity.ERROR]


def test_a_cuda_torch_without_nvidia_hardware_is_still_fine():
    got = codes(facts([], python=CUDA_TORCH))
    assert "CPU work is fine" in got["driver.hardware/none"].summary
    assert not [f for f in got.values() if f.severity == Severity.ERROR]


def test_expect_gpu_turns_no_hardware_into_an_error():
    x = codes(facts([]), expect=True)["driver.hardware/none-expected"]
    assert (x.severity, x.category) == (Severity.ERROR, "NO_GPU_VISIBLE")


def test_nvidia_hardware_without_driver_is_an_error():
    got = codes(facts(["0000:17:00.0 0x0302"]))
    assert got["driver.present/absent"].severity == Severity.ERROR


def test_container_not_given_the_hosts_gpus_is_one_error():
    got = codes(facts(["0000:17:00.0 0x0302"], container=Container(runtime="docker", gpu_device_nodes=[])))
    assert got["platform.container-gpu/no-runtime"].severity == Severity.ERROR
    assert "driver.present/absent" not in got  # one root cause, one error


def test_sysfs_gpu_description_is_recognised_by_vendor_id(tmp_path):
    # sysfs descriptions carry ids, not the word "nvidia": before, an H100 box without a driver got an info
    root = sysfs(tmp_path, {"0000:17:00.0": ("0x10de", "0x2330", "0x030200")})
    found = _from_sysfs(root)
    assert found is not None
    link = found[1][0]
    assert link.description == "3D controller: [10de:2330]"
    f = Facts(driver=ABSENT, topology=Topology(status="absent", pcie_links=[link]), host=Host(status="ok"))
    got = codes(f)
    assert got["driver.present/absent"].severity == Severity.ERROR
    narrow = PcieLink(bdf="0000:17:00.0", description="3D controller: [10de:2330]", cap_speed_gts=32.0,
                      cap_width=16, sta_speed_gts=32.0, sta_width=8)
    got = codes(Facts(driver=ABSENT, topology=Topology(status="ok", pcie_links=[narrow]), host=Host(status="ok")))
    assert any(c.startswith("pcie.link/") and "0000:17:00.0" in x.summary for c, x in got.items()), list(got)


# --------------------------------------------------------------------------- the setting


def test_expect_gpu_from_pyproject_upward(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.envdoctor]\nexpect-gpu = true\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert load_config(start=sub).expect_gpu is True
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.envdoctor]\nexpect-gpu = false\n')  # the nearest decides
    assert load_config(start=sub).expect_gpu is False
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.envdoctor]\nexpect-gpu = "yes"\n')
    with pytest.raises(ConfigError, match="must be true or false"):
        load_config(start=sub)


def _envdoctor(args, cwd):
    env = dict(os.environ, COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def cpu_python():
    exe = Path(os.environ.get("ENVDOCTOR_TEST_CPU_VENV", "/work/venvs/cpu")) / "bin" / "python"
    if not exe.exists():
        pytest.skip(f"no CPU torch venv at {exe}")
    return str(exe)


def test_cli_on_this_machine_cpu_fine_and_expect_gpu(tmp_path, cpu_python):
    if nvidia_pci_devices("/"):  # pragma: no cover - only on a machine with NVIDIA hardware
        pytest.skip("this machine has NVIDIA hardware")
    if nvidia_pci_devices("/") is None:
        pytest.skip("no /sys/bus/pci here: whether NVIDIA hardware is present cannot be told")
    # the machine-identity checks only: the venv's own packages (a torchvision of another variant) are judged
    # by other checks and are not what this is about
    scope = ["--python", cpu_python, "--only", "driver.*,platform.*,torch.*"]
    proc = _envdoctor(scope, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CPU work is fine" in proc.stdout and "driver.hardware/none" in proc.stdout
    proc = _envdoctor([*scope, "--expect-gpu"], tmp_path)
    assert proc.returncode == 1 and "no NVIDIA hardware" in proc.stdout
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor]\nexpect-gpu = true\n")
    assert _envdoctor(scope, tmp_path).returncode == 1
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor]\nexpect-gpu = 1\n")
    proc = _envdoctor(scope, tmp_path)
    assert proc.returncode == 2 and "expect-gpu must be true or false" in proc.stderr


def test_driver_installed_without_nvidia_hardware_is_fine_unless_expected():
    d = Driver(status="ok", version="580.95.05", source="nvml", gpus=[])
    f = Facts(driver=d, host=Host(status="ok", os="Linux"), topology=Topology(status="absent", nvidia_pci_devices=[]))
    got = codes(f)
    assert got["driver.hardware/none"].severity == Severity.INFO and "driver.gpus-visible/none" not in got
    got = codes(f, expect=True)
    assert got["driver.hardware/none-expected"].severity == Severity.ERROR and "driver.gpus-visible/none" not in got
