"""A machine the paste says has no NVIDIA GPU: "Torch not compiled with CUDA enabled" is code asking for CUDA there,
not a broken install (issue 42: a healthy report got an error and the advice to reinstall torch from the CUDA index).
The reader's rule is a subject's sentence about the machine, or a Mac; an error's own "No CUDA GPUs are available"
or "no GPU is detected" (a GPU machine that lost it) is not one."""

from __future__ import annotations

import pytest

from envdoctor.services.diagnose import diagnose_report

ERROR = "AssertionError: Torch not compiled with CUDA enabled"


def _by_code(text: str, compat) -> dict:
    return {f.code: f for f in diagnose_report([text], compat).all_findings}


@pytest.mark.parametrize("said", [
    # SparkAudio/Spark-TTS#87, as pasted
    "Trying to run on old HP rack mounted server with plenty of CPU and ram but no GPU really to speak of, Help?!?",
    "I don't have a GPU, only an i7.",
    "This is a CPU-only server.",
    "Running it on my MacBook Pro (Apple M2).",
])
def test_a_machine_said_to_have_no_nvidia_gpu_gets_the_cpu_advice_not_a_reinstall(said, compat) -> None:
    f = _by_code(f"{ERROR}\n\n{said}\n", compat)["messages.signature/torch-not-compiled-with-cuda"]
    assert f.severity == "warning" and f.category == "NOTE", (f.severity, f.category)
    assert "device = torch.device('cpu')" in f.fix.summary and "CUDA index" not in f.fix.summary


@pytest.mark.parametrize("said", [
    "",
    "I have a 3090 but no GPU is detected.",
    "RuntimeError: No CUDA GPUs are available",
    "It does not have any GPU available according to torch.",
    "nvidia-smi shows my RTX 4090 fine.",
])
def test_otherwise_the_cpu_only_build_stays_the_error(said, compat) -> None:
    f = _by_code(f"{ERROR}\n\n{said}\n", compat)["messages.signature/torch-not-compiled-with-cuda"]
    assert f.severity == "error" and f.category == "TORCH_CPU_ONLY_BUILD", (said, f.severity, f.category)


MAC_COLLECT_ENV = """PyTorch version: 2.3.0
Is debug build: False
CUDA used to build PyTorch: None
ROCM used to build PyTorch: N/A

OS: macOS 14.5 (arm64)
GCC version: Could not collect
Python version: 3.11.7
Is CUDA available: False
"""


def test_a_mac_is_never_told_to_reinstall_torch_from_the_cuda_index(compat) -> None:
    # macOS has no CUDA build of torch: neither the message nor "CUDA unavailable" may send the reporter to one
    found = diagnose_report([f"{ERROR}\n\n{MAC_COLLECT_ENV}"], compat).all_findings
    assert not [f for f in found if f.severity in ("warning", "error") and f.category == "TORCH_CPU_ONLY_BUILD"], \
        [(f.code, f.severity) for f in found]
    assert any(f.code == "messages.signature/torch-not-compiled-with-cuda" and f.category == "NOTE" for f in found)
    quiet = diagnose_report([MAC_COLLECT_ENV], compat).all_findings  # is_available False on a Mac: as it should be
    assert not [f for f in quiet if f.severity in ("warning", "error")], [(f.code, f.severity) for f in quiet]


def test_a_linux_cpu_build_without_a_gpu_list_is_still_a_lead(compat) -> None:
    linux = MAC_COLLECT_ENV.replace("macOS 14.5 (arm64)", "Ubuntu 22.04.4 LTS (x86_64)")
    codes = {f.code for f in diagnose_report([linux], compat).all_findings if f.severity == "warning"}
    assert "diagnose.cuda-unavailable/cpu-build" in codes, codes
