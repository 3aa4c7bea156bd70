"""`recommend` as a resolver: `--format json`'s "install" and `--format pip-args` name a build with kernels for
every GPU given and a driver it runs on, or the driver branch to install first (Kepler past R470)."""

from __future__ import annotations

import json
import shlex

import pytest

from envdoctor.cli import main
from envdoctor.compat import arch_runs, bundled_dir, load_compat
from envdoctor.domain.versions import release
from envdoctor.model.targets import resolve_gpu


@pytest.fixture(scope="module")
def compat():
    return load_compat(bundled_dir())


def _json(capsys, *args: str):
    code = main(["recommend", "--format", "json", "--python", "3.11", *args])
    return code, json.loads(capsys.readouterr().out)


def _runs_on(compat, driver: str, cuda: str, arch, cc: str) -> bool:
    """The driver runs CUDA ``cuda`` wheels: its GA minimum, or the major's minor-version floor when the GPU has
    SASS in the build (minor-version compatibility cannot JIT newer PTX)."""
    req = compat.cuda_requirement(cuda, "linux")
    if req.min_driver and release(driver) >= release(req.min_driver):
        return True
    sass = [a for a in arch if a.startswith("sm_")]
    return bool(req.minor_compat_min_driver) and release(driver) >= release(req.minor_compat_min_driver) \
        and arch_runs(sass, cc)[0]


@pytest.mark.parametrize("gpu,driver,variants", [
    ("RTX 5090", "575.57.08", ("cu128", "cu129")),  # sm_120: cu128+; cu130 needs R580
    ("GTX 1080", "580.65.06", ("cu126",)),  # sm_61: cu128/cu130 builds dropped sm_50-sm_70
    ("H100", "535.104.05", ("cu126", "cu128", "cu129")),  # R535 runs 12.x wheels under minor-version compat
])
def test_install_names_a_build_with_kernels_for_the_gpu_and_a_driver_it_runs_on(compat, capsys, gpu, driver,
                                                                                 variants) -> None:
    code, out = _json(capsys, "--gpu", gpu, "--driver", driver)
    assert code == 0
    plan = out["install"]
    cc = resolve_gpu(compat, gpu).cc
    assert plan["driver_branch"] is None and plan["variant"] in variants
    assert plan["arch_list"] == compat.torch_arch_list(plan["torch"].rsplit(".", 1)[0], plan["variant"])
    assert arch_runs(plan["arch_list"], cc)[0], plan
    assert _runs_on(compat, driver, plan["cuda"], plan["arch_list"], cc)
    assert plan["index_url"] == f"https://download.pytorch.org/whl/{plan['variant']}"
    assert plan["pip_args"] == [*plan["packages"], "--index-url", plan["index_url"]]
    assert plan["packages"][0] == f"torch=={plan['torch']}"
    # the newest torch's builds it refused lack the GPU's kernels or need a newer driver, and say which
    for r in out["newer_not_fitting"]:
        assert "kernels" in r["why_not"] or "needs driver" in r["why_not"], r


def test_builds_without_kernels_for_a_gpu_present_are_refused(compat, capsys) -> None:
    code, out = _json(capsys, "--gpu", "GTX 1080", "--gpu", "RTX 5090", "--driver", "580.65.06")
    if out["install"] is not None:  # one build for both: it must hold sm_61 and sm_120 kernels
        assert arch_runs(out["install"]["arch_list"], "6.1")[0] and arch_runs(out["install"]["arch_list"], "12.0")[0]
    refused = {(r["torch"], r["variant"]): r["why_not"] for r in out["newer_not_fitting"]}
    assert any("no sm_61 kernels" in w for (t, v), w in refused.items() if v in ("cu128", "cu130"))
    assert any("no sm_120 kernels" in w for (t, v), w in refused.items() if v == "cu126")


def test_pip_args_is_the_install_plan_shell_quoted(capsys) -> None:
    code, out = _json(capsys, "--gpu", "GTX 1080", "--driver", "580.65.06")
    assert main(["recommend", "--format", "pip-args", "--python", "3.11", "--gpu", "GTX 1080",
                 "--driver", "580.65.06"]) == 0
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and shlex.split(line) == out["install"]["pip_args"]


