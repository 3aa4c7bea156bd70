"""Issue 42 (helper paste42): kinds of corpus misses fixed in the general mechanism, each from several reports of
different trackers. Every excerpt below is a real line of the report named beside it (tests/fixtures/corpus/;
docs/diagnose.md lists the rows and their sources).

- The container runtime's own failures (CONTAINER_NO_GPU_RUNTIME): libnvidia-container's other stages (detection,
  ldcache, container), an NVIDIA runtime or OCI hook binary that is missing, a CDI device the engine cannot
  resolve, containerd's CRI wording for a runtime it does not have.
- WSL's GPU paravirtualisation missing (/dev/dxg, libdxcore) and its driver libraries being copies (WSL_SPECIFIC);
  a row may name its own trigger word (``word``) where its pattern's longest word is too common to find the line.
- The NVIDIA kernel module not built or not loaded (NO_NVIDIA_DRIVER).
- A framework's own loader not finding a CUDA library (Paddle, jaxlib, ONNX Runtime: CUDA_LIBRARY_VERSION_MISMATCH),
  and a cuDNN loaded that is newer than the one the build was compiled against.
- Two packages at versions that do not go together (DEPENDENCY_UNMET), an extension without its compiled module.
- Context: a `docker run` named in a sentence, or a wrapper script named like docker, is no container run.
"""

from __future__ import annotations

import copy
import json

import pytest

from envdoctor.compat.signatures import SignatureError, parse_signatures
from envdoctor.diagnose import NothingRecognised, read_paste
from envdoctor.diagnose.readers.messages import _literal_keywords
from envdoctor.model.findings import Severity
from envdoctor.services.diagnose import diagnose_report
from tests.paths import REPO


def _findings(text: str, compat) -> list:
    try:
        return diagnose_report([text], compat).all_findings
    except NothingRecognised:
        return []


def _serious(text: str, compat) -> dict:
    """category -> {(code, severity)} of the warnings and errors."""
    out: dict = {}
    for f in _findings(text, compat):
        if f.severity in (Severity.WARNING, Severity.ERROR):
            out.setdefault(f.category, set()).add((f.code, f.severity))
    return out


def _errors(text: str, compat) -> list:
    return [f for f in _findings(text, compat) if f.severity == Severity.ERROR]


def _code(category: str, text: str, compat) -> set:
    return {code for code, _ in _serious(text, compat).get(category, set())}


# ---- the container runtime's own failures

@pytest.mark.parametrize("line", [
    # NVIDIA/nvidia-docker#1447 (container-toolkit-016): cgroup v2 before the toolkit supported it
    "docker: Error response from daemon: OCI runtime create failed: container_linux.go:370: starting container "
    "process caused: process_linux.go:459: container init caused: Running hook #0:: error running hook: exit status 1,"
    " stdout: , stderr: nvidia-container-cli: container error: cgroup subsystem devices not found: unknown.",
    # NVIDIA/nvidia-docker#587 (container-toolkit-023)
    "Failed to run nvidia/cuda:8.0 via nvidia-docker2. nvidia-container-cli: ldcache error: process /sbin/ldconfig "
    "failed with error code: 127",
    # pop-os/pop#888 (pop-os-003)
    "**nvidia-container-cli: detection error: driver error: failed to process request**",
])
def test_libnvidia_container_stages(line, compat) -> None:
    assert _code("CONTAINER_NO_GPU_RUNTIME", line + "\n", compat) == {"messages.signature/nvidia-container-cli-error"}


def test_nvml_function_not_found_is_not_the_runtime(compat) -> None:
    # NVIDIA/nvidia-docker#1280 (container-toolkit-020): the driver predates the toolkit's NVML call; the runtime
    # row stays quiet (no wrong cause), the line stays an unrecognised error
    line = ("docker: Error response from daemon: OCI runtime create failed: running prestart hook 1 caused "
            "\"error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: detection error: nvml error:"
            " function not found\": unknown.\n")
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(line, compat)


