"""Issue 42, fixes made after rounds 19 and 20 were scored at first sight (in view): a torch extension's operators
built without CUDA (maskrcnn-benchmark's AT_ERROR, copied by many extensions), "compile with CUDA enabled" as a
build without its GPU part, and WSL 1's kernel name. Pastes invented in the spirit of the rows, not the rows."""

from __future__ import annotations

from .pastes import by_row, findings, serious


def test_an_extensions_ops_built_without_cuda_are_the_extensions(compat) -> None:
    text = ("  File \"/opt/proj/layers/deform_conv.py\", line 41, in forward\n"
            "    return _C.deform_conv_forward(input, weight, offset)\n"
            "RuntimeError: Not compiled with GPU support\n")
    f = by_row(text, compat)["torch-extension-ops-built-without-cuda"]
    assert (f.category, f.severity) == ("THIRD_PARTY_EXTENSION_MISMATCH", "error")
    assert "FORCE_CUDA=1" in f.fix.summary
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in serious(text, compat)  # the family no longer reads it


def test_a_framework_asking_to_be_compiled_with_cuda_is_a_build_without_its_gpu_part(compat) -> None:
    text = "terminate called: [10:01:02] src/engine.cc:88: GPU kernels are absent. Please compile with CUDA enabled\n"
    assert serious(text, compat)["FRAMEWORK_CPU_ONLY_BUILD"].confidence == "low"


def test_wsl1s_kernel_name_makes_it_wsl_and_wsl_1(compat) -> None:
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.\n"
            "Error! Your kernel headers for kernel 4.4.0-22621-Microsoft cannot be found.\n")
    got = serious(text, compat)
    assert got["WSL_SPECIFIC"].severity == "error"
    assert "NO_NVIDIA_DRIVER" not in got


def test_a_linux_kernel_is_not_read_as_wsl_1(compat) -> None:
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.\n"
            "Error! Your kernel headers for kernel 5.15.0-91-generic cannot be found.\n")
    assert "WSL_SPECIFIC" not in serious(text, compat)


INDEX = ("pip install torch==2.10.0 torchvision --index-url https://download.pytorch.org/whl/{variant}\n"
         "Looking in indexes: https://download.pytorch.org/whl/{variant}\n"
         "ERROR: Could not find a version that satisfies the requirement torch==2.10.0 (from versions: none)\n"
         "ERROR: No matching distribution found for torch==2.10.0\n")


def test_an_index_of_a_variant_the_release_was_not_built_for_is_no_python_problem(compat) -> None:
    # torch.json lists 2.10's CUDA variants (cu126, cu128, cu130): cu131 has no build of it
    got = serious(INDEX.format(variant="cu131"), compat)
    assert "PYTHON_VERSION_UNSUPPORTED" not in got
    assert got["NOTE"].severity == "warning" and "index" in got["NOTE"].detail


def test_an_index_the_release_was_built_for_keeps_the_python_reading(compat) -> None:
    assert "PYTHON_VERSION_UNSUPPORTED" in serious(INDEX.format(variant="cu128"), compat)


def test_nvccs_release_said_in_words_is_compared_with_torchs_cuda(compat) -> None:
    text = "hi, torch.version.cuda is 11.7 but my nvcc --version is 12.1 and the extension build fails\n"
    assert "NVCC_TORCH_CUDA_MISMATCH" in serious(text, compat)


def test_nvccs_own_banner_and_a_missing_nvcc_are_not_a_release_in_words(compat) -> None:
    for text in ("torch.version.cuda is 11.7\nnvcc: NVIDIA (R) Cuda compiler driver\n",
                 "torch.version.cuda is 11.7\nnvcc: command not found\n"):
        assert "NVCC_TORCH_CUDA_MISMATCH" not in serious(text, compat)


def test_a_gpu_program_with_its_own_cuda_falling_back_to_the_cpu_is_no_cpu_torch(compat) -> None:
    text = ("Kernels run on the CPU, not on my GeForce RTX 3070\n"
            "import taichi as ti\nti.init(arch=ti.cuda)\n"
            "[Taichi] version 1.6.0, llvm 15.0.4, commit f1c6fbbd, linux, python 3.11.4\n"
            "[W 09/02/23 10:01:12.100 4410] [misc.py:adaptive_arch_select@772] Arch=[<Arch.cuda: 5>] is not "
            "supported, falling back to CPU\n")
    assert "TORCH_CPU_ONLY_BUILD" not in serious(text, compat)


def test_wsl1s_kernel_name_outranks_wsl2_said_in_words(compat) -> None:
    text = ("I am on WSL2 and installed the driver inside it.\n"
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.\n"
            "Error! Your kernel headers for kernel 4.4.0-19041-Microsoft cannot be found.\n")
    got = serious(text, compat)
    assert got["WSL_SPECIFIC"].severity == "error"
    assert any("WSL 1" in f.summary for f in findings(text, compat) if f.category == "WSL_SPECIFIC")