def test_k80_on_r580_gets_r470_and_the_last_torch_with_sm_37(compat, capsys) -> None:
    code, out = _json(capsys, "--gpu", "K80", "--driver", "580.65.06")
    assert code == 1 and out["recommendation"] is None  # nothing runs on R580
    plan = out["install"]
    assert plan["driver_branch"] == 470 and "R470 is the last driver branch for Kepler" in plan["driver_why"]
    assert "sm_37" in plan["arch_list"] and plan["variant"] == "cu118" and plan["torch"].startswith("2.7.")
    change = out["driver_change"]
    assert change["judged_with_driver"] == compat.newest_observed_driver(470)
    assert change["cpu_build"]["variant"] == "cpu"
    assert any("the last with them is torch 2.7" in n for n in out["gpu_notes"])
    assert main(["recommend", "--python", "3.11", "--gpu", "K80", "--driver", "580.65.06"]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "install the R470 driver" in text and "upgrade the driver first" not in text
    assert "With the R470 driver" in text and "or the CPU build" in text
    # pip-args never prints a build that cannot run yet
    assert main(["recommend", "--format", "pip-args", "--python", "3.11", "--gpu", "K80",
                 "--driver", "580.65.06"]) == 1
    got = capsys.readouterr()
    assert got.out == "" and "install the R470 driver first" in got.err and "cu118" in got.err


def test_a_driver_too_old_for_the_gpu_still_says_upgrade(capsys) -> None:
    code, out = _json(capsys, "--gpu", "RTX 5090", "--driver", "550.54.14")
    assert code == 1 and out["install"] is None and out["driver_change"] is None
    assert main(["recommend", "--python", "3.11", "--gpu", "RTX 5090", "--driver", "550.54.14"]) == 1
    assert "upgrade the driver first" in " ".join(capsys.readouterr().out.split())


def test_k80_with_an_rtx_5090_gets_no_driver_change_and_no_install(capsys) -> None:
    # R470 is Kepler's last branch and Blackwell's first is R570: no one driver, so neither a downgrade nor a
    # CPU build dressed up as the answer for a GPU machine
    code, out = _json(capsys, "--gpu", "K80", "--gpu", "RTX 5090", "--driver", "580.65.06")
    assert code == 1 and out["install"] is None
    assert out["driver_change"]["install_branch"] is None
    assert "no one driver drives these GPUs" in out["driver_change"]["why"]
    assert main(["recommend", "--python", "3.11", "--gpu", "K80", "--gpu", "RTX 5090", "--driver", "580.65.06"]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "plan these GPUs on separate machines" in text and "upgrade the driver first" not in text
    assert "install the R470 driver" not in text


def _this_machine(monkeypatch, driver, gpus, devices):
    from envdoctor.model.facts import Driver, Facts, Gpu, Topology
    from envdoctor.services import recommend as rec

    facts = Facts(driver=Driver(status="ok" if driver else "absent", version=driver,
                                gpus=[Gpu(index=i, name=n, compute_capability=cc) for i, (n, cc) in enumerate(gpus)]),
                  topology=Topology(nvidia_pci_devices=devices))
    monkeypatch.setattr(rec, "this_machine", lambda: facts)


def test_this_machines_driver_and_gpus_decide_without_options(monkeypatch, capsys) -> None:
    # a GTX 1080 on R580 read from the machine: cu126 (sm_61 kernels), never the cu130 its driver alone would pick
    _this_machine(monkeypatch, "580.65.06", [("NVIDIA GeForce GTX 1080", "6.1")], ["0000:01:00.0 030000"])
    code, out = _json(capsys)
    assert code == 0 and out["install"]["variant"] == "cu126" and arch_runs(out["install"]["arch_list"], "6.1")[0]
    assert "driver 580.65.06 read from this machine" in out["from_this_machine"]
    # a box without NVIDIA hardware: the CPU build, as pip's arguments
    _this_machine(monkeypatch, None, [], [])
    assert main(["recommend", "--format", "pip-args", "--python", "3.11"]) == 0
    assert capsys.readouterr().out.strip().endswith("--index-url https://download.pytorch.org/whl/cpu")
