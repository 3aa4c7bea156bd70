"""Tests for the bundled compatibility matrix (compat_data/*.json) and its query API (envdoctor.compat)."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from envdoctor.compat import (
    CompatDataError,
    arch_runs,
    clear_cache,
    cuda_of_variant,
    index_url,
    load_compat,
    validate_file,
    variant_of_cuda,
)
from tests.paths import REPO

DATA_DIR = REPO / "compat_data"
ALL_FILES = sorted(DATA_DIR.glob("*.json"))


@pytest.fixture(scope="module")
def compat():
    return load_compat(DATA_DIR)


# --------------------------------------------------------------------------- the generic rule, every file


def test_all_bundled_files_are_found():
    stems = {p.stem for p in ALL_FILES}
    assert {"cuda_driver", "torch", "gpus", "arch_support", "host_compilers"} <= stems


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_every_file_follows_the_generic_rule(path):
    doc = validate_file(path)
    datetime.date.fromisoformat(doc["as_of"])
    tables = [k for k, v in doc.items() if isinstance(v, list) and k != "sources"]
    assert "rows" in tables and doc["rows"], f"{path.name} has no rows"
    for t in tables:
        for row in doc[t]:
            src = row["source"]
            assert (isinstance(src, str) and src.strip()) or (isinstance(src, list) and src and all(src))


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_declared_version_fields_parse_and_keys_are_unique(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    for table, fields in doc.get("version_fields", {}).items():
        for row in doc[table]:
            for f in fields:
                if row.get(f) is not None:
                    Version(str(row[f]))
    for table, fields in doc.get("keys", {}).items():
        keys = [tuple(json.dumps(r.get(f)) for f in fields) for r in doc[table]]
        assert len(keys) == len(set(keys)), f"{path.name}:{table} has duplicate keys"


def _copy_data(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    shutil.copytree(DATA_DIR, d)
    clear_cache()
    return d


def _edit(d: Path, name: str, change) -> Path:
    """Apply ``change`` to compat_data file ``name`` (parsed) in the copy ``d``; the file's path."""
    p = d / name
    doc = json.loads(p.read_text())
    change(doc)
    p.write_text(json.dumps(doc))
    return p


def test_duplicate_key_is_rejected(tmp_path):
    d = _copy_data(tmp_path)
    _edit(d, "cuda_driver.json", lambda doc: doc["rows"].append(
        dict(next(r for r in doc["rows"] if r["cuda"] == "12.4" and r["release"] == "GA"))))
    with pytest.raises(CompatDataError, match=r"cuda_driver.json: rows\[\d+\] duplicates"):
        load_compat(d)


def test_row_without_source_is_rejected(tmp_path):
    d = _copy_data(tmp_path)
    _edit(d, "torch.json", lambda doc: doc["companions"][0].update(source=""))
    with pytest.raises(CompatDataError, match=r"torch.json: companions\[0\] has no source"):
        load_compat(d)


def test_bad_version_and_bad_date_and_bad_json_are_rejected(tmp_path):
    d = _copy_data(tmp_path)
    p = d / "host_compilers.json"
    doc = json.loads(p.read_text())
    doc["rows"][0]["cuda"] = "twelve"
    p.write_text(json.dumps(doc))
    with pytest.raises(CompatDataError, match="is not a version"):
        validate_file(p)
    doc["rows"][0]["cuda"] = "11.0"
    doc["as_of"] = "late 2026"
    p.write_text(json.dumps(doc))
    with pytest.raises(CompatDataError, match="as_of"):
        validate_file(p)
    p.write_text("{ not json")
    with pytest.raises(CompatDataError, match="host_compilers.json: invalid JSON"):
        load_compat(d)


def test_missing_dir_and_missing_file(tmp_path):
    clear_cache()
    with pytest.raises(CompatDataError, match="not found"):
        load_compat(tmp_path / "nope")
    d = _copy_data(tmp_path)
    (d / "gpus.json").unlink()
    with pytest.raises(CompatDataError, match="gpus.json: missing"):
        load_compat(d)


def test_default_dir_loads_and_is_cached():
    clear_cache()
    a = load_compat()
    assert a is load_compat()
    assert a.as_of >= "2026-11-30"
    assert a.table("cuda_driver")["title"]


def test_cuda_12x_sorted_rows_cover_10_0_to_13_5(compat):
    majors_minors = {r.cuda for r in compat.cuda_releases()}
    for v in ["10.0", "10.1", "10.2", "11.0", "11.8", "12.0", "12.4", "12.9", "13.0", "13.5"]:
        assert v in majors_minors
    assert "12.7" not in majors_minors  # CUDA 12.7 was never released


