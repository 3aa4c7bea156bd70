"""interconnect_nccl's check: nvidia_peermem where InfiniBand is present."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.findings import CheckStatus, Severity
from tests.unit.checks.health_facts import (
    finding,
    healthy,
    one,
    with_host,
)


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _driver(f, **kw):
    return dataclasses.replace(f, driver=dataclasses.replace(f.driver, **kw))


def test_peermem_missing_with_infiniband(compat):
    # the proprietary kernel module: no DMA-BUF (NVIDIA GPU Operator docs: DMA-BUF needs the open kernel module)
    f = _driver(with_host(healthy(), kernel_modules=["nvidia", "nvidia_uvm", "mlx5_core"]), kernel_module_open=False)
    x = finding(one(f, compat, "interconnect.peermem"), "interconnect.peermem/not-loaded")
    assert (x.category, x.severity) == ("INTERCONNECT", Severity.WARNING)
    assert "nvidia_peermem is not loaded: GPUDirect RDMA is off" in x.summary
    assert {e.path: e.value for e in x.evidence}["host.kernel_modules"] == ["mlx5_core", "nvidia", "nvidia_uvm"]
    assert "sudo modprobe nvidia_peermem" in x.fix.commands
    assert one(healthy(), compat, "interconnect.peermem").findings == []
    assert one(with_host(healthy(), infiniband_devices=None), compat, "interconnect.peermem").status == CheckStatus.SKIPPED


def test_peermem_is_not_needed_where_dma_buf_is_usable(compat):
    # issue 39: NVIDIA recommends DMA-BUF over nvidia-peermem (GPU Operator, "GPUDirect RDMA and GPUDirect
    # Storage"): open kernel module, branch 535+, Linux 5.12+, Turing+ GPUs; then a missing nvidia_peermem is a note
    base = with_host(healthy(), kernel_modules=["nvidia", "nvidia_uvm", "mlx5_core"], kernel="6.8.0-49-generic")
    x = finding(one(_driver(base, kernel_module_open=True), compat, "interconnect.peermem"),
                "interconnect.peermem/dmabuf")
    assert x.severity == Severity.INFO and "through DMA-BUF" in x.summary
    # an old kernel: DMA-BUF is not there, the warning stays and says what DMA-BUF lacks
    old = with_host(_driver(base, kernel_module_open=True), kernel="5.4.0-150-generic")
    x = finding(one(old, compat, "interconnect.peermem"), "interconnect.peermem/not-loaded")
    assert x.severity == Severity.WARNING and "Linux 5.12 or later (this is 5.4.0-150-generic)" in x.detail
    # the module's kind unknown (an older snapshot): a note that says what would settle it, never a warning
    x = finding(one(base, compat, "interconnect.peermem"), "interconnect.peermem/not-loaded-unknown")
    assert x.severity == Severity.INFO and "whether the driver is the open kernel module" in x.summary


def test_the_open_kernel_module_is_read_from_proc():
    from envdoctor.parsers.proc_driver import parse_proc_driver_open

    assert parse_proc_driver_open("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release "
                                  "Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 27 08:27:41 UTC 2025\n") is True
    assert parse_proc_driver_open("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 "
                                  "UTC 2024\nGCC version:  gcc version 12.2.0\n") is False
    assert parse_proc_driver_open("GCC version: 12\n") is None
