"""diagnose.gpu-arch-build-unknown: a GPU that only some current torch builds carry, said not to work, torch's
build not in the paste (issue 42, helper archdriver): a low lead asking for torch's arch list."""

from __future__ import annotations

import pytest

from envdoctor.checks.base import CheckContext, SkipCheck
from envdoctor.checks.diagnose_gpu_arch import check_gpu_arch_build_unknown
from envdoctor.compat import load_compat
from envdoctor.model.facts import Driver, Facts, Gpu, PasteSource, PythonEnv, TorchInfo

SAID = {"paste.gpu_unsupported_said": {"value": "no compatible GPU", "reader": "no compatible GPU available",
                                       "where": "line 1"}}


def _ctx(gpu="GeForce RTX 5090", said=True, torch=None, messages=()) -> CheckContext:
    pythons = [PythonEnv(torch=TorchInfo(version=torch, cuda=None))] if torch else []
    facts = Facts(origin="paste", driver=Driver(status="ok", gpus=[Gpu(index=0, name=gpu)] if gpu else []),
                  pythons=pythons, paste=PasteSource(provenance=dict(SAID) if said else {}, messages=list(messages)))
    return CheckContext(facts, load_compat())


def test_a_gpu_every_current_build_runs_passes() -> None:
    assert check_gpu_arch_build_unknown(_ctx("NVIDIA GeForce RTX 3090")) == []  # sm_86 in every default build


def test_a_new_or_dropped_gpu_is_a_low_lead() -> None:
    for gpu, sm in (("GeForce RTX 5090", "sm_120"), ("GeForce GTX 1070", "sm_61")):
        (f,) = check_gpu_arch_build_unknown(_ctx(gpu))
        assert (f.code, f.category, f.severity, f.confidence) == \
            ("diagnose.gpu-arch-build-unknown/only-some-builds", "GPU_ARCH_NOT_IN_TORCH_BUILD", "warning", "low")
        assert sm in f.summary and "torch.cuda.get_arch_list()" in f.fix.commands[0]


def test_skips() -> None:
    with pytest.raises(SkipCheck, match="does not say"):
        check_gpu_arch_build_unknown(_ctx(said=False))
    with pytest.raises(SkipCheck, match="torch.gpu-arch"):
        check_gpu_arch_build_unknown(_ctx(torch="2.6.0+cu124"))
    with pytest.raises(SkipCheck, match="already says"):
        check_gpu_arch_build_unknown(_ctx(messages=("CUDA error: no kernel image is available for execution on the "
                                                    "device",)))
    with pytest.raises(SkipCheck, match="no GPU"):
        check_gpu_arch_build_unknown(_ctx(gpu=None))