@pytest.mark.parametrize("line", [
    # NVIDIA/nvidia-docker#686 (container-toolkit-028)
    "fork/exec /usr/bin/nvidia-container-runtime: no such file or directory: unknown",
    # void-linux/void-packages#55062 (void-linux-002)
    "Error: runc: runc create failed: unable to start container process: error during container init: error running "
    "hook #0: fork/exec /usr/bin/nvidia-cdi-hook: no such file or directory: OCI runtime attempted to invoke a command "
    "that was not found",
    # NVIDIA/nvidia-container-runtime#68 (container-toolkit-013), cut short in the report itself
    "docker: Error response from daemon: OCI runtime create failed: unable to retrieve OCI runtime error (open "
    "/run/containerd/io.containerd.runtime.v1.linux/moby/af425d98/log.json: no such file or directory): "
    "nvidia-container-runtime did not termin",
])
def test_nvidia_runtime_or_hook_binary_missing(line, compat) -> None:
    assert _code("CONTAINER_NO_GPU_RUNTIME", line + "\n", compat) == {"messages.signature/oci-hook-binary-missing"}


@pytest.mark.parametrize("line", [
    # NVIDIA/nvidia-container-toolkit#63 (podman-002): Podman 3.0.1 predates CDI
    "`Error: stat nvidia.com/gpu=0: no such file or directory`",
    # NVIDIA/nvidia-container-toolkit#1940 (podman-003)
    "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=0",
    # NixOS/nixpkgs#420638 (podman-001), the title
    "nvidia-container-toolkit: podman fails with unresolvable CDI devices nvidia.com/gpu=all",
])
def test_cdi_device_unresolvable(line, compat) -> None:
    assert _code("CONTAINER_NO_GPU_RUNTIME", line + "\n", compat) == {"messages.signature/cdi-device-unresolvable"}


def test_cdi_list_that_works_is_quiet(compat) -> None:
    # the same report's working listing (podman-003): the device names alone are no failure
    text = "$ nvidia-ctk --debug cdi list\nINFO[0000] Found 3 CDI devices\nnvidia.com/gpu=0\nnvidia.com/gpu=all\n"
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(text, compat)


def test_containerd_has_no_nvidia_runtime(compat) -> None:
    # canonical/microk8s#2474 (microk8s-001)
    line = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime "
            "for \"nvidia\" is configured\n")
    assert _code("CONTAINER_NO_GPU_RUNTIME", line, compat) == {"messages.signature/unknown-runtime-nvidia"}


# ---- WSL

@pytest.mark.parametrize("text, code", [
    # microsoft/WSL#6809 (wsl-010): a person's sentence, found by the row's own word
    ("The /dev/dxg device is not available in WLS2 Linux distros when I updated to preview build 21354.\n",
     "messages.signature/wsl-dxg-missing"),
    # microsoft/WSL#6617 (wsl-011)
    ("Additionally /dev/dxg is not visible.\n", "messages.signature/wsl-dxg-missing"),
    # NVIDIA/nvidia-docker#1542 (wsl-009)
    ("WSL2 error: dxcore initialization failed, continuing assuming a non-WSL environment\n",
     "messages.signature/wsl-dxcore-missing"),
])
def test_wsl_paravirtualisation_missing(text, code, compat) -> None:
    assert (code, Severity.ERROR) in _serious(text, compat).get("WSL_SPECIFIC", set())


def test_wsl_library_copies_are_a_warning_only(compat) -> None:
    # microsoft/WSL#5663 (wsl-002) and yuk7/ArchWSL#248 (wsl-006, a healthy control): ldconfig's complaint is WSL's
    # layout, worth saying, never an error
    text = "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link\n"
    assert _serious(text, compat)["WSL_SPECIFIC"] == {("messages.signature/wsl-libcuda-not-symlink", Severity.WARNING)}
    assert _errors(text, compat) == []


def test_a_row_names_its_own_word(compat) -> None:
    # the dxg row's longest word ("available") is too common to be a trigger: its "word" finds the line
    dxg = next(s for s in compat.signatures if s.id == "wsl-dxg-missing")
    assert dxg.words == ("/dev/dxg",) and "/dev/dxg" in _literal_keywords([dxg])
    facts, _ = read_paste(["The /dev/dxg device is not available in my Linux distros.\n"], compat)
    assert any("/dev/dxg" in m for m in facts.paste.messages)


