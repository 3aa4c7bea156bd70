"""requirements' checks: the declared target GPUs (requirements.target-gpus: present on a live machine, served by
SASS rather than PTX) and the installed CUDA extensions for them (requirements.extensions-gpus)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import ExtensionLibrary, Targets
from envdoctor.model.findings import CheckStatus
from envdoctor.services.assertions import judge_declared
from envdoctor.services.collect import judge
from tests import machines
from tests.unit.checks.extension_facts import assert_facts, lib, of, status, with_extensions


@pytest.fixture(scope="module")
def compat():
    return load_compat()


# --------------------------------------------------------------------------- requirements.extensions-gpus


def test_target_gpus_error_warning_and_pass(compat) -> None:
    libs = [lib("flash-attn", ["sm_80"]),  # A100 only: nothing for an H100
            lib("xformers", ["sm_80"], ["compute_80"]),  # PTX that JITs to sm_90
            lib("apex", ["sm_80", "sm_90"]),  # SASS for both
            lib("torchvision", [], [], fatbins=0)]  # no CUDA kernels at all: nothing to judge
    r = judge_declared(assert_facts(compat, libs, ["H100", "A100"]), compat)
    got = sorted((x.code, x.severity, x.summary.split(" ")[0]) for x in of(r, "requirements.extensions-gpus"))
    assert got == [("requirements.extensions-gpus/missing", "error", "flash-attn"),
                   ("requirements.extensions-gpus/ptx-only", "warning", "xformers")]
    err = next(x for x in r.findings if x.code == "requirements.extensions-gpus/missing")
    assert "target GPU H100" in err.summary and "sm_90" in err.summary and err.category == "REQUIREMENT_UNMET"
    assert err.evidence[0].path == "targets.target_gpus[0]" and err.evidence[0].value == "H100"
    assert err.evidence[1].path == "pythons[0].extensions.libraries[0]" and err.evidence[1].source.endswith("_C.so")
    assert any("TORCH_CUDA_ARCH_LIST=9.0" in c for c in err.fix.commands)
    warn = next(x for x in r.findings if x.code == "requirements.extensions-gpus/ptx-only")
    assert "ComputeCache" in warn.detail and "CUDA_CACHE_MAXSIZE" in warn.detail
    assert r.has_at_least("error")
    # sm_XX targets are judged the same way; a newer minor of the same major runs older SASS (8.6 runs sm_80)
    ok = judge_declared(assert_facts(compat, libs[1:], ["sm_86"]), compat)
    assert of(ok, "requirements.extensions-gpus") == []
    assert status(ok, "requirements.extensions-gpus").status == CheckStatus.PASSED


def test_libraries_for_another_generation_are_an_info_and_unread_ones_soften(compat) -> None:
    # vllm ships Hopper-only kernels in their own library: an A100 is still served by _C.so
    libs = [lib("vllm", ["sm_80", "sm_90"]), lib("vllm", ["sm_90a"], name="_flashmla_C.so")]
    r = judge_declared(assert_facts(compat, libs, ["A100"]), compat)
    (note,) = of(r, "requirements.extensions-gpus")
    assert note.code.endswith("/partial") and note.severity == "info" and "_flashmla_C.so" in note.summary
    # what was read lacks the GPU, but a library was left unread: not certain, so a warning
    libs = [lib("big", ["sm_80"]), ExtensionLibrary(
        "big", "1.0", "/venv/lib/big/_D.so", skipped="not read: library budget spent (64 libraries read)")]
    r = judge_declared(assert_facts(compat, libs, ["H100"]), compat)
    (warn,) = of(r, "requirements.extensions-gpus")
    assert warn.severity == "warning" and "not read" in warn.summary
    # nothing read at all: skipped with the reason
    only_unread = [libs[1]]
    r = judge_declared(assert_facts(compat, only_unread, ["H100"]), compat)
    st = status(r, "requirements.extensions-gpus")
    assert st.status == CheckStatus.SKIPPED and "library budget" in st.reason


def test_skips_without_targets_or_without_extension_facts(compat) -> None:
    r = judge(with_extensions(machines.healthy_a100(), [lib("flash-attn", ["sm_90"])]), compat)
    assert status(r, "requirements.extensions-gpus").status == CheckStatus.SKIPPED
    old = replace(assert_facts(compat, [], ["H100"]), pythons=[machines.torch_env("2.5.1+cu124", "12.4", ["sm_90"])])
    st = status(judge_declared(old, compat), "requirements.extensions-gpus")
    assert st.status == CheckStatus.SKIPPED and "not read" in st.reason


# --------------------------------------------------------------------------- requirements.target-gpus


def _declared(compat, arch, gpus=("H100",), torch="2.5.1+cu124", cuda="12.4"):
    """`envdoctor assert --target-gpus ...` on a torch with the arch list ``arch``."""
    return judge_declared(assert_facts(compat, [], list(gpus), env=machines.torch_env(torch, cuda, arch)), compat)


def test_ptx_only_target_warns_about_jit_and_sass_passes(compat) -> None:
    r = _declared(compat, ["sm_80", "compute_80"])
    (f,) = of(r, "requirements.target-gpus")
    assert (f.code, f.category, f.severity) == ("requirements.target-gpus/ptx-only", "GPU_ARCH_NOT_IN_TORCH_BUILD",
                                                "warning")
    assert f.summary == ("torch 2.5.1+cu124 has no SASS for target H100 (compute capability 9.0): it runs through "
                         "PTX JIT-compiled by the driver on first use")
    assert [(e.path, e.value, e.expected) for e in f.evidence] == [
        ("targets.target_gpus[0]", "H100", None), ("pythons[0].torch.arch_list", ["sm_80", "compute_80"], "sm_90")]
    assert status(_declared(compat, ["sm_80", "sm_90"]), "requirements.target-gpus").status == CheckStatus.PASSED


def test_a_declared_gpu_absent_from_the_live_machine_or_unknown_is_an_error(compat) -> None:
    live = replace(machines.healthy_a100(), targets=Targets(target_gpus=["H100"], source="test"))
    (f,) = of(judge(live, compat), "requirements.target-gpus")
    assert (f.code, f.category, f.severity) == ("requirements.target-gpus/absent", "REQUIREMENT_UNMET", "error")
    assert f.summary == ("Target GPU H100 (compute capability 9.0) was declared but this machine has "
                         "NVIDIA A100-SXM4-80GB")
    assert [(e.path, e.value) for e in f.evidence] == [("targets.target_gpus[0]", "H100"),
                                                       ("driver.gpus", ["NVIDIA A100-SXM4-80GB"])]
    odd = replace(machines.healthy_a100(), targets=Targets(target_gpus=["Voodoo 5"], source="test"))
    (u,) = of(judge(odd, compat), "requirements.target-gpus")
    assert (u.code, u.category, u.severity) == ("requirements.target-gpus/unknown", "REQUIREMENT_UNMET", "error")
    assert [(e.path, e.value) for e in u.evidence] == [("targets.target_gpus[0]", "Voodoo 5")]


def test_target_gpus_skip_without_a_declaration_or_a_cuda_build(compat) -> None:
    st = status(judge(machines.healthy_a100(), compat), "requirements.target-gpus")
    assert st.status == CheckStatus.SKIPPED and st.reason.startswith("no target GPUs declared")
    # a CPU build serves no target GPU: requirements.target-gpus must not pass ("served by SASS") on it
    r = _declared(compat, [], torch="2.13.0+cpu", cuda=None)
    st = status(r, "requirements.target-gpus")
    assert st.status == CheckStatus.SKIPPED and "SASS coverage not judged" in st.reason
    assert "torch.cuda-build/cpu-only" in [f.code for f in r.findings]
