"""What a finding says when a value is unknown: the known part, or "unknown", never a "?" placeholder; and a version
newer than the matrix (CUDA 99.9) gets no advice to install a build that does not exist."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterator

from envdoctor.bench.expect import pcie_link_words
from envdoctor.model.facts import GpuProcess
from envdoctor.model.findings import Report
from envdoctor.services.collect import judge
from tests import machines as m

_PLACEHOLDER = re.compile(r"(?<![\w'\"])\?(?![\w'\"])|\?%| \? ")


def _texts(report: Report) -> Iterator[str]:
    for f in report.findings:
        yield f.summary
        if f.fix is not None:
            yield f.fix.summary
            yield from f.fix.commands
        for e in f.evidence:
            yield str(e.expected or "")
            yield str(e.source or "")


def _future_nvcc():
    """torch 2.9.1+cu128 on an H100, with a CUDA 99.9 toolkit on PATH (a user on a future CUDA)."""
    return m.with_nvcc(m.facts(m.driver("580.65.06", "13.0", [m.gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]),
                               [m.torch_env("2.9.1+cu128", "12.8", ["sm_90"])]), "99.9", "99.9.1")


def test_a_toolkit_newer_than_the_matrix_gets_no_torch_build_for_it() -> None:
    (f,) = [f for f in judge(_future_nvcc(), only=["toolchain.nvcc-torch"]).findings]
    assert "install the torch build for CUDA 99.9" not in f.fix.summary
    assert "no torch build for CUDA 99.9 is in this matrix" in f.fix.summary
    # a toolkit torch is built for keeps the second way out, with the wheel variant it names
    known = m.with_nvcc(m.facts(m.driver("580.65.06", "13.0", [m.gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]),
                                [m.torch_env("2.9.1+cu128", "12.8", ["sm_90"])]), "13.0", "13.0.88")
    (f,) = [f for f in judge(known, only=["toolchain.nvcc-torch"]).findings]
    assert f.fix.summary.endswith("or install the torch build for CUDA 13.0 (cu130)")


def test_a_torch_cuda_newer_than_the_matrix_says_what_is_known() -> None:
    facts = m.facts(m.driver("580.65.06", "13.0", [m.gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]),
                    [m.torch_env("2.99.0+cu999", "99.9", ["sm_90"])])
    (f,) = [f for f in judge(facts, only=["driver.cuda-compat"]).findings]
    assert "needs a driver supporting CUDA 99.9" not in f.summary
    assert "its minimum driver is not in this matrix" in f.summary
    assert [e.expected for e in f.evidence if e.path == "driver.version"] == ["a driver for CUDA 99.9"]
    assert not [t for t in _texts(judge(facts)) if "None" in t or _PLACEHOLDER.search(t)]


def test_a_gpu_process_without_a_name_is_named_by_its_pid() -> None:
    base = m.healthy_a100()
    g = replace(base.driver.gpus[0], processes=[GpuProcess(pid=4242, used_memory_bytes=2 << 30)],
                utilization_gpu_pct=97.0)
    facts = replace(base, driver=replace(base.driver, gpus=[g]))
    texts = [f.summary for f in judge(facts, only=["gpu.busy"]).findings]
    assert texts and all("?" not in t for t in texts), texts
    assert any("pid 4242 (name unknown, 2048 MiB)" in t for t in texts), texts


def test_an_unknown_pcie_link_is_said_in_words() -> None:
    assert pcie_link_words(4, 16) == "a Gen4 x16 link"
    assert pcie_link_words(None, 16) == "a x16 link of unknown generation"
    assert pcie_link_words(5, None) == "a Gen5 link of unknown width"
    assert pcie_link_words(None, None) == "a PCIe link of unknown generation and width"


def test_unknown_gpu_future_cuda_and_unknown_pcie_leave_no_placeholder() -> None:
    """An unknown GPU (compute 15.0, not in the matrix) with unknown PCIe link state, a driver of CUDA 99.9 and a
    CUDA 99.9 toolkit: every finding text says what is known."""
    gpu = m.gpu(0, "NVIDIA Future GPU X200", "15.0", pcie_gen_max=None, pcie_gen_current=None)
    facts = m.with_nvcc(m.facts(m.driver("999.10", "99.9", [gpu]),
                                [m.torch_env("2.9.1+cu130", "13.0", ["sm_90", "sm_100"])]), "99.9", "99.9.1")
    bad = [t for t in _texts(judge(facts)) if _PLACEHOLDER.search(t) or "at unknown" in t
           or "install the torch build for CUDA 99.9" in t or "None" in t]
    assert not bad, bad


def test_a_pasted_interpreter_is_not_placed_at_paste() -> None:
    """The paste's Python row names its version, or says the paste lacks it ("unknown at paste" said nothing)."""
    from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv
    from envdoctor.report.console import key_fact_rows

    for version, want in ((None, "version not in the paste"), ("3.10.12", "3.10.12")):
        facts = Facts(origin="paste", pythons=[PythonEnv(status=ProbeStatus.OK, requested_as="paste",
                                                         python_version=version)])
        rows = dict(key_fact_rows(facts))
        assert rows["Python"] == want and "at paste" not in rows["Python"]
