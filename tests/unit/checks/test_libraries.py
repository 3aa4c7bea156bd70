"""libraries.shadowing (envdoctor/checks/libraries.py): the CUDA libraries torch loads are its wheels', not a
copy found first on LD_LIBRARY_PATH; a wheel copy passes, a shadowing copy is an error with the path to drop,
and a torch whose loaded libraries were not read, or a CPU torch, is skipped."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, LibraryCopy, Package
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m

WHEEL = "/opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn.so.9"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _loaded(path: str, version: str, origin: str, ld_path: str = "/opt/cudnn-8.9/lib:/usr/local/lib") -> Facts:
    f = m.healthy_a100()
    py = f.pythons[0]
    py = replace(py, packages=py.packages + [Package("nvidia-cudnn-cu12", "9.1.0.70")],
                 loaded_libraries=[LibraryCopy("cudnn", path, version, origin)], env={"LD_LIBRARY_PATH": ld_path})
    return replace(f, pythons=[py])


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "libraries.shadowing"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_the_wheels_own_cudnn_passes(compat):
    res = _run(_loaded(WHEEL, "9.1.0", "wheel"), compat)
    assert res.status == CheckStatus.PASSED and res.findings == []


def test_a_cudnn_found_first_on_ld_library_path_is_an_error_naming_the_entry(compat):
    res = _run(_loaded("/opt/cudnn-8.9/lib/libcudnn.so.8", "8.9.7", "system"), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("libraries.shadowing/cudnn", "SYSTEM_LIB_SHADOWING", Severity.ERROR)
    assert f.summary == ("torch loaded cuDNN from /opt/cudnn-8.9/lib/libcudnn.so.8 (cuDNN 8.9.7), found through "
                         "LD_LIBRARY_PATH entry /opt/cudnn-8.9/lib, instead of its nvidia-cudnn-cu12 wheel "
                         "(9.1.0.70)")
    ev = {e.path: e for e in f.evidence}
    assert ev["pythons[0].env.LD_LIBRARY_PATH"].value == "/opt/cudnn-8.9/lib:/usr/local/lib"
    assert ev["pythons[0].loaded_libraries.cudnn"].expected == "the nvidia-cudnn-cu12 copy in site-packages"
    assert ev["pythons[0].packages.nvidia-cudnn-cu12"].value == "9.1.0.70"
    assert f.fix.commands == ["export LD_LIBRARY_PATH=/usr/local/lib"]  # the entry dropped, the rest kept


def test_unread_libraries_are_unknown_and_a_cpu_torch_does_not_apply(compat):
    res = _run(m.healthy_a100(), compat)  # torch imported, /proc/self/maps not in the facts
    assert res.status == CheckStatus.SKIPPED and res.not_applicable is None
    assert res.reason == "the libraries torch loads were not read (torch import or /proc/self/maps unavailable)"
    cpu = _run(m.gpus_with_cpu_torch(), compat)
    assert (cpu.status, cpu.reason, cpu.not_applicable) == (CheckStatus.SKIPPED, "no CUDA build of torch to judge",
                                                            "no CUDA build of torch")