def test_loader_rejects_a_word_the_pattern_does_not_hold() -> None:
    doc = json.loads((REPO / "compat_data" / "error_signatures.json").read_text(encoding="utf-8"))
    bad = copy.deepcopy(doc)
    row = next(r for r in bad["rows"] if r["id"] == "wsl-dxg-missing")
    row["word"] = "/dev/nvidia0"
    with pytest.raises(SignatureError, match="word"):
        parse_signatures(bad)
    row["word"] = ["/dev/dxg", "no"]  # a list: every literal checked, none shorter than 3 characters
    with pytest.raises(SignatureError, match="word"):
        parse_signatures(bad)
    parsed = {s.id: s for s in parse_signatures(doc)}
    # a literal is checked against the pattern's text with its escapes undone ("\\+cpu" holds "+cpu")
    assert parsed["wsl-dxg-missing"].words == ("/dev/dxg",) and "+cpu" in parsed["torch-cpu-build-said"].words


# ---- the NVIDIA kernel module not built or not loaded

@pytest.mark.parametrize("line, code", [
    # zen-kernel/zen-kernel#305 (nvidia-driver-005)
    ("==> ERROR: Missing 6.2.1-zen1-1-zen kernel headers for module nvidia/525.89.02.",
     "nvidia-module-build-failed"),
    # negativo17/nvidia-driver#188 (negativo17-003)
    ("Building and installing nvidia-kmod [FAILED]", "nvidia-module-build-failed"),
    # NVIDIA/gpu-operator#234 (gpu-operator-001)
    ("Error: Unable to find a match: kernel-headers-4.18.0-240.23.2.el8_3.x86_64 "
     "kernel-devel-4.18.0-240.23.2.el8_3.x86_64", "kernel-headers-package-missing"),
    # beclab/Olares#3963 (olares-001)
    ("ERROR: Unable to load the kernel module 'nvidia.ko'.", "nvidia-module-load-failed"),
    # NVIDIA/nvidia-docker#137 (aws-001)
    ("nvidia-docker | 2016/07/13 23:40:32 Error: Could not load UVM kernel module", "nvidia-module-load-failed"),
])
def test_kernel_module_not_built_or_loaded(line, code, compat) -> None:
    assert f"messages.signature/{code}" in _code("NO_NVIDIA_DRIVER", line + "\n", compat)


def test_a_kmod_that_builds_is_quiet(compat) -> None:
    text = ("# akmods --rebuild --force\nChecking kmods exist for 6.17.10-300.fc43.x86_64 [  OK  ]\n"
            "Building and installing nvidia-kmod [  OK  ]\n")
    assert "NO_NVIDIA_DRIVER" not in _serious(text, compat)


# ---- a framework's loader and its CUDA libraries

@pytest.mark.parametrize("line", [
    # PaddlePaddle/PaddleOCR#7300 (paddle-001), PaddlePaddle/Paddle#36238 (paddle-007)
    "RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.",
    # jax-ml/jax#18027 (jax-010)
    "CUDA backend failed to initialize: Unable to load cuSOLVER. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
    # microsoft/onnxruntime#20223 (onnxruntime-011)
    "Loadlibrary failed with error 126 when trying to load onnxruntime_providers_cuda.dll",
])
def test_framework_cannot_load_its_cuda_library(line, compat) -> None:
    assert _code("CUDA_LIBRARY_VERSION_MISMATCH", line + "\n", compat) == \
        {"messages.signature/framework-cuda-library-not-loaded"}


def test_ollama_cudart_wording_is_not_this_row(compat) -> None:
    # ollama's own "unable to load cudart" (a driver too old for its runtime, ollama/ollama#6604) is another kind
    line = 'time=2024-09-03T10:00:00 level=WARN msg="Unable to load cudart" library=C:\\ollama\\cudart64_12.dll\n'
    assert "messages.signature/framework-cuda-library-not-loaded" not in _code("CUDA_LIBRARY_VERSION_MISMATCH",
                                                                             line, compat)


