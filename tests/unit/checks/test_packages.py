"""packages' checks (packages.cuda-variant, packages.companions, packages.extensions) judged on machine
snapshots: a passing, a failing and a skipped case each."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Package
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.assertions import judge_declared
from envdoctor.services.collect import judge
from tests import machines as m
from tests.unit.checks.extension_facts import assert_facts, lib, of, status, with_extensions
from tests.unit.checks.judged import problems, result


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def test_cpu_torch_with_pypi_torchvision_is_mixed_and_fix_pairs_them():
    f = problems(m.cpu_torch_cuda_vision())["CUDA_VARIANT_MIXED"]
    assert f.severity == Severity.ERROR
    assert "2.2.1+cpu" in f.summary and "torchvision 0.17.1" in f.summary and "cu121" in f.summary
    assert f.fix.commands == ["/opt/venv/bin/python -m pip install --force-reinstall torch==2.2.1 torchvision==0.17.1 "
                              "--index-url https://download.pytorch.org/whl/cpu"]


def test_variant_from_compiled_files_beats_guessing():
    f = m.cpu_torch_cuda_vision()
    py = f.pythons[0]
    tv = Package("torchvision", "0.17.1", variant="cpu", variant_evidence="no CUDA libraries linked")
    f = replace(f, pythons=[replace(py, packages=[py.packages[0], tv])])
    assert "CUDA_VARIANT_MIXED" not in problems(f)


def test_companion_mismatch_triton_and_torchvision():
    f = m.healthy_a100()
    py = f.pythons[0]
    pkgs = [Package("torch", "2.5.1+cu121"), Package("torchvision", "0.19.1+cu121"), Package("triton", "3.0.0")]
    assert set(problems(replace(f, pythons=[replace(py, packages=pkgs)]))) == {"COMPANION_VERSION_MISMATCH"}
    codes = {x.code: x for x in judge(replace(f, pythons=[replace(py, packages=pkgs)])).findings}
    tv = codes["packages.companions/torchvision"]
    assert "0.19.1" in tv.summary and "0.20.1" in tv.summary and "2.4.1" in tv.summary
    assert tv.fix.commands == ["/opt/venv/bin/python -m pip install torch==2.5.1 torchvision==0.20.1 "
                               "--index-url https://download.pytorch.org/whl/cu121"]
    assert "expected 3.1.0" in codes["packages.companions/triton"].summary


def test_extension_pinned_to_another_torch():
    f = m.healthy_a100()
    py = f.pythons[0]
    xf = Package("xformers", "0.0.27", requires=["numpy", "torch==2.3.1"])
    fa = Package("flash-attn", "2.5.7+cu122torch2.2cxx11abiFALSE")
    found = judge(replace(f, pythons=[replace(py, packages=py.packages + [xf, fa])])).findings
    codes = {x.code: x for x in found}
    assert "torch==2.3.1" in codes["packages.extensions/xformers"].summary
    assert "built for torch 2.2" in codes["packages.extensions/flash-attn"].summary
    # no extension installed: nothing judged, no check mark; a matching one passes
    assert result(m.healthy_a100(), "packages.extensions").status == CheckStatus.SKIPPED
    ok = Package("xformers", "0.0.28", requires=["numpy", f"torch=={py.torch.version.split('+')[0]}"])
    assert result(replace(f, pythons=[replace(py, packages=py.packages + [ok])]),
                  "packages.extensions").status == CheckStatus.PASSED


# --------------------------------------------------------------------------- the whole findings, and the skips


def test_mixed_variants_whole_finding_and_nothing_to_compare_skips():
    res = result(m.cpu_torch_cuda_vision(), "packages.cuda-variant")
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "packages.cuda-variant/mixed",
                                                            "CUDA_VARIANT_MIXED", Severity.ERROR)
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].torch.version", "2.2.1+cpu"),
                                                       ("pythons[0].packages.torchvision", "0.17.1")]
    assert result(m.healthy_a100(), "packages.cuda-variant").status == CheckStatus.PASSED
    skipped = result(m.gpus_with_cpu_torch(), "packages.cuda-variant")  # torch alone
    assert skipped.status == CheckStatus.SKIPPED and skipped.reason.startswith(
        "no torchvision/torchaudio or nvidia-* wheel of known variant next to torch")


def test_companion_whole_finding_and_torch_alone_skips():
    f = m.healthy_a100()
    py = f.pythons[0]
    res = result(replace(f, pythons=[replace(py, packages=[Package("torch", "2.5.1+cu121"),
                                                           Package("torchvision", "0.19.1+cu121")])]),
                 "packages.companions")
    (x,) = res.findings
    assert (res.status, x.code, x.category, x.severity) == (CheckStatus.FAILED, "packages.companions/torchvision",
                                                            "COMPANION_VERSION_MISMATCH", Severity.ERROR)
    assert [(e.path, e.value) for e in x.evidence] == [("pythons[0].packages.torchvision", "0.19.1+cu121"),
                                                       ("pythons[0].torch.version", "2.5.1+cu121")]
    assert result(f, "packages.companions").status == CheckStatus.PASSED
    skipped = result(m.gpus_with_cpu_torch(), "packages.companions")
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED,
                                                "no torchvision, torchaudio or triton installed: nothing to pair "
                                                "with torch")


def test_extension_pinned_elsewhere_whole_finding():
    f = m.healthy_a100()
    py = f.pythons[0]
    xf = Package("xformers", "0.0.27", requires=["numpy", "torch==2.3.1"])
    res = result(replace(f, pythons=[replace(py, packages=py.packages + [xf])]), "packages.extensions")
    (x,) = res.findings
    assert (res.status, x.code, x.category, x.severity) == (CheckStatus.FAILED, "packages.extensions/xformers",
                                                            "THIRD_PARTY_EXTENSION_MISMATCH", Severity.ERROR)
    assert x.summary == "xformers 0.0.27 does not match torch 2.5.1+cu121: requires torch==2.3.1"
    assert [(e.path, e.value) for e in x.evidence] == [("pythons[0].packages.xformers.requires", "torch==2.3.1")]


def test_live_machine_judges_extensions_against_its_gpus(compat) -> None:
    # healthy_a100: a live A100 (driver probe). flash-attn built for sm_90 only has nothing for it
    f = with_extensions(m.healthy_a100(), [lib("flash-attn", ["sm_90"]), lib("xformers", ["sm_80"])])
    r = judge(f, compat)
    (err,) = of(r, "packages.extensions")
    assert err.code == "packages.extensions/missing" and err.severity == "error"
    assert err.category == "THIRD_PARTY_EXTENSION_MISMATCH" and "GPU 0 (NVIDIA A100-SXM4-80GB)" in err.summary
    assert err.evidence[0].path == "driver.gpus[0].compute_capability"
    # served: the check passes instead of skipping for want of a known extension
    ok = judge(with_extensions(m.healthy_a100(), [lib("xformers", ["sm_80"])]), compat)
    assert of(ok, "packages.extensions") == [] and status(ok, "packages.extensions").status == CheckStatus.PASSED
    # without extension facts the check behaves as before (skipped: nothing to judge)
    st = status(judge(m.healthy_a100(), compat), "packages.extensions")
    assert st.status == CheckStatus.SKIPPED and "no compiled extension" in st.reason
    # extensions with kernels but no GPU to judge them against: the skip says so, not "none installed"
    gpuless = replace(f, driver=replace(f.driver, gpus=[]), pythons=[replace(f.pythons[0], torch=replace(
        f.pythons[0].torch, devices=[]))])
    st = status(judge(gpuless, compat), "packages.extensions")
    assert st.status == CheckStatus.SKIPPED and "no GPU is seen" in st.reason
    # under assert the declared GPUs are judged by requirements.extensions-gpus, not twice here
    st = status(judge_declared(assert_facts(compat, [lib("flash-attn", ["sm_80"])], ["H100"]), compat),
                "packages.extensions")
    assert st.status == CheckStatus.SKIPPED and "requirements.extensions-gpus" in st.reason
