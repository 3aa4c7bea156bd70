"""The kernel refusing an unsigned NVIDIA module under Secure Boot (module signing enforced: EKEYREJECTED "Key was
rejected by service", ENOKEY "Required key not available") is the missing driver with its own fix: enroll the
signing key or use signed packages. The message is read for the nvidia modules only (other out-of-tree modules give
the same refusal; they are not the GPU's driver)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report

LINES = [
    "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",  # ubuntu-003 (corpus)
    "modprobe: ERROR: could not insert 'nvidia_uvm': Required key not available",
    "insmod: ERROR: could not insert module /lib/modules/6.8.0-35-generic/updates/dkms/nvidia.ko: Key was rejected by "
    "service",
    "Apr 22 18:10:16 host systemd-modules-load[602]: Failed to insert module 'nvidia_drm': Key was rejected by service",
]


@pytest.mark.parametrize("line", LINES)
def test_the_refused_nvidia_module_is_secure_boot(line):
    report = diagnose_report([line + "\n"], load_compat())
    f = next(f for f in report.problems if f.category == "NO_NVIDIA_DRIVER")
    assert f.code == "messages.signature/nvidia-module-key-rejected" and f.severity == "error"
    assert "mokutil --import" in f.fix.summary
    assert not [g for g in report.problems if g.category == "UNRECOGNISED_ERROR"]


def test_another_module_refused_is_not_the_gpu_driver():
    line = "modprobe: ERROR: could not insert 'px1800kbd': Key was rejected by service\n"
    report = diagnose_report([line], load_compat())
    assert not [f for f in report.problems if f.category == "NO_NVIDIA_DRIVER"]
