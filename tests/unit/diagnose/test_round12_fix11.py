"""Issue 42, corpus round 11's misses (helper fix11).

1. The driver's JIT refusing PTX of a newer ISA version, said by its built-in ptxas ("ptxas application ptx input,
   line 9; fatal : Unsupported .version 8.1; current version is '8.0'"): the same mechanism as
   CUDA_ERROR_UNSUPPORTED_PTX_VERSION / "the provided PTX was compiled with an unsupported toolchain" (cuda-apps,
   openmm, text-generation-inference rows), read in numba (numba-002) and OpenPCDet's spconv/numba path
   (open-mmlab/OpenPCDet#934): DRIVER_TOO_OLD_FOR_TORCH_CUDA. A standalone ptxas (a file name instead of
   "application ptx input") is the toolkit's own ptxas older than the PTX (triton-lang/triton#5385), not the
   driver: nothing is said of the driver there.
2. nvidia-container-cli failing to load libnvidia-ml.so.1 is the host's missing driver only where nothing else in
   the paste explains it: beside Docker's "Unknown runtime specified nvidia" the toolkit's own install is what is
   broken (container-toolkit-034, NVIDIA/nvidia-container-toolkit#302: reinstalling the toolkit fixed it), as with
   the snap (shared example 306); alone (hami-004) it stays the host's driver.
3. Stable Diffusion web UI's own torch.cuda.is_available() test failing ("Torch is not able to use GPU; add
   --skip-torch-cuda-test ...", printed by AUTOMATIC1111's launcher and its forks: StabilityMatrix's packages,
   Forge, the DirectML fork) beside an NVIDIA GPU is the program said to run without the GPU, the kind
   diagnose.runs-on-cpu reads (InvokeAI's "Using device_type cpu", whisper's FP16 line): possibly a CPU-only torch,
   a low-confidence warning with the command that settles it (stabilitymatrix-001: the DirectML package on an
   RTX 3080). The message names torch, so other engines in the paste (DirectML) do not take it over; without an
   NVIDIA GPU shown, or with torch's build shown, it says nothing.
4. A library with its own CUDA build, named in the paste, on a GPU below the oldest architecture that build
   compiles for (context.library_min_compute_capability, each row cited by the library's maintainers): NCCL on a
   Quadro K4200 (3.0 < 3.5, nccl-014) and LightGBM's device='cuda' on a Tesla M60 (5.2 < 6.0, lightgbm-003):
   GPU_ARCH_NOT_IN_TORCH_BUILD, a medium warning. A GPU at or above the floor, LightGBM's OpenCL "gpu" device,
   or a library not listed stay quiet.
"""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# ---- 1. the driver's JIT refusing newer PTX
NUMBA = ("numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR\n"
         "ptxas application ptx input, line 9; fatal   : Unsupported .version 8.1; current version is '8.0'\n")
OPENPCDET = ("ptxas application ptx input, line 9; fatal : Unsupported .version 7.3; current version is '7.2'\n"
             "numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in "
             "CUDA_ERROR_UNSUPPORTED_PTX_VERSION\n")


def _ptx_findings(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.code.endswith("/ptxas-jit-unsupported-ptx-version")]


def test_the_driver_jits_ptxas_refusing_a_newer_ptx_version_is_a_driver_too_old(compat) -> None:
    got = _serious(NUMBA, compat)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in got, sorted(got)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "error"
    assert "UNRECOGNISED_ERROR" not in got
    (f,) = _ptx_findings(NUMBA, compat)
    values = {e.path.rsplit(".", 1)[-1]: e.value for e in f.evidence}
    assert values.get("ptx") == "8.1" and values.get("ptx_accepted") == "8.0", values


def test_the_same_jit_line_in_another_tracker_is_read_too(compat) -> None:
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in _serious(OPENPCDET, compat)
    assert _ptx_findings(OPENPCDET, compat)


def test_near_miss_a_standalone_ptxas_older_than_the_ptx_says_nothing_of_the_driver(compat) -> None:
    # triton-lang/triton#5385: nvcc 11.8's ptxas given PTX 8.4 from Triton's LLVM (the toolkit is old, not the driver)
    text = ("ptxas add_kernel.ptx, line 5; fatal   : Unsupported .version 8.4; current version is '7.8'\n"
            "ptxas fatal   : Ptx assembly aborted due to errors\n")
    assert not _ptx_findings(text, compat)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in _serious(text, compat)


def test_near_miss_a_supported_version_line_stays_quiet(compat) -> None:
    text = "ptxas info    : 0 bytes gmem\nptxas application ptx input, line 9; warning : Double is not supported\n"
    assert not _ptx_findings(text, compat)


# ---- 2. libnvidia-ml not loadable: the host's driver, or the toolkit's broken install
NVML = ("docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: error running hook #0: error "
        "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared "
        "object file: no such file or directory: unknown.\n")
UNKNOWN_RUNTIME = "docker: Error response from daemon: Unknown runtime specified nvidia.\nSee 'docker run --help'.\n"


def test_an_unknown_nvidia_runtime_beside_the_nvml_failure_is_the_toolkit_not_the_host_driver(compat) -> None:
    got = _serious("sudo nvidia-docker run -it img\n" + UNKNOWN_RUNTIME + "sudo docker run --gpus all -it img\n"
                   + NVML, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)
    assert "NO_NVIDIA_DRIVER" not in got, sorted(got)