# --------------------------------------------------------------------------- CUDA and drivers


def test_cuda_requirement_real_values(compat):
    r = compat.cuda_requirement("12.4")
    assert (r.min_driver, r.minor_compat_min_driver, r.os, r.release) == ("550.54.14", "525.60.13", "linux", "GA")
    assert "docs.nvidia.com" in r.source and r.as_of
    assert compat.cuda_requirement("12.4.1").min_driver == "550.54.15"
    # a component version (nvcc V12.4.131) is not a toolkit release: falls back to 12.4 GA
    assert compat.cuda_requirement("12.4.131").min_driver == "550.54.14"
    assert compat.cuda_requirement("11.8").min_driver == "520.61.05"
    assert compat.cuda_requirement("11.0").min_driver == "450.51.05"  # GA, not the RC
    assert compat.cuda_requirement("10.0").min_driver == "410.48"
    assert compat.cuda_requirement("10.2").minor_compat_min_driver is None  # no MVC before 11
    assert compat.cuda_requirement("13.0").min_driver == "580.65.06"
    assert compat.cuda_requirement("12.4", os="windows").min_driver == "551.61"
    assert compat.cuda_requirement("12.4", os="Windows").minor_compat_min_driver == "527.41"


def test_cuda_requirement_unknowns(compat):
    assert compat.cuda_requirement("12.7") is None
    assert compat.cuda_requirement("99.1") is None
    assert compat.cuda_requirement("garbage") is None
    assert compat.cuda_requirement("12.4", os="macos") is None
    # known version, unconfirmed driver: the row exists, the minimum is unknown (None), not an error
    r = compat.cuda_requirement("13.5")
    assert r is not None and r.min_driver is None and r.minor_compat_min_driver == "580.65.06"
    assert compat.cuda_requirement("13.0", os="windows").min_driver is None  # NVIDIA prints N/A


def test_minor_compat_floors(compat):
    assert compat.minor_compat_floor(11)[0] == "450.80.02"
    assert compat.minor_compat_floor(12)[0] == "525.60.13"
    assert compat.minor_compat_floor(13)[0] == "580.65.06"
    assert compat.minor_compat_floor(11, "windows")[0] == "452.39"
    assert "minor-version-compatibility" in compat.minor_compat_floor(12)[1]
    assert compat.minor_compat_floor(10) is None
    assert compat.minor_compat_floor(13, "windows") is None
    limits = {r.id: r for r in compat.minor_compat_limits()}
    assert limits["ptx-jit"].error == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    fwd = compat.forward_compat_rule()
    assert "NVIDIA Data Center GPUs" in fwd.gpus and "forward-compatibility" in fwd.source


def test_driver_max_cuda(compat):
    cases = {"525.60.13": "12.0", "535.104.05": "12.2", "550.54.14": "12.4", "570.86.10": "12.8", "580.65.06": "13.0"}
    for drv, cuda in cases.items():
        assert compat.driver_max_cuda(drv)[0] == cuda, drv
    assert compat.driver_max_cuda("999.1") is None
    assert compat.driver_max_cuda("") is None


def test_newest(compat):
    assert compat.newest_cuda() == "13.5"
    assert compat.newest_torch() == "2.15"


# --------------------------------------------------------------------------- torch


def test_torch_release(compat):
    r = compat.torch_release("2.5.1+cu124")
    assert r.minor == "2.5" and r.default_variant == "cu124"
    assert r.cuda_variants == ["cu118", "cu121", "cu124"]
    assert (r.python_min, r.python_max) == ("3.9", "3.13")  # 3.13 experimental, cp313 wheels (RELEASE.md)
    assert r.cudnn["cu124"] == "9.1.0.70"
    assert compat.torch_release("2.7").default_variant == "cu126"
    assert compat.torch_release("2.8.0").default_variant == "cu128"
    assert compat.torch_release("2.11.0").default_variant == "cu130"
    assert compat.torch_release("1.13.1").default_variant == "cu117"
    assert compat.torch_release("2.1").rocm_variants == ["rocm5.5", "rocm5.6"]
    unverified = compat.torch_release("2.15.0")
    assert unverified.default_variant is None and unverified.confidence == "unverified"
    assert compat.torch_release("0.4.1") is None
    assert compat.torch_release("3.0") is None
    assert compat.torch_release("") is None


