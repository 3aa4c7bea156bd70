"""envdoctor.preflight() and PreflightError: importable without side effects, raising with the readable report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MIXED_VARIANT_CHECKS


def test_import_is_cheap_and_side_effect_free() -> None:
    code = ("import sys; import envdoctor; before = set(sys.modules); "
            "f = envdoctor.preflight; e = envdoctor.PreflightError; "
            "import json; print(json.dumps({'torch': 'torch' in sys.modules, 'pynvml': 'pynvml' in sys.modules, "
            "'requests': 'requests' in sys.modules, 'lazy': sorted(m for m in before if m.startswith('envdoctor')), "
            "'callable': callable(f), 'exc': issubclass(e, Exception)}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                                    check=True).stdout)
    assert out == {"torch": False, "pynvml": False, "requests": False, "lazy": ["envdoctor"], "callable": True,
                   "exc": True}


def test_bad_arguments_are_value_errors(tmp_path: Path, monkeypatch) -> None:
    import envdoctor

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="torch>>>=x"):
        envdoctor.preflight(require="torch>>>=x", config=False)
    with pytest.raises(ValueError, match="not in the matrix"):
        envdoctor.preflight(target_gpus=["Voodoo 5"], config=False)
    (tmp_path / "envdoctor.toml").write_text("require = [\n")
    with pytest.raises(envdoctor.PreflightError, match="invalid TOML"):  # a broken project file: not met
        envdoctor.preflight()


@pytest.mark.slow
def test_preflight_on_this_gpu_less_machine(cpu_venv, tmp_path: Path, monkeypatch) -> None:
    import envdoctor

    monkeypatch.chdir(tmp_path)
    # ignore: the conftest venv may pair the +cpu torch with a CUDA torchvision (CUDA_VARIANT_MIXED, real)
    report = envdoctor.preflight(require=["torch>=2.4"], python=cpu_venv.python, config=False,
                                 ignore=list(MIXED_VARIANT_CHECKS))
    assert not report.has_at_least("error")
    assert any(c.id == "requirements.torch" and c.status == "passed" for c in report.checks)
    with pytest.raises(envdoctor.PreflightError) as e:
        envdoctor.preflight(target_gpus=["H100"], python=cpu_venv.python, config=False)
    err = e.value
    assert err.report is not None and err.report.has_at_least("error")
    text = str(err)
    assert "Target GPU H100" in text and "REQUIREMENT_UNMET" in text and "Fix:" in text
    # the same from the project file
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nrequire = ["torch>=3"]\n')
    with pytest.raises(envdoctor.PreflightError, match="'torch>=3'"):
        envdoctor.preflight(python=cpu_venv.python)
    # static=True is `envdoctor assert` as a call: the declared fleet judged, no live probes
    with pytest.raises(envdoctor.PreflightError, match="TORCH_CPU_ONLY_BUILD"):
        envdoctor.preflight(target_gpus="H100", target_driver="535.104.05", python=cpu_venv.python,
                            static=True, config=False)
    assert "torch" not in sys.modules


def _driverless(nvidia_pci_devices, descriptions=()):
    from envdoctor.model.facts import Driver, Facts, Host, PcieLink, Topology
    from tests.machines import torch_env

    # the judged interpreter, with a CPU torch: a box with no facts at all would be "nothing could be judged"
    return Facts(driver=Driver(status="absent", reason="NVML library (libnvidia-ml.so.1) not found"),
                 host=Host(status="ok", os="Linux"), pythons=[torch_env("2.13.0+cpu", None, None, python="3.11.7")],
                 topology=Topology(status="ok", nvidia_pci_devices=nvidia_pci_devices,
                                   pcie_links=[PcieLink(bdf="0000:17:00.0", description=d) for d in descriptions]),
                 collected_at="2026-12-01T00:00:00Z")


@pytest.mark.parametrize("devices,descriptions", [
    (["0000:17:00.0 0x0302", "0000:17:00.1 0x0403"], ()),  # sysfs: vendor 0x10de, no driver bound
    (None, ("3D controller: [10de:2330]",)),  # sysfs-built description: the ids only, no word "nvidia"
])
def test_a_driverless_gpu_box_fails_preflight(monkeypatch, tmp_path, devices, descriptions):
    import envdoctor
    import envdoctor.services.collect as app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(app, "collect", lambda *a, **k: _driverless(devices, descriptions))
    with pytest.raises(envdoctor.PreflightError) as e:
        envdoctor.preflight(config=False)
    assert any(f.code.startswith("driver.present") and f.severity == "error" for f in e.value.report.findings)


def test_a_cpu_box_passes_preflight(monkeypatch, tmp_path):
    import envdoctor
    import envdoctor.services.collect as app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(app, "collect", lambda *a, **k: _driverless([]))
    report = envdoctor.preflight(config=False)
    assert not report.has_at_least("error")


def test_the_driverless_a100_test_machine_fails_preflight(monkeypatch, tmp_path):
    """tests.machines.driverless_a100: vendor 0x10de in sysfs, "[10de:20b2]" with no word "NVIDIA", no driver. It is
    judged as a GPU machine (the GPU and driver checks run), not as a CPU box judged as a build."""
    import envdoctor
    import envdoctor.services.collect as app
    from tests.machines import driverless_a100

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(app, "collect", lambda *a, **k: driverless_a100())
    with pytest.raises(envdoctor.PreflightError) as e:
        envdoctor.preflight(config=False)
    report = e.value.report
    ids = {c.id for c in report.checks}
    assert {"driver.hardware", "driver.present", "gpu.throttle", "torch.cuda-build"} <= ids
    assert any(f.code == "driver.present/absent" and f.severity == "error" for f in report.findings)
    assert "driver.present/absent" in str(e.value)
