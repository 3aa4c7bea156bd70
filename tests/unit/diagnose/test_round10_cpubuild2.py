"""Issue 42, round 10, helper cpubuild2: a CPU-only build where the reporter expected the GPU.

Kinds (each from two or more trackers; a healthy or near-miss text beside each stays quiet):

- torch's own "Torch not compiled with CUDA enabled" retyped without its last word (espnet-002; the catalogue row's
  earlier sources carry the full message);
- ``torch.cuda.is_available()`` said to be False in a sentence or in torch's own message (conda-003, jetson-001,
  torch-downstream-035): torch's build is not in the paste, so a low-confidence TORCH_CPU_ONLY_BUILD lead that asks
  for the output that settles it (``diagnose.cuda-unavailable``);
- a tool or the reporter saying the installed torch has no CUDA: "torch cpu != required cu130" (unsloth-002),
  "torch listed in requirements.txt, but it doesn't install support for CUDA" (torch-downstream-045).
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import serious as _serious


@pytest.mark.parametrize("text", [
    "Assertion error: torch not compiled with cuda\n",  # espnet-002 (espnet/espnet#4513)
    "AssertionError: Torch not compiled with CUDA enabled\n",  # the message as torch prints it
])
def test_torch_not_compiled_with_cuda_with_or_without_its_last_word(compat, text) -> None:
    got = _serious(text, compat)
    assert "TORCH_CPU_ONLY_BUILD" in got and got["TORCH_CPU_ONLY_BUILD"].severity == "error", sorted(got)


@pytest.mark.parametrize("text", [
    # conda-003 (pytorch/pytorch#69202)
    "I have tried to install cudatoolkit 11.3 with `conda install -c pytorch pytorch=1.9.0 torchvision "
    "cudatoolkit=11.3`. After successful installing pytorch, my GPU is not available anymore: "
    "torch.cuda.is_available=**False**\n",
    # jetson-001 (Lmy0217/PyTorch-aarch64#3)
    "I successfully install the torch on my jetson nano(Jetpack 4.4 [L4T 32.4.3]),but cuda.is_available() "
    "returns false\n",
    # torch-downstream-035 (deforum-art/stable-diffusion#132)
    "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If "
    "you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map "
    "your storages to the CPU.\n",
])
def test_is_available_false_in_words_is_a_low_confidence_cpu_build_lead(compat, text) -> None:
    got = _serious(text, compat)
    assert "TORCH_CPU_ONLY_BUILD" in got, sorted(got)
    assert got["TORCH_CPU_ONLY_BUILD"].severity == "warning" and got["TORCH_CPU_ONLY_BUILD"].confidence == "low"


@pytest.mark.parametrize("text", [
    "if torch.cuda.is_available() == False:\n    device = 'cpu'\n",  # a condition in code, not an answer
    "How to make o3d.core.cuda.is_available() False go away\n",  # open3d's query, not torch's
    "torch.cuda.is_available() returns True on this box\n",
])
def test_near_miss_is_available_not_said_false_of_torch(compat, text) -> None:
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


@pytest.mark.parametrize("text", [
    # unsloth-002 (unslothai/unsloth#5942)
    "setting up Python environment...\nStale venv detected (torch cpu != required cu130).\n"
    "[ERROR] unsloth studio setup failed (exit code 1)\n",
    # torch-downstream-045 (PierrunoYT/Kokoro-TTS-Local#17)
    "However, I noticed it had torch listed in requirements.txt, but it doesn't install support for CUDA.\n",
])
def test_installed_torch_said_to_lack_cuda(compat, text) -> None:
    assert "TORCH_CPU_ONLY_BUILD" in _serious(text, compat)


@pytest.mark.parametrize("text", [
    "The installer doesn't install CUDA itself; install the NVIDIA driver first.\n",  # no torch named
    "torch cpu build is fine here, required cpu only\n",
])
def test_near_miss_install_words_without_torch_lacking_cuda(compat, text) -> None:
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- a header-less `conda list | grep pytorch` (conda-002, meta-pytorch/data#315): conda's cpuonly package or the
# pytorch mutex's cpu build beside a CPU build of torch

CONDA_GREP_CPU = (
    "❯ conda list | grep pytorch\n"
    "cpuonly                   2.0                           0    pytorch\n"
    "pytorch                   1.11.0              py3.8_cpu_0    pytorch\n"
    "pytorch-mutex             1.0                         cpu    pytorch\n"
    "torchvision               0.12.0                 py38_cpu    pytorch\n")


def test_headerless_conda_rows_are_read_with_their_build_variant(compat) -> None:
    from envdoctor.diagnose import read_paste

    facts, _ = read_paste([CONDA_GREP_CPU], compat)
    py = facts.pythons[0]
    assert py.package("torch").variant == "cpu" and py.package("torchvision").variant == "cpu"
    assert "torch.conda_cpuonly" in facts.paste.provenance


def test_cpuonly_pinned_cpu_torch_is_a_low_confidence_lead(compat) -> None:
    got = _serious(CONDA_GREP_CPU, compat)
    assert "TORCH_CPU_ONLY_BUILD" in got and got["TORCH_CPU_ONLY_BUILD"].confidence == "low", sorted(got)


@pytest.mark.parametrize("text", [
    CONDA_GREP_CPU + "This is my MacBook, it has no NVIDIA GPU.\n",  # the CPU build is the right one there
    "conda list | grep pytorch\n"  # a CUDA build with its mutex
    "pytorch                   2.4.1           py3.11_cuda12.1_cudnn9.1.0_0    pytorch\n"
    "pytorch-mutex             1.0                        cuda    pytorch\n",
])
def test_near_miss_conda_rows_without_a_cpu_pin_stay_quiet(compat, text) -> None:
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- a program said to run on the CPU beside an NVIDIA GPU (diagnose.runs-on-cpu, readers/devices_said.py)

@pytest.mark.parametrize("text", [
    # invokeai-008 (invoke-ai/InvokeAI#2735)
    "I have a NVIDIA GTX 1060 3Go and I installed InvokerAI via the installer.\n"
    "When I run the invoker.bat file, it's really slow and I checked the option and I saw that it was using CPU.\n",
    # whisper-007 (dsymbol/decipher#8)
    "So I have a 3060 and a core i9-12900kf and when im using decipher im getting the error:  UserWarning: FP16 is "
    "not supported on CPU; using FP32 instead\n",
])
def test_a_torch_program_on_the_cpu_beside_an_nvidia_gpu_is_a_cpu_torch_lead(compat, text) -> None:
    got = _serious(text, compat)
    assert "TORCH_CPU_ONLY_BUILD" in got and got["TORCH_CPU_ONLY_BUILD"].confidence == "low", sorted(got)


@pytest.mark.parametrize("text", [
    # whisper-008 (HEALTHY): no GPU named, and the CPU asked for
    "transcriber._set_dtype:35 WARNING -> FP16 is not supported on CPU; using FP32 instead\n\nwhen running :\n"
    "whispering --language fr --model tiny --device cpu\n",
    # transformers-003 (HEALTHY): the program says it runs on CUDA, and torch came from the CUDA index
    "i am running with 3090 but it seems still it uses CPU.\n\nin the log i see \"Running on: cuda\" but examining "
    "the resource usage the GPU is almost untouched.\n",
    # diffusers-003 (HEALTHY): torch's CUDA build is shown
    "5. File completion goes from 10 seconds to 40 minutes, which leads me to believe that instead of CPU "
    "offloading, it actually just uses the CPU\n\nName: torch\nVersion: 1.12.1+cu116\n\n10 GPUs\n",
    # another engine than torch (its own builds and device defaults)
    "ollama 0.3.9 on Windows runs on the CPU although the machine has a 1080 Ti\n",
    # a comparison, not a complaint
    "model.generate() has roughly the same speed when running on CPU and GPU with my RTX 3090\n",
])
def test_near_miss_cpu_words_that_do_not_blame_torch(compat, text) -> None:
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


@pytest.mark.parametrize("text,code", [
    # paddle-008 (PaddlePaddle/PaddleOCR#16093): the CPU package beside a V100
    ("paddleocr==3.1.0\npaddlepaddle==3.1.0\nuse cpu for inference , has someone same problem? how to solve it?\n\n"
     "NVIDIA-SMI 525.60.13\nDriver Version: 525.60.13\nCUDA Version: 12.0\nV100/16GB\n", "paddle"),
    # dlib-001 (ageitgey/face_recognition#796)
    ("when i run this example my cpu load goes astronomical and the gpu does nothing\n"
     "can i force face_recognition to use the gpu? seems like its falling back to cpu usage. but why?\n", "dlib"),
    # llama-cpp-002 (abetlen/llama-cpp-python#787)
    ("I recently updated llama-cpp-python to make use of the new gguf format. Since then, i cant seem to get GPU to "
     "work. It keeps saying \"BLAS=0\" when starting the model, eventhough it was working before.\n", "llama.cpp"),
    # llama-cpp-006 (ggml-org/llama.cpp#6898)
    ("I use python's llama-cpp package to run the code, but I still cannot use the GPU.\nwindows11\n13900k+4090\n"
     "llama_cpp_python       0.2.64\nEven if I tried changing n_gpu_layers to -1,0, or other values\n", "llama.cpp"),
])
def test_a_framework_on_the_cpu_beside_a_gpu_is_its_cpu_build(compat, text, code) -> None:
    got = _serious(text, compat)
    assert "FRAMEWORK_CPU_ONLY_BUILD" in got, sorted(got)
    assert got["FRAMEWORK_CPU_ONLY_BUILD"].code == f"diagnose.runs-on-cpu/{code}"
    assert "TORCH_CPU_ONLY_BUILD" not in got


@pytest.mark.parametrize("text", [
    # llama-cpp-009: a -cu125 wheel whose CUDA backend fails (another cause)
    "- GPU: NVIDIA GeForce GTX 1060 6GB (compute capability 6.1)\n- llama-cpp-python: 0.3.23-cu125 (prebuilt wheel)\n"
    "2. ggml-cuda.cu:102: CUDA error\n- With default n_ctx=512 and n_gpu_layers=35, CUDA error occurs immediately.\n"
    "- GPU usage jumps briefly then drops to 0%; model falls back to CPU.\n",
    # llama-cpp-007 (HEALTHY): no offload asked for in the paste
    "I am trying to run my code with GPU support, I am running it on Jetson orin but it's not offloading the GPU\n"
    "models i use: llama-2-13b.Q2_K.gguf\n",
    # the GPU package of PaddlePaddle is installed
    "paddlepaddle-gpu==3.1.0\nuse cpu for inference, why?\nNVIDIA-SMI 525.60.13\nDriver Version: 525.60.13\n",
    # ctranslate2-009 (HEALTHY): an engine whose default device is the CPU
    "Then inference runs on CPU only.\nThe GPU is properly detected by PyTorch (`torch.cuda.is_available() = "
    "True`). generator = ctranslate2.Generator(\"gptj_ct2\") on my RTX 3090\n",
])
def test_near_miss_frameworks_with_their_gpu_part_or_no_gpu_asked(compat, text) -> None:
    got = _serious(text, compat)
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in got and "TORCH_CPU_ONLY_BUILD" not in got, sorted(got)


# ---- a framework's own query of its CUDA part answering False (diagnose.framework-cuda-query)

@pytest.mark.parametrize("text,confidence", [
    # open3d-002 (samuelm2/OpenQuestCapture#13): a REPL on Windows
    ("(mq3drecon) PS C:\\Users\\gbrru\\quest-3d-reconstruction> python\n>>> import open3d as o3d\n"
     ">>> print(o3d.core.cuda.is_available())\nFalse\n>>>\n", "medium"),
    # open3d-001 (isl-org/Open3D#5705): in words, the platform not said
    ("How to make o3d.core.cuda.is_available()  True, I got a Nvidia GPU\n\nnow False\n", "low"),
    # the compile flags of dlib and PaddlePaddle (face_recognition#796's check, PaddlePaddle's own)
    ("In [2]: dlib.DLIB_USE_CUDA\nOut[2]: False\n", "high"),
    (">>> paddle.device.is_compiled_with_cuda()\nFalse\n", "high"),
])
def test_a_frameworks_cuda_query_answering_false_is_its_cpu_build(compat, text, confidence) -> None:
    got = _serious(text, compat)
    assert "FRAMEWORK_CPU_ONLY_BUILD" in got, sorted(got)
    assert got["FRAMEWORK_CPU_ONLY_BUILD"].confidence == confidence


@pytest.mark.parametrize("text", [
    "How to make o3d.core.cuda.is_available() True, I got a Nvidia GPU\n",  # the wish, no answer
    ">>> print(o3d.core.cuda.is_available())\nTrue\n",
    "In [2]: dlib.DLIB_USE_CUDA\nOut[2]: True\n",
    ">>> print(o3d.core.cuda.is_available())\nFalse\nThis is my MacBook Air, there is no NVIDIA GPU.\n",
])
def test_near_miss_cuda_queries_answering_yes_or_on_a_machine_without_nvidia(compat, text) -> None:
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- TensorFlow newer than 2.10 on native Windows, with the platform and the release said in a sentence
# (tensorflow-009, tensorflow/tensorflow#60269; the check is diagnose.framework-platform)

TF_WINDOWS = ("[name: \"/device:CPU:0\"\ndevice_type: \"CPU\"\n]\n\nMy system is Windows 11. My tensorflow version is "
              "{tf}. My GPUs are NVIDIA GeForce RTX 2060 and Intel UHD Graphics 630. My NVIDIA CUDA version is 12.1.\n")


def test_tensorflow_release_and_windows_said_in_sentences(compat) -> None:
    got = _serious(TF_WINDOWS.format(tf="2.12.0"), compat)
    assert "FRAMEWORK_CPU_ONLY_BUILD" in got and got["FRAMEWORK_CPU_ONLY_BUILD"].code.endswith("tensorflow-native-windows")


@pytest.mark.parametrize("text", [
    TF_WINDOWS.format(tf="2.10.0"),  # the last release with a native-Windows GPU build
    TF_WINDOWS.format(tf="2.12.0").replace("My system is Windows 11.", "My system is Windows 11 with WSL2."),
])
def test_near_miss_tensorflow_with_a_windows_gpu_build_or_under_wsl(compat, text) -> None:
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- ONNX Runtime's providers said to be the CPU ones only (facefusion-001, facefusion/facefusion#156; the same
# build the onnxruntime tracker shows as "Available providers: 'AzureExecutionProvider, CPUExecutionProvider'")

def test_execution_providers_said_to_be_only_cpu(compat) -> None:
    got = _serious("1.3.1   EXECUTION PROVIDERS only azure  and cpu,not have cuda and tensorrt\n", compat)
    assert "FRAMEWORK_CPU_ONLY_BUILD" in got, sorted(got)


@pytest.mark.parametrize("text", [
    "Execution providers: CUDA and CPU are both listed, the model runs fine\n",
    "I run it with only the cpu provider on purpose\n",
])
def test_near_miss_providers_with_cuda_or_cpu_chosen(compat, text) -> None:
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in _serious(text, compat)