def test_torch_arch_list(compat):
    assert compat.torch_arch_list("2.5.1", "cu124") == ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert compat.torch_arch_list("2.8.0", "cu128") == ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert "compute_120" in compat.torch_arch_list("2.9", "cu130")  # +PTX on download.pytorch.org
    assert "sm_37" in compat.torch_arch_list("2.1", "cu118")
    assert compat.torch_arch_list("2.5", "cu999") is None
    assert compat.torch_arch_list("0.4", "cu90") is None


def test_companions(compat):
    c = compat.companions("2.2.1")
    assert (c.torchvision, c.torchaudio, c.triton) == ("0.17.1", "2.2.1", "2.2.0")
    assert compat.companions("2.5.1+cu124").torchvision == "0.20.1"
    assert compat.companions("2.0.0").torchaudio == "2.0.1"
    assert compat.companions("1.13.0").triton is None
    assert compat.companions("2.12.0").torchaudio is None  # none released for it
    assert compat.companions("2.2.3") is None
    assert compat.torch_for_companion("torchvision", "0.17.1") == "2.2.1"
    assert compat.torch_for_companion("torchaudio", "2.0.2") == "2.0.1"
    assert compat.torch_for_companion("triton", "3.0.0") == "2.4.1"  # newest of 2.4.0/2.4.1
    assert compat.torch_for_companion("torchvision", "9.9.9") is None
    assert compat.torch_for_companion("numpy", "1.26.0") is None


def test_torch_1x_rows(compat):
    """torch 1.0 .. 1.12: the PyPI default CUDA build and the Python range of old pasted reports."""
    assert compat.torch_release("1.3.0").default_variant == "cu101"  # needs driver >= 418.39 (report 010)
    assert compat.torch_release("1.2.0").default_variant == "cu100"
    assert compat.torch_release("1.4.0").default_variant == "cu101"
    for v in ["1.5.1", "1.6.0", "1.7.1", "1.8.0", "1.10.1", "1.12.1"]:
        assert compat.torch_release(v).default_variant == "cu102", v
    assert compat.torch_release("1.1.0").default_variant is None  # not confirmed: unknown, not guessed
    r110 = compat.torch_release("1.10.2")
    assert (r110.python_min, r110.python_max) == ("3.6", "3.9")  # no Python 3.10 wheels (report 035)
    assert Version("3.10") > Version(r110.python_max)
    assert compat.torch_release("1.11").python_max == "3.10"
    assert compat.torch_release("1.12").cuda_variants == ["cu102", "cu113", "cu116"]
    assert compat.torch_arch_list("1.12.1", "cu102") == ["sm_37", "sm_50", "sm_60", "sm_70"]
    assert "cu92" in compat.torch_release("1.7").cuda_variants
    assert [r.minor for r in compat.torch_releases()][:3] == ["1.0", "1.1", "1.2"]
    # every CUDA default of a 1.x row has a driver minimum in cuda_driver.json
    for rel in compat.torch_releases():
        if rel.default_variant:
            req = compat.cuda_requirement(cuda_of_variant(rel.default_variant))
            assert req is not None and req.min_driver, rel.minor
    assert compat.cuda_requirement("9.0").min_driver == "384.81"
    assert compat.cuda_requirement("9.2").min_driver == "396.26"


def test_torch_1x_companions(compat):
    assert compat.companions("1.12.1").torchvision == "0.13.1"
    assert compat.companions("1.12.1").torchaudio == "0.12.1"
    assert compat.companions("1.3.0").torchvision == "0.4.1"
    assert compat.companions("1.0.0").torchaudio is None  # not confirmed
    assert compat.companions("1.7.0").torchvision is None  # 0.8.0 and 0.8.1 both pair with it
    assert compat.torch_for_companion("torchvision", "0.11.2") == "1.10.1"


def test_every_torch_patch_has_companions(compat):
    patches = {r["torch"] for r in compat.table("torch")["companions"]}
    for v in ["1.13.0", "1.13.1", "2.0.0", "2.0.1", "2.1.2", "2.3.1", "2.6.0", "2.7.1", "2.9.1", "2.14.1"]:
        assert v in patches


# --------------------------------------------------------------------------- variants and arch lists


def test_variant_helpers():
    assert cuda_of_variant("cu124") == "12.4"
    assert cuda_of_variant("cu130") == "13.0"
    assert cuda_of_variant("cu118") == "11.8"
    assert cuda_of_variant("cu92") == "9.2"
    assert cuda_of_variant("cpu") is None
    assert cuda_of_variant("rocm6.2") is None
    assert variant_of_cuda("12.4") == "cu124"
    assert variant_of_cuda("13.0.1") == "cu130"
    assert index_url("cu124") == "https://download.pytorch.org/whl/cu124"