@pytest.mark.parametrize("line, category", [
    # balancap/SSD-Tensorflow#340 (tensorflow-011): a newer cuDNN than the build: the build is for another release
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:343] Loaded runtime CuDNN library: 7301 (compatibility version "
     "7300) but source was compiled with 7003 (compatibility version 7000).", "CUDA_LIBRARY_VERSION_MISMATCH"),
    # nicolov/segmentation_keras#32 (tensorflow-012)
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:371] Loaded runtime CuDNN library: 6021 (compatibility version "
     "6000) but source was compiled with 5105 (compatibility version 5100).", "CUDA_LIBRARY_VERSION_MISMATCH"),
])
def test_cudnn_loaded_newer_than_built(line, category, compat) -> None:
    serious = _serious(line + "\n", compat)
    assert "messages.signature/dnn-loaded-older-than-built" in {c for c, _ in serious.get(category, set())}
    other = {"CUDA_LIBRARY_VERSION_MISMATCH", "SYSTEM_LIB_SHADOWING"} - {category}
    assert not other & set(serious)


def test_cudnn_loaded_older_than_built_alone_is_both_readings_at_warning(compat) -> None:
    # jax-ml/jax#15268 (jax-001, a shadowing copy) and jax-ml/jax#16901 (jax-015, the only cuDNN too old) paste the
    # same line: alone it is both readings, neither an error (round 11, libs10)
    line = ("E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:429] Loaded runtime CuDNN library: 8.5.0 but source "
            "was compiled with: 8.6.0.\n")
    serious = _serious(line, compat)
    for category in ("CUDA_LIBRARY_VERSION_MISMATCH", "SYSTEM_LIB_SHADOWING"):
        assert {s for _, s in serious.get(category, set())} == {Severity.WARNING}


# ---- packages at versions that do not go together

@pytest.mark.parametrize("line, code", [
    # open-mmlab/mmdetection#5803 (mmcv-009), open-mmlab/mmcv#2236 (mmcv-011)
    ("AssertionError: MMCV==1.3.9 is used but incompatible. Please install mmcv>=[1, 1, 4], <=[1, 2, 0].",
     "openmmlab-mmcv-out-of-range"),
    ("AssertionError: MMCV==1.3.9 is used but incompatible. Please install mmcv>=(1, 3, 13, 0, 0, 0), "
     "<(1, 7, 0, 0, 0, 0).", "openmmlab-mmcv-out-of-range"),
    # traveller59/spconv#367 (spconv-001), Luoyadan/CRB-active-3Ddet#7 (spconv-002)
    ("ImportError: cannot import name 'ConvFwdAndBwdInput' from 'cumm.conv.main'", "cannot-import-name-from-package"),
    ("ImportError: cannot import name 'TensorOpParams' from 'cumm.gemm.algospec.core' "
     "(/opt/conda/envs/ahmed/lib/python3.7/site-packages/cumm/gemm/algospec/core.py)",
     "cannot-import-name-from-package"),
])
def test_dependency_out_of_range(line, code, compat) -> None:
    assert f"messages.signature/{code}" in _code("DEPENDENCY_UNMET", line + "\n", compat)


def test_circular_import_is_not_a_version_clash(compat) -> None:
    line = ("ImportError: cannot import name 'Trainer' from partially initialized module 'mytrainer' (most likely due "
            "to a circular import) (/home/me/mytrainer/__init__.py)\n")
    assert "DEPENDENCY_UNMET" not in _serious(line, compat)


@pytest.mark.parametrize("line, category", [
    # chenhang98/BPR#13 (mmcv-007), XLearning-SCU/2022-CVPR-AirNet#5 (mmcv-008): the lite mmcv, no compiled ops
    ("ModuleNotFoundError: No module named 'mmcv._ext'", "THIRD_PARTY_EXTENSION_MISMATCH"),
    # a companion's own compiled module is the companion's problem, not a third party's
    ("ModuleNotFoundError: No module named 'torchvision._C'", "COMPANION_VERSION_MISMATCH"),
])
def test_extension_without_its_compiled_module(line, category, compat) -> None:
    assert "messages.signature/extension-compiled-module-missing" in _code(category, line + "\n", compat)


def test_insufficient_driver_without_the_prefix(compat) -> None:
    # NVIDIA/cutlass#2866 (cutlass-001): CUDA Python's enum name in a sentence
    text = ("When I run examples/python/CuTeDSL/blackwell/dense_gemm.py on the Blackwell, I find the error CUDAError "
            "InsufficientDriver. My CUDA version is 12.9.41 and my CUDA driver is 570.133.20.\n")
    assert "messages.signature/cuda-error-code-35" in _code("DRIVER_TOO_OLD_FOR_TORCH_CUDA", text, compat)


