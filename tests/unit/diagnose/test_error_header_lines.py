"""An error line that only names where an error happened ("CUDA error at <file>:<line>:"), its text on the next
line, is explained by the finding that explains that text; without a cause it stays "not recognised"."""

from __future__ import annotations

from envdoctor.checks._errors import generic
from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report

# guppy's basecall server (megalodon-001's shape): the header line, then the CUDA status on the next
GUPPY = """\
[guppy/error] <>::run_server: CUDA error at /builds/ofan/ont_core_cpp/ont_core/common/cuda_common.cpp:234:
CUDA_ERROR_NO_DEVICE. Error initialising basecall server using port:
ipc:///tmp/d554-c242. Aborting.
"""
# a C++ project's own check macro (invented in the same shape: file and line, then the runtime's message)
OWN_CODE = """\
Fatal: CUDA error in src/kernels/render.cu:88:
no kernel image is available for execution on the device
"""


def _cats(text: str) -> list:
    report = diagnose_report([text], load_compat())
    return [(f.category, f.severity) for f in report.all_findings if f.severity in ("error", "warning")]


def test_the_header_line_is_generic() -> None:
    assert generic("[guppy/error] <>::run_server: CUDA error at /builds/x/cuda_common.cpp:234:")
    assert generic("Fatal: CUDA error in src/kernels/render.cu:88:")
    assert not generic("CUDA error at line 88: no kernel image is available")  # the text is on the line itself


def test_a_header_before_an_explained_status_is_not_also_unrecognised() -> None:
    assert ("NO_GPU_VISIBLE", "error") in _cats(GUPPY)
    assert "UNRECOGNISED_ERROR" not in [c for c, _ in _cats(GUPPY)]
    assert ("GPU_ARCH_NOT_IN_TORCH_BUILD", "error") in _cats(OWN_CODE)
    assert "UNRECOGNISED_ERROR" not in [c for c, _ in _cats(OWN_CODE)]


def test_a_header_with_nothing_explained_stays_unrecognised() -> None:
    text = "[app/error] run: CUDA error at /src/app/worker.cpp:51:\nsomething odd happened here. Aborting.\n"
    assert "UNRECOGNISED_ERROR" in [c for c, _ in _cats(text)]
