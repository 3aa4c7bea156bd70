"""diagnose.sharing-layer: a GPU-sharing layer (HAMi-core's libvgpu.so) seen beside a CUDA/NCCL failure (issue 42)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _result(text: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == "diagnose.sharing-layer")


def _serious(text: str, compat):
    report = diagnose_report([text], compat)
    return [f for c in report.checks for f in c.findings if f.severity in ("warning", "error")]


NCCL = ("[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error "
        "(run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\nCuda failure 'operation not supported'\n")


def test_the_layers_own_lines_beside_an_nccl_failure(compat) -> None:
    text = ("[HAMI-core Msg(1:140245:libvgpu.c:836)]: Initializing.....\n"
            "[HAMI-core Msg(1:140245:libvgpu.c:855)]: Initialized\n" + NCCL)
    (f,) = _result(text, compat).findings
    assert f.category == "GPU_SHARING_LAYER_INTERCEPTS_CUDA" and f.severity == "warning"
    assert f.confidence == "medium" and "HAMi-core" in f.summary
    assert any(e.path.startswith("paste.messages[") for e in f.evidence)
    # the failure lines are the finding's, not also "not recognised"
    assert not [x for x in _serious(text, compat) if x.category == "UNRECOGNISED_ERROR"]


def test_the_layers_resources_in_a_pod_spec(compat) -> None:
    text = ("resources:\n  limits:\n    nvidia.com/gpu: 1\n    nvidia.com/gpumem: 8000\n"
            "RuntimeError: CUDA error: operation not supported\n")
    (f,) = _result(text, compat).findings
    assert "nvidia.com/gpumem" in f.summary


@pytest.mark.parametrize("text,why", [
    (NCCL, "no GPU-sharing layer"),  # the same failure without the layer
    ("[HAMI-core Msg(1:140245:libvgpu.c:836)]: Initializing.....\nnvidia-smi works, the pod sees 8000MiB\n",
     "no CUDA, NCCL or NVML failure"),
    # an out-of-memory is the limit the pod asked for: the memory checks judge it
    ("[HAMI-core Msg(1:140245:libvgpu.c:836)]: Initializing.....\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 7.81 GiB\n",
     "no CUDA, NCCL or NVML failure"),
])
def test_skips(text, why, compat) -> None:
    r = _result(text, compat)
    assert r.status == "skipped" and why in (r.reason or ""), r


def test_the_layers_own_error_row_says_it_instead(compat) -> None:
    text = "bash: symbol lookup error: /usr/local/vgpu/libvgpu.so: undefined symbol: cuMemAllocAsync\n"
    assert _result(text, compat).findings == []
    assert [f.category for f in _serious(text, compat)] == ["GPU_SHARING_LAYER_INTERCEPTS_CUDA"]
