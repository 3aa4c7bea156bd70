"""storage.data-path (envdoctor/checks/storage.py): the training data's filesystem and disk; a local NVMe path
passes, a network mount and a FUSE mount are findings with their evidence, an unprobed path is skipped."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import DataPath, Facts, ProbeStatus, Storage
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m

GiB = 2**30


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _with(*paths: DataPath, status: str = ProbeStatus.OK) -> Facts:
    return dataclasses.replace(m.healthy_a100(), storage=Storage(status=status, paths=list(paths)))


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "storage.data-path"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def _path(path="/data", **kw) -> DataPath:
    base = dict(status=ProbeStatus.OK, exists=True, mount_point="/data", fstype="ext4", kind="local",
                block_device="nvme0n1", rotational=False, transport="nvme", size_bytes=3800 * GiB,
                free_bytes=2000 * GiB)
    base.update(kw)
    return DataPath(path=path, **base)


def test_local_nvme_passes(compat):
    res = _run(_with(_path()), compat)
    assert res.status == CheckStatus.PASSED and res.findings == []


def test_an_nfs_mount_is_a_warning_with_the_copy_to_local_fix(compat):
    res = _run(_with(_path(fstype="nfs4", kind="network", mount_source="filer:/datasets", block_device=None,
                           transport=None, rotational=None)), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("storage.data-path/network", "SLOW_STORAGE", Severity.WARNING)
    assert f.summary == "/data is on /data (nfs4, filer:/datasets): a network filesystem (nfs4)"
    assert [(e.path, e.value) for e in f.evidence] == [("storage.paths[0].fstype", "nfs4"),
                                                       ("storage.paths[0].mount_source", "filer:/datasets")]
    assert f.fix.commands and "/data" in f.fix.commands[0]


def test_a_parallel_filesystem_is_only_a_note(compat):
    (f,) = _run(_with(_path(fstype="lustre", kind="network", mount_source="mgs@tcp:/fs")), compat).findings
    assert (f.code, f.severity) == ("storage.data-path/network", Severity.INFO)
    assert "a parallel filesystem (lustre)" in f.summary


def test_an_s3_fuse_mount_names_its_tool(compat):
    (f,) = _run(_with(_path(fstype="fuse.s3fs", kind="fuse", block_device=None)), compat).findings
    assert (f.code, f.category, f.severity) == ("storage.data-path/fuse", "SLOW_STORAGE", Severity.WARNING)
    assert f.summary.endswith(": a FUSE mount (s3fs (S3))")


@pytest.mark.parametrize("facts, reason", [
    (_with(status=ProbeStatus.SKIPPED), "data path storage unknown (probe skipped)"),
    (_with(DataPath(path="/data", status=ProbeStatus.FAILED, reason="statvfs timed out")),
     "data path storage unknown: no path was probed (/data: failed statvfs timed out)"),
])
def test_unprobed_storage_is_skipped_with_its_reason(facts, reason, compat):
    res = _run(facts, compat)
    assert res.status == CheckStatus.SKIPPED and res.reason == reason and res.not_applicable is None
