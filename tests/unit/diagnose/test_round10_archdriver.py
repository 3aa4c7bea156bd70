"""Issue 42, round 10 (helper archdriver): a build that has no code for the GPU's architecture, and a driver older
than the CUDA the program needs.

nvcc saying it does not know the architecture a build targets ("nvcc fatal : Unsupported gpu architecture
'compute_89'", NVIDIA/cub, mlc-llm, f2-nerf, vall-e, tiny-cuda-nn builds; DeepSpeed's op builder) is a toolkit older
than the architecture: GPU_ARCH_NOT_IN_TORCH_BUILD. Only where the build may be a torch extension's (torch named,
setup.py, pip, cpp_extension, DeepSpeed, nvcc refusing the C++ standard those builders pass) is the toolkit also
not torch's CUDA (NVCC_TORCH_CUDA_MISMATCH, low)."""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings, serious as _serious


# ---- nvcc does not know the target architecture: cuda-build-009 (NVIDIA/cub, make), cuda-build-011 (f2-nerf, the
# bare line), deepspeed-005 (DeepSpeedExamples, with the C++ standard refused too)
def test_nvcc_unsupported_architecture_in_a_plain_make_is_the_toolkit_too_old_for_the_gpu(compat) -> None:
    text = "nvcc fatal : Unsupported gpu architecture 'compute_80'\nmake: *** [all] Error 2\n"
    got = _serious(text, compat)
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in got, sorted(got)
    assert "NVCC_TORCH_CUDA_MISMATCH" not in got  # no torch in a make of a CUDA library


def test_the_bare_unsupported_architecture_line_is_read_too(compat) -> None:
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in _serious("Unsupported gpu architecture 'compute_89'\n", compat)


def test_an_extension_build_also_names_the_toolkit_that_is_not_torchs(compat) -> None:
    text = ("nvcc fatal : Unsupported gpu architecture 'compute_86' and nvcc fatal : Value 'c++17' is not defined "
            "for option 'std'\n")
    got = _serious(text, compat)
    assert {"GPU_ARCH_NOT_IN_TORCH_BUILD", "NVCC_TORCH_CUDA_MISMATCH"} <= set(got), sorted(got)
    setup = "I got 'nvcc fatal : Unsupported gpu architecture 'compute_86'' when running 'python setup.py install'.\n"
    assert {"GPU_ARCH_NOT_IN_TORCH_BUILD", "NVCC_TORCH_CUDA_MISMATCH"} <= set(_serious(setup, compat))


def test_near_miss_an_architecture_nvcc_knows_stays_quiet(compat) -> None:
    text = "nvcc -gencode arch=compute_89,code=sm_89 -o kernel kernel.cu\nBuild finished: 0 errors\n"
    assert not [f for f in _findings(text, compat) if f.category == "GPU_ARCH_NOT_IN_TORCH_BUILD"]
