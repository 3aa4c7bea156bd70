"""host.cgroup-memory: a cgroup memory limit below the GPUs' total memory (envdoctor/checks/host_cgroup.py)."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Driver, Facts, Gpu, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m

GiB = m.GiB


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _h100x8(**host) -> Facts:
    # 8 x H100 SXM (80 GiB each: 640 GiB of GPU memory) on a 2 TiB machine, as on an HGX H100 node
    gpus = [m.gpu(i, "NVIDIA H100 80GB HBM3", "9.0") for i in range(8)]
    base = dict(memory_total_bytes=2048 * GiB, cgroup_version=2, cgroup_memory_limit_bytes=None)
    base.update(host)
    return m.facts(m.driver("550.54.15", "12.4", gpus), [], host=m.host(**base))


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "host.cgroup-memory"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_a_limit_below_the_gpu_memory_is_a_warning_with_its_numbers(compat):
    res = _run(_h100x8(cgroup_memory_limit_bytes=256 * GiB), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("host.cgroup-memory/below-gpu-memory", "HOST_MEMORY_LOW",
                                                Severity.WARNING)
    assert "256.0 GiB" in f.summary and "8 GPU(s) (640 GiB)" in f.summary and "2048 GiB" in f.summary
    ev = {e.path: e for e in f.evidence}
    assert ev["host.cgroup_memory_limit_bytes"].value == 256 * GiB
    assert ev["host.cgroup_memory_limit_bytes"].expected == f">= {640 * GiB}"
    assert any("--memory" in c for c in f.fix.commands) and any("--mem" in c for c in f.fix.commands)


@pytest.mark.parametrize("limit", [None, 640 * GiB, 1024 * GiB, 4096 * GiB], ids=["none", "equal", "above", "over-physical"])
def test_no_limit_or_one_that_holds_the_gpus_passes(compat, limit):
    res = _run(_h100x8(cgroup_memory_limit_bytes=limit), compat)
    assert (res.status, res.findings) == (CheckStatus.PASSED, [])


def test_gpu_memory_from_the_model_when_the_driver_does_not_say(compat):
    # a pasted nvidia-smi without the memory column: the H100's 80 GB comes from the compat GPU table
    f = _h100x8(cgroup_memory_limit_bytes=64 * GiB)
    gpus = [dataclasses.replace(g, memory_total_bytes=None) for g in f.driver.gpus]
    res = _run(dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=gpus)), compat)
    assert res.status == CheckStatus.FAILED and "8 GPU(s)" in res.findings[0].summary


@pytest.mark.parametrize("facts, reason", [
    (lambda: _h100x8(cgroup_version=None), "no cgroup hierarchy"),
    (lambda: dataclasses.replace(_h100x8(), driver=Driver(status=ProbeStatus.ABSENT)), "no GPU"),
    (lambda: dataclasses.replace(_h100x8(), host=dataclasses.replace(m.host(), status=ProbeStatus.FAILED,
                                                                      reason="boom")), "probe failed"),
    (lambda: _h100x8(os="Windows"), "Linux"),
    (lambda: m.facts(m.driver("550.54.15", "12.4", [Gpu(index=0, name="Mystery GPU")]), [],
                     host=m.host(cgroup_version=2, cgroup_memory_limit_bytes=8 * GiB)), "GPU 0"),
], ids=["no-cgroup", "no-gpu", "host-unknown", "windows", "gpu-memory-unknown"])
def test_skipped_with_the_reason_when_a_fact_is_missing(compat, facts, reason):
    res = _run(facts(), compat)
    assert res.status == CheckStatus.SKIPPED and reason in res.reason and res.findings == []


def test_registered_after_the_other_host_checks_without_a_registry_edit():
    ids = [c.id for c in all_checks()]
    assert ids.index("host.cgroup-memory") == ids.index("host.numa") + 1
