"""--load-pcie: only GPUs that carried the load count, devices are matched by PCI bus id, one bad device stops nothing."""

from __future__ import annotations

import contextlib
import json
import sys
import types
from types import SimpleNamespace

from envdoctor.model.facts import Driver, Gpu, ProbeStatus
from envdoctor.probes.pcie_load import probe_pcie_load
from envdoctor.probes.python_env import payload_argv
from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed, pci_info
from tests.fakes.runner import FakeRunner


def _driver() -> Driver:
    return Driver(status="ok", gpus=[Gpu(index=i, pci_bus_id=f"00000000:{b}:00.0") for i, b in enumerate(("19", "3B"))])


def _run(result: dict):
    env = json.dumps({"envdoctor_payload": 1, "task": "pcie-load", "ok": True, "error": None, "stage": None,
                      "timed_out": False, "result": result}) + "\n"
    runner = FakeRunner({tuple(payload_argv("/venv/bin/python", "pcie-load", ["--seconds", "1.5"], 30.0)): env})
    # NVML sees both GPUs: the hidden one idles at Gen1
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetPciInfo_v3=pci_info("00000000:19:00.0", 0x233010DE)),
                       h100_sxm(1, nvmlDeviceGetPciInfo_v3=pci_info("00000000:3B:00.0", 0x233010DE),
                                nvmlDeviceGetCurrPcieLinkGeneration=1)])
    with installed(lib) as nvml:
        return probe_pcie_load("/venv/bin/python", runner, _driver(), nvml=nvml, timeout_s=30.0)


def test_gpu_hidden_by_cuda_visible_devices_gets_no_reading():
    # CUDA_VISIBLE_DEVICES=1 style: torch sees one device, and it is the NVML GPU at 0000:19:00
    res = _run({"ran": True, "seconds": 1.5, "devices": [
        {"index": 0, "name": "H100", "pci_bus_id": "0000:19:00", "bytes": 1 << 34, "gb_per_s": 50.0}]})
    assert res.status == ProbeStatus.OK and res.readings == {"0000:19:00": (5, 16)}
    assert "0000:19:00 50.0 GB/s" in res.reason


def test_without_bus_ids_a_partial_load_keeps_no_reading():
    # before: with no bus id from torch every NVML GPU's reading was kept, the hidden one at Gen1 "under load"
    res = _run({"ran": True, "seconds": 1.5, "devices": [
        {"index": 0, "name": "H100", "pci_bus_id": None, "bytes": 1 << 34, "gb_per_s": 50.0}]})
    assert res.status == ProbeStatus.SKIPPED and res.readings == {}
    assert "1 of 2 GPU(s) carried the load" in res.reason


def test_a_device_that_failed_is_not_counted_and_is_named():
    res = _run({"ran": True, "seconds": 1.5, "devices": [
        {"index": 0, "name": "H100", "pci_bus_id": "0000:19:00", "bytes": 1 << 34, "gb_per_s": 50.0},
        {"index": 1, "name": "H100", "pci_bus_id": "0000:3b:00", "bytes": 0, "gb_per_s": None,
         "error": "RuntimeError: CUDA error: out of memory"}]})
    assert res.readings == {"0000:19:00": (5, 16)}
    assert "no load on 0000:3b:00: RuntimeError: CUDA error: out of memory" in res.reason


class _FakeTensor:
    def __init__(self, device=None, fail=False):
        self.device, self.fail = device, fail

    def pin_memory(self):
        return self

    def copy_(self, other, non_blocking=False):
        return self


def _fake_torch(bad: int) -> types.ModuleType:
    """A torch stand-in with two CUDA devices (PCI order reversed against CUDA order); device ``bad`` fails."""
    torch = types.ModuleType("torch")
    torch.__version__ = "2.14.1+cu130"
    torch.version = SimpleNamespace(cuda="13.0")
    torch.uint8 = "uint8"
    buses = {0: 0x3B, 1: 0x19}  # FASTEST_FIRST: cuda:0 is the GPU at 3b:00, not NVML's GPU 0

    def props(i):
        return SimpleNamespace(name="H100", pci_domain_id=0, pci_bus_id=buses[i], pci_device_id=0)

    def empty(n, dtype=None, device=None):
        if device == f"cuda:{bad}":
            raise RuntimeError("CUDA error: out of memory")
        return _FakeTensor(device)

    torch.empty = empty
    torch.cuda = SimpleNamespace(is_available=lambda: True, device_count=lambda: 2, get_device_properties=props,
                                 Stream=lambda device=None: SimpleNamespace(synchronize=lambda: None),
                                 stream=lambda s: contextlib.nullcontext())
    return torch


def test_payload_guards_each_device_and_names_it_by_bus_id(monkeypatch):
    from envdoctor._payload import common, tasks

    monkeypatch.setitem(sys.modules, "torch", _fake_torch(bad=1))
    state = common.State(out_fd=1)
    state.envelope["result"] = {}
    result = tasks.task_pcie_load(["--seconds", "0.05", "--mib", "1"], state)
    assert result["ran"] is True
    d0, d1 = result["devices"]
    assert d0["pci_bus_id"] == "0000:3b:00" and d0["bytes"] > 0 and "error" not in d0
    assert d1["pci_bus_id"] == "0000:19:00" and d1["bytes"] == 0 and "out of memory" in d1["error"]
