"""platform.container-gpu and platform.wsl (envdoctor/checks/platform.py): a container started without the GPUs,
WSL's GPU rules; each passing, failing (the whole finding) and skipped with its reason."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Container, Driver, Facts, LibraryCopy, ProbeStatus, Topology
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _run(facts: Facts, check_id: str, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == check_id])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def _in_container(runtime: str = "docker", nodes=None, driver: Driver = None, pci=("0000:18:00.0 030200",)) -> Facts:
    f = m.healthy_a100()
    host = m.host(container=Container(runtime=runtime, evidence="/.dockerenv", gpu_device_nodes=nodes))
    return dataclasses.replace(f, host=host, driver=driver if driver is not None else f.driver,
                               topology=dataclasses.replace(f.topology, nvidia_pci_devices=list(pci)))


NO_DRIVER = Driver(status=ProbeStatus.ABSENT, reason="NVML library (libnvidia-ml.so.1) not found")


def test_a_container_with_its_gpus_passes(compat):
    assert _run(_in_container(), "platform.container-gpu", compat).status == CheckStatus.PASSED


def test_a_docker_container_without_device_nodes_or_driver_is_an_error_with_the_toolkit_fix(compat):
    res = _run(_in_container(nodes=[], driver=NO_DRIVER), "platform.container-gpu", compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("platform.container-gpu/no-runtime", "CONTAINER_NO_GPU_RUNTIME",
                                                Severity.ERROR)
    assert f.summary == "Running in a docker container with no NVIDIA device nodes or driver libraries passed in"
    ev = {e.path: e.value for e in f.evidence}
    assert ev["host.container.runtime"] == "docker" and ev["host.container.gpu_device_nodes"] == []
    assert ev["driver.status"] == "absent" and ev["topology.nvidia_pci_devices"] == ["0000:18:00.0 030200"]
    assert "--gpus" in f.fix.summary and any(c.startswith("docker run --gpus all") for c in f.fix.commands)


def test_a_kubernetes_pod_is_told_to_request_gpus(compat):
    (f,) = _run(_in_container("kubernetes", nodes=[], driver=NO_DRIVER), "platform.container-gpu", compat).findings
    assert "nvidia.com/gpu" in f.fix.summary and f.fix.commands[0].startswith("kubectl describe node")


@pytest.mark.parametrize("facts, reason, label", [
    (dataclasses.replace(m.healthy_a100(), host=m.host(container=Container(runtime=None))),
     "not a container: nothing to judge", "not a container"),
    (dataclasses.replace(m.healthy_a100(), host=m.host(container=None)), "whether this is a container is unknown",
     None),
    (_in_container(nodes=[], driver=NO_DRIVER, pci=()), "no NVIDIA hardware on the PCI bus", "no NVIDIA GPU"),
])
def test_container_gpu_skips_with_its_reason(facts, reason, label, compat):
    res = _run(facts, "platform.container-gpu", compat)
    assert res.status == CheckStatus.SKIPPED and res.reason.startswith(reason) and res.not_applicable == label


def _wsl(driver: Driver = None, libcuda: str = None) -> Facts:
    f = m.healthy_a100()
    d = driver if driver is not None else dataclasses.replace(f.driver, kernel_module_version=None)
    pythons = f.pythons
    if libcuda:
        py = pythons[0]
        pythons = [dataclasses.replace(py, loaded_libraries=[LibraryCopy(name="cuda", path=libcuda)])]
    return dataclasses.replace(f, host=m.host(wsl=True, kernel="5.15.153.1-microsoft-standard-WSL2"), driver=d,
                               pythons=pythons, topology=Topology())


def test_wsl_with_the_windows_driver_passes(compat):
    assert _run(_wsl(libcuda="/usr/lib/wsl/lib/libcuda.so.1"), "platform.wsl", compat).status == CheckStatus.PASSED


def test_a_linux_driver_inside_wsl_is_an_error(compat):
    f = _wsl(driver=dataclasses.replace(m.healthy_a100().driver, kernel_module_version="550.54.15"),
             libcuda="/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15")
    res = _run(f, "platform.wsl", compat)
    (x,) = res.findings
    assert (x.code, x.category, x.severity) == ("platform.wsl/gpu", "WSL_SPECIFIC", Severity.ERROR)
    assert "a Linux NVIDIA kernel driver (550.54.15) is installed inside WSL" in x.summary
    assert "libcuda was loaded from /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15" in x.summary
    ev = {e.path: e for e in x.evidence}
    assert ev["driver.kernel_module_version"].expected == "none inside WSL"
    assert ev["pythons[0].loaded_libraries.cuda"].value == "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"


@pytest.mark.parametrize("wsl, reason, label", [(None, "whether this is WSL is unknown", None),
                                                (False, "not WSL: nothing to judge", "not WSL")])
def test_wsl_skips_with_its_reason(wsl, reason, label, compat):
    res = _run(dataclasses.replace(m.healthy_a100(), host=m.host(wsl=wsl)), "platform.wsl", compat)
    assert res.status == CheckStatus.SKIPPED and res.reason == reason and res.not_applicable == label
