"""diagnose.host-compiler: a pasted CUDA compile failure with a gcc newer than current nvcc accepts, nvcc's
version not in the paste (issue 29)."""

from __future__ import annotations

import pytest

from envdoctor.checks.base import CheckContext, SkipCheck
from envdoctor.checks.diagnose_compiler import check_host_compiler_lead
from envdoctor.compat import load_compat
from envdoctor.model.facts import CudaToolkit, Facts, Host, PasteSource, Toolkits

FAILED = '"CMakeCUDACompilerId.cu" failed.'


def _ctx(gcc, messages=(FAILED,), nvcc=None) -> CheckContext:
    tk = CudaToolkit(version=nvcc) if nvcc else None
    facts = Facts(origin="paste", host=Host(status="ok", os="Linux", gcc_version=gcc),
                  toolkits=Toolkits(status="ok" if tk else "skipped", on_path=tk, installed=[tk] if tk else []),
                  paste=PasteSource(messages=list(messages)))
    return CheckContext(facts, load_compat())


def test_a_gcc_current_nvcc_accepts_passes() -> None:
    assert check_host_compiler_lead(_ctx("11.4.0")) == []


def test_a_gcc_newer_than_current_nvcc_is_the_lead() -> None:
    compat = load_compat()
    (f,) = check_host_compiler_lead(_ctx("16.1.1"))
    assert f.code == "diagnose.host-compiler/gcc-newer-than-current-nvcc" and f.category == "HOST_COMPILER_TOO_NEW"
    assert f.severity == "warning" and f.confidence == "medium"
    ev = {e.path: e for e in f.evidence}
    assert ev["host.gcc_version"].value == "16.1.1" and ev["paste.messages[0]"].value == FAILED
    assert ev["paste.settle"].value == "nvcc --version"
    least = compat.least_cuda_for_host_compiler(16, "gcc")
    assert least is not None and f"only CUDA {least[0]} or newer accepts gcc 16" in f.summary
    assert f.fix.commands  # the host compiler to install


def test_skips() -> None:
    with pytest.raises(SkipCheck, match="gcc version"):
        check_host_compiler_lead(_ctx(None))
    with pytest.raises(SkipCheck, match="toolchain.host-compiler"):
        check_host_compiler_lead(_ctx("16.1.1", nvcc="12.4"))
    with pytest.raises(SkipCheck, match="no failed CUDA compile"):
        check_host_compiler_lead(_ctx("16.1.1", messages=("UserWarning: something",)))
    with pytest.raises(SkipCheck, match="judges pasted"):
        check_host_compiler_lead(CheckContext(Facts(), load_compat()))
