"""diagnose_majors' checks on pastes: one NVIDIA library wheel installed for two CUDA majors
(packages.nvidia-majors), a conda solve that mixes CUDA majors under torch's (diagnose.conda-cuda-majors)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES
from tests.unit.diagnose.test_mechanisms import _serious

PASTES = FIXTURES / "pastes"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _codes(report) -> set:
    return {f.code for f in report.findings}


def _check(report, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


CONDA_MIX = """$ conda install pytorch torchvision pytorch-cuda=11.8 -c pytorch -c nvidia
The following NEW packages will be INSTALLED:

  cuda-cudart        nvidia/linux-64::cuda-cudart-11.8.89-0
  cuda-runtime       nvidia/linux-64::cuda-runtime-12.1.0-0
  libcublas          nvidia/linux-64::libcublas-12.1.0.26-0
  libcusparse        nvidia/linux-64::libcusparse-12.0.2.55-0
  pytorch            pytorch/linux-64::pytorch-2.1.0-py3.10_cuda11.8_cudnn8.7.0_0
  pytorch-cuda       pytorch/linux-64::pytorch-cuda-11.8-h7e8668a_5

$ python -c "import torch"
ImportError: libcusparse.so.11: cannot open shared object file: No such file or directory
"""


def test_conda_solve_mixing_cuda_majors(compat) -> None:
    report = diagnose_report([CONDA_MIX], compat)
    mixed = [f for f in report.findings if f.code == "diagnose.conda-cuda-majors/mixed"]
    assert mixed and mixed[0].severity == "error" and "libcusparse 12.0.2.55" in mixed[0].summary
    # the import error follows from it: its own finding, caused_by the mix (gap 9), and no shadowing lead
    follows = [f for f in report.findings if f.category == "TORCH_IMPORT_FAILED"]
    assert follows and follows[0].caused_by == "diagnose.conda-cuda-majors/mixed"
    assert "SYSTEM_LIB_SHADOWING" not in _serious(report)
    one_major = CONDA_MIX.replace("cuda-runtime-12.1.0", "cuda-runtime-11.8.0").replace(
        "libcublas-12.1.0.26", "libcublas-11.11.3.6").replace("libcusparse-12.0.2.55", "libcusparse-11.7.5.86")
    assert "diagnose.conda-cuda-majors/mixed" not in _codes(diagnose_report([one_major], compat))


def test_one_nvidia_library_for_two_cuda_majors(compat) -> None:
    report = diagnose_report(["[pip3] nvidia-cudnn-cu11==8.9.2.26\n[pip3] nvidia-cudnn-cu12==9.1.0.70\n"], compat)
    assert _serious(report).get("CUDA_VARIANT_MIXED") == {"warning"}
    report = diagnose_report([(PASTES / "nvidia-two-majors.txt").read_text()], compat)
    assert "error" in _serious(report).get("CUDA_VARIANT_MIXED", set())
    # the fix keeps torch importable: one pinned reinstall of the wheel for torch's own CUDA major (torch 2.4.1
    # from PyPI is cu121), never an uninstall first nor an unpinned torch (issue 17)
    (f,) = [f for f in report.findings if f.code == "packages.nvidia-majors/two-majors"]
    assert f.fix.commands[0] == "python -m pip install --force-reinstall --no-deps nvidia-cublas-cu12==12.4.5.8"
    assert not any("uninstall" in c or c.endswith(" torch") for c in f.fix.commands)


def test_two_majors_whole_finding_one_major_passes_and_no_nvidia_wheel_skips(compat) -> None:
    c = _check(diagnose_report([(PASTES / "nvidia-two-majors.txt").read_text()], compat), "packages.nvidia-majors")
    (f,) = c.findings
    assert (c.status, f.code, f.category, f.severity) == ("failed", "packages.nvidia-majors/two-majors",
                                                          "CUDA_VARIANT_MIXED", "error")
    assert f.summary.startswith("NVIDIA library cublas is installed for two CUDA majors (nvidia-cublas-cu11, "
                                "nvidia-cublas-cu12)")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].packages",
                                                        ["nvidia-cublas-cu11", "nvidia-cublas-cu12"])]
    one = "[pip3] nvidia-cublas-cu12==12.4.5.8\n[pip3] torch==2.4.1\n"
    assert _check(diagnose_report([one], compat), "packages.nvidia-majors").status == "passed"
    skipped = _check(diagnose_report([CONDA_MIX], compat), "packages.nvidia-majors")
    assert (skipped.status, skipped.reason) == ("skipped", "no NVIDIA library wheel (nvidia-*-cuNN) in the package "
                                                           "list")


def test_conda_mix_whole_finding_and_no_conda_solve_skips(compat) -> None:
    (f,) = _check(diagnose_report([CONDA_MIX], compat), "diagnose.conda-cuda-majors").findings
    assert (f.code, f.category, f.severity) == ("diagnose.conda-cuda-majors/mixed", "CUDA_VARIANT_MIXED", "error")
    assert f.summary == ("The conda solve mixes CUDA majors: cuda-runtime 12.1.0, libcublas 12.1.0.26, libcusparse "
                         "12.0.2.55 under pytorch-cuda 11.8 (CUDA 11)")
    assert [(e.path, e.value) for e in f.evidence] == [
        ("pythons[0].packages.pytorch-cuda", "pytorch-cuda 11.8"), ("pythons[0].packages.cuda-runtime", "12.1.0"),
        ("pythons[0].packages.libcublas", "12.1.0.26"), ("pythons[0].packages.libcusparse", "12.0.2.55"),
        ("paste.messages", "ImportError: libcusparse.so.11: cannot open shared object file: No such file or directory")]
    one_major = CONDA_MIX.replace("cuda-runtime-12.1.0", "cuda-runtime-11.8.0").replace(
        "libcublas-12.1.0.26", "libcublas-11.11.3.6").replace("libcusparse-12.0.2.55", "libcusparse-11.7.5.86")
    assert _check(diagnose_report([one_major], compat), "diagnose.conda-cuda-majors").status == "passed"
    skipped = _check(diagnose_report([(PASTES / "nvidia-two-majors.txt").read_text()], compat),
                     "diagnose.conda-cuda-majors")
    assert (skipped.status, skipped.reason) == ("skipped", "no conda CUDA libraries with torch's CUDA in the paste")