DEFAULT_27 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def test_arch_runs():
    ok, why = arch_runs(DEFAULT_27, "12.0")
    assert ok is False
    assert why == "arch list sm_50..sm_90 has no SASS for sm_120 and no PTX <= compute_120"
    assert arch_runs(DEFAULT_27 + ["compute_90"], "12.0")[0] is True
    assert arch_runs(DEFAULT_27, "9.0")[0] is True
    assert arch_runs(["sm_86"], "8.9")[0] is True  # same major, higher minor
    assert arch_runs(["sm_80"], "9.0")[0] is False  # SASS never crosses a major
    assert arch_runs(["sm_90a"], "9.0")[0] is True
    assert arch_runs(["sm_90a"], "10.0")[0] is False  # arch-specific: exactly that CC
    assert arch_runs(["sm_100a"], "10.3")[0] is False
    assert arch_runs(["sm_100f"], "10.3")[0] is True  # family-specific: same family, higher minor
    # family PTX JITs within its family only: compute_100f is no PTX for a 12.0 GPU
    assert arch_runs(["compute_100f"], "10.3")[0] is True
    assert arch_runs(["compute_100f"], "12.0")[0] is False
    assert arch_runs(["compute_90a"], "10.0")[0] is False
    assert arch_runs(["sm_120"], "12.1")[0] is True
    assert arch_runs(["compute_120"], "9.0")[0] is False  # PTX only JITs upwards
    assert arch_runs(["sm_37", "sm_50"], "3.5")[0] is False
    assert arch_runs([], "8.0")[0] is False
    assert arch_runs(["sm_80"], "80")[0] is True  # "80" spelled without the dot


def test_arch_support(compat):
    a = compat.arch_support("9.0")
    assert (a.first_cuda, a.last_cuda, a.still_supported, a.sm) == ("11.8", None, True, "sm_90")
    k = compat.arch_support("3.5")
    assert (k.last_cuda, k.still_supported) == ("11.8", False)
    assert compat.arch_support("7.0").last_cuda == "12.9"
    assert compat.arch_support("12.0").first_cuda == "12.8"
    assert compat.arch_support("8.7").first_cuda is None  # only bounded (<= 11.7)
    assert compat.arch_support("2.0").last_cuda == "8.0"  # Fermi: CUDA 9 dropped sm_20
    assert compat.arch_support("3.0").last_cuda == "10.2" and compat.arch_support("1.3").last_cuda == "6.5"
    assert compat.arch_support("4.0") is None
    assert compat.arch_support("x") is None
    assert "sm_120" in compat.ptxas_targets("12.8")
    assert "sm_70" not in compat.ptxas_targets("13.0")
    assert "sm_35" not in compat.ptxas_targets("12.0")
    assert compat.ptxas_targets("10.2") is None


# --------------------------------------------------------------------------- GPUs


def test_gpu_lookup_by_real_names(compat):
    h100 = compat.gpu("NVIDIA H100 80GB HBM3")
    assert h100.name == "H100 SXM5 80GB" and h100.compute_capability == "9.0"
    assert h100.memory_bytes == 80 * 2**30 and h100.nvlink_gen == 4 and h100.pcie_gen == 5
    assert h100.bf16_tflops_dense == 989.5 and h100.datacenter is True
    assert compat.gpu("NVIDIA H100 PCIe").name == "H100 PCIe 80GB"
    assert compat.gpu("NVIDIA A100-SXM4-80GB").memory_bandwidth_gbs == 2039
    assert compat.gpu("nvidia geforce rtx 5090").compute_capability == "12.0"
    assert compat.gpu("NVIDIA GeForce RTX 5090").datacenter is False
    assert compat.gpu("Tesla V100-SXM2-16GB").memory_bytes == 16 * 2**30
    assert compat.gpu("NVIDIA H200").name == "H200 SXM 141GB"
    assert compat.gpu("NVIDIA A10G").compute_capability == "8.6"
    assert compat.gpu("Tesla T4").compute_capability == "7.5"
    assert compat.gpu("NVIDIA L40S").fp32_tflops == 91.6
    assert compat.gpu("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition").tdp_w == 300


def test_gpu_lookup_unknowns_and_truncation(compat):
    assert compat.gpu("NVIDIA GeForce RTX 4080 SUPER").name == "GeForce RTX 4080 SUPER"  # not the 4080 row
    assert compat.gpu("NVIDIA GeForce RTX 4080").name == "GeForce RTX 4080"
    assert compat.gpu("NVIDIA L20") is None  # not in the matrix (CC not on NVIDIA's table)
    assert compat.gpu("") is None
    assert compat.gpu("Tesla V100-SXM2...") is None  # 16GB or 32GB: ambiguous
    assert compat.gpu("NVIDIA RTX 6000 Ada Gene...").name == "RTX 6000 Ada Generation"


