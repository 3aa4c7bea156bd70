"""Issue 42, round 10, helper ext: version pairing (an extension or companion built for another torch, nvcc against
torch's CUDA), read as data.

- ``libtorch_cuda_cu.so`` / ``libtorch_cuda_cpp.so: cannot open shared object file``: a compiled module linked
  against the split libtorch_cuda of a torch 1.x build, loaded beside a torch without them (torch-downstream-043,
  tinycudann; torchaudio-006, a companion; flash-attention#236). An extension's is THIRD_PARTY_EXTENSION_MISMATCH,
  a companion's COMPANION_VERSION_MISMATCH, torch's own import TORCH_IMPORT_FAILED.
- torch's cpp_extension raising its CUDA mismatch with the versions as separate arguments (mmcv-006), and
  DeepSpeed's message quoted short (deepspeed-008): NVCC_TORCH_CUDA_MISMATCH.
- collect_env's banner with a single key line is collect_env: the imported torch against pip's (torchvision-001).
- pip uninstalling the installed torch while installing an extension (xformers-007; ComfyUI#99 and xformers#802 say
  the same in words): the extension release pins another torch.
- packages from an extension's per-torch wheel index beside another torch (pyg-003).
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# ---- the split libtorch_cuda libraries missing

# torch-downstream-043 (ayaanzhaque/instruct-nerf2nerf#3): tinycudann built against torch 1.12.1, torch became 2.0
TINYCUDANN = ("I found that my torch version became 2.0 after following these steps to configure the environment, "
              "and as a result, I am unable to successfully import tinycudann.\n"
              "It will report an error if I want to train the second stage (edit part), i.e.:\n"
              "`ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory`\n")
# flash-attention#236: flash-attn's dropout_layer_norm built for another torch
FLASH_ATTN = ("  File \"/opt/conda/lib/python3.8/site-packages/flash_attn/ops/layer_norm.py\", line 7, in <module>\n"
              "    import dropout_layer_norm\n"
              "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n")
# torchaudio-006 (TEAMuP-dev/audacitorch#9): installing audacitorch replaced torch under the installed torchaudio
TORCHAUDIO = ("I've trained a model that acts on MFCCs I get using torchaudio.  When I installed audacitorch to wrap "
              "my model (in Colab), it prevents me from importing torchaudio with the message `OSError: "
              "libtorch_cuda_cpp.so: cannot open shared object file: No such file or directory`.\n\n"
              "OSError: libtorch_cuda_cpp.so: cannot open shared object file: No such file or directory`\n")


@pytest.mark.parametrize("text", [TINYCUDANN, FLASH_ATTN], ids=["tinycudann", "flash-attn"])
def test_an_extension_missing_the_split_libtorch_cuda_is_built_for_another_torch(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("THIRD_PARTY_EXTENSION_MISMATCH")
    assert f is not None, sorted(got)
    assert f.code == "messages.signature/torch-split-cuda-library-missing"
    assert "COMPANION_VERSION_MISMATCH" not in got


def test_a_companion_missing_the_split_libtorch_cuda_is_a_companion_pairing(compat) -> None:
    got = _serious(TORCHAUDIO, compat)
    assert "COMPANION_VERSION_MISMATCH" in got, sorted(got)
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in got


def test_near_miss_torchs_own_library_or_import_is_not_an_extensions(compat) -> None:
    # torch's own import failing on it is torch's install, not an extension's build
    own = ("  File \"/usr/lib/python3.8/site-packages/torch/__init__.py\", line 191, in _load_global_deps\n"
           "    ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)\n"
           "OSError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n")
    got = _serious(own, compat)
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in got and "COMPANION_VERSION_MISMATCH" not in got
    # the unsplit libtorch_cuda.so is not the split build's library
    plain = "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory\n"
    assert not [f for f in _findings(plain, compat) if f.code.endswith("torch-split-cuda-library-missing")]


# ---- nvcc against torch's CUDA, in the forms the builders print

@pytest.mark.parametrize("text,nvcc", [
    # mmcv-006 (circleLZY/JL1-CD#5): torch's cpp_extension, the versions as separate arguments
    ("      RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to compilePyTorch "
     "(%s). Please make sure to use the same CUDA versions.', '11.3', '12.8')\n", "11.3"),
    # deepspeed-008 (deepspeedai/DeepSpeed-MII#277): DeepSpeed's op builder message, quoted short
    ("Installed CUDA version 11.7 does not match torch version\n\nHi, I installed DeepSpeed-MII by pip3 install "
     "deepspeed-mii and than infer.\n", "11.7"),
])
def test_an_extension_build_refusing_nvcc_against_torchs_cuda(text, nvcc, compat) -> None:
    got = _serious(text, compat)
    f = got.get("NVCC_TORCH_CUDA_MISMATCH")
    assert f is not None and f.severity == "error", sorted(got)
    assert nvcc in f.summary


def test_near_miss_the_cuda_version_named_without_a_mismatch_stays_quiet(compat) -> None:
    text = "Installed CUDA version 11.7 and torch 2.0.1+cu117, the build works\n"
    assert "NVCC_TORCH_CUDA_MISMATCH" not in _serious(text, compat)


# ---- collect_env cut down to its banner and one key line

# torchvision-001 (pytorch/vision#9174): the interpreter imports torch 2.6.0, pip's metadata says 2.8.0
CUT_COLLECT_ENV = ("[pip3] torch==2.8.0\n[pip3] torchvision==0.23.0\n[pip3] triton==3.4.0\n\n"
                   "(*) from the env info\nCollecting environment information...\nPyTorch version: 2.6.0\n...\n"
                   "[conda] torch 2.8.0 pypi_0 pypi\n[conda] torchvision 0.23.0 pypi_0 pypi\n")


def test_collect_envs_banner_with_one_key_line_is_read_as_collect_env(compat) -> None:
    got = _serious(CUT_COLLECT_ENV, compat)
    assert "COMPANION_VERSION_MISMATCH" in got, sorted(got)
    assert any(f.code == "diagnose.sources/two-torch-installs" for f in _findings(CUT_COLLECT_ENV, compat))


def test_near_miss_the_banner_with_the_same_torch_stays_quiet(compat) -> None:
    text = ("Collecting environment information...\nPyTorch version: 2.8.0\n...\n[pip3] torch==2.8.0\n"
            "[pip3] torchvision==0.23.0\n")
    assert "COMPANION_VERSION_MISMATCH" not in _serious(text, compat)


# ---- pip replacing torch to install an extension

# xformers-007 (facebookresearch/xformers#1146)
XFORMERS_SWAP = ("pip3 install -U xformers --index-url https://download.pytorch.org/whl/cu121\n"
                 "Installing collected packages: torch, xformers\n  Attempting uninstall: torch\n"
                 "    Found existing installation: torch 2.4.1\n    Uninstalling torch-2.4.1:\n"
                 "      Successfully uninstalled torch-2.4.1\n")
# the same pip output for flash-attn's install (the shape ComfyUI#99 describes in words for its requirements)
FLASH_SWAP = ("pip install flash-attn\nInstalling collected packages: torch, flash-attn\n"
              "  Attempting uninstall: torch\n    Found existing installation: torch 2.3.1\n"
              "    Uninstalling torch-2.3.1:\n      Successfully uninstalled torch-2.3.1\n"
              "Successfully installed flash-attn-2.6.3 torch-2.4.0\n")


@pytest.mark.parametrize("text,ext,old", [(XFORMERS_SWAP, "xformers", "2.4.1"), (FLASH_SWAP, "flash-attn", "2.3.1")],
                         ids=["xformers", "flash-attn"])
def test_pip_uninstalling_torch_for_an_extension_is_its_release_pinning_another_torch(text, ext, old, compat) -> None:
    got = _serious(text, compat)
    f = got.get("THIRD_PARTY_EXTENSION_MISMATCH")
    assert f is not None and f.code == "diagnose.extension-replaced-torch/pip-swapped-torch", sorted(got)
    assert ext in f.summary and old in f.summary
    assert f"torch=={old}" in " ".join(f.fix.commands)


@pytest.mark.parametrize("text", [
    # the user asked for the torch upgrade
    XFORMERS_SWAP.replace("pip3 install -U xformers", "pip3 install -U torch xformers"),
    # the same torch release reinstalled
    FLASH_SWAP.replace("torch-2.4.0", "torch-2.3.1"),
    # no extension among what pip collected
    XFORMERS_SWAP.replace("torch, xformers", "torch, numpy").replace("-U xformers", "-U torch"),
], ids=["torch-asked", "same-release", "no-extension"])
def test_near_miss_a_torch_change_that_is_not_an_extensions_stays_quiet(text, compat) -> None:
    assert not [f for f in _findings(text, compat) if f.code.startswith("diagnose.extension-replaced-torch")]


# ---- an extension's per-torch wheel index

@pytest.mark.parametrize("text,built", [
    # pyg-003 (rusty1s/pytorch_sparse#150)
    ("**My env..**\npytorch 1.7.0\ncuda 10.1\n\n```\npip install torch-scatter torch-sparse -f "
     "https://pytorch-geometric.com/whl/torch-1.7.1+cu101.html\n```\n", "1.7.1"),
    # OpenMMLab's index (the URL form of mmcv-001) beside another torch minor
    ("torch==1.12.1\npip install mmcv-full -f https://download.openmmlab.com/mmcv/dist/cu113/torch1.10.0/index.html\n",
     "1.10.0"),
])
def test_an_extension_index_for_another_torch(text, built, compat) -> None:
    got = _serious(text, compat)
    f = got.get("THIRD_PARTY_EXTENSION_MISMATCH")
    assert f is not None and f.code == "diagnose.extension-index/other-torch-index", sorted(got)
    assert built in f.summary


def test_near_miss_the_index_for_the_installed_torch_stays_quiet(compat) -> None:
    # FlashInfer's index named at the minor (flashinfer-002's URL) beside a patch release of it
    text = ("torch==2.5.1\npip install flashinfer-python -i https://flashinfer.ai/whl/cu124/torch2.5/\n")
    assert not [f for f in _findings(text, compat) if f.code.startswith("diagnose.extension-index")]


# ---- the release pip's log shows it picked, against the Python it has wheels for

@pytest.mark.parametrize("text,pkg", [
    # tensorrt-002 (NVIDIA/TensorRT#3539): tensorrt 8.6.1 has no cp312 wheels
    ("Python Version (if applicable): \n\n- 3.12.0\n- 3.12.1\n\npip install tensorrt --extra-index-url "
     "https://pypi.nvidia.com\n\nLooking in indexes: https://pypi.org/simple, https://pypi.nvidia.com\n"
     "Collecting tensorrt\n  Using cached https://pypi.nvidia.com/tensorrt/tensorrt-8.6.1.post1.ta\n", "tensorrt"),
    # the same log shape for vLLM 0.5.0 (Python 3.8 -- 3.11 in its installation page) under Python 3.12
    ("Python 3.12.3 (main, Apr 10 2024, 05:33:47) [GCC 13.2.0] on linux\n$ pip install vllm\nCollecting vllm\n"
     "  Downloading vllm-0.5.0.tar.gz (743 kB)\n", "vllm"),
], ids=["tensorrt", "vllm"])
def test_the_release_pip_picked_has_no_wheel_for_this_python(text, pkg, compat) -> None:
    got = _serious(text, compat)
    f = got.get("PYTHON_VERSION_UNSUPPORTED")
    assert f is not None and f.code == "diagnose.no-wheel-for-python/outside-range", sorted(got)
    assert pkg in f.summary


def test_near_miss_the_release_pip_picked_has_a_wheel_for_this_python(compat) -> None:
    text = ("Python Version (if applicable): \n\n- 3.10.12\n\npip install tensorrt\nCollecting tensorrt\n"
            "  Using cached https://pypi.nvidia.com/tensorrt/tensorrt-8.6.1.post1.tar.gz\n")
    assert "PYTHON_VERSION_UNSUPPORTED" not in _serious(text, compat)


# ---- a program's own Python check, and a program's own dependency check

@pytest.mark.parametrize("text", [
    # sd-webui-002 (AUTOMATIC1111/stable-diffusion-webui#7964): the launcher's banner, Windows
    ("INCOMPATIBLE PYTHON VERSION\n\nThis program is tested with 3.10.6 Python, but you have 3.11.2.\nIf you "
     "encounter an error with \"RuntimeError: Couldn't install torch.\" message,\n"),
    # a fork that keeps check_python_version but raises it (RuntimeError), under Python 3.12
    ("RuntimeError: \nINCOMPATIBLE PYTHON VERSION\nThis program is tested with 3.10.6 Python, but you have 3.12.1.\n"),
], ids=["a1111", "fork"])
def test_a_launchers_own_python_check_says_the_python_is_unsupported(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("PYTHON_VERSION_UNSUPPORTED")
    assert f is not None and f.code == "messages.signature/webui-incompatible-python-version", sorted(got)


def test_near_miss_the_launchers_python_line_without_its_verdict_stays_quiet(compat) -> None:
    text = "Python 3.10.6 (tags/v3.10.6:9c7b4bd, Aug  1 2022, 21:53:49) [MSC v.1932 64 bit (AMD64)]\nVersion: v1.10.1\n"
    assert "PYTHON_VERSION_UNSUPPORTED" not in _serious(text, compat)


@pytest.mark.parametrize("text,pkg", [
    # flashinfer-002 (flashinfer-ai/flashinfer#794): an sglang release that looks flashinfer up by its old name
    ("Got the error `importlib.metadata.PackageNotFoundError: flashinfer`.  Another exception said that `Exception: "
     "flashinfer with minimum required version 0.1.6 is not installed. Please uninstall the old version and "
     "reinstall the latest version by following the instructions at https://docs.flashinfer.ai/installation.html.\n",
     "flashinfer"),
    # sgl-project/sglang#6160: the same check under the new name
    ("Exception: flashinfer_python with minimum required version 0.2.5 is not installed. Please uninstall the old "
     "version and reinstall the latest version\n", "flashinfer_python"),
], ids=["flashinfer", "sglang"])
def test_a_programs_own_check_for_a_package_release(text, pkg, compat) -> None:
    got = _serious(text, compat)
    f = got.get("DEPENDENCY_UNMET")
    assert f is not None and f.code == "messages.signature/pkg-minimum-version-not-installed", sorted(got)
    assert pkg in f.summary


def test_near_miss_a_minimum_version_said_without_a_failed_check_stays_quiet(compat) -> None:
    text = "The minimum required version of flashinfer is 0.1.6; 0.2.0 is installed and works.\n"
    assert "DEPENDENCY_UNMET" not in _serious(text, compat)


# ---- sgl-kernel's loader saying its compiled ops did not load (a low-confidence lead: the torch it was built for)

# sglang-007 (sgl-project/sglang#17460): sgl-kernel built with torch 2.9.0, torch 2.10.0 installed
SGL_KERNEL = ("  File \"/opt/.venv/lib/python3.12/site-packages/sgl_kernel/load_utils.py\", line 188, in "
              "_load_architecture_specific_ops\n    raise ImportError(error_msg)\nImportError: \n"
              "[sgl_kernel] CRITICAL: Could not load any common_ops library!\n\nAttempted locations:\n"
              "3. Standard Python import: common_ops - failed\n")


def test_sgl_kernels_ops_not_loading_is_a_low_confidence_extension_lead(compat) -> None:
    got = _serious(SGL_KERNEL, compat)
    f = got.get("THIRD_PARTY_EXTENSION_MISMATCH")
    assert f is not None and f.severity == "warning" and f.confidence == "low", sorted(got)


def test_near_miss_sgl_kernel_loading_its_ops_stays_quiet(compat) -> None:
    text = "[sgl_kernel] loaded common_ops from /opt/.venv/lib/python3.12/site-packages/sgl_kernel/sm90/common_ops.so\n"
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in _serious(text, compat)


# ---- an extension release without kernels for the paste's GPU (FlashInfer before 0.1.6 on sm_75)

@pytest.mark.parametrize("text", [
    # sglang-004 (sgl-project/sglang#931): SGLang's environment listing
    ("Python: 3.11.9 (main, Apr 19 2024, 16:48:06) [GCC 11.2.0]\nCUDA available: True\nGPU 0: Tesla T4\n"
     "CUDA Driver Version: 535.54.03\nPyTorch: 2.3.1+cu121\nsglang: 0.2.10\nflashinfer: 0.1.3\ntriton: 2.3.1\n"),
    # the same release in a collect_env listing (vLLM's template) on a Turing card
    ("Collecting environment information...\nPyTorch version: 2.3.1+cu121\nCUDA used to build PyTorch: 12.1\n"
     "GPU models and configuration: GPU 0: Tesla T4\n[pip3] flashinfer==0.1.2+cu121torch2.3\n[pip3] torch==2.3.1\n"),
], ids=["sglang", "collect_env"])
def test_an_extension_release_without_kernels_for_the_gpu(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("THIRD_PARTY_EXTENSION_MISMATCH")
    assert f is not None and f.code == "diagnose.extension-gpu/gpu-below-release", sorted(got)
    assert "7.5" in f.summary


@pytest.mark.parametrize("text", [
    "GPU 0: Tesla T4\nPyTorch: 2.4.0+cu121\nflashinfer: 0.1.6\n",  # the release that added sm_75
    "GPU 0: NVIDIA A100-SXM4-80GB\nPyTorch: 2.3.1+cu121\nflashinfer: 0.1.3\n",  # a GPU the old release covers
], ids=["fixed-release", "ampere"])
def test_near_miss_the_release_covers_the_gpu(text, compat) -> None:
    assert not [f for f in _findings(text, compat) if f.code.startswith("diagnose.extension-gpu")]
