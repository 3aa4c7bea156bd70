"""Issue 42, round 10 (helper archdriver): a build that has no code for the GPU's architecture, and a driver older
than the CUDA the program needs.

nvcc saying it does not know the architecture a build targets ("nvcc fatal : Unsupported gpu architecture
'compute_89'", NVIDIA/cub, mlc-llm, f2-nerf, vall-e, tiny-cuda-nn builds; DeepSpeed's op builder) is a toolkit older
than the architecture: GPU_ARCH_NOT_IN_TORCH_BUILD. Only where the build may be a torch extension's (torch named,
setup.py, pip, cpp_extension, DeepSpeed, nvcc refusing the C++ standard those builders pass) is the toolkit also
not torch's CUDA (NVCC_TORCH_CUDA_MISMATCH, low)."""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious


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


# ---- a driver older than the CUDA the paste names for its program, torch's CUDA not shown
# (diagnose.driver-named-cuda): runpod-004 (a CUDA 13 template on a host whose nvidia-smi says 12.4), jade-hpc-001
# (a CUDA 10 image on driver 384.145), rapids-004 (cuDF for CUDA 9.2 on driver 390.87)
def _named(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.code.startswith("diagnose.driver-named-cuda")]


def test_a_ceiling_of_an_older_major_than_the_program_needs_is_a_driver_too_old(compat) -> None:
    text = "use ComfyUI - CUDA 13 to run ,but nvidia-smi show CUDA Version: 12.4 ,how to fix it?\n"
    got = _named(text, compat)
    assert [f.category for f in got] == ["DRIVER_TOO_OLD_FOR_TORCH_CUDA"], got
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in _serious(text, compat)


def test_a_driver_below_a_pre_11_cudas_own_minimum_is_too_old(compat) -> None:
    jade = ("I am using TensorFlow 1.14 which requires CUDA10, and Cuda10 requires Nvidia driver 418. Currently at "
            "JADE default driver is 384.145, which is compatible up to TensorFlow 1.12 only.\n")
    rapids = "* On Ubuntu 18.04, the default nvidia driver is 390.87.\n* Install CUDA 9.2.\n"
    for text, minimum in ((jade, "410.48"), (rapids, "396.26")):  # compat_data/cuda_driver.json: 10.0, 9.2 GA
        got = _named(text, compat)
        assert got and got[0].severity in ("warning", "error"), text
        assert minimum in got[0].summary, got[0].summary


def test_near_miss_minor_version_compatibility_and_a_template_ceiling_stay_quiet(compat) -> None:
    # driver 530 runs every CUDA 12.x runtime (the 12.x floor is 525.60.13): not too old for CUDA 12.4
    minor = ("| NVIDIA-SMI 530.30.02    Driver Version: 530.30.02    CUDA Version: 12.1     |\n"
             "I built the image with CUDA 12.4 and it fails to start\n")
    assert not _named(minor, compat)
    # an issue template's bare "CUDA Version: 11.3" is as often the toolkit: no driver ceiling to judge by
    template = "**CUDA Version**:11.3\nThe project needs CUDA 12 and fails\n"
    assert not _named(template, compat)
    # torch's own CUDA in the paste: driver.cuda-compat judges that, not this check
    torch = "torch 2.4.0+cu121\nDriver Version: 470.82.01\nInstalled CUDA 12.1\n"
    assert not _named(torch, compat)


# ---- a GPU only some current torch builds carry, said not to work, torch's build not shown
# (diagnose.gpu-arch-build-unknown, low): rvc-003 (an RTX 5060, sm_120, before the CUDA 12.8 builds), invokeai-006
# (a GTX 980 Ti, sm_52, dropped by the CUDA 12.8 builds), comfyui-015 (a GTX 1070 in a hardware list), rvc-002 (the
# series after the number, "5090 rtx", as deepfacelab-001's "GPU: 3060 RTX 12 GB" writes it too)
def _edge(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.code.startswith("diagnose.gpu-arch-build-unknown")]


def test_a_new_or_dropped_gpu_said_not_to_work_is_a_low_lead_asking_for_torchs_build(compat) -> None:
    rvc = ('I got "Unfortunately, there is no compatible GPU available to support your training." issue in the '
           "train tab.\n\nMy GPU is RTX 5060 8gb\n")
    invoke = ("I installed InvokeAI today on a pc with a GTX 980TI for testing and i did select said option, but it "
              "installed versions of torch and torchvision that did not support the old CUDA version of this "
              "specific card.\n")
    comfy = ("**Setup:** i7-8750H, GTX 1070, 16 GB RAM.\n\nAt startup, I noticed warnings about an incompatibility.\n"
             "When trying to use Flux Schnell, I ran into a kernel-related error.\n")
    reversed_name = "not working with 5090 rtx\n\nRVC1006Nvidia not working with 5090 rtx ?\n"  # rvc-002
    for text in (rvc, invoke, comfy, reversed_name):
        got = _edge(text, compat)
        assert got and got[0].category == "GPU_ARCH_NOT_IN_TORCH_BUILD", text
        assert got[0].severity == "warning" and got[0].confidence == "low"
        assert "torch.cuda.get_arch_list()" in " ".join(got[0].fix.commands)


