"""Issue 42, round 11 (helper libs10): round 10's misses of message kinds.

- XLA's "Loaded runtime CuDNN library: X but source was compiled with: Y" with X older than Y is printed both when
  an older second copy of cuDNN is found first on the loader path (jax-ml/jax#15268, a shadowing library) and when
  the only cuDNN installed is older than the build's (marin-community/levanter#103, jax-ml/jax#16901,
  google-research/deeplab2#66). A paste that shows only the line cannot tell them apart: both readings, each a
  low-confidence warning, never an error of either; where the paste decides (the named cuDNN is the loaded one, the
  loaded one is the environment's pip wheel, a newer one than the build) the decided category stays an error.
- pip's other line for torch, "Could not find a version that satisfies the requirement torch (from versions:
  none)", printed alone (pytorch/pytorch#112478, pytorch-004, Python 3.12.0) is read as the torch row reads "No
  matching distribution found for torch" (sd-webui-001, torch-downstream-023, shared 035 and 119 print both).
- torch.cuda.is_available() False inside a Kubernetes pod: beside "torch may be a CPU build", the pod may have been
  started without the GPU (kubeflow/community-distribution#2683 on k3s; the same mechanism read from other
  messages in kubeflow/notebooks#68 and mudler/LocalAI#2117 on k0s). A misspelt is_avaiable() in the reporter's
  sentence is read too.
- nvcc refusing a newer host gcc said in words ("Currently CUDA doesn't support gcc versions later than 8",
  DeadSix27/waifu2x-converter-cpp#203; "nvcc does not support anything more than gcc 4.9", torch/cutorch#408), and
  nvcc's phrase without its "unsupported GNU version!" prefix (an issue title: cuda_memtest#26, waifu2x#203).
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

_BOTH = {"CUDA_LIBRARY_VERSION_MISMATCH", "SYSTEM_LIB_SHADOWING"}


# ---- kind 1: a cuDNN older than the build's, where the paste does not say where it came from
@pytest.mark.parametrize("line", [
    # jax-ml/jax#15268 (jax-001): a shadowing copy, by the thread
    "2023-03-28 20:24:31.407336: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:417] Loaded runtime CuDNN "
    "library: 8.5.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major version and "
    "equal or higher minor version. If using a binary install, upgrade your CuDNN library.",
    # marin-community/levanter#103 (jax-005): the machine's only cuDNN, older
    "2023-03-12 21:47:12.489017: E external/org_tensorflow/tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:"
    "417] Loaded runtime CuDNN library: 8.4.1 but source was compiled with: 8.6.0.",
    # google-research/deeplab2#66 (deeplab2-001), TensorFlow's wording
    "2021-10-13 17:19:29.385716: E tensorflow/stream_executor/cuda/cuda_dnn.cc:362] Loaded runtime CuDNN library: "
    "8.0.4 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version",
])
def test_an_older_cudnn_alone_is_both_readings_and_no_error(line, compat) -> None:
    found = [f for f in _findings(line + "\n", compat) if f.category in _BOTH]
    assert {f.category for f in found} == _BOTH, [(f.category, f.severity) for f in found]
    assert {f.severity for f in found} == {"warning"}
    assert {f.confidence for f in found} == {"low"}
    shadow = next(f for f in found if f.category == "SYSTEM_LIB_SHADOWING")
    assert "ldconfig -p | grep cudnn" in shadow.detail and "LD_LIBRARY_PATH" in shadow.detail


def test_jax_015_traceback_in_a_conda_env_is_read_the_same(compat) -> None:
    # jax-ml/jax#16901: the line inside a notebook traceback from a conda env; the env says nothing of other copies
    text = ("[1]\n2023-07-31 01:53:45.016563: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:427] Loaded runtime "
            "CuDNN library: 8.5.0 but source was compiled with: 8.6.0.\nXlaRuntimeError    Traceback (most recent "
            "call last)\nFile /mnt/data/miniconda/envs/et/lib/python3.11/site-packages/jax/_src/random.py:137\n")
    got = _serious(text, compat)
    assert _BOTH <= set(got), sorted(got)
    assert not [f for f in _findings(text, compat) if f.category in _BOTH and f.severity == "error"]


def test_the_named_cudnn_being_the_loaded_one_stays_a_mismatch_error(compat) -> None:
    # jax-ml/jax#6517 (jax-013): "I use CUDA 11.2 and cudnn 8.0.5": no other copy was found first
    text = ("E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_dnn.cc:352] Loaded runtime CuDNN library: "
            "8.0.5 but source was compiled with: 8.1.0.\nI use CUDA 11.2 and cudnn 8.0.5.\n")
    found = [f for f in _findings(text, compat) if f.category in _BOTH and f.severity in ("warning", "error")]
    assert [(f.category, f.severity) for f in found] == [("CUDA_LIBRARY_VERSION_MISMATCH", "error")]


def test_a_newer_cudnn_than_the_build_stays_a_mismatch_error(compat) -> None:
    # balancap/SSD-Tensorflow#340 (tensorflow-011)
    text = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:343] Loaded runtime CuDNN library: 7301 (compatibility "
            "version 7300) but source was compiled with 7003 (compatibility version 7000).\n")
    found = [f for f in _findings(text, compat) if f.category in _BOTH and f.severity in ("warning", "error")]
    assert [(f.category, f.severity) for f in found] == [("CUDA_LIBRARY_VERSION_MISMATCH", "error")]


def test_near_miss_a_matching_cudnn_line_says_nothing(compat) -> None:
    text = "I0612 cuda_dnn.cc:535] Loaded cuDNN version 8600\nTraining step 1 loss 0.31\n"
    assert not _BOTH & set(_serious(text, compat))


# ---- kind 2: pip's "Could not find a version that satisfies the requirement torch" printed alone
def test_could_not_find_torch_alone_with_the_python_said_is_no_wheel_for_that_python(compat) -> None:
    # pytorch-004: Python 3.12.0 before torch published 3.12 wheels
    text = ("ERROR: Could not find a version that satisfies the requirement torch (from versions: none)\n"
            "Well i rolled back Python 3.12.0 to 3.10.5\n")
    assert "PYTHON_VERSION_UNSUPPORTED" in _serious(text, compat)


def test_could_not_find_a_torch_pin_is_read_as_before(compat) -> None:
    # sd-webui-001 (torch 2.1.2 on Python 3.12): the same row, one finding for both lines
    text = ("ERROR: Could not find a version that satisfies the requirement torch==2.1.2 (from versions: 2.2.0, "
            "2.2.1)\nERROR: No matching distribution found for torch==2.1.2\n")
    assert "PYTHON_VERSION_UNSUPPORTED" in _serious(text, compat)


def test_near_miss_torch_found_by_pip_says_nothing(compat) -> None:
    text = ("Collecting torch\n  Downloading torch-2.5.1-cp312-cp312-manylinux1_x86_64.whl (906.4 MB)\n"
            "Successfully installed torch-2.5.1\n")
    assert "PYTHON_VERSION_UNSUPPORTED" not in _serious(text, compat)


# ---- kind 3: CUDA unavailable inside a Kubernetes pod
def test_cuda_unavailable_in_a_k3s_pod_names_the_pods_runtime(compat) -> None:
    # kubeflow/community-distribution#2683 (kubeflow-002), the reporter's own misspelling kept
    text = ("I have installed kubeflow on k3s cluster.\n`torch.cuda.is_avaiable()`  return `False`\n"
            "For k3s, we need to add \"runtimeClassName: nvidia\" in pod specs\n")
    got = _serious(text, compat)
    assert got["CONTAINER_NO_GPU_RUNTIME"].severity == "warning", sorted(got)
    assert "runtimeClassName" in got["CONTAINER_NO_GPU_RUNTIME"].fix.summary
    assert not [f for f in _findings(text, compat) if f.severity == "error"]


def test_cuda_unavailable_in_a_kubernetes_pod_spelt_right(compat) -> None:
    text = "Inside the pod on our Kubernetes cluster, torch.cuda.is_available() returns False.\n"
    assert "CONTAINER_NO_GPU_RUNTIME" in _serious(text, compat)


def test_near_miss_cuda_unavailable_outside_a_pod_does_not_blame_a_runtime(compat) -> None:
    text = "On my laptop torch.cuda.is_available() returns False.\n"
    got = _serious(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" not in got
    assert "TORCH_CPU_ONLY_BUILD" in got


def test_near_miss_a_misspelt_condition_in_code_is_not_a_result(compat) -> None:
    text = "if not torch.cuda.is_avaiable() == False:\n    print('gpu')\n"
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- kind 4: a host compiler too new for nvcc, said in words
@pytest.mark.parametrize("text", [
    # DeadSix27/waifu2x-converter-cpp#203 (waifu2x-converter-cpp-001)
    "Currently CUDA doesn't support gcc versions later than 8. I've tried to switch to clang, only to find that nvcc "
    "uses gcc by default.",
    # torch/cutorch#408 (a maintainer's answer to a gcc 6 build)
    "nvidia's nvcc does not support anything more than gcc 4.9 (yet).",
    # ComputationalRadiationPhysics/cuda_memtest#26's title: nvcc's phrase without its prefix
    "gcc versions later than 6 are not supported",
])
def test_a_host_compiler_too_new_said_in_words(text, compat) -> None:
    assert "HOST_COMPILER_TOO_NEW" in _serious(text + "\n", compat)


def test_the_words_reading_is_a_warning_and_the_nvcc_line_stays_an_error(compat) -> None:
    said = _serious("Currently CUDA doesn't support gcc versions later than 8.\n", compat)
    assert said["HOST_COMPILER_TOO_NEW"].severity == "warning"
    line = ("/usr/local/cuda/include/crt/host_config.h:129:2: error: #error -- unsupported GNU version! gcc versions "
            "later than 7 are not supported!\n")
    assert _serious(line, compat)["HOST_COMPILER_TOO_NEW"].severity == "error"


@pytest.mark.parametrize("text", [
    "CUDA 12.4 supports gcc up to 13, and I built with gcc 12 without problems.",
    "The build works: nvcc accepts gcc 11 here.",
    "CUDA doesn't support Python 3.13 bindings yet.",
])
def test_near_miss_compiler_words_without_a_refusal_stay_quiet(text, compat) -> None:
    assert "HOST_COMPILER_TOO_NEW" not in _serious(text + "\n", compat)
