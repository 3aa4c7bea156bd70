"""Issue 42, corpus round 8 after first sight (helper round8fix): kinds of still-wrong rows fixed generally, each
read from the pasted lines the corpus rows hold (quoted below verbatim), with near misses that must stay quiet.

An "insufficient driver" error that the paste's own driver contradicts. immich-001 (imagegenius/docker-immich#349)
pastes "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version" beside "Nvidia Driver:
v550.78 (Quadro RTX 4000 should fine for CUDA 12)": 550.78 runs every CUDA 12.x runtime (minor-version
compatibility from 525.60.13), so the error is not the driver's age (the cause was a stray space in the container's
NVIDIA variables). It was a DRIVER_TOO_OLD_FOR_TORCH_CUDA error; it is now a CONTAINER_NO_GPU_RUNTIME warning of
low confidence that says the driver is new enough. Old drivers (375.66 with CUDA 9, 384.130) stay DRIVER_TOO_OLD.
"""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import NothingRecognised
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _findings(text: str, compat) -> list:
    try:
        return list(diagnose_report([text], compat).all_findings)
    except NothingRecognised:
        return []


def _serious(text: str, compat) -> dict:
    return {f.category: f for f in _findings(text, compat) if f.severity in ("warning", "error")}


# ---- an insufficient-driver error the pasted driver contradicts

IMMICH = ("Receiving the following error when trying to utilize CUDA for machine learning...\n\n"
          "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\n\n"
          "OS: UnRAID 6.12.10\nNvidia Driver: v550.78 (Quadro RTX 4000 should fine for CUDA 12)\nImmich: v1.102.3\n")


def test_driver_new_enough_for_the_named_cuda_major_is_not_too_old(compat):
    got = _serious(IMMICH, compat)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in got
    f = got["CONTAINER_NO_GPU_RUNTIME"]
    assert f.severity == "warning" and f.confidence == "low"
    assert "new enough" in (f.detail or "")


@pytest.mark.parametrize("text", [
    # the same error with the driver too old for the named major (CUDA 12 needs 525.60.13)
    "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\nNvidia Driver: v470.82 (CUDA 12)\n",
    # a driver of the 12.x branches, the program's major not named: a CUDA 13 program needs 580
    "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\nNvidia Driver: v550.78\n",
    # the named major is 13 (a cu130 build) and the driver is of the 550 branch
    "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\nNvidia Driver: v550.78\n"
    "pip install torch --index-url https://download.pytorch.org/whl/cu130\n",
    # nvidia-smi's "CUDA Version" is the driver's ceiling, not the program's need (jade-hpc-002's driver)
    "cudaErrorInsufficientDriver\n| NVIDIA-SMI 375.66                 Driver Version: 375.66                    |\n",
])
def test_driver_too_old_stays_where_the_driver_does_not_run_the_program(text, compat):
    got = _serious(text, compat)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "error"
    assert "CONTAINER_NO_GPU_RUNTIME" not in got