def test_the_architecture_named_in_words_stands_for_the_gpu(compat) -> None:
    # kaggle-001 (Kaggle/kaggle-cli#1151): no GPU name the table knows, but the words name sm_60 (Pascal)
    text = ("machine_shape NvidiaTeslaP100 allocates a P100 but default image's torch (cu128) has no sm_60 kernels, "
            "so every CUDA opertation fails\n")
    got = _edge(text, compat)
    assert got and "sm_60" in got[0].summary
    # flashinfer-001's sm_75 is in every current torch build: another framework's limit, no torch lead
    assert not _edge("flashinfer doesn't actually support sm_75, so the T4 has no kernels for sm_75\n", compat)


def test_near_miss_a_gpu_every_build_runs_or_the_drivers_words_stay_quiet(compat) -> None:
    # an RTX 3090 (sm_86) is in every current default build: "not working" is no architecture lead
    assert not _edge("My GPU is an RTX 3090 and training is not working\n", compat)
    # the driver's own words that it does not support a Pascal card are the driver's verdict
    assert not _edge("I have a GTX 1050 and the driver is nvidia-driver-580-open, which does NOT support Pascal "
                     "GPUs (GTX 10xx).\n", compat)
    # torch's build in the paste: torch.gpu-arch judges it, not this lead
    assert not _edge("My GPU is a GTX 1070, torch.__version__ = 2.8.0+cu129, and the GPU is not supported\n", compat)


# ---- nvcc newer than the CUDA the driver supports (diagnose.nvcc-above-driver): azure-001 (the Azure HPC image's
# CUDA 12.4 toolkit on driver 535, CUDA 12.2); llama-cpp-008 is the same cause (llama.cpp built with CUDA 12.4 on an
# older driver) without the versions in its paste
SMI_535 = ("| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |\n"
           "|-----------------------------------------+----------------------+----------------------+\n")


def _nvcc(release: str) -> str:
    return ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
            f"Cuda compilation tools, release {release}, V{release}.131\n")


def _toolkit(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.code.startswith("diagnose.nvcc-above-driver")]