# ---- context: what is a container run

_SMI = ("+-----------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 450.80.02    Driver Version: 450.80.02    CUDA Version: 11.0     |\n")


@pytest.mark.parametrize("text", [
    # NVIDIA/nvidia-docker#1483 (container-toolkit-019, a healthy control): the command named in a sentence
    "`nvidia-smi` reports the actural PIDs on host instead of the PIDs inside container (`docker run` without "
    "`--pid=host` flag).\n",
    # DeepLabCut/Docker4DeepLabCut2.0#4 (docker-006, a healthy control): the project's wrapper passes the GPU
    "ebfmlab@ebfmlab:~/Docker4DeepLabCut2.0$ GPU=1 bash ./dlc-docker run -d -p 2351:8888 --name containername "
    "dlc_username/dlcdocker\n",
])
def test_a_docker_run_that_is_no_run(text, compat) -> None:
    facts, _ = read_paste([text + _SMI], compat)
    # no `docker run` read (a container may still be mentioned: "inside container")
    assert "container.gpus_requested" not in (facts.paste.provenance or {})
    assert facts.host.container is None or facts.host.container.gpu_device_nodes is None
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(text + _SMI, compat)


def test_a_real_docker_run_is_still_read(compat) -> None:
    text = "$ docker run --rm nvidia/cuda:11.0-base nvidia-smi\nbash: nvidia-smi: command not found\n"
    facts, _ = read_paste([text], compat)
    assert facts.host.container.runtime == "docker" and facts.host.container.gpu_device_nodes == []
    assert "CONTAINER_NO_GPU_RUNTIME" in _serious(text, compat)


# ---- ONNX Runtime without its CUDA provider, in other words than its own error

@pytest.mark.parametrize("text, code", [
    # TaterTotterson/microWakeWord-Trainer-Nvidia-Docker#1 (onnxruntime-007): an application's line
    ("🔧 ONNX Runtime Providers:\n  • ['AzureExecutionProvider', 'CPUExecutionProvider']\n"
     "⚠️  CUDAExecutionProvider not available — ONNX will fall back to CPU.\n", "ort-cuda-provider-not-available"),
    # microsoft/onnxruntime#6183 (onnxruntime-013): the reporter's words
    ("I was trying to run an onnx model on Google collab to run predictions, but when I check the providers only "
     "['CPUExecutionProvider'] is available.\n", "ort-cuda-provider-not-available"),
    # glucauze/sd-webui-faceswaplab#124 (sd-webui-008)
    ("Installing both `onnxruntime` and `onnxruntime-gpu` leads to undefined behavior as the CUDAExecutionProvider "
     "might not be available despite the GPU runtime package being installed.\n", "ort-both-packages-installed"),
])
def test_onnxruntime_without_its_cuda_provider(text, code, compat) -> None:
    assert f"messages.signature/{code}" in _code("CUDA_VARIANT_MIXED", text, compat)


def test_onnxruntime_with_its_cuda_provider_is_quiet(compat) -> None:
    text = ("🔧 ONNX Runtime Providers:\n  • ['TensorrtExecutionProvider', 'CUDAExecutionProvider', "
            "'CPUExecutionProvider']\n✅ CUDAExecutionProvider available\n")
    assert "CUDA_VARIANT_MIXED" not in _serious(text, compat)


# ---- said in words: the torch installed is a CPU build (a warning: the reporter's words, not torch's)

@pytest.mark.parametrize("line", [
    # raryelcostasouza/pyTranscriber#56 (pytranscriber-001)
    "The openai-whisper package installed Torch without the CUDA version, but I installed Torch using `pip3 install "
    "torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cu126` and it worked.",
    # Brekel/VisionCaptioner#19 (torch-downstream-024)
    "I ran the update bat and after it seemed to go back to using pytorch CPU instead of GPU. I had to manually "
    "uninstall the pytorch CPU and install the GPU again.",
    # Haoming02/sd-webui-forge-classic#269 (sd-webui-009)
    "torch 2.8.0+cu128 gets installed and during the installation of the requirements it gets replaced by torch "
    "2.8.0+cpu now.",
    # chatchat-space/Langchain-Chatchat#294 (langchain-chatchat-001)
    "如题目，使用requirements安装，PyTorch安装的是CPU版本，运行程序的时候，也是使用CPU在工作。",
])
def test_cpu_build_said_in_words(line, compat) -> None:
    assert _serious(line + "\n", compat)["TORCH_CPU_ONLY_BUILD"] == \
        {("messages.signature/torch-cpu-build-said", Severity.WARNING)}


