"""Skip reasons that name the cause, and no low-space warning on pseudo filesystems."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.facts import DataPath, ProbeStatus, PythonEnv, Storage
from envdoctor.findings import CheckStatus
from envdoctor.services.collect import judge
from tests import machines as m


def _result(facts, check_id):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def test_skip_reason_names_a_failed_interpreter_probe():
    f = replace(m.healthy_a100(), pythons=[PythonEnv(status=ProbeStatus.FAILED, reason="timed out after 60 s")])
    res = _result(f, "packages.cuda-variant")
    assert res.status == CheckStatus.SKIPPED and "could not be inspected" in res.reason and "60 s" in res.reason


def test_nvcc_without_version_is_not_called_missing():
    f = m.with_nvcc(m.healthy_a100(), "12.1", "12.1.105")
    f = replace(f, toolkits=replace(f.toolkits, on_path=replace(f.toolkits.on_path, version=None)))
    res = _result(f, "toolchain.host-compiler")
    assert res.status == CheckStatus.SKIPPED and "did not tell its version" in res.reason


def test_pseudo_filesystem_has_no_low_space_warning():
    proc = DataPath(path="/proc", status=ProbeStatus.OK, exists=True, fstype="proc", kind="unknown",
                    size_bytes=0, free_bytes=0, mount_point="/proc")
    f = replace(m.healthy_a100(), storage=Storage(status=ProbeStatus.OK, paths=[proc]))
    assert not [x for x in judge(f).findings if x.code == "storage.data-path/low-free-space"]