def test_nvcc_newer_than_the_drivers_cuda_is_a_driver_too_old_lead(compat) -> None:
    got = _toolkit("`nvidia-smi`\n" + SMI_535 + "`nvcc --version`\n" + _nvcc("12.4"), compat)
    assert [(f.category, f.severity, f.confidence) for f in got] == \
        [("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "warning", "low")], got
    assert "550.54.14" in got[0].summary  # cuda_driver.json: CUDA 12.4 GA's minimum
    major = _toolkit(SMI_535 + _nvcc("13.0") + "torch 2.4.0+cu121\n", compat)
    assert [(f.severity, f.confidence) for f in major] == [("warning", "medium")], major


def test_near_miss_nvcc_within_the_drivers_cuda_or_beside_torchs_own_stays_quiet(compat) -> None:
    assert not _toolkit(SMI_535 + _nvcc("12.1"), compat)
    # torch's CUDA (12.1) is the program's and the driver runs it; nvcc 12.6 builds extensions only
    assert not _toolkit(SMI_535 + _nvcc("12.6") + "torch 2.3.1+cu121\n", compat)


# ---- NVRTC rejects the GPU's architecture: hashcat-001 (dizcza/docker-hashcat#20, an RTX 5080 with the image's
# older CUDA) and a torch JIT fuser's NVRTC (youngwanLEE/centermask2#88: "RuntimeError: nvrtc: error: ...")
def test_nvrtc_rejecting_the_architecture_is_a_build_older_than_the_gpu(compat) -> None:
    hashcat = ("nvrtcCompileProgram(): NVRTC_ERROR_INVALID_OPTION\n\n"
               "nvrtc: error: invalid value for --gpu-architecture (-arch)\n\n"
               "* Device #1: Kernel /usr/local/share/hashcat/OpenCL/shared.cl build failed.\n")
    torch_jit = "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)\n"
    for text in (hashcat, torch_jit):
        assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in _serious(text, compat), text


def test_near_miss_another_nvrtc_option_error_is_not_the_architecture(compat) -> None:
    text = "nvrtc: error: invalid value for --std (-std)\nnvrtcCompileProgram(): NVRTC_ERROR_INVALID_OPTION\n"
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" not in _serious(text, compat)


# ---- the driver said in words to be old: azure-002 (skypilot-org/skypilot#2751, "an old version of nvidia
# drivers") beside jade-hpc-003's "the drivers are too old" (the row's earlier wording)
def test_an_image_said_to_have_an_old_version_of_the_driver_is_a_low_lead(compat) -> None:
    for text in ("The current image used for Azure has an old version of nvidia drivers:\n",
                 "I can locally install both cuda and cudnn, however the drivers are too old to support them.\n"):
        got = _serious(text, compat)
        assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in got, text
        assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "warning"


def test_near_miss_moving_away_from_an_old_driver_is_not_the_claim(compat) -> None:
    text = "I upgraded from an old version of nvidia drivers to 550 and training fails with an error\n"
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in _serious(text, compat)


# ---- nvidia-container-cli's NVML call missing from an old driver (DRIVER_OUTDATED): container-toolkit-020
# (nvidia-docker#1280, driver 410.48) and the same line under `--gpus all` (nvidia-docker#1492, driver 367.134)
def test_the_container_clis_nvml_function_missing_is_an_outdated_driver(compat) -> None:
    runtime = ('docker: Error response from daemon: OCI runtime create failed: container_linux.go:348: starting '
               'container process caused "process_linux.go:402: container init caused \\"process_linux.go:385: '
               'running prestart hook 1 caused \\\\\\"error running hook: exit status 1, stdout: , stderr: '
               'nvidia-container-cli: detection error: nvml error: function not found\\\\\\\\n\\\\\\"\\"": unknown.\n'
               "| NVIDIA-SMI 410.48                 Driver Version: 410.48                    |\n")
    gpus = ("docker run --gpus all --rm debian:10-slim nvidia-smi\n"
            "docker: Error response from daemon: OCI runtime create failed: container_linux.go:367: starting "
            "containvidia-container-cli: detection error: nvml error: function not found: unknown.\n")
    for text in (runtime, gpus):
        got = _serious(text, compat)
        assert "DRIVER_OUTDATED" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)


def test_near_miss_another_detection_error_stays_the_runtimes(compat) -> None:
    text = "nvidia-container-cli: detection error: nvml error: unknown error\n"
    assert "DRIVER_OUTDATED" not in _serious(text, compat)


# ---- Paddle's GPU build counting no GPU (a low lead: the driver first, as Paddle's maintainers answer it):
# paddle-003 (PaddleClas#965, driver 430.64), paddle-004 (Paddle#22749, the glog line alone)
def test_paddles_gpu_build_without_a_gpu_is_a_low_driver_lead(compat) -> None:
    clas = ("   driver：430.64\n>>> import paddle\nW0624 14:32:46.220422 23029 init.cc:136] Compiled with WITH_GPU, "
            "but no GPU found in runtime.\n")
    for text in (clas, "fluid W0224 Compiled with WITH_GPU, but no GPU found in runtime.\n"):
        got = _serious(text, compat)
        assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "warning", sorted(got)
        assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].confidence == "low"


def test_near_miss_a_driver_that_runs_paddles_cuda_is_not_the_lead(compat) -> None:
    # driver 550 runs every CUDA 11.x/12.x runtime: the GPU is hidden, not the driver too old
    text = ("| NVIDIA-SMI 550.54.14    Driver Version: 550.54.14    CUDA Version: 12.4     |\n"
            "pip install paddlepaddle-gpu==2.6.1.post120 (CUDA 12.0)\n"
            "W0106 18:12:16.305999 14974 init.cc:182] Compiled with WITH_GPU, but no GPU found in runtime.\n")
    got = _serious(text, compat)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in got and "NO_GPU_VISIBLE" in got, sorted(got)


# ---- llama.cpp's CUDA build counting no devices while nvidia-smi works (llama-cpp-008, ggml-org/llama.cpp#6184:
# the maintainer's answer is the toolkit's minimum driver), the same kind as Paddle's above
def test_ggml_finding_no_cuda_devices_is_a_low_driver_lead(compat) -> None:
    text = ("ggml_init_cublas: no CUDA devices found, CUDA will be disabled\n"
            "I have a NVIDIA GeForce RTX 3090 Ti. `nvidia-smi` works correctly and `nvcc` is available.\n")
    got = _serious(text, compat)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].confidence == "low", sorted(got)


def test_near_miss_ggml_under_wsl_is_wsls(compat) -> None:
    text = ("Linux DESKTOP 5.15.133.1-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n"
            "ggml_init_cublas: no CUDA devices found, CUDA will be disabled\n")
    got = _serious(text, compat)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in got and "WSL_SPECIFIC" in got, sorted(got)