def test_a_cpu_torch_by_choice_is_no_error(compat) -> None:
    # a laptop without a GPU where the CPU wheel is what the reporter wants: at most the low-confidence warning
    text = "On my laptop without a GPU I installed torch without the CUDA runtime, which is what I want.\n"
    assert _errors(text, compat) == []


# ---- message wording: a torch class's typeinfo, a title cut short

def test_typeinfo_of_a_torch_class(compat) -> None:
    # open-mmlab/mmdetection#4291 (mmcv-003): _ZTI (typeinfo) of c10::AutogradMetaInterface
    line = ("ImportError: /home/e706/anaconda3/envs/mmdetection/lib/python3.7/site-packages/mmcv/"
            "_ext.cpython-37m-x86_64-linux-gnu.so: undefined symbol: _ZTIN3c1021AutogradMetaInterfaceE\n")
    assert "messages.signature/extension-undefined-torch-symbol" in _code("THIRD_PARTY_EXTENSION_MISMATCH", line,
                                                                        compat)


def test_no_kernel_image_cut_short(compat) -> None:
    # Acly/krita-ai-diffusion#2426 (krita-ai-diffusion-001): the title
    assert "messages.signature/no-kernel-image" in _code("GPU_ARCH_NOT_IN_TORCH_BUILD",
                                                         "CUDA error: no kernel image is available\n", compat)


# ---- a CUDA driver API entry point missing from libcuda: a driver older than the call (a low-confidence lead)

@pytest.mark.parametrize("line", [
    # sgl-project/sglang#8432 (sglang-006): the green-context calls came with CUDA 12.4, driver 535 is 12.2's
    "[Bug] undefined symbol: cuGreenCtxDestroy",
    # vllm-project/vllm#11623 (vllm-004)
    "WARNING 12-30 17:06:52 _custom_ops.py:19] Failed to import from vllm._C with ImportError('/usr/local/app/.local/"
    "lib/python3.8/site-packages/vllm/_C.abi3.so: undefined symbol: cuTensorMapEncodeTiled')",
])
def test_driver_api_symbol_missing(line, compat) -> None:
    assert ("messages.signature/driver-api-symbol-missing", Severity.WARNING) in \
        _serious(line + "\n", compat)["DRIVER_TOO_OLD_FOR_TORCH_CUDA"]


@pytest.mark.parametrize("line", [
    # a CUDA library's own symbol (cuBLASLt's, lower case after "cu"): another copy of the library, not the driver
    "OSError: /venv/lib/python3.10/site-packages/nvidia/cublas/lib/libcublas.so.11: undefined symbol: "
    "cublasLtGetStatusString, version libcublasLt.so.11",
    # HAMi's sharing layer lacking a driver call is HAMi's (hami-libvgpu-in-the-way), not an old driver
    "/usr/local/vgpu/libvgpu.so: undefined symbol: cuMemAllocAsync",
])
def test_other_undefined_cu_symbols_are_not_the_driver(line, compat) -> None:
    assert "messages.signature/driver-api-symbol-missing" not in _code("DRIVER_TOO_OLD_FOR_TORCH_CUDA", line + "\n",
                                                                       compat)


def test_ray_object_store_larger_than_dev_shm(compat) -> None:
    # ray-project/ray#14535 (ray-003)
    line = ("ValueError: The configured object store size exceeds the capacity of /dev/shm. This will harm "
            "performance. To proceed regardless of this warning, you can set RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE=1.\n")
    assert "messages.signature/ray-dev-shm-too-small" in _code("SHM_TOO_SMALL", line, compat)


