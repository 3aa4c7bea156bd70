"""diagnose.driver-named-cuda and diagnose.nvcc-above-driver: a driver older than the CUDA the paste names for its
program, or than the nvcc it shows (issue 42, helper archdriver). Minimums from compat_data/cuda_driver.json."""

from __future__ import annotations

import pytest

from envdoctor.checks.base import CheckContext, SkipCheck
from envdoctor.checks.diagnose_driver_named import check_driver_named_cuda, check_nvcc_above_driver
from envdoctor.compat import load_compat
from envdoctor.model.facts import CudaToolkit, Driver, Facts, Host, PasteSource, Toolkits


def _ctx(needed=None, driver=None, ceiling=None, ceiling_reader="nvidia-smi table header", nvcc=None,
         wsl=False) -> CheckContext:
    prov = {}
    if needed:
        prov["paste.cuda_needed"] = {"value": needed, "reader": f"CUDA {needed}", "where": "line 1"}
    if ceiling:
        prov["driver.cuda_driver_version"] = {"value": ceiling, "reader": ceiling_reader, "where": "line 2"}
    tk = CudaToolkit(version=nvcc) if nvcc else None
    facts = Facts(origin="paste", driver=Driver(status="ok", version=driver, cuda_driver_version=ceiling),
                  toolkits=Toolkits(status="ok" if tk else "skipped", on_path=tk, installed=[tk] if tk else []),
                  host=Host(status="ok", os="Linux", wsl=wsl), paste=PasteSource(provenance=prov))
    return CheckContext(facts, load_compat())


def test_a_driver_that_runs_the_named_cuda_passes() -> None:
    assert check_driver_named_cuda(_ctx("12.4", driver="530.30.02")) == []  # 12.x floor 525.60.13
    assert check_driver_named_cuda(_ctx("10.0", driver="418.87.00")) == []  # CUDA 10.0 GA: 410.48
    assert check_driver_named_cuda(_ctx("12.8", ceiling="12.4")) == []  # same major: minor-version compatibility


def test_a_driver_below_the_named_cudas_minimum_is_too_old() -> None:
    (f,) = check_driver_named_cuda(_ctx("9.2", driver="390.87"))
    assert (f.code, f.category, f.severity, f.confidence) == \
        ("diagnose.driver-named-cuda/below-minimum", "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "warning", "medium")
    assert "396.26" in f.summary
    (g,) = check_driver_named_cuda(_ctx("12", driver="520.61.05"))
    assert "525.60.13" in g.summary  # below the 12.x minor-version compatibility floor
    (h,) = check_driver_named_cuda(_ctx("13", ceiling="12.4", ceiling_reader="nvidia-smi show CUDA Version: 12.4"))
    assert h.code == "diagnose.driver-named-cuda/ceiling-below-major"


def test_driver_named_cuda_skips() -> None:
    with pytest.raises(SkipCheck, match="names no CUDA"):
        check_driver_named_cuda(_ctx(None, driver="390.87"))
    with pytest.raises(SkipCheck, match="nvidia-smi's CUDA ceiling"):
        check_driver_named_cuda(_ctx("13", ceiling="12.4", ceiling_reader="CUDA Version:11.3"))  # a template field
    with pytest.raises(SkipCheck, match="WSL"):
        check_driver_named_cuda(_ctx("9.2", driver="390.87", wsl=True))
    with pytest.raises(SkipCheck, match="judges pasted"):
        check_driver_named_cuda(CheckContext(Facts(), load_compat()))


def test_nvcc_within_the_drivers_cuda_passes() -> None:
    assert check_nvcc_above_driver(_ctx(driver="535.161.08", ceiling="12.2", nvcc="12.2")) == []


def test_nvcc_above_the_drivers_cuda() -> None:
    (f,) = check_nvcc_above_driver(_ctx(driver="535.161.08", ceiling="12.2", nvcc="12.4"))
    assert (f.code, f.severity, f.confidence) == ("diagnose.nvcc-above-driver/newer-minor", "warning", "low")
    assert "550.54.14" in f.summary
    (g,) = check_nvcc_above_driver(_ctx(driver="550.54.14", nvcc="13.0"))  # ceiling from the branch table: 12.4
    assert (g.code, g.confidence) == ("diagnose.nvcc-above-driver/newer-major", "medium")


def test_nvcc_above_driver_skips() -> None:
    with pytest.raises(SkipCheck, match="nvcc's version"):
        check_nvcc_above_driver(_ctx(driver="535.161.08", ceiling="12.2"))
    with pytest.raises(SkipCheck, match="neither the driver's version"):
        check_nvcc_above_driver(_ctx(nvcc="12.4"))
