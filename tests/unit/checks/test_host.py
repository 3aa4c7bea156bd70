"""host.* (envdoctor/checks/host.py), /dev/shm here: DataLoader workers pass batches through it, and a container
gets 64 MB unless told otherwise. A large one passes, a docker container's default is a warning with the docker
flags, a Kubernetes pod is told about the memory-backed emptyDir, and unknown sizes are skipped. The CPU, RAM and
NUMA rules per GPU class: tests/unit/checks/test_health.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.compat.health import health_table
from envdoctor.model.facts import Container, Facts, Host, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m

MIB = 2**20


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _shm(size, runtime=None, **host) -> Facts:
    return replace(m.healthy_a100(), host=m.host(shm_total_bytes=size, container=Container(runtime=runtime), **host))


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "host.shm"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_a_large_dev_shm_passes(compat):
    assert _run(_shm(64 * 1024 * MIB), compat).status == CheckStatus.PASSED


def test_a_docker_containers_64_mb_is_a_warning_with_the_docker_flags(compat):
    floor = health_table(compat).threshold("shm_min_bytes")
    res = _run(_shm(64 * MIB, "docker"), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("host.shm/too-small", "SHM_TOO_SMALL", Severity.WARNING)
    assert f.summary == (f"/dev/shm is 64 MiB (below {floor / MIB:.0f} MiB); docker containers get 64 MB unless "
                         "told otherwise")
    (ev,) = f.evidence
    assert (ev.path, ev.value, ev.expected) == ("host.shm_total_bytes", 64 * MIB, f">= {int(floor)}")
    assert ev.source == "compat health.json thresholds.shm_min_bytes"
    assert f.fix.commands == ["docker run --shm-size=16g ...", "docker run --ipc=host ..."]


def test_a_kubernetes_pod_and_a_bare_host_get_their_own_fix(compat):
    (pod,) = _run(_shm(64 * MIB, "kubernetes"), compat).findings
    assert any("emptyDir" in c and "Memory" in c for c in pod.fix.commands)
    (bare,) = _run(_shm(64 * MIB), compat).findings
    assert bare.fix.commands == ["sudo mount -o remount,size=16G /dev/shm"]


@pytest.mark.parametrize("facts, reason", [
    (_shm(None), "/dev/shm size unknown: the host probe could not read it"),
    (_shm(64 * MIB, os="Windows"), "/dev/shm is a Linux thing (this is Windows)"),
    (replace(m.healthy_a100(), host=Host(status=ProbeStatus.FAILED, reason="os-release unreadable")),
     "/dev/shm size unknown (probe failed: os-release unreadable)"),
])
def test_unknown_or_not_linux_is_skipped(facts, reason, compat):
    res = _run(facts, compat)
    assert res.status == CheckStatus.SKIPPED and res.reason == reason
