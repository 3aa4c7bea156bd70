"""envdoctor.domain.variants, table-driven: tags, cu124 <-> 12.4, kinds, index URLs, the CPU-build rule."""

from __future__ import annotations

import pytest

from envdoctor.domain.variants import (
    cuda_of_variant,
    index_url,
    is_cpu_build,
    is_gpu_variant_tag,
    is_linux_x86,
    local_tag,
    nvidia_wheel_cuda_major,
    package_variant,
    torch_variant,
    variant_cuda_major,
    variant_kind,
    variant_of_cuda,
)
from envdoctor.model.facts import TorchBuildFiles, TorchInfo


@pytest.mark.parametrize("version, tag", [
    ("2.5.1+cu124", "cu124"), ("2.5.1+cpu", "cpu"), ("2.5.1+rocm6.2", "rocm6.2"), ("2.3.1+CPU", "cpu"),
    ("2.5.1", None), (None, None),
])
def test_local_tag(version, tag):
    assert local_tag(version) == tag


@pytest.mark.parametrize("variant, cuda, major, kind", [
    ("cu124", "12.4", 12, "cuda"), ("cu130", "13.0", 13, "cuda"), ("cu118", "11.8", 11, "cuda"),
    ("cu92", "9.2", 9, "cuda"), ("cuda13", None, 13, "cuda"), ("cu12", None, 12, "cuda"), ("cu11", None, 11, "cuda"), ("cpu", None, None, "cpu"),
    ("rocm6.2", None, None, "rocm"), ("xpu", None, None, "xpu"), ("foo", None, None, None), (None, None, None, None),
])
def test_variant_table(variant, cuda, major, kind):
    assert cuda_of_variant(variant) == cuda
    assert variant_cuda_major(variant) == major
    assert variant_kind(variant) == kind


@pytest.mark.parametrize("cuda, variant", [("12.4", "cu124"), ("12.4.1", "cu124"), ("13.0", "cu130"), ("9.2", "cu92")])
def test_variant_of_cuda_round_trips(cuda, variant):
    assert variant_of_cuda(cuda) == variant
    assert cuda_of_variant(variant) == ".".join(cuda.split(".")[:2])


def test_variant_of_cuda_rejects_garbage():
    with pytest.raises(ValueError):
        variant_of_cuda("twelve")


@pytest.mark.parametrize("tag, gpu", [("cu124", True), ("rocm6.2", True), ("cpu", False), ("xpu", False), (None, False)])
def test_is_gpu_variant_tag(tag, gpu):
    assert is_gpu_variant_tag(tag) is gpu


def test_index_url():
    assert index_url("CU124 ") == "https://download.pytorch.org/whl/cu124"


@pytest.mark.parametrize("name, major", [
    ("nvidia-cudnn-cu12", 12), ("nvidia_cuda_runtime_cu11", 11), ("NVIDIA-NCCL-CU13", 13), ("nvidia-nccl", None),
    ("torch", None),
])
def test_nvidia_wheel_cuda_major(name, major):
    assert nvidia_wheel_cuda_major(name) == major


_ok = dict(import_error=None)
CASES = [
    # (torch facts, variant, is_cpu_build)
    (TorchInfo(version="2.5.1+cu124", cuda="12.4"), "cu124", False),
    (TorchInfo(version="2.5.1+cpu", cuda=None, arch_list=[]), "cpu", True),
    (TorchInfo(version="2.5.1", cuda="12.4"), "cu124", False),  # PyPI wheel: torch.version.cuda says it
    (TorchInfo(version="2.5.1", hip="6.2.41133"), "rocm6.2", False),
    # a macOS/Windows PyPI wheel: no local tag, imported, torch.version.cuda None
    (TorchInfo(version="2.5.1", cuda=None, arch_list=[]), "cpu", True),
    # a paste with only the version: unknown, never guessed
    (TorchInfo(version="2.5.1"), None, None),
    # the import failed: nothing said
    (TorchInfo(version="2.5.1", import_error="ImportError: libcudnn.so.9", arch_list=None), None, None),
    # the import failed but version.py and torch/lib were read: no CUDA, no HIP, no libtorch_cuda.so
    (TorchInfo(version="2.5.1", import_error="boom",
               build_files=TorchBuildFiles(version="2.5.1", cuda=None, hip=None, native_library=None)), "cpu", True),
    (None, None, None),
]


@pytest.mark.parametrize("torch, variant, cpu", CASES)
def test_torch_variant_and_the_one_cpu_rule(torch, variant, cpu):
    assert torch_variant(torch) == variant
    assert is_cpu_build(torch) is cpu


@pytest.mark.parametrize("version, recorded, platform, default, want", [
    ("2.5.1+cu124", "cpu", "linux-x86_64", "cu124", "cu124"),  # the local tag wins
    ("0.20.1", "cu121", "linux-x86_64", "cu124", "cu121"),  # then what was read from the files
    ("2.5.1", None, "linux-x86_64", "cu124", "cu124"),  # then PyPI's Linux x86_64 default
    ("2.5.1", None, None, "cu124", "cu124"),  # platform unknown: assumed Linux x86_64
    ("2.5.1", None, "macosx-14-arm64", "cu124", None),  # never on another platform
    ("2.5.1", None, "win-amd64", None, None),
    ("0.18.0a0+6ddf5cf", None, "linux-x86_64", "cu124", None),  # a vendor build is no PyPI wheel
])
def test_package_variant(version, recorded, platform, default, want):
    assert package_variant(version, recorded, platform, default) == want


@pytest.mark.parametrize("platform, want", [("linux-x86_64", True), ("linux_x86_64", True), ("linux-aarch64", False),
                                             ("win-amd64", False), (None, None)])
def test_is_linux_x86(platform, want):
    assert is_linux_x86(platform) is want


@pytest.mark.parametrize("torch, variant", [
    # a source or NGC build: the local tag names a commit, torch.version.cuda names the build
    (TorchInfo(version="2.6.0a0+gitabc123", cuda="12.6"), "cu126"),
    (TorchInfo(version="2.3.0a0+6ddf5cf85e.nv24.04", cuda="12.4"), "cu124"),
    (TorchInfo(version="2.6.0a0+gitabc123"), None),
])
def test_a_commit_tag_is_not_a_variant(torch, variant):
    assert torch_variant(torch) == variant


@pytest.mark.parametrize("version, tag", [
    ("2.5.1+cu124", "cu124"), ("2.5.1+cu124.post1", "cu124"), ("2.5.1+rocm6.2", "rocm6.2"), ("2.5.1+xpu", "xpu"),
    ("2.6.3+cu123torch2.4cxx11abiTRUE", None),  # an extension's build tag, not a PyPI variant
    ("2.6.0a0+gitabc123", None), ("2.5.1", None),
])
def test_variant_tag(version, tag):
    from envdoctor.domain.variants import variant_tag

    assert variant_tag(version) == tag