def test_a_containerd_runtime_missing_beside_the_nvml_failure_is_read_the_same(compat) -> None:
    # containerd's CRI wording (microk8s-001's kind) with the hook's NVML failure
    text = ('failed to get sandbox runtime: no runtime for "nvidia" is configured\n' + NVML)
    got = _serious(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got and "NO_NVIDIA_DRIVER" not in got, sorted(got)


def test_near_miss_the_nvml_failure_alone_stays_the_hosts_missing_driver(compat) -> None:
    # hami-004: a pod scheduled onto a node without a GPU driver
    got = _serious(NVML, compat)
    assert "NO_NVIDIA_DRIVER" in got, sorted(got)


def test_near_miss_a_host_driver_message_still_wins_over_the_unknown_runtime(compat) -> None:
    # the host's own words that its driver did not load (the nvidia-module-load-failed row) keep the host reading
    text = UNKNOWN_RUNTIME + NVML + "ERROR: Unable to load the kernel module 'nvidia.ko'.\n"
    assert "NO_NVIDIA_DRIVER" in _serious(text, compat)


# ---- 3. SD web UI's torch test failing beside an NVIDIA GPU
WEBUI = ("RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to "
         "disable this check\n")
STABILITYMATRIX = ("### What GPU / hardware type are you using?\n\nGigabyte GeForce RTX\u2122 3080 VISION OC 10G\n\n"
                   "NVIDIA driver was found.\nVersion: v1.10.1-amd-53-g32f147b7\nTraceback (most recent call last):\n"
                   '  File "C:\\Users\\u\\StabilityMatrix\\Data\\Packages\\stable-diffusion-webui-directml\\launch.py", '
                   "line 48, in <module>\n    main()\n" + WEBUI)
# AUTOMATIC1111/stable-diffusion-webui's own tracker (the launcher's assert, its GPU named in the report)
A1111 = ("I have an RTX 3060 and installed the webui with webui-user.bat.\nTraceback (most recent call last):\n"
         '  File "C:\\sd\\stable-diffusion-webui\\launch.py", line 38, in <module>\n    main()\n' + WEBUI)


def _runs_on_cpu(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.code.startswith("diagnose.runs-on-cpu")]


def test_the_webui_torch_test_beside_an_nvidia_gpu_is_possibly_a_cpu_torch(compat) -> None:
    for text in (STABILITYMATRIX, A1111):
        got = _serious(text, compat)
        assert "TORCH_CPU_ONLY_BUILD" in got, sorted(got)
        f = got["TORCH_CPU_ONLY_BUILD"]
        assert f.severity == "warning" and f.confidence == "low"
        assert "UNRECOGNISED_ERROR" not in got, sorted(got)  # the finding explains the launcher's error line


def test_a_directml_package_is_named_in_the_finding(compat) -> None:
    (f,) = _runs_on_cpu(STABILITYMATRIX, compat)
    assert "DirectML" in f.detail
    (g,) = _runs_on_cpu(A1111, compat)
    assert "DirectML" not in g.detail


def test_near_miss_the_webui_test_without_an_nvidia_gpu_says_nothing(compat) -> None:
    # lshqqytiger/stable-diffusion-webui-amdgpu#432's kind: an AMD card, no NVIDIA GPU anywhere
    text = "I have a Radeon RX 6700 XT, no NVIDIA GPU.\n" + WEBUI
    assert not _runs_on_cpu(text, compat)
    assert not _runs_on_cpu(WEBUI, compat)


def test_near_miss_the_webui_test_with_a_cuda_torch_shown_is_left_to_the_build_checks(compat) -> None:
    text = "I have an RTX 3090.\ntorch              2.1.0.dev20230626+cu121\n" + WEBUI
    assert not _runs_on_cpu(text, compat)
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- 4. a library's CUDA build below its cited architecture floor
NCCL = ("`unhandled cuda error` when running the test executable after `make` on Ubuntu Server 16.04\n\n"
        "I have installed NCCL on Ubuntu Server 16.04 having 2 Quadro K4200 GPU cards with CUDA 8.0. I followed the "
        "instructions given in the readme file.\n")
LIGHTGBM = ("CUDA GPU version on Ubuntu 20.04 Linux crashes during training.\n```python\nimport lightgbm as lgb\n"
            "clf = lgb.LGBMClassifier(\n    objective='binary',\n    device='cuda',\n    verbose=1,\n)\n"
            "clf.fit(X_train, y_train)\n```\nLightGBM version or commit hash: 4.5.0\n\nThe GPU is NVIDIA Tesla M60\n")


def _library(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.code.startswith("diagnose.library-gpu-arch")]


def test_nccl_on_a_gpu_below_its_builds_is_a_build_without_the_gpus_kernels(compat) -> None:
    (f,) = _library(NCCL, compat)
    assert f.category == "GPU_ARCH_NOT_IN_TORCH_BUILD" and f.severity == "warning", f
    assert "3.0" in f.summary and "3.5" in f.summary
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in _serious(NCCL, compat)


def test_lightgbms_cuda_build_on_a_maxwell_gpu_is_read_too(compat) -> None:
    (f,) = _library(LIGHTGBM, compat)
    assert "5.2" in f.summary and "6.0" in f.summary
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in _serious(LIGHTGBM, compat)


def test_near_miss_a_gpu_at_or_above_the_floor_stays_quiet(compat) -> None:
    assert not _library(NCCL.replace("Quadro K4200", "Tesla K80"), compat)  # 3.7
    assert not _library(LIGHTGBM.replace("Tesla M60", "Tesla V100-SXM2-16GB"), compat)


def test_near_miss_lightgbms_opencl_device_and_an_unlisted_library_stay_quiet(compat) -> None:
    assert not _library(LIGHTGBM.replace("device='cuda'", "device='gpu'"), compat)
    assert not _library("I run cupy on 2 Quadro K4200 GPU cards and it crashes.\n", compat)
