"""Each general mechanism of `diagnose` on pastes built from real captures and invented wording (not the
labelled examples): wrapped and split messages, other releases' and tools' wording, partial facts, unknown
inputs that must be skipped, false errors that must not appear."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report
from tests.paths import TESTS

HERE = TESTS
PASTES = HERE / "fixtures" / "pastes"
TABLE = (HERE / "fixtures" / "nvidia-smi-table" / "geforce-24gb_525.125.06_fan-err.txt").read_text()


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _serious(report) -> dict:
    out: dict = {}
    for f in report.findings:
        if f.severity in ("warning", "error"):
            out.setdefault(f.category, set()).add(f.severity)
    return out


def _errors(report) -> set:
    return {f.category for f in report.findings if f.severity == "error"}


def _check(report, check_id):
    return next(r for r in report.checks if r.id == check_id)


# ---- gap 1: messages wrapped or split across lines

@pytest.mark.parametrize("text, category", [
    # a terminal wrapped the line with no indentation
    ("UserWarning: NVIDIA GeForce RTX 5070 Ti with CUDA capability sm_120 is not compatible with the current "
     "PyTorch\ninstallation. The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
     "sm_86 sm_90.\n", "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    # the verdict on an indented line under its subject (Python's multi-line warning)
    ("Found GPU1 Tesla K40m which is of cuda capability 3.5.\n    PyTorch no longer supports this GPU because it "
     "is too old.\n", "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    # split inside the sentence, the numbers on the next line
    ("RuntimeError:\nThe detected CUDA version (12.4) mismatches the version that was used to compile\n"
     "PyTorch (11.8). Please make sure to use the same CUDA versions.\n", "NVCC_TORCH_CUDA_MISMATCH"),
    ("RuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus\nerror. It is possible that dataloader's "
     "workers are out of shared\nmemory. Please try to raise your shared memory limit.\n", "SHM_TOO_SMALL"),
    # "Header:" then an indented detail block with the numbers
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
     "    PyTorch 2.4.0+cu121 with CUDA 1201 (you have 2.4.1+cu124)\n    Python  3.11.9 (you have 3.11.10)\n",
     "THIRD_PARTY_EXTENSION_MISMATCH"),
])
def test_wrapped_messages_meet_their_signature(compat, text, category) -> None:
    assert category in _serious(diagnose_report([text], compat))


def test_wrapping_never_glues_two_messages(compat) -> None:
    facts, _ = read_paste(["RuntimeError: first problem here\n$ nvidia-smi\nNo devices were found\n"], compat)
    assert not any("first problem" in m and "No devices" in m for m in facts.paste.messages)



def test_a_quoted_log_record_after_a_sentence_is_a_message_of_its_own(compat) -> None:
    # a person's sentence ("... the error still shows") then the record they copied, in quotes: the record is a
    # new message (its timestamp starts it, quotes or not), and an error line even if the sentence ran into it
    text = ("When I run the model the error still shows\n"
            '"2025-01-02 03:04:05.123 [E:tool:Default, runner.cc:12 Start] Failed to start the worker. Require '
            'libfoo 3.*."\n')
    facts, _ = read_paste([text], compat)
    assert any(m.startswith('"2025-01-02 03:04:05.123 [E:tool') for m in facts.paste.messages), facts.paste.messages
    report = diagnose_report([text], compat)
    assert any(f.category == "UNRECOGNISED_ERROR" and "Failed to start the worker" in f.summary
               for f in report.all_findings)

# ---- gap 2: one cause, several wordings (releases, tools) and message families

@pytest.mark.parametrize("text, category", [
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime "
     "version (8, 9, 7).", "SYSTEM_LIB_SHADOWING"),
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 7, 0) but linked against "
     "(8, 5, 0)", "SYSTEM_LIB_SHADOWING"),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. "
     "PyTorch has\nCUDA Version=12.4 and torchvision has CUDA Version=11.8. Please reinstall the torchvision that "
     "matches your PyTorch install.", "CUDA_VARIANT_MIXED"),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA versions. PyTorch has "
     "CUDA Version=10.2 and torchvision has CUDA Version=11.1.", "CUDA_VARIANT_MIXED"),
    ("op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version 11.8 does not "
     "match the\nversion torch was compiled with 12.4, unable to compile cuda/cpp extensions without a matching "
     "cuda version.", "NVCC_TORCH_CUDA_MISMATCH"),
    ("RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version "
     "used to compile Pytorch binaries.", "NVCC_TORCH_CUDA_MISMATCH"),
    ("ImportError: /srv/env/lib/python3.11/site-packages/selective_scan_cuda.cpython-311-x86_64-linux-gnu.so: "
     "undefined symbol", "THIRD_PARTY_EXTENSION_MISMATCH"),
    ("OSError: /home/u/env/lib/python3.11/site-packages/torchaudio/lib/libtorchaudio.abi3.so: undefined symbol: "
     "torch_dtype_float4_e2m1fn_x2", "COMPANION_VERSION_MISMATCH"),
    ("ImportError: /venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
     "cudnnGetLastErrorString", "SYSTEM_LIB_SHADOWING"),
    ("RuntimeError: No CUDA GPUs are available", "NO_GPU_VISIBLE"),
])
def test_wordings_and_families(compat, text, category) -> None:
    assert category in _serious(diagnose_report([text], compat))


def test_cpp_extension_minor_mismatch_is_a_warning(compat) -> None:
    text = ("UserWarning: The detected CUDA version (12.6) has a minor version mismatch with the version that was "
            "used to compile\nPyTorch (12.1). Most likely this shouldn't be a problem.")
    assert _serious(diagnose_report([text], compat)).get("NVCC_TORCH_CUDA_MISMATCH") == {"warning"}


def test_cut_short_symbol_excludes_torch_and_nvidia_libraries(compat) -> None:
    text = "ImportError: /opt/env/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol"
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in _serious(diagnose_report([text], compat))


def test_busy_or_unavailable_is_low_confidence(compat) -> None:
    report = diagnose_report(["RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable"], compat)
    hits = [f for f in report.findings if f.category == "COMPUTE_MODE_RESTRICTED"]
    assert hits and all(f.severity == "warning" and f.confidence == "low" for f in hits)


def test_mig_turns_the_device_count_assert_into_mig(compat) -> None:
    assert_line = ('RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at '
                   '"/opt/pytorch/aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch.')
    plain = diagnose_report([assert_line], compat)
    assert "MIG_ENABLED" not in _serious(plain)
    assert all(f.severity != "error" for f in plain.findings if f.confidence == "low")


# ---- gap 4 and FP-D: checks judge partial facts; a check that cannot judge is skipped

def test_torch_cuda_without_version_is_judged(compat) -> None:
    report = diagnose_report([(PASTES / "torch-cuda-only-old-driver.txt").read_text()], compat)
    assert _serious(report).get("DRIVER_TOO_OLD_FOR_TORCH_CUDA") == {"error"}


def test_gpu_arch_unknown_gpu_is_skipped_not_passed(compat) -> None:
    text = ("PyTorch version: 2.3.1+cu121\nCUDA used to build PyTorch: 12.1\n"
            "GPU models and configuration: GPU 0: Frobnicator X9000\nNvidia driver version: 550.54.15\n")
    r = _check(diagnose_report([text], compat), "torch.gpu-arch")
    assert r.status == "skipped" and "compute capability unknown" in (r.reason or "")


def test_legacy_gpu_judged_from_torch_cuda(compat) -> None:
    # only torch.version.cuda and a Kepler GTX 680 (sm_30): CUDA 11.0 dropped sm_30, so no CUDA 12 build of
    # torch has kernels for it, whatever its architecture list (not in the paste)
    report = diagnose_report([(PASTES / "legacy-gpu-cuda12.txt").read_text()], compat)
    hits = [f for f in report.findings if f.code == "torch.gpu-arch/missing"]
    assert hits and "10.2" in hits[0].summary and hits[0].severity == "error"


# ---- gap 3: conflicting values resolved by authority (tested in test_diagnose_judge), gap 5: layouts

def test_markdown_labels_are_read(compat) -> None:
    facts, _ = read_paste([(PASTES / "markdown-env-h100.txt").read_text()], compat)
    assert facts.pythons[0].torch.version == "1.13.1+cu116"
    assert facts.pythons[0].python_version == "3.10.12"
    # a CUDA 11.6 build has no sm_90 kernels
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in _serious(diagnose_report([(PASTES / "markdown-env-h100.txt").read_text()],
                                                                     compat))


@pytest.mark.parametrize("line, name, version", [
    ("`torch`: 2.1.0", "torch", "2.1.0"),
    ("- **PyTorch Version**: 2.2.2+cu121", "torch", "2.2.2+cu121"),
    ("xformers version 0.0.27", "xformers", "0.0.27"),
    ("torchvision：0.18.1", "torchvision", "0.18.1"),
    ("[pip3] torchaudio==2.3.1", "torchaudio", "2.3.1"),
    ("[conda] pytorch                   2.4.1           py3.11_cuda12.1_cudnn9.1.0_0    pytorch", "torch", "2.4.1"),
    ("pip install ./flash_attn-2.6.3+cu123torch2.4cxx11abiTRUE-cp311-cp311-linux_x86_64.whl", "flash-attn",
     "2.6.3+cu123torch2.4cxx11abiTRUE"),
])
def test_package_layouts(compat, line, name, version) -> None:
    facts, _ = read_paste([line + "\n"], compat)
    pkg = facts.pythons[0].package(name)
    assert pkg is not None and pkg.version == version


def test_argument_dumps_are_not_packages(compat) -> None:
    facts, _ = read_paste(["p: 0.0\nlr 0.001\ntorch: 2.1.0\n"], compat)
    assert [p.name for p in facts.pythons[0].packages] == ["torch"]


def test_ipython_and_comment_values(compat) -> None:
    facts, _ = read_paste(["In [3]: torch.cuda.is_available()\nOut[3]: False\n\n"
                              "print(f\"version: {torch.__version__}\")  # 2.1.0+cpu\n"], compat)
    t = facts.pythons[0].torch
    assert t.cuda_available is False and t.version == "2.1.0+cpu"


def test_code_listing_then_prose_is_no_gpu_name(compat) -> None:
    with pytest.raises(ValueError):  # nothing recognisable: the prose is not the statement's output
        read_paste(["name = torch.cuda.get_device_name(0)\nThen the model loads the weights and runs.\n"], compat)


def test_conda_plan_cpu_build_with_cuda_intent(compat) -> None:
    report = diagnose_report([(PASTES / "conda-plan-cpuonly.txt").read_text()], compat)
    assert _serious(report).get("TORCH_CPU_ONLY_BUILD") == {"error"}


def test_unknown_build_is_not_called_cpu_only(compat) -> None:
    # FP-A: torch==2.3.1 from PyPI (a CUDA build on Linux) on a GPU machine is no CPU-only error
    report = diagnose_report(["[pip3] torch==2.3.1\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n"],
                             compat)
    assert "TORCH_CPU_ONLY_BUILD" not in _errors(report)


# ---- gap 7, 9, 11 and the dates


def test_wsl_in_prose_and_an_old_windows_build(compat) -> None:
    report = diagnose_report([(PASTES / "wsl-old-build.txt").read_text()], compat)
    serious = _serious(report)
    assert "WSL_SPECIFIC" in serious and "NO_GPU_VISIBLE" in serious
    assert "NO_NVIDIA_DRIVER" not in serious  # never "install a Linux driver" under WSL


def test_wsl_word_never_overrides_a_linux_kernel(compat) -> None:
    facts, _ = read_paste(["Linux version 5.15.0-91-generic (buildd@lcy02) (gcc 11.4.0)\n"
                              "I read the WSL docs but this is a normal server\ntorch: 2.1.0\n"], compat)
    assert facts.host.wsl is False


def test_windows_driver_not_judged_by_linux_lifecycle(compat) -> None:
    text = "Ubuntu under WSL2, driver 552.22 on the Windows side\ntorch: 2.3.0\n"
    report = diagnose_report([text], compat)
    assert not [f for f in report.findings if f.category == "DRIVER_OUTDATED"]


@pytest.mark.parametrize("name", ["dpkg-driver-upgrade.txt"])
def test_driver_packages_changed_under_the_module(compat, name) -> None:
    report = diagnose_report([(PASTES / name).read_text()], compat)
    assert _serious(report).get("DRIVER_LIBRARY_MISMATCH") == {"error"}
    assert "NO_NVIDIA_DRIVER" not in _errors(report)


def test_apt_history_and_pacman_logs_are_read(compat) -> None:
    text = ("Failed to initialize NVML: Driver/library version mismatch\nStart-Date: 2024-03-11  06:25:03\n"
            "Commandline: /usr/bin/unattended-upgrade\nUpgrade: libnvidia-compute-550:amd64 (550.54.14-0ubuntu1, "
            "550.54.15-0ubuntu1), nvidia-utils-550:amd64 (550.54.14-0ubuntu1, 550.54.15-0ubuntu1)\n")
    facts, _ = read_paste([text], compat)
    changed = facts.paste.provenance["driver.packages_changed"]["value"]
    assert "nvidia-utils-550" in changed and "550.54.15" in changed
    facts, _ = read_paste(["[2024-07-02T06:12:40+0000] [ALPM] upgraded nvidia-utils (550.78-1 -> 550.90.07-1)\n"
                              "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"],
                             compat)
    assert "550.90.07" in facts.paste.provenance["driver.packages_changed"]["value"]


def test_driver_age_is_judged_on_the_paste_date(compat) -> None:
    text = (PASTES / "outdated.txt").read_text()
    assert "2026" in text
    recent = diagnose_report([text], compat)
    assert any(f.category == "DRIVER_OUTDATED" and f.severity == "warning" for f in recent.findings)
    old = diagnose_report([text.replace("Oct 25 22:06:14 2026", "Oct 25 22:06:14 2021")], compat)
    assert old.facts.collected_at.startswith("2021-10-25")
    assert not [f for f in old.findings if f.category == "DRIVER_OUTDATED" and f.severity != "info"]
    undated = diagnose_report(["Driver Version: 460.32.03\n"], compat)
    assert not [f for f in undated.findings if f.category == "DRIVER_OUTDATED" and f.severity != "info"]


# ---- gap 6: what an extension was built for, compared with torch

def test_wheel_tag_abi_against_pypi_torch(compat) -> None:
    report = diagnose_report([(PASTES / "flash-attn-abi.txt").read_text()], compat)
    hits = [f for f in report.findings if f.category == "THIRD_PARTY_EXTENSION_MISMATCH"]
    assert hits and hits[0].severity == "error" and "cxx11abi" in hits[0].summary
    same = (PASTES / "flash-attn-abi.txt").read_text().replace("abiTRUE", "abiFALSE")
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in _serious(diagnose_report([same], compat))


def test_built_for_you_have_proves_two_causes(compat) -> None:
    text = (PASTES / "xformers-variant.txt").read_text()
    facts, _ = read_paste([text], compat)
    assert facts.pythons[0].torch.version == "2.4.1+cu124"  # "(you have Y)" is the environment
    assert facts.pythons[0].python_version == "3.11.10"
    serious = _serious(diagnose_report([text], compat))
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in serious and "CUDA_VARIANT_MIXED" in serious
    cpu = text.replace("(you have 2.4.1+cu124)", "(you have 2.4.1+cpu)")
    assert "TORCH_CPU_ONLY_BUILD" in _serious(diagnose_report([cpu], compat))


@pytest.mark.parametrize("text, category", [
    ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed "
     "a driver from http://www.nvidia.com/Download/index.aspx", "NO_NVIDIA_DRIVER"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / "
     "cuda driver combination", "DRIVER_LIBRARY_MISMATCH"),
    ("docker: Error response from daemon: unknown or invalid runtime name: nvidia.", "CONTAINER_NO_GPU_RUNTIME"),
    ("$ docker exec -it trainer nvidia-smi\nFailed to initialize NVML: Unknown Error", "CONTAINER_NO_GPU_RUNTIME"),
    ("RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported",
     "NO_GPU_VISIBLE"),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "COMPUTE_MODE_RESTRICTED"),
    ("ModuleNotFoundError: No module named 'torch._C'", "TORCH_IMPORT_FAILED"),
    ("Ubuntu 22.04 in WSL2\nRuntimeError: CUDA error: GPU access blocked by the operating system", "WSL_SPECIFIC"),
])
def test_more_message_families(compat, text, category) -> None:
    assert category in _serious(diagnose_report([text], compat))


def test_cuda_index_but_cpu_wheel_installed(compat) -> None:
    report = diagnose_report([(PASTES / "pip-cuda-index-cpu-installed.txt").read_text()], compat)
    assert _serious(report).get("TORCH_CPU_ONLY_BUILD") == {"error"}


def test_windows_os_label_skips_linux_lifecycle(compat) -> None:
    text = "- OS: Windows 11\n- `torch`: 2.1.2+cu121\n- Driver: 546.33\n"
    r = next(r for r in diagnose_report([text], compat).checks if r.id == "driver.lifecycle")
    assert r.status == "skipped" and "Windows" in (r.reason or "")


@pytest.mark.parametrize("text, category", [
    ("RuntimeError: Detected that PyTorch and TorchAudio were compiled with different CUDA versions.\nPyTorch has "
     "CUDA version 13.0 whereas TorchAudio has CUDA version 12.6.", "CUDA_VARIANT_MIXED"),
    ("RuntimeError: Detected that PyTorch and torch_sparse were compiled with different CUDA versions. PyTorch has "
     "CUDA version 11.8 and torch_sparse has CUDA version 12.1.", "THIRD_PARTY_EXTENSION_MISMATCH"),
    ("RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
     "/opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_python.so)", "SYSTEM_LIB_SHADOWING"),
    ("OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
     "\"C:\\\\env\\\\lib\\\\site-packages\\\\torch\\\\lib\\\\cudnn_adv_infer64_8.dll\"", "HOST_MEMORY_LOW"),
    ("node3:1234:1250 [0] NCCL WARN NET/Socket : Connect to 10.0.0.4<45123> failed : Connection refused\n"
     "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
     "INTERCONNECT"),
])
def test_even_more_families(compat, text, category) -> None:
    assert category in _serious(diagnose_report([text], compat))


def test_cpu_build_with_cuda_unavailable_and_no_gpu_facts(compat) -> None:
    text = ("PyTorch version: 2.3.1+cpu\nIs debug build: False\nCUDA used to build PyTorch: None\n"
            "Is CUDA available: False\n")
    assert "TORCH_CPU_ONLY_BUILD" in _serious(diagnose_report([text], compat))
