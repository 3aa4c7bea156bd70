"""Kinds built in the eighth session (issue 42), each tested on invented pastes in the shape of real reports."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _categories(text: str, compat):
    report = diagnose_report([text], compat)
    return {f.category for c in report.checks for f in c.findings if f.severity in ("warning", "error")}


@pytest.mark.parametrize("item", [
    "TensorFlow: 2.16.1 installed with pip",
    "- tf: 2.15",
    "tf.__version__ -> '2.12.0'",
    "1. TF version = 2.13",
])
def test_a_tensorflow_release_typed_as_a_setting_item(item, compat) -> None:
    """TensorFlow's release typed as a "key: value" item or printed by tf.__version__, on native Windows: the
    Windows package after 2.10 has no GPU build."""
    text = f"GPU not detected\nOS: Windows 11\n{item}\nprint(tf.config.list_physical_devices('GPU')) -> []\n"
    assert "FRAMEWORK_CPU_ONLY_BUILD" in _categories(text, compat)


@pytest.mark.parametrize("item", ["TensorFlow: 2.10.1", "tf: 2.16.1"])
def test_quiet_where_the_release_has_a_windows_gpu_build_or_the_host_is_linux(item, compat) -> None:
    os_line = "OS: Windows 10" if item.endswith("2.10.1") else "OS: Ubuntu 22.04"
    text = f"GPU not detected\n{os_line}\n{item}\n"
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in _categories(text, compat)


OLLAMA = ('time=2024-06-10T08:00:01.020Z level=INFO source=gpu.go:308 msg="Discovered GPU libraries: '
          '[/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15]"\n'
          'time=2024-06-10T08:00:01.030Z level=WARN source=gpu.go:562 msg="unknown error initializing cuda driver library" '
          'library=/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 error="cuda driver library init failure: {code}"\n'
          'time=2024-06-10T08:00:01.050Z level=INFO source=gpu.go:347 msg="no compatible GPUs were discovered"\n')


@pytest.mark.parametrize("code,category", [("999", "NO_GPU_VISIBLE"), ("100", "NO_GPU_VISIBLE"),
                                           ("46", "COMPUTE_MODE_RESTRICTED")])
def test_ollamas_init_failure_quotes_cuinits_status(code, category, compat) -> None:
    """Ollama's GPU discovery prints cuInit's CUresult as a number ("cuda driver library init failure: 999"): the
    status table reads it (999 after suspend/resume: the nvidia_uvm reload of Ollama's troubleshooting page)."""
    assert category in _categories(OLLAMA.format(code=code), compat)


def _q_section(name: str, header: str, lines: int) -> str:
    """``lines`` lines of a real `nvidia-smi -q` capture from its first ``header`` line, indentation kept."""
    text = (FIXTURES / "perf-throttle" / name).read_text().splitlines()
    start = next(i for i, line in enumerate(text) if line.strip() == header)
    return "\n".join(text[start:start + lines]) + "\n"


def test_a_q_excerpt_without_its_header_is_read(compat) -> None:
    """`nvidia-smi -q -d PERFORMANCE` cut to its reasons (a real H100 capture with HW Power Brake Slowdown
    active): read as the -q report's section, so the throttle check judges it."""
    text = ("Our H100 node trains 30% slower than the others:\n"
            + _q_section("h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt", "Clocks Event Reasons", 10))
    assert "GPU_THROTTLED" in _categories(text, compat)


def test_a_link_info_excerpt_narrow_and_full(compat) -> None:
    """`nvidia-smi -q | grep -A 9 "GPU Link Info"`: a real A40's full x16 link at idle Gen1 is no problem; the
    same section reading x1 of x16 is a narrowed link."""
    real = _q_section("a40-x10_550.127.05_nvidia-smi-q.txt", "GPU Link Info", 10)
    assert "PCIE_LINK_DEGRADED" not in _categories("Data loading is slow.\n" + real, compat)
    narrowed = real.replace("Current                   : 16x", "Current                   : 1x")
    assert narrowed != real
    assert "PCIE_LINK_DEGRADED" in _categories("Data loading is slow.\n" + narrowed, compat)


# ---- in view of rounds 23-25 (each kind from several reports; the pastes below are invented in their shape)


@pytest.mark.parametrize("text", [
    "After today's update kernel 6.8 breaks nvidia-driver-535, with 6.5 it works.\n",
    "Since the upgrade the nvidia drivers dont work on the newest kernel, nouveau is loaded instead.\n",
    "The new kernel wont load nvidia, it falls back to llvmpipe.\n",
    # a GPU named in a sentence says nothing of the driver: the words are still judged
    "The new kernel wont load nvidia.\nSystem is Fedora 41 on an Nvidia RTX 3080 with a 12700k\n",
    "kernel 6.14 and 6.14.1 doesn't work with nvidia drivers, I cannot install kernel headers for them\n",
])
def test_a_new_kernel_said_to_break_the_driver(text, compat) -> None:
    """The module is built per kernel; a kernel the driver is said not to work on means no module for it."""
    assert "NO_NVIDIA_DRIVER" in _categories(text, compat)


def test_a_kernel_sentence_without_nvidia_failing_is_quiet(compat) -> None:
    text = "torch 2.3.0\nI upgraded to kernel 6.8 and nvidia-smi works fine; training is slow though.\n"
    assert "NO_NVIDIA_DRIVER" not in _categories(text, compat)


def test_akmods_failed_build_log(compat) -> None:
    """akmods keeps <driver>-<release>-for-<kernel>.failed.log when the module did not build for that kernel."""
    text = ("nvidia stopped working after the update\n"
            "[570.86.16-2-for-6.13.2-200.fc41.x86_64.failed.log](https://example.invalid/files/1/log)\n")
    report = diagnose_report([text], compat)
    found = [f for c in report.checks for f in c.findings if f.severity in ("warning", "error")]
    assert any(f.code == "messages.signature/akmods-build-failed-log" and f.category == "NO_NVIDIA_DRIVER"
               for f in found)


@pytest.mark.parametrize("gpu,category", [
    ("RTX 4090", "THIRD_PARTY_EXTENSION_MISMATCH"),  # sm_89 has the capability: the wheel's build did not load
    ("GTX 1080 Ti", "GPU_ARCH_NOT_IN_TORCH_BUILD"),  # sm_61 is below SM89: the GPU cannot run those kernels
])
def test_sageattention_kernel_unavailable(gpu, category, compat) -> None:
    text = (f"I have an NVIDIA GeForce {gpu}.\n"
            "Error running sage attention: SM89 kernel is not available. Make sure you GPUs with compute "
            "capability 8.9., using pytorch attention instead.\n")
    cats = _categories(text, compat)
    assert category in cats and len(cats & {"THIRD_PARTY_EXTENSION_MISMATCH", "GPU_ARCH_NOT_IN_TORCH_BUILD"}) == 1


def test_a_compute_cap_said_short(compat) -> None:
    """"compute cap 75 ... compile time compute cap 80" (a Rust image's words) is the architecture family."""
    text = "Error: Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 86\n"
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in _categories(text, compat)


def test_flash_attention_capability_with_a_stray_word(compat) -> None:
    text = "WARNING: Could not import Flash Attention enabled models: GPU with CUDA is capability 7 5 is not supported\n"
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in _categories(text, compat)


@pytest.mark.parametrize("said", ["it fails due to no Nvidia GPU:", "I only have an AMD Radeon GPU, so:"])
def test_no_nvidia_driver_where_the_machine_has_no_nvidia_gpu(said, compat) -> None:
    """torch's "Found no NVIDIA driver" on a machine said to have no NVIDIA GPU is expected, not a missing driver."""
    text = (f"The container starts but {said}\n"
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
            "installed a driver from http://www.nvidia.com/Download/index.aspx\n")
    report = diagnose_report([text], compat)
    found = [f for c in report.checks for f in c.findings]
    assert not [f for f in found if f.severity == "error"]
    assert any(f.category == "NOTE" and f.code == "messages.signature/found-no-nvidia-driver" for f in found)


def test_torchs_cuda_initialisation_error_is_read(compat) -> None:
    """torch's words for cudaErrorInitializationError: a low warning with what settles it, not "not recognised"."""
    text = ("UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu. "
            "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n")
    cats = _categories(text, compat)
    assert "NO_GPU_VISIBLE" in cats and "UNRECOGNISED_ERROR" not in cats


# ---- in view of round 26


def test_a_cuda_named_that_is_the_drivers_ceiling_is_not_the_programs(compat) -> None:
    """"Is it compatible with cuda 11.4?" beside nvidia-smi's "CUDA Version: 11.4": the driver's ceiling said back,
    so the program's CUDA is unknown and driver 470 is judged against the newest major (too old)."""
    text = ("NVIDIA-SMI 470.256.02   Driver Version: 470.256.02   CUDA Version: 11.4\n"
            "`Predictions may fail: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version`\n"
            "Is ctranslate2 compatible with cuda 11.4?\n")
    report = diagnose_report([text], compat)
    found = {(f.category, f.severity) for c in report.checks for f in c.findings}
    assert ("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error") in found


def test_insufficient_driver_in_a_container_with_a_cuda12_driver(compat) -> None:
    """In a container ("run ... in a docker"), no CUDA named for the program, driver 565 (every 12.x): the
    container not reaching the driver is as likely as a CUDA 13 build: a low container warning, no error."""
    text = ("I am trying to run faster-whisper in a docker on my unraid server.\n"
            "RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version\n"
            "Nvidia Driver Version: 565.77\n")
    report = diagnose_report([text], compat)
    found = [f for c in report.checks for f in c.findings if f.severity in ("warning", "error")]
    assert any(f.category == "CONTAINER_NO_GPU_RUNTIME" and f.severity == "warning" for f in found)
    assert not [f for f in found if f.severity == "error"]


def test_paddles_mismatched_gpu_architecture(compat) -> None:
    text = ("Mismatched GPU Architecture: The installed PaddlePaddle package was compiled for 60 61 70 75 80 86 ,but "
            "your current GPU is 120 Solution: Install the correct wheel package built for your GPU\n")
    report = diagnose_report([text], compat)
    assert any(f.code == "messages.signature/paddle-gpu-arch-mismatched" and f.severity == "error"
               for c in report.checks for f in c.findings)


def test_a_torch_symbol_unresolved_without_its_library(compat) -> None:
    text = "torch 2.4.0\nWhen installing as directed, I got an error about undefined symbol: _ZN3c104cuda9SetDeviceEi.\n"
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in _categories(text, compat)


# ---- in view of round 27


def test_wsl_said_in_lower_case(compat) -> None:
    text = ("I got cuda working on my Ubuntu-20 wsl instance but importing cudf fails:\n"
            "RuntimeError: Failed to dlopen libcuda.so\n")
    assert "WSL_SPECIFIC" in _categories(text, compat)


def test_wsl_letters_in_a_path_are_not_wsl(compat) -> None:
    text = "torch 2.3.0+cu121\nRuntimeError: Failed to dlopen libcuda.so\nlogs in /home/u/wslogs/run.txt\n"
    assert "WSL_SPECIFIC" not in _categories(text, compat)


def test_insufficient_driver_in_a_singularity_container_said_in_prose(compat) -> None:
    """A Singularity container said in prose, no driver version shown: the driver's age is not in the paste, and a
    container started without --nv fails the same way: a low container warning, no error."""
    text = ("I'm running the basecaller with system CUDA 11.3 using a singularity container (handled by nextflow).\n"
            "[2023-03-07 09:00:00.361] [error] CUDA error: CUDA driver version is insufficient for CUDA runtime version\n")
    report = diagnose_report([text], compat)
    found = [f for c in report.checks for f in c.findings if f.severity in ("warning", "error")]
    assert any(f.category == "CONTAINER_NO_GPU_RUNTIME" for f in found)
    assert not [f for f in found if f.severity == "error"]


def test_a_cudnn_sub_library_failing_on_a_shadowed_librarys_symbol(compat) -> None:
    """cuDNN could not load its sub-library because an older CUDA library on the path lacks a symbol: the
    shadowing, not a missing cuDNN major."""
    text = ("Could not load library libcudnn_cnn_infer.so.8. Error: /usr/local/cuda-8.0/lib64/libnvrtc.so: "
            "undefined symbol: nvrtcGetCUBIN\n")
    report = diagnose_report([text], compat)
    errors = {f.category for c in report.checks for f in c.findings if f.severity == "error"}
    assert "SYSTEM_LIB_SHADOWING" in errors and "CUDA_LIBRARY_VERSION_MISMATCH" not in errors
