"""envdoctor matrix (cited answers from the bundled rows) and envdoctor recommend (the newest build that fits)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from envdoctor.compat import arch_runs, bundled_dir, load_compat
from envdoctor.model.targets import resolve_gpu
from envdoctor.services.matrix import MatrixError, arch_info, gpu_info, max_cuda, min_driver, torch_info
from envdoctor.services.recommend import recommend


@pytest.fixture(scope="module")
def compat():
    return load_compat(bundled_dir())


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, timeout=120)


def test_min_driver_cli_json_cites_its_rows() -> None:
    out = _cli("matrix", "min-driver", "12.4", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["min_driver"] == "550.54.14" and doc["release"] == "GA"
    assert "Table 3" in doc["min_driver_source"]
    mvc = doc["minor_version_compatibility"]
    assert mvc["min_driver"] == "525.60.13" and "minor-version-compatibility" in mvc["source"]
    assert mvc["limits"] and all(lim["source"] for lim in mvc["limits"])
    assert "forward-compatibility" in doc["forward_compatibility"]["source"]
    assert doc["compat_data"] == "bundled"


def test_every_cuda_ga_minimum_through_the_query(compat) -> None:
    for row in compat.cuda_releases():
        if row.release != "GA" or not row.linux_min_driver:
            continue
        assert min_driver(compat, row.cuda)["min_driver"] == row.linux_min_driver, row.cuda
    with pytest.raises(MatrixError, match="not in the matrix"):
        min_driver(compat, "99.1")
    with pytest.raises(MatrixError, match="not a version"):
        min_driver(compat, "twelve")


def test_max_cuda(compat) -> None:
    doc = max_cuda(compat, "535.104.05")
    assert doc["max_cuda"] == "12.2" and doc["max_cuda_source"]
    assert doc["newest_toolkit_at_ga_minimum"]["cuda"] == "12.2"
    assert [m["cuda_major"] for m in doc["minor_version_compatibility"]] == [11, 12]
    assert max_cuda(compat, "455.45.01")["max_cuda"] == "11.1"  # a branch row added from nvidia-smi headers
    with pytest.raises(MatrixError):
        max_cuda(compat, "five-thirty-five")


def test_torch_gpu_arch_queries(compat) -> None:
    t = torch_info(compat, "2.13")
    assert t["default_variant"] == "cu130" and t["python_max"] == "3.15" and "cu126" in t["arch_lists"]
    assert [c["torch"] for c in t["companions"]] == ["2.13.0"] and t["source"]
    g = gpu_info(compat, "RTX 5090")
    assert g["compute_capability"] == "12.0" and g["models"][0]["source"]
    assert g["torch_builds"] and all(arch_runs(compat.torch_arch_list(b["torch"], b["variant"]), "12.0")[0]
                                     for b in g["torch_builds"])
    a = arch_info(compat, "sm_110")
    assert a["first_cuda"] == "13.0" and "13.0" in a["ptxas_toolkits"] and "12.8" not in a["ptxas_toolkits"]
    assert len(arch_info(compat, None)["architectures"]) == len(compat.table("arch_support")["rows"])
    with pytest.raises(MatrixError):
        gpu_info(compat, "Voodoo 5")


def test_matrix_cli_console_and_bad_input() -> None:
    out = _cli("matrix", "gpu", "Tesla K80")
    assert out.returncode == 0 and "compute capability 3.7" in out.stdout and "source:" in out.stdout
    bad = _cli("matrix", "torch", "9.9")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- recommend


def test_recommend_535_h100(compat) -> None:
    out = recommend(compat, "535.104.05", [resolve_gpu(compat, "H100")], "3.11")
    rec = out["recommendation"]
    # the newest torch with a CUDA 12.x variant: it runs on 535 through minor-version compatibility only
    newest_cu12 = max((r for r in compat.torch_releases() if any(v.startswith("cu12") for v in r.cuda_variants)
                       and r.python_min and r.python_max),
                      key=lambda r: tuple(int(x) for x in r.minor.split(".")))
    assert rec["torch_minor"] == newest_cu12.minor
    assert rec["variant"].startswith("cu12")
    assert "minor-version compatibility" in rec["rule"] and "525.60.13" in rec["rule"]
    assert rec["not_covered"] and any("PTX" in n for n in rec["not_covered"])
    assert rec["pip"].startswith("python3.11 -m pip install torch==") and "--index-url" in rec["pip"]
    assert rec["uv"].startswith("uv pip install --python 3.11 torch==")
    assert any("needs driver >= 580.65.06" in r["why_not"] for r in out["newer_not_fitting"])


def test_recommend_rtx_5090_never_without_sm_120(compat) -> None:
    gpu = resolve_gpu(compat, "RTX 5090")
    for driver in ("570.124.06", "580.65.06", "595.45.04", "535.104.05"):
        out = recommend(compat, driver, [gpu], "3.12")
        for e in ([out["recommendation"]] if out["recommendation"] else []) + out["per_cuda_variant"]:
            arch = compat.torch_arch_list(e["torch_minor"], e["variant"])
            assert arch and arch_runs(arch, "12.0")[0], (driver, e["torch"], e["variant"])
    # R535 cannot drive Blackwell at all: nothing is proposed, and it says why
    out = recommend(compat, "535.104.05", [gpu], "3.12")
    assert out["recommendation"] is None and "R535" in out["driver_cannot_drive_gpu"]


def test_recommend_tesla_k80_names_the_last_torch_with_sm_37(compat) -> None:
    gpu = resolve_gpu(compat, "Tesla K80")
    last = max((r for r in compat.torch_releases() if any(a and arch_runs(a, "3.7")[0]
                                                           for a in r.arch_lists.values())),
               key=lambda r: tuple(int(x) for x in r.minor.split(".")))
    out = recommend(compat, "470.256.02", [gpu], "3.10")
    assert out["recommendation"]["torch_minor"] == last.minor
    assert any(f"the last with them is torch {last.minor}" in n for n in out["gpu_notes"])
    arch = compat.torch_arch_list(last.minor, out["recommendation"]["variant"])
    assert "sm_37" in arch


def test_recommend_cli(tmp_path) -> None:
    out = _cli("recommend", "--driver", "535.104.05", "--gpu", "H100", "--python", "3.11")
    assert out.returncode == 0, out.stderr
    assert "Newest that fits: torch" in out.stdout and "fits because:" in out.stdout
    assert "python3.11 -m pip install" in out.stdout and "uv pip install" in out.stdout
    bad = _cli("recommend", "--driver", "535.104.05", "--gpu", "Voodoo 5", "--python", "3.11")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- recommend: unknown arch lists


def test_recommend_never_proposes_a_build_whose_kernels_are_unknown(compat) -> None:
    """Old builds have no arch list in the matrix: they are judged by the first/last CUDA of the GPU's
    architecture (arch_support.json) and, inside that span, never proposed (their kernels are unknown)."""
    for name in ("RTX 5090", "H100", "A100", "RTX 3090", "V100", "Tesla K80", "T4"):
        gpu = resolve_gpu(compat, name)
        for python in ("2.7", "3.6", "3.7", "3.8", "3.10", "3.12"):
            for driver in (None, "535.104.05", "580.65.06"):
                out = recommend(compat, driver, [gpu], python)
                for e in ([out["recommendation"]] if out["recommendation"] else []) + out["per_cuda_variant"]:
                    arch = compat.torch_arch_list(e["torch_minor"], e["variant"])
                    assert arch and arch_runs(arch, gpu.cc)[0], (name, python, driver, e["torch"], e["variant"])
                assert (out["recommendation"] is None) == bool(out["why_none"]), (name, python, driver)


def test_recommend_rtx_5090_on_python_3_8_fits_nothing_and_says_why(compat) -> None:
    out = recommend(compat, None, [resolve_gpu(compat, "RTX 5090")], "3.8")
    assert out["recommendation"] is None and out["per_cuda_variant"] == []
    # torch 1.12.1+cu116 was proposed before: cu116 predates sm_120 (first in CUDA 12.8)
    cu116 = [r for r in out["newer_not_fitting"] if r["torch"] == "1.12" and r["variant"] == "cu116"]
    assert cu116 and "sm_120 first appears in CUDA 12.8" in cu116[0]["why_not"]
    assert "the first torch with sm_120 kernels is 2.7" in out["why_none"]


def test_recommend_h100_on_python_2_7_fits_nothing(compat) -> None:
    out = recommend(compat, None, [resolve_gpu(compat, "H100")], "2.7")
    assert out["recommendation"] is None
    assert all("sm_90 first appears in CUDA 11.8" in r["why_not"] for r in out["newer_not_fitting"])
    assert "no build of torch 1.4" in out["why_none"]


def test_recommend_h100_with_k80_no_driver_drives_both(compat) -> None:
    gpus = [resolve_gpu(compat, "H100"), resolve_gpu(compat, "Tesla K80")]
    for driver in (None, "470.256.02", "535.104.05"):
        out = recommend(compat, driver, gpus, "3.10")
        assert out["recommendation"] is None, driver
        assert out["driver_cannot_drive_gpu"] and out["why_none"] == out["driver_cannot_drive_gpu"]
    out = recommend(compat, None, gpus, "3.10")
    assert "no driver drives both" in out["why_none"] and "R470" in out["why_none"] and "R520" in out["why_none"]


def test_recommend_cli_exit_codes() -> None:
    for args in (["--gpu", "RTX 5090", "--python", "3.8"], ["--gpu", "H100", "--python", "2.7"],
                 ["--gpu", "H100", "--gpu", "Tesla K80", "--python", "3.10"]):
        out = _cli("recommend", *args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert "No torch build in the matrix fits: " in out.stdout, args
        assert "Newest that fits" not in out.stdout
    ok = _cli("recommend", "--gpu", "H100", "--driver", "535.104.05", "--python", "3.11", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["recommendation"]["variant"].startswith("cu12") and doc["why_none"] is None


def _machine(monkeypatch, driver_status: str, devices):
    from envdoctor.model.facts import Driver, Facts, Topology
    from envdoctor.services import recommend as rec

    facts = Facts(driver=Driver(status=driver_status, reason="NVML library not found"),
                  topology=Topology(nvidia_pci_devices=devices))
    monkeypatch.setattr(rec, "this_machine", lambda: facts)


def test_recommend_on_a_box_without_nvidia_hardware_is_the_cpu_build(monkeypatch, capsys) -> None:
    from envdoctor.cli import main

    _machine(monkeypatch, "absent", [])
    assert main(["recommend", "--python", "3.11", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rec = doc["recommendation"]
    assert (rec["variant"], rec["cuda"], rec["triton"]) == ("cpu", None, None)
    assert rec["pip"].endswith("--index-url https://download.pytorch.org/whl/cpu") and "no NVIDIA hardware" in rec["rule"]
    assert doc["cpu_box"] and doc["per_cuda_variant"]  # the CUDA builds stay listed, for a machine with GPUs
    assert main(["recommend", "--python", "3.11"]) == 0
    text = capsys.readouterr().out
    assert "Newest that fits: torch " in text and "(cpu)" in text and "For a machine with NVIDIA GPUs" in text


def test_recommend_with_nvidia_hardware_or_a_target_is_a_cuda_build(monkeypatch, capsys) -> None:
    from envdoctor.cli import main

    _machine(monkeypatch, "absent", ["0000:3b:00.0 030200"])  # a GPU without its driver: CUDA is the plan
    assert main(["recommend", "--python", "3.11", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recommendation"]["variant"].startswith("cu") and doc["cpu_box"] is None
    _machine(monkeypatch, "absent", [])  # planning a GPU machine from a CPU box: the target decides
    assert main(["recommend", "--python", "3.11", "--gpu", "H100", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["recommendation"]["variant"].startswith("cu")
