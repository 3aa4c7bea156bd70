"""Issue 42, corpus round 7 after the first sight (helper paste7fix): kinds fixed from FIRST_SIGHT_M.md, each cited
from several trackers across the corpus.

cuDNN missing for a program other than torch. `libcudnn*.so.N: cannot open shared object file` (the loader's words,
also inside onnxruntime's "Failed to load library libonnxruntime_providers_cuda.so with error: ...") was read as a
THIRD_PARTY_EXTENSION_MISMATCH or CUDA_VARIANT_MIXED lead. The threads that show it for a runtime other than torch
were each settled by installing the cuDNN the program was built for: rembg-001 (danielgatis/rembg#798, cuDNN 9 for
onnxruntime-gpu), mxnet-003 (apache/mxnet#20279, cuDNN 8 for a cu112 wheel), paddle-010 (PaddlePaddle/
PaddleDetection#5795, Paddle's "third-party dynamic library (libcudnn.so)"); ctranslate2-001 and -007 (OpenNMT) were
already read so. It is now a CUDA_LIBRARY_VERSION_MISMATCH (medium); a cuBLAS or cudart of another CUDA major stays
CUDA_VARIANT_MIXED, and torch's own import failing on cuDNN is not this reading.

JAX without a GPU backend. JAX's "No GPU/TPU found, falling back to CPU" (and old jaxlib's 'Unknown backend' from
get_local_backend) was not read at all. The threads that show it were each a jaxlib without CUDA: jax-011
(jax-ml/jax#17634, no CUDA jaxlib on Windows), jax-012 (gladiaio/gladia#927, an image with the CPU jaxlib),
numpyro-002 (pyro-ppl/numpyro#505, installing NumPyro replaced the CUDA jaxlib with PyPI's CPU one). It is now a
CPU-only-build lead (FRAMEWORK_CPU_ONLY_BUILD since 2026-12-07, helper cpubuild: a framework other than torch
without its GPU part; TORCH_CPU_ONLY_BUILD before), a warning of low confidence: a CUDA backend that failed to start prints the same line after its own.

A Kubernetes node without the nvidia.com/gpu resource. The scheduler's "0/1 nodes are available: 1 Insufficient
nvidia.com/gpu" (and a reporter's "pods don't get scheduled due to a lack of nvidia.com/gpu") was not read. In
minikube-001 (kubernetes/minikube#19114, the docker driver started without --gpus) and microk8s-002
(canonical/microk8s#448, Docker without the NVIDIA default runtime) the device plugin saw no GPU because the node's
container runtime did not hand it over. It is now a CONTAINER_NO_GPU_RUNTIME warning of low confidence: a cluster
whose GPUs are all given to other pods prints the same scheduler line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.diagnose.pastes import serious as _serious

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"




# invented lines of the shapes the loader, onnxruntime and Paddle print (not the corpus pastes)
@pytest.mark.parametrize("text", [
    "2025-03-02 10:11:12.000 [E:onnxruntime:Default, provider_bridge_ort.cc:1992 TryGetProviderInfo_CUDA] "
    "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1637 onnxruntime::Provider& "
    "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
    "libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file: No such file or "
    "directory\n",
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import mxnet as mx\n"
    "OSError: libcudnn.so.8: cannot open shared object file: No such file or directory\n",
    "W0102 10:00:00.000 1234 dynamic_loader.cc:287] The third-party dynamic library (libcudnn.so) that Paddle "
    "depends on is not configured correctly. (error code is /usr/local/cuda/lib64/libcudnn.so: cannot open shared "
    "object file: No such file or directory)\n",
])
def test_cudnn_a_non_torch_program_cannot_load_is_a_library_mismatch(text, compat) -> None:
    got = _serious(text, compat)
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in got
    assert got["CUDA_LIBRARY_VERSION_MISMATCH"].confidence == "medium"
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in got and "CUDA_VARIANT_MIXED" not in got
    # a cuBLAS of an older CUDA major outside torch is the same kind since round 10 (older_major_build; it read
    # CUDA_VARIANT_MIXED before), and torch's own import failing on cuDNN is not this reading
    cublas = _serious(_CUBLAS, compat)
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in cublas and "CUDA_VARIANT_MIXED" not in cublas
    assert "CUDA_LIBRARY_VERSION_MISMATCH" not in _serious(_TORCH_IMPORT, compat)


_CUBLAS = ("FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open "
           "shared object file: No such file or directory\n")
_TORCH_IMPORT = ("Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
                 "  File \"/usr/lib/python3.10/site-packages/torch/__init__.py\", line 237, in <module>\n"
                 "    from torch._C import *  # noqa: F403\n"
                 "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n")


def _row(folder: str, rid: str) -> str:
    return (CORPUS / folder / f"{rid}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("folder,rid", [("rembg", "rembg-001"), ("mxnet", "mxnet-003"), ("paddle", "paddle-010")])
def test_the_corpus_rows(folder, rid, compat) -> None:
    labels = {r["id"]: r["labels"] for r in json.loads((CORPUS / folder / "labels.json").read_text(encoding="utf-8"))}
    assert labels[rid] == ["CUDA_LIBRARY_VERSION_MISMATCH"]
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in _serious(_row(folder, rid), compat)


@pytest.mark.parametrize("text", [
    "WARNING:jax._src.xla_bridge:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for "
    "more info.)\n",
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\n",
    "Traceback (most recent call last):\n  File \"run.py\", line 4, in <module>\n    jax.devices('gpu')\n"
    "RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present. "
    "Platforms present are: cpu\n",
])
def test_jax_without_a_gpu_backend_is_a_cpu_only_lead(text, compat) -> None:
    got = _serious(text, compat)
    f = got["FRAMEWORK_CPU_ONLY_BUILD"]
    assert f.severity == "warning" and f.confidence == "low"
    assert "TORCH_CPU_ONLY_BUILD" not in got  # JAX's build, not torch's
    assert not any(f.severity == "error" for f in got.values())


# jax-011 (no CUDA jaxlib for Windows), jax-012 and numpyro-002 (a CPU jaxlib where a CUDA one exists) are all
# FRAMEWORK_CPU_ONLY_BUILD since 2026-12-07 (helper cpubuild): a framework other than torch without its GPU part
@pytest.mark.parametrize("folder,rid", [("jax", "jax-011"), ("jax", "jax-012"), ("numpyro", "numpyro-002")])
def test_the_jax_corpus_rows(folder, rid, compat) -> None:
    labels = {r["id"]: r["labels"] for r in json.loads((CORPUS / folder / "labels.json").read_text(encoding="utf-8"))}
    assert labels[rid] == ["FRAMEWORK_CPU_ONLY_BUILD"]
    assert "FRAMEWORK_CPU_ONLY_BUILD" in _serious(_row(folder, rid), compat)


@pytest.mark.parametrize("text", [
    "Events:\n  Type     Reason            Age   From               Message\n"
    "  Warning  FailedScheduling  12s   default-scheduler  0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.\n",
    "My training job never starts: the pods are not scheduled because of a lack of nvidia.com/gpu on the node.\n",
])
def test_a_node_without_the_gpu_resource_is_a_runtime_lead(text, compat) -> None:
    got = _serious(text, compat)
    assert got["CONTAINER_NO_GPU_RUNTIME"].severity == "warning" and got["CONTAINER_NO_GPU_RUNTIME"].confidence == "low"


@pytest.mark.parametrize("folder,rid", [("minikube", "minikube-001"), ("microk8s", "microk8s-002")])
def test_the_kubernetes_corpus_rows(folder, rid, compat) -> None:
    labels = {r["id"]: r["labels"] for r in json.loads((CORPUS / folder / "labels.json").read_text(encoding="utf-8"))}
    assert labels[rid] == ["CONTAINER_NO_GPU_RUNTIME"]
    assert "CONTAINER_NO_GPU_RUNTIME" in _serious(_row(folder, rid), compat)
