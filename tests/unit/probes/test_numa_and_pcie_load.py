"""NUMA locality (sysfs under a temp root, host.numa), kernel modules from /sys/module, and --load-pcie (FakeNvmlLib)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.checks import host, pcie, run_checks
from envdoctor.compat import load_compat
from envdoctor.domain.pci import bus_key
from envdoctor.model.facts import Driver, Facts, Gpu, GpuLocality, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.probes.host import probe_host
from envdoctor.probes.numa import format_cpulist, probe_gpu_locality
from envdoctor.probes.pcie_load import probe_pcie_load
from envdoctor.probes.python_env import payload_argv
from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed, pci_info
from tests.fakes.runner import FakeRunner
from tests.paths import FIXTURES

FIX = FIXTURES


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _w(root: Path, rel: str, text: str = "") -> None:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _pci(root: Path, bdf: str, vendor: str, cls: str, node: str, cpus: str) -> None:
    d = f"/sys/bus/pci/devices/{bdf}"
    _w(root, f"{d}/vendor", vendor + "\n")
    _w(root, f"{d}/class", cls + "\n")
    _w(root, f"{d}/numa_node", node + "\n")
    _w(root, f"{d}/local_cpulist", cpus + "\n")


def healthy() -> Facts:
    return Facts.from_json((FIX / "snapshots/h100-sxm-x8-healthy.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- probes


def test_gpu_locality_from_temp_sysfs(tmp_path):
    _pci(tmp_path, "0000:18:00.0", "0x10de", "0x030200", "0", "0-55,112-167")
    _pci(tmp_path, "0000:9a:00.0", "0x10de", "0x030200", "1", "56-111,168-223")
    _pci(tmp_path, "0000:17:00.0", "0x15b3", "0x020700", "0", "0-55,112-167")  # a Mellanox NIC: not a GPU
    status, reason, locs = probe_gpu_locality(str(tmp_path))
    assert status == ProbeStatus.OK and "2 NVIDIA GPU(s)" in reason
    assert locs == [GpuLocality("0000:18:00.0", 0, "0-55,112-167"), GpuLocality("0000:9a:00.0", 1, "56-111,168-223")]
    assert probe_gpu_locality(str(tmp_path / "nowhere"))[0] == ProbeStatus.UNSUPPORTED
    (tmp_path / "empty/sys/bus/pci/devices").mkdir(parents=True)
    assert probe_gpu_locality(str(tmp_path / "empty")) == (ProbeStatus.ABSENT, "no NVIDIA GPU on the PCI bus (sysfs)",
                                                           [])


def test_cpulist_round_trip():
    assert format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert host.parse_cpulist("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert host.parse_cpulist("bogus") is None


def test_host_affinity_and_modules_from_sys_module_without_proc_modules(tmp_path):
    _w(tmp_path, "/proc/self/status", "Name:\tpython3\nCpus_allowed_list:\t56-111\n")
    for m in ("nvidia", "nvidia_uvm", "nvidia_peermem", "8250"):
        (tmp_path / "sys/module" / m).mkdir(parents=True)
    h = probe_host(FakeRunner(strict=False), root=str(tmp_path), env={})
    assert h.cpu_affinity_list == "56-111"
    assert (h.kernel_modules, h.kernel_modules_source) == (["nvidia", "nvidia_uvm", "nvidia_peermem"], "/sys/module")
    assert "no /proc/modules: kernel modules read from /sys/module" in h.reason


def test_host_modules_unknown_says_why(tmp_path):
    h = probe_host(FakeRunner(strict=False), root=str(tmp_path), env={})
    assert h.kernel_modules is None and h.kernel_modules_source is None
    assert "neither /proc/modules nor /sys/module is readable" in h.reason


def test_host_on_this_machine_reads_its_affinity_and_modules():
    h = probe_host(FakeRunner(strict=False), root="/", env={})
    assert host.parse_cpulist(h.cpu_affinity_list)
    assert h.kernel_modules_source in ("/proc/modules", "/sys/module")


# --------------------------------------------------------------------------- host.numa


def _numa(facts, compat):
    (res,) = run_checks(facts, compat, [c for c in host.CHECKS if c.id == "host.numa"])
    return res


def test_numa_healthy_snapshot_passes(compat):
    res = _numa(healthy(), compat)
    assert (res.status, res.findings) == (CheckStatus.PASSED, [])


def test_numa_process_pinned_to_the_other_socket_warns(compat):
    f = healthy()
    f = dataclasses.replace(f, host=dataclasses.replace(f.host, cpu_affinity_list="0-27"))
    res = _numa(f, compat)
    assert res.status == CheckStatus.FAILED
    (x,) = res.findings
    assert (x.code, x.category, x.severity) == ("host.numa/remote-gpu", "CPU_STARVED", Severity.WARNING)
    assert "GPU 4 (0000:9a:00.0) is local to NUMA node 1 (CPUs 56-111,168-223)" in x.summary
    assert "GPU 3" not in x.summary
    assert x.evidence[0].path == "host.cpu_affinity_list" and x.evidence[0].value == "0-27"
    assert [e.path for e in x.evidence[1:]] == [f"topology.gpu_locality[{i}].local_cpulist" for i in range(4, 8)]
    assert x.fix.commands[0].startswith("numactl --cpunodebind=1 --membind=1")


def test_numa_in_a_pod_judges_only_the_gpus_it_was_given(compat):
    # a pod on socket 0 given GPU 0: sysfs still lists the host's GPUs on socket 1, which are not the pod's
    from envdoctor.model.facts import Container

    f = healthy()
    pod = dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=f.driver.gpus[:1]),
                              host=dataclasses.replace(f.host, cpu_affinity_list="0-27", container=Container(
                                  runtime="kubernetes", gpu_device_nodes=["/dev/nvidia0", "/dev/nvidiactl"])))
    assert _numa(pod, compat).status == CheckStatus.PASSED
    # the same view on the host itself: those GPUs are judged
    host_view = dataclasses.replace(pod, host=dataclasses.replace(pod.host, container=None))
    assert [x.code for x in _numa(host_view, compat).findings] == ["host.numa/remote-gpu"]


def test_numa_without_numa_info_or_facts(compat):
    f = healthy()
    flat = [dataclasses.replace(loc, numa_node=-1) for loc in f.topology.gpu_locality]
    f2 = dataclasses.replace(f, host=dataclasses.replace(f.host, cpu_affinity_list="0-27"),
                             topology=dataclasses.replace(f.topology, gpu_locality=flat))
    assert _numa(f2, compat).status == CheckStatus.PASSED  # numa_node -1: no locality to respect
    f3 = dataclasses.replace(f, topology=dataclasses.replace(f.topology, gpu_locality=None))
    res = _numa(f3, compat)
    assert res.status == CheckStatus.SKIPPED and "local_cpulist was not read" in res.reason
    f4 = dataclasses.replace(f, host=dataclasses.replace(f.host, cpu_affinity_list=None))
    assert _numa(f4, compat).status == CheckStatus.SKIPPED


# --------------------------------------------------------------------------- --load-pcie


def _driver(gen_idle: int = 1) -> Driver:
    return Driver(status="ok", gpus=[Gpu(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:19:00.0",
                                         pcie_gen_current=gen_idle, pcie_gen_max=5, pcie_width_current=16,
                                         pcie_width_max=16)])


def _envelope(result: dict) -> str:
    return json.dumps({"envdoctor_payload": 1, "task": "pcie-load", "ok": True, "error": None, "stage": None,
                       "timed_out": False, "result": result}) + "\n"


LOADED = {"ran": True, "seconds": 1.5,
          "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "0000:19:00", "gb_per_s": 52.1,
                       "bytes": 78 * 2**30}]}


def _runner(result: dict, timeout_s: float = 30.0) -> FakeRunner:
    return FakeRunner({tuple(payload_argv("/venv/bin/python", "pcie-load", ["--seconds", "1.5"], timeout_s)):
                       _envelope(result)})


def test_load_probe_reads_links_while_the_copies_run():
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetPciInfo_v3=pci_info("00000000:19:00.0", 0x233010DE))])
    with installed(lib) as nvml:
        res = probe_pcie_load("/venv/bin/python", _runner(LOADED), _driver(), nvml=nvml, timeout_s=30.0)
    assert res.status == ProbeStatus.OK, res.reason
    assert res.readings == {"0000:19:00": (5, 16)}
    assert "0000:19:00 52.1 GB/s" in res.reason
    inits = lib.called.count("nvmlInit_v2") + lib.called.count("nvmlInitWithFlags")
    assert inits >= 1 and inits == lib.called.count("nvmlShutdown")  # every init is shut down


def test_load_probe_skips_without_gpu_without_nvml_or_without_cuda_torch():
    res = probe_pcie_load("/venv/bin/python", FakeRunner(), Driver(status="absent", reason="no NVIDIA driver"))
    assert (res.status, res.reason) == (ProbeStatus.SKIPPED, "no GPU (driver probe absent: no NVIDIA driver)")
    with installed(FakeNvmlLib([h100_sxm(0)])) as nvml:
        res = probe_pcie_load("/venv/bin/python",
                              _runner({"ran": False, "reason": "torch.cuda.is_available() is False"}),
                              _driver(), nvml=nvml, timeout_s=30.0)
    assert res.status == ProbeStatus.SKIPPED and "torch.cuda.is_available() is False" in res.reason
    with installed(FakeNvmlLib([h100_sxm(0)], init_error="NO_PERMISSION")) as nvml:
        res = probe_pcie_load("/venv/bin/python", _runner(LOADED), _driver(), nvml=nvml, timeout_s=30.0)
    assert res.status == ProbeStatus.FAILED and "NO_PERMISSION" in res.reason


def test_bus_key_matches_nvml_torch_and_xid_forms():
    assert bus_key("00000000:3B:00.0") == bus_key("0000:3b:00") == bus_key("3b:00.0") == "0000:3b:00"


# --------------------------------------------------------------------------- pcie.link with under-load readings


def _pcie(facts, compat):
    (res,) = run_checks(facts, compat, [c for c in pcie.CHECKS if c.id == "pcie.link"])
    return res


def test_pcie_gen_under_load_at_max_passes_despite_idle_gen1(compat):
    g = dataclasses.replace(_driver().gpus[0], pcie_gen_under_load=5, pcie_width_under_load=16)
    res = _pcie(Facts(driver=dataclasses.replace(_driver(), gpus=[g])), compat)
    assert (res.status, res.findings) == (CheckStatus.PASSED, [])


def test_pcie_gen_under_load_below_max_is_a_fault(compat):
    g = dataclasses.replace(_driver().gpus[0], pcie_gen_under_load=3, pcie_width_under_load=8)
    res = _pcie(Facts(driver=dataclasses.replace(_driver(), gpus=[g])), compat)
    got = {f.code: f for f in res.findings}
    gen, width = got["pcie.link/gen"], got["pcie.link/width"]
    assert (gen.category, gen.severity) == ("PCIE_LINK_DEGRADED", Severity.WARNING)
    assert "GPU 0 (NVIDIA H100 80GB HBM3): Gen3 of Gen5 under load (--load-pcie)" in gen.summary
    assert gen.evidence[0].path == "driver.gpus[0].pcie_gen_under_load" and gen.evidence[0].value == 3
    assert width.evidence[0].path == "driver.gpus[0].pcie_width_under_load"


def test_pcie_idle_without_load_says_how_to_verify(compat):
    res = _pcie(Facts(driver=_driver()), compat)
    (f,) = res.findings
    assert (f.code, f.severity) == ("pcie.link/gen-idle", Severity.INFO)
    assert f.fix.commands[0] == "envdoctor --load-pcie --only pcie.link"


def test_cli_load_pcie_on_this_machine_skips_cleanly(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "collect", "--load-pcie", "--no-torch",
                           "--python", sys.executable, "-o", str(tmp_path / "s.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads((tmp_path / "s.json").read_text())
    run = next(p for p in facts["probes"] if p["name"] == "pcie_load")
    if facts["driver"]["status"] != "ok":
        assert run["status"] == "skipped" and run["reason"].startswith("no GPU")
    assert facts["driver"]["kernel_log_readable"] in (True, False)


def test_payload_pcie_load_task_without_torch_says_so():
    from envdoctor.probes.python_env import payload_path

    proc = subprocess.run([sys.executable, str(payload_path()), "--task", "pcie-load", "--seconds", "0.1"],
                          capture_output=True, text=True, timeout=120)
    env = json.loads(proc.stdout.strip().splitlines()[-1])
    assert env["ok"] is True and env["task"] == "pcie-load"
    res = env["result"]
    if not res["ran"]:  # no torch or no CUDA here: the reason names which
        assert "torch" in res["reason"]