@pytest.mark.parametrize("text, code", [
    # negativo17/nvidia-driver#73 (negativo17-002): nouveau's kernel log names the chip it bound
    ("[    5.435274] nouveau 0000:01:00.0: enabling device (0000 -> 0003)\n"
     "[    5.436312] nouveau 0000:01:00.0: NVIDIA GM204 (124020a1)\n", "nouveau-holds-gpu"),
    # NVIDIA/k8s-driver-manager#37 (gpu-operator-002)
    ("machine is install `nouveau` driver, and i use `dmesg` command to look kernel log, found having many error "
     "about `nouveau`:\n", "nouveau-holds-gpu"),
    # wookayin/gpustat#110 (gpustat-001): NVML's NVML_ERROR_DRIVER_NOT_LOADED through pynvml
    ("    raise NVMLError(ret)\n**pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded**\n",
     "nvidia-module-load-failed"),
])
def test_no_nvidia_module_driving_the_gpu(text, code, compat) -> None:
    assert f"messages.signature/{code}" in _code("NO_NVIDIA_DRIVER", text, compat)


def test_nouveau_named_for_a_blacklist_is_quiet(compat) -> None:
    # the blacklist itself (on the kernel command line, in modprobe.d) is no sign nouveau holds the GPU
    text = ("[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=8c79 ro rd.driver.blacklist=nouveau "
            "modprobe.blacklist=nouveau\n$ cat /etc/modprobe.d/blacklist-nouveau.conf\nblacklist nouveau\n"
            "options nouveau modeset=0\n")
    assert "NO_NVIDIA_DRIVER" not in _serious(text, compat)


@pytest.mark.parametrize("line", [
    # NVIDIA/cudf#5776 (rapids-001): RAPIDS' own warning, its spelling kept
    "[QST] UserWarning: you will need a GPU with NVIIDA Pascal or newer architecture",
    # NVIDIA/cuml#5484 (rapids-002)
    "RuntimeError: This cuDF installation is missing the necessary PTX files that are <=50.",
])
def test_rapids_says_the_gpu_is_too_old(line, compat) -> None:
    assert "messages.signature/rapids-gpu-too-old" in _code("GPU_ARCH_NOT_IN_TORCH_BUILD", line + "\n", compat)


# ---- trigger words: a widened row keeps finding its old wording; no word the bounded read scans twice for

@pytest.mark.parametrize("line, category", [
    # no trigger word on these lines: only the row's own word makes them candidates
    ("Unknown runtime specified nvidia", "CONTAINER_NO_GPU_RUNTIME"),
    ("WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes "
     "available.", "SHM_TOO_SMALL"),
])
def test_widened_rows_keep_their_words(line, category, compat) -> None:
    assert category in _serious(line + "\n", compat)


def test_bounded_read_scans_for_no_word_another_covers(compat) -> None:
    from envdoctor.diagnose.bounded_read import trigger_keywords

    words = trigger_keywords(compat)
    assert b"error" in words and b"/dev/dxg" in words
    # "importerror" (cannot-import-name-from-package's word) holds "error": a second pass that keeps no new line
    assert not [w for w in words if any(o != w and o in w for o in words)]


@pytest.mark.parametrize("line, category", [
    # PaddlePaddle/Paddle#26954 (paddle-006): an older cuDNN found first
    ("W0801 10:00:00.000000  1234 device_context.cc:260] WARNING: device: 0. The installed Paddle is compiled with "
     "CUDNN 7.6, but CUDNN version in your machine is 7.3, which may cause serious incompatible bug. Please recompile "
     "or reinstall Paddle with compatible CUDNN version.", "SYSTEM_LIB_SHADOWING"),
    # the other direction: a newer cuDNN than the build's is a build for another release
    ("WARNING: device: 0. The installed Paddle is compiled with CUDNN 8.1, but CUDNN version in your machine is 8.9, "
     "which may cause serious incompatible bug.", "CUDA_LIBRARY_VERSION_MISMATCH"),
])
def test_paddle_cudnn_version_differs_is_a_lead(line, category, compat) -> None:
    # Paddle prints it also where it then works (run_check passes): a warning at most, never an error
    serious = _serious(line + "\n", compat)
    assert serious[category] == {("messages.signature/paddle-cudnn-version-differs", Severity.WARNING)}
    assert _errors(line + "\n", compat) == []
