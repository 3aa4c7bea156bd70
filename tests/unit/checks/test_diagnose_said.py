"""checks/diagnose_said.py: what a report says of the GPU in a container, on a Kubernetes node, under WSL, or of the
driver's kernel module (issue 42, round 15, helper words). A failing, a passing and a skipped case per check; the
corpus excerpts are in tests/unit/diagnose/test_words_round15.py."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _result(text: str, check_id: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == check_id)


SMI = ("| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |\n"
       "|   0  NVIDIA GeForce RTX 3090     Off | 00000000:01:00.0 Off |                  N/A |\n")


# ---- diagnose.container-gpu-said

def test_a_container_said_not_to_reach_the_gpu_fails(compat) -> None:
    r = _result("After the update the container cant access GPU any more.\n", "diagnose.container-gpu-said", compat)
    (f,) = r.findings
    assert f.code == "diagnose.container-gpu-said/words" and f.category == "CONTAINER_NO_GPU_RUNTIME"
    assert any(e.path == "paste.container_gpu_said" for e in f.evidence)
    assert any("--gpus" in c for c in f.fix.commands)


def test_a_container_started_with_the_gpu_passes(compat) -> None:
    r = _result("docker run --gpus all --rm -it myimage bash\nThe container cant access GPU.\n",
                "diagnose.container-gpu-said", compat)
    assert r.findings == [] and r.status not in ("skipped", "errored"), r


def test_a_node_capacity_without_gpus_fails_only_beside_a_gpu(compat) -> None:
    capacity = "Capacity:\n  cpu:   48\n  memory:   263603720Ki\n  pods:   110\nAllocatable:\n"
    r = _result(capacity + SMI, "diagnose.container-gpu-said", compat)
    (f,) = r.findings
    assert f.code == "diagnose.container-gpu-said/node-capacity"
    r = _result("kubectl describe node cpu-1\n" + capacity, "diagnose.container-gpu-said", compat)
    assert r.findings == [], r


def test_container_words_skip_without_the_words(compat) -> None:
    r = _result("docker run --rm -it myimage bash\n" + SMI, "diagnose.container-gpu-said", compat)
    assert r.status == "skipped" and "does not say" in (r.reason or ""), r


# ---- diagnose.wsl-gpu-said

def test_wsl_said_not_to_see_the_gpu_fails(compat) -> None:
    r = _result("WSL2 cannot see my GPU, nvidia-smi fails.\n", "diagnose.wsl-gpu-said", compat)
    (f,) = r.findings
    assert f.code == "diagnose.wsl-gpu-said/words" and f.category == "WSL_SPECIFIC"


def test_wsl_words_beside_a_working_nvidia_smi_pass(compat) -> None:
    r = _result("WSL2 cannot see my GPU, they said; here it does:\n" + SMI, "diagnose.wsl-gpu-said", compat)
    assert r.findings == [] and r.status not in ("skipped", "errored"), r


def test_wsl_skips_without_the_words(compat) -> None:
    r = _result("I use WSL2 on Windows 11.\n" + SMI, "diagnose.wsl-gpu-said", compat)
    assert r.status == "skipped" and "does not say" in (r.reason or ""), r


# ---- diagnose.module-said

def test_dkms_by_hand_after_a_kernel_upgrade_fails(compat) -> None:
    r = _result("I have to run `sudo dkms install nvidia/550.54.15` after a kernel upgrade every time.\n",
                "diagnose.module-said", compat)
    (f,) = r.findings
    assert f.code == "diagnose.module-said/not-loaded" and f.category == "NO_NVIDIA_DRIVER"
    assert "dkms status" in f.fix.commands


def test_the_module_words_beside_a_driver_that_answers_pass(compat) -> None:
    r = _result("I have to run `sudo dkms install nvidia/550.54.15` after a kernel upgrade every time.\n" + SMI,
                "diagnose.module-said", compat)
    assert r.findings == [] and r.status not in ("skipped", "errored"), r


def test_module_skips_without_the_words_or_without_nvidia(compat) -> None:
    for text in ("The NVIDIA driver works.\n" + SMI,
                 "I have to run `sudo dkms install vboxhost/7.0` after a kernel upgrade every time.\n"
                 "RuntimeError: VirtualBox kernel driver not installed\n"):
        r = _result(text, "diagnose.module-said", compat)
        assert r.status == "skipped" and "says nothing" in (r.reason or ""), r
