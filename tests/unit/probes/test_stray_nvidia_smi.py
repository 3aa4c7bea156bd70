"""A stray, hung or broken nvidia-smi (and a hung gcc): what the probes make of them."""

from __future__ import annotations

from envdoctor.model.facts import ProbeStatus
from envdoctor.probes.driver import probe_driver, probe_topology
from envdoctor.probes.host import probe_host
from tests.fakes.nvml_lib import FakeNvmlLib, installed
from tests.fakes.runner import FakeRunner

XML = ("nvidia-smi", "-q", "-x")
TOPO = ("nvidia-smi", "topo", "-m")
NO_COMM = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
           "Make sure that the latest NVIDIA driver is installed and running.\n")


def test_hung_nvidia_smi_does_not_hide_a_missing_driver(tmp_path):
    # no libnvidia-ml at all: a hung nvidia-smi on PATH cannot mean a working driver
    with installed(FakeNvmlLib([], init_error="LIBRARY_NOT_FOUND")) as nvml:
        d = probe_driver(FakeRunner({XML: FakeRunner.TIMEOUT}), nvml=nvml, root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT
    assert "timed out after 10 s" in d.reason and "libnvidia-ml" in d.reason


def test_nvidia_smi_that_cannot_reach_the_driver_is_absent(tmp_path):
    with installed(FakeNvmlLib([], init_error="LIBRARY_NOT_FOUND")) as nvml:
        d = probe_driver(FakeRunner({XML: (9, NO_COMM, "")}), nvml=nvml, root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT and d.nvidia_smi_error.startswith("NVIDIA-SMI has failed")
    # NVML could not tell (an unknown init error), nvidia-smi's own words can: no driver loaded
    with installed(FakeNvmlLib([], init_error="UNKNOWN")) as nvml:
        d = probe_driver(FakeRunner({XML: (9, NO_COMM, "")}), nvml=nvml, root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT and "exited 9" in d.reason


def test_broken_nvidia_smi_with_a_loaded_driver_stays_failed(tmp_path):
    # the kernel module answers but the library is the wrong version: that is not "no driver"
    runner = FakeRunner({XML: (18, "Failed to initialize NVML: Driver/library version mismatch\n", "")})
    with installed(FakeNvmlLib([], init_error="LIB_RM_VERSION_MISMATCH")) as nvml:
        d = probe_driver(runner, nvml=nvml, root=str(tmp_path))
    assert d.status == ProbeStatus.FAILED


def test_topology_reason_quotes_nvidia_smi_once():
    t = probe_topology(FakeRunner({TOPO: (9, NO_COMM, "")}))
    assert t.status == ProbeStatus.FAILED
    assert t.reason.count("couldn't communicate") == 1, t.reason


def test_hung_gcc_is_asked_once(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\n")
    runner = FakeRunner({("gcc", "-dumpfullversion"): FakeRunner.TIMEOUT}, which={"gcc": "/usr/bin/gcc"})
    h = probe_host(runner, root=str(tmp_path), env={})
    assert h.gcc_version is None
    assert runner.calls == [("gcc", "-dumpfullversion")]  # not a second 10 s wait on -dumpversion
