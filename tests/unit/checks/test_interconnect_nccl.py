"""interconnect_nccl's check: nvidia_peermem where InfiniBand is present."""

from __future__ import annotations

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


def test_peermem_missing_with_infiniband(compat):
    f = with_host(healthy(), kernel_modules=["nvidia", "nvidia_uvm", "mlx5_core"])
    x = finding(one(f, compat, "interconnect.peermem"), "interconnect.peermem/not-loaded")
    assert (x.category, x.severity) == ("INTERCONNECT", Severity.WARNING)
    assert "nvidia_peermem is not loaded: GPUDirect RDMA is off" in x.summary
    assert {e.path: e.value for e in x.evidence}["host.kernel_modules"] == ["mlx5_core", "nvidia", "nvidia_uvm"]
    assert "sudo modprobe nvidia_peermem" in x.fix.commands
    assert one(healthy(), compat, "interconnect.peermem").findings == []
    assert one(with_host(healthy(), infiniband_devices=None), compat, "interconnect.peermem").status == CheckStatus.SKIPPED
