"""A real `envdoctor collect` of the development container (tests/fixtures/SOURCES.md), judged end to end."""

from __future__ import annotations

import json
import subprocess
import sys

from envdoctor.model.facts import Facts, ProbeStatus
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

SNAPSHOT = FIXTURES / "snapshots" / "dev-container-no-driver.json"


def _facts() -> Facts:
    return Facts.from_json(SNAPSHOT.read_text())


def test_the_facts_are_those_of_a_container_without_nvidia_hardware():
    f = _facts()
    assert f.origin == "live" and f.host.hostname == "<redacted>"
    assert f.driver.status == ProbeStatus.ABSENT and f.driver.nvml_error == "LIBRARY_NOT_FOUND"
    assert f.topology.nvidia_pci_devices == []  # sysfs readable, no vendor 0x10de device
    assert f.host.container is not None and f.host.container.runtime == "docker"
    assert f.toolkits.on_path is not None and f.toolkits.on_path.version == "13.0"
    (py,) = f.pythons
    assert py.status == ProbeStatus.OK and py.torch is not None
    assert py.torch.version == "2.14.1+cu130" and py.torch.cuda == "13.0" and py.torch.cuda_available is False
    torch_pkg = next(p for p in py.packages if p.name == "torch")
    # the variant judged on envdoctor's side from the payload's evidence (torch/version.py, the linkage)
    assert torch_pkg.variant == "cu130" and torch_pkg.variant_evidence.startswith("torch/version.py")


def test_judged_a_cuda_torch_on_a_gpu_less_machine_is_fine_and_says_so():
    report = judge(_facts())
    by_id = {c.id: c for c in report.checks}
    assert not [c.id for c in report.checks if c.status == "errored"]
    problems = [f for f in report.findings if f.severity in ("error", "warning")]
    assert problems == []
    (hw,) = by_id["driver.hardware"].findings
    assert (hw.code, hw.severity, hw.category) == ("driver.hardware/none", "info", "HEALTHY")
    assert "2.14.1+cu130" in hw.summary
    # no GPU: the driver and GPU checks are skipped with a reason, not passed
    for cid in ("driver.present", "driver.cuda-compat", "torch.gpu-arch", "gpu.throttle", "host.cpu"):
        assert by_id[cid].status == "skipped" and by_id[cid].reason, cid
    for cid in ("torch.import", "torch.interpreter", "packages.cuda-variant", "toolchain.nvcc-torch"):
        assert by_id[cid].status == "passed", cid


def test_cli_check_on_the_snapshot_exits_0_with_json():
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--facts", str(SNAPSHOT), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {f["code"] for f in out["findings"]} == {"driver.hardware/none", "storage.data-path/virtual-rotational"}
