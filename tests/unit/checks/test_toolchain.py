"""toolchain.nvcc-torch judges the toolkit torch's extension builds use: CUDA_HOME, else CUDA_PATH, else the nvcc on
PATH (torch/utils/cpp_extension.py, _find_cuda_home). Issue 17: a CUDA_HOME left pointing at a removed toolkit."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.model.facts import CudaToolkit, Facts
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

SNAPSHOT = FIXTURES / "snapshots" / "dev-container-no-driver.json"  # real: nvcc 13.0 at /usr/local/cuda-13.0


def facts(**toolkits) -> Facts:
    f = Facts.from_json(SNAPSHOT.read_text(encoding="utf-8"))
    return replace(f, toolkits=replace(f.toolkits, **toolkits))


def nvcc_check(f: Facts):
    (res,) = [c for c in judge(f).checks if c.id == "toolchain.nvcc-torch"]
    return res


def test_the_real_snapshot_passes():
    assert nvcc_check(facts()).status == CheckStatus.PASSED


def test_cuda_home_naming_a_missing_directory_fails_with_the_export_to_the_toolkit_found():
    res = nvcc_check(facts(cuda_home_env="/usr/local/cuda-12.1", env_problems={"CUDA_HOME": "no such directory"}))
    assert res.status == CheckStatus.FAILED
    (x,) = res.findings
    assert x.code == "toolchain.nvcc-torch/cuda-home-missing" and x.severity == Severity.ERROR
    assert "CUDA_HOME=/usr/local/cuda-12.1" in x.summary and "no such directory" in x.summary
    assert x.fix.commands == ["export CUDA_HOME=/usr/local/cuda-13.0 PATH=/usr/local/cuda-13.0/bin:$PATH"]


def test_cuda_path_counts_when_cuda_home_is_unset():
    res = nvcc_check(facts(cuda_path_env="/opt/cuda", env_problems={"CUDA_PATH": "it has no bin/nvcc"}))
    (x,) = res.findings
    assert x.code == "toolchain.nvcc-torch/cuda-path-missing"
    assert x.fix.commands[0].startswith("export CUDA_PATH=/usr/local/cuda-13.0 ")


def test_cuda_home_toolkit_is_the_one_judged_not_path():
    old = CudaToolkit(path="/usr/local/cuda-12.1", nvcc_path="/usr/local/cuda-12.1/bin/nvcc", version="12.1",
                      version_full="12.1.105", found_via="CUDA_HOME")
    f = facts(cuda_home_env="/usr/local/cuda-12.1", env_problems={})
    f = replace(f, toolkits=replace(f.toolkits, installed=[old] + list(f.toolkits.installed)))
    (x,) = nvcc_check(f).findings
    assert x.code == "toolchain.nvcc-torch/major" and "nvcc in CUDA_HOME (/usr/local/cuda-12.1) is CUDA 12.1" in x.summary


def _with_torch_cuda(f: Facts, cuda: str) -> Facts:
    py = f.pythons[0]
    return replace(f, pythons=[replace(py, torch=replace(py.torch, cuda=cuda))] + list(f.pythons[1:]))


def test_a_mismatch_never_exports_a_toolkit_that_is_not_installed():
    # torch built with CUDA 12.4, only the 13.0 toolkit here: no /usr/local/cuda-12.4 to export
    (x,) = nvcc_check(_with_torch_cuda(facts(), "12.4")).findings
    assert x.code == "toolchain.nvcc-torch/major" and x.fix.commands == []
    assert "install a CUDA 12.4 toolkit (none is installed here" in x.fix.summary
    # with a 12.4 toolkit installed: its own path, which exists
    tk = CudaToolkit(path="/opt/cuda-12.4", nvcc_path="/opt/cuda-12.4/bin/nvcc", version="12.4",
                     version_full="12.4.131", found_via="/opt")
    f = _with_torch_cuda(facts(), "12.4")
    f = replace(f, toolkits=replace(f.toolkits, installed=list(f.toolkits.installed) + [tk]))
    (x,) = nvcc_check(f).findings
    assert x.fix.commands == ["export CUDA_HOME=/opt/cuda-12.4 PATH=/opt/cuda-12.4/bin:$PATH"]
    assert "installed at /opt/cuda-12.4" in x.fix.summary


def test_a_broken_cuda_home_without_any_toolkit_is_unset_not_pointed_elsewhere():
    f = facts(cuda_home_env="/usr/local/cuda-12.1", env_problems={"CUDA_HOME": "no such directory"}, installed=[],
              on_path=None)
    (x,) = nvcc_check(f).findings
    assert x.code == "toolchain.nvcc-torch/cuda-home-missing" and x.fix.commands == ["unset CUDA_HOME"]