def test_gpu_aliases_are_unique(compat):
    seen = {}
    for g in compat.gpus():
        for n in [g.name] + g.aliases:
            assert compat.gpu(n).name == g.name, n
            seen[n] = g.name


# --------------------------------------------------------------------------- host compilers


def test_max_host_compiler(compat):
    assert compat.max_host_compiler("12.4")[0] == 13
    assert compat.max_host_compiler("12.4.1", "clang")[0] == 17
    assert compat.max_host_compiler("11.8")[0] == 11
    assert compat.max_host_compiler("13.0")[0] == 15
    assert compat.max_host_compiler("10.0")[0] == 7
    assert compat.max_host_compiler("10.2")[0] == 8
    assert "host_config.h" in compat.max_host_compiler("12.4")[1]
    assert compat.max_host_compiler("11.0", "clang") is None  # not confirmed
    assert compat.max_host_compiler("12.4", "msvc") is None
    assert compat.max_host_compiler("9.0") is None


def test_the_xid_catalogue_holds_every_code_of_nvidias_catalog_with_its_resolution_buckets_verbatim():
    from envdoctor.compat.xid import RESOLUTION_BUCKETS, xid_table

    doc = json.loads((REPO / "compat_data" / "xid.json").read_text(encoding="utf-8"))
    table = xid_table(load_compat())
    rows = table.catalogued()
    assert sorted(rows) == list(range(1, 173))  # NVIDIA's 'Xids' table for Ampere and newer: 1-172
    # NVIDIA's words, verbatim: immediate action, investigatory action, the Xid 154 linkage
    samples = {79: ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "CONTACT_SUPPORT"),
               48: ("ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
               13: ("ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "RESTART_APP", "WORKFLOW_XID_13"),
               95: ("ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "IGNORE (sympathetic)"),
               54: ("SILENT_RUNNING_PWR_REDUCED_CLOCKING", "CHECK_MECHANICALS", "CONTACT_SUPPORT"),
               78: ("VGPU_START_ERROR", "UPDATE_SWFW", "UPDATE_SWFW"),
               151: ("ROBUST_CHANNEL_KEY_ROTATION_ERROR", "RESTART_VM", "CONTACT_SUPPORT"),
               154: ("GPU_RECOVERY_ACTION_CHANGED", "XID_154", "N/A Informational only regarding another Xid"),
               63: ("INFOROM_DRAM_RETIREMENT_EVENT", "IGNORE", "IGNORE"),
               1: ("ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "CONTACT_SUPPORT", "N/A; Unused")}
    for code, want in samples.items():
        r = rows[code]
        assert (r.mnemonic, r.resolution, r.investigation) == want, code
    assert rows[79].xid154 == "CUDA 12.7; GPU driver R565" and rows[8].xid154 is None
    assert rows[79].applies_to == ("A100", "H100", "B100", "GB200") and rows[74].applies_to == ("A100", "H100")
    assert all(rows[c].resolution is None for c in range(162, 173))  # the catalog gives none there
    assert {r.resolution for r in rows.values()} - {None} <= set(RESOLUTION_BUCKETS)
    # every bucket a row uses is explained once in the file (for mapping buckets to actions)
    explained = {b["bucket"] for b in doc["resolution_buckets"]}
    assert {r.resolution for r in rows.values()} - {None} == explained
    # envdoctor's own judgement stays on the codes it judged before, and only there
    judged = {c: (r.category, r.severity) for c, r in table.hardware().items()}
    assert judged == {48: ("GPU_MEMORY_ERRORS", "error"), 63: ("GPU_MEMORY_ERRORS", "warning"),
                      64: ("GPU_MEMORY_ERRORS", "error"), 92: ("GPU_MEMORY_ERRORS", "warning"),
                      94: ("GPU_MEMORY_ERRORS", "warning"), 95: ("GPU_MEMORY_ERRORS", "error"),
                      74: ("INTERCONNECT", "error"), 79: ("GPU_XID_ERRORS", "error"),
                      119: ("GPU_XID_ERRORS", "error"), 120: ("GPU_XID_ERRORS", "error")}
    assert sorted(table.application()) == [13, 31, 43, 45]
    assert all(r.source.startswith("https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html")
               for r in rows.values())
