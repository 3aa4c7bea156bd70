"""The smoke tier's payload side (issue 38) in this interpreter: which distributions are tried and under which
module, what an import says about the installed files, and the step runner's records for a failure, a crash and
a hang (each in its own child: the others still run)."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from envdoctor._payload import smoke, smoke_steps


def test_torch_and_its_dependents_with_their_modules() -> None:
    class Dist:
        def __init__(self, record: str) -> None:
            self.record = record

        def read_text(self, name: str) -> str:
            return self.record

    dists = [
        {"name": "torchvision", "version": "0.28.0", "location": "/s", "requires": ["torch==2.13.0", "numpy"],
         "dist": Dist("torchvision/__init__.py,,\ntorchvision/_C.so,,\ntorchvision-0.28.0.dist-info/RECORD,,\n")},
        {"name": "torch", "version": "2.13.0", "location": "/s", "requires": ["filelock"],
         "dist": Dist("torch/__init__.py,,\ntorchgen/__init__.py,,\nfunctorch/__init__.py,,\n")},
        {"name": "transformers", "version": "5.0.0", "location": "/s", "requires": ["torch>=2.2; extra == 'torch'"],
         "dist": Dist("transformers/__init__.py,,\n")},
        {"name": "accelerate", "version": "1.0", "location": "/s", "requires": ["torch>=2.0.0"],
         "dist": Dist("accelerate/__init__.py,,\n")},
        {"name": "flash_attn", "version": "2.8.3", "location": "/s", "requires": ["torch", "einops"],
         "dist": Dist("flash_attn/__init__.py,,\nflash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so,,\n"
                      "hopper/__init__.py,,\n")},
        {"name": "torch", "version": "2.12.0", "location": "/base", "requires": [], "dist": Dist("")},  # shadowed
    ]
    fam = smoke.torch_family(dists)
    assert [(f["name"], f["module"], f["compiled"]) for f in fam] == [
        ("torch", "torch", False), ("accelerate", "accelerate", False), ("flash-attn", "flash_attn", True),
        ("torchvision", "torchvision", True)]  # transformers needs torch only behind an extra


def test_an_import_that_is_not_the_installed_build_says_so(tmp_path, monkeypatch) -> None:
    site, stale = tmp_path / "site", tmp_path / "stale"
    for root, version in ((site, "2.0.0"), (stale, "1.0.0")):
        (root / "smokepkg").mkdir(parents=True)
        (root / "smokepkg" / "__init__.py").write_text(f"__version__ = '{version}'\n")
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("smokepkg", None)
    ok = smoke_steps.step_import(dist="smokepkg", version="2.0.0", location=str(site), module="smokepkg")
    assert ok["inside"] is True and ok["module_version"] == "2.0.0"
    with pytest.raises(smoke_steps.StepError, match="reports __version__ 2.0.0 .* the installed smokepkg is 3.1"):
        smoke_steps.step_import(dist="smokepkg", version="3.1", location=str(site), module="smokepkg")
    sys.modules.pop("smokepkg", None)
    monkeypatch.syspath_prepend(str(stale))  # another copy first on sys.path
    with pytest.raises(smoke_steps.StepError, match="loaded .*stale/smokepkg/__init__.py, not the installed"):
        smoke_steps.step_import(dist="smokepkg", version="2.0.0", location=str(site), module="smokepkg")
    sys.modules.pop("smokepkg", None)


def _boom(**_kw):
    raise ValueError("the exact message")


def _crash(**_kw):
    os.kill(os.getpid(), signal.SIGSEGV)


def _hang(**_kw):
    time.sleep(60)


def _fine(**_kw):
    return {"answer": 42}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the step runner forks (POSIX only)")
def test_a_failure_a_crash_and_a_hang_each_recorded_and_the_rest_still_run() -> None:
    funcs = {"boom": _boom, "crash": _crash, "hang": _hang, "fine": _fine}
    got = []
    units = [("boom", {}), ("crash", {}), ("hang", {}), ("fine", {})]  # one chain: each failure restarts it
    smoke_steps.run_unit(units, {"boom": 10, "crash": 10, "hang": 1.0, "fine": 10}, funcs, got.append)
    by = {r["name"]: r for r in got}
    assert [r["name"] for r in got] == ["boom", "crash", "hang", "fine"]
    assert (by["boom"]["status"], by["boom"]["error_type"], by["boom"]["error"]) == (
        "failed", "ValueError", "the exact message")
    assert by["boom"]["traceback"][-1] == "ValueError: the exact message"
    assert (by["crash"]["status"], by["crash"]["error_type"], by["crash"]["signal"]) == ("failed", "Crash", "SIGSEGV")
    assert any("Segmentation fault" in line for line in by["crash"].get("traceback", []))  # faulthandler's report
    assert (by["hang"]["status"], by["hang"]["error_type"]) == ("timed-out", "Timeout")
    assert by["fine"] == {"name": "fine", "status": "ok", "duration_s": by["fine"]["duration_s"],
                          "detail": {"answer": 42}}


def _leave_a_process_holding_the_pipe(**_kw):
    orphan = os.fork()
    if orphan == 0:  # a pool worker the step leaves behind, holding the step's pipe open
        time.sleep(60)
        os._exit(0)
    return {"orphan": orphan}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the step runner forks (POSIX only)")
def test_a_process_left_holding_the_pipe_does_not_hold_the_step() -> None:
    got = []
    smoke_steps.run_unit([("leave", {}), ("fine", {})], {"leave": 20, "fine": 20},
                         {"leave": _leave_a_process_holding_the_pipe, "fine": _fine}, got.append)
    assert [(r["name"], r["status"]) for r in got] == [("leave", "ok"), ("fine", "ok")]
    orphan = got[0]["detail"]["orphan"]
    try:
        os.kill(orphan, 0)  # still alive, still holding the pipe: the runner did not wait for it to close
    finally:
        os.kill(orphan, signal.SIGKILL)


def test_top_modules_from_a_record() -> None:
    # packages one level down, top-level modules and extensions; metadata, scripts, caches and private modules are
    # not importable names; the distribution's own name first
    record = ("functorch/__init__.py,sha256=a,1\n"
              "torch/__init__.py,sha256=b,2\n"
              "torch/nn/__init__.py,,\n"  # a subpackage
              '"torchgen/__init__.py",,\n'
              "typing_ext.py,,\r\n"
              "_private.py,,\n"
              "torch_C.cpython-311-x86_64-linux-gnu.so,,\n"
              "_torch_ext.so,,\n"
              "torch-2.13.0.dist-info/__init__.py,,\n"
              "bin/__init__.py,,\n__pycache__/__init__.py,,\n../x/__init__.py,,\n"
              "nodot.so,,\n"
              "no_comma.py")
    assert smoke_steps._top_modules("/s", record, "torch") == [
        "torch", "functorch", "no_comma", "nodot", "torch_C", "torchgen", "typing_ext"]
    assert smoke_steps._top_modules("/s", "", "torch") == []
    assert smoke_steps._top_modules("/s", "flash_attn/__init__.py,,\nhopper/__init__.py,,\n", "flash-attn") == [
        "flash_attn", "hopper"]


@pytest.mark.parametrize("tier", ["quick", "thorough"])
def test_the_quick_tier_passes_four_dataloader_tensors_and_says_what_it_left(tier, monkeypatch) -> None:
    # the quick DataLoader: one batch of 2 tensors from each of its two workers; holding 64 at once is thorough's,
    # and the quick tier's not-tried line says so (the console prints it)
    planned = {}
    monkeypatch.setattr(smoke.Smoke, "_fork_zygote", lambda self, units, which: planned.update({which: units}))
    s = smoke.Smoke(tier, [], {}, None)
    s.family = [{"name": "torch", "version": "2.13.0", "location": "/s", "module": "torch", "compiled": True}]
    s.after_torch_import(cuda_expected=True)
    assert list(planned) == ["cuda-kernel", "dataloader", "checkpoint", "distributed"]  # the longest first
    (((name, kwargs),), _timeouts) = planned["dataloader"][0]
    left = "a DataLoader holding 64 tensors (--smoke thorough)"
    if tier == "quick":
        assert kwargs == {"columns": 2, "batches": 2} and left in s.section["not_tried"]
    else:
        assert kwargs == {} and left not in s.section["not_tried"]


def test_the_dataloader_step_holds_what_it_is_asked_for() -> None:
    pytest.importorskip("torch")
    assert smoke_steps.step_dataloader(columns=2, batches=2)["tensors_held"] == 4
