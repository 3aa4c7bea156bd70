"""GPU name -> compute capability (compat_data/gpus.json and Compat.gpu / gpu_compute_capability).

Every GPU name in the real fixtures must resolve to the CC the device has; tricky names must not match
the wrong row.
"""

from __future__ import annotations

import re

import pytest

from envdoctor.compat import load_compat
from tests.paths import SHARED

# ../shared beside the repository (the shared folder of a checkout); absent in a plain clone: skipped
FIXTURES = SHARED / "fixtures" / "real"
REPORTS = SHARED / "examples" / "reports"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


# What each GPU in the fixtures/reports is (CC per NVIDIA's tables, or read from the device itself).
FIXTURE_CC = {
    "NVIDIA H100 80GB HBM3": "9.0",
    "NVIDIA A40": "8.6",
    "NVIDIA RTX A6000": "8.6",
    "Tesla V100-SXM2-16GB": "7.0",
    "Tesla V100-SXM2-32GB": "7.0",
    "NVIDIA GeForce RTX 4090": "8.9",
    "A100-SXM4-40GB": "8.0",
    "NVIDIA A100-SXM4-80GB": "8.0",
    "NVIDIA GeForce RTX 4060 Ti": "8.9",
    "Tesla T4": "7.5",
    "NVIDIA RTX A5000": "8.6",
    "NVIDIA GeForce RTX 3090": "8.6",
    "NVIDIA GeForce RTX 2080": "7.5",
    "NVIDIA TITAN V": "7.0",
    "NVIDIA GeForce RTX 5090": "12.0",
    "NVIDIA GeForce GTX 680": "3.0",
    "NVIDIA GH200 480GB": "9.0",
    "NVIDIA A10": "8.6",
    "NVIDIA L40S": "8.9",
    "NVIDIA GeForce RTX 5090 D": "12.0",
    "Quadro P400": "6.1",
    "Quadro P2000": "6.1",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "12.0",
    "NVIDIA RTX 4000 SFF Ada Generation": "8.9",
    "NVIDIA GeForce RTX 3080": "8.6",
    "NVIDIA GeForce RTX 3060": "8.6",
    "NVIDIA GeForce GT 1030": "6.1",
    "NVIDIA A10G": "8.6",
    "GRID P4-1Q": "6.1",
    # nvidia-smi tables and --query-gpu CSVs
    "NVIDIA GeForce GTX 1050 Ti": "6.1",
    "NVIDIA H200": "9.0",
    "NVIDIA L4": "8.9",
    "NVIDIA GeForce RTX 4080 SUPER": "8.9",
}

_NAME_PATTERNS = [
    re.compile(r"<product_name>([^<]+)</product_name>"),
    re.compile(r"^\s*Product Name\s+:\s*(.+?)\s*$", re.M),
    re.compile(r"GPU \d+: ([^(\n]+?)\s*(?:\(UUID.*)?$", re.M),
]


def _fixture_names():
    names = set()
    files = list(FIXTURES.rglob("*")) + list(REPORTS.glob("*"))
    for f in files:
        if not f.is_file() or f.suffix not in (".xml", ".txt", ".csv", ""):
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        for pat in _NAME_PATTERNS:
            names.update(m.strip() for m in pat.findall(text))
    # NICs and switches also print "Product Name:" (mlxvpd / lspci -vv): not GPUs
    return {n for n in names if not re.search(r"ConnectX|Broadcom|Ethernet|Adapter", n)}


@pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"no shared fixtures at {FIXTURES} (../shared beside the repo)")
def test_every_fixture_gpu_name_resolves_to_its_cc(compat):
    names = _fixture_names()
    assert len(names) >= 25
    missing = sorted(n for n in names if n not in FIXTURE_CC)
    assert not missing, f"fixture GPU names without an expected CC in this test: {missing}"
    for n in sorted(names):
        spec = compat.gpu(n)
        assert spec is not None, n
        assert spec.compute_capability == FIXTURE_CC[n], n
        assert compat.gpu_compute_capability(n) == FIXTURE_CC[n], n


def test_expected_table_resolves(compat):
    for n, cc in FIXTURE_CC.items():
        assert compat.gpu_compute_capability(n) == cc, n


@pytest.mark.parametrize(
    "name, row, cc",
    [
        ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti", "7.5"),
        ("NVIDIA GeForce RTX 2080", "GeForce RTX 2080", "7.5"),
        ("Tesla P100-PCIE-16GB", "Tesla P100 PCIe 16GB", "6.0"),
        ("NVIDIA RTX A5000 Laptop GPU", "RTX A5000 Laptop GPU", "8.6"),
        ("NVIDIA RTX A5000", "RTX A5000", "8.6"),
        ("NVIDIA GeForce RTX 4090 D", "GeForce RTX 4090 D", "8.9"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "8.9"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "GeForce RTX 4090 Laptop GPU", "8.9"),
        ("NVIDIA GeForce RTX 5090 D", "GeForce RTX 5090 D", "12.0"),
        ("NVIDIA GeForce RTX 5090", "GeForce RTX 5090", "12.0"),
        ("NVIDIA H100 NVL", "H100 NVL", "9.0"),
        ("GRID P4-1Q", "Tesla P4", "6.1"),
        ("GRID P40-24Q", "Tesla P40", "6.1"),
        ("NVIDIA GeForce GTX 1080 Ti", "GeForce GTX 1080 Ti", "6.1"),
        ("GeForce GTX 1080", "GeForce GTX 1080", "6.1"),
        ("NVIDIA TITAN X (Pascal)", "TITAN X (Pascal)", "6.1"),
        ("NVIDIA GeForce GTX TITAN X", "GeForce GTX TITAN X", "5.2"),
        ("NVIDIA TITAN Xp", "TITAN Xp", "6.1"),
        ("NVIDIA GeForce GTX 780 Ti", "GeForce GTX 780 Ti", "3.5"),
        ("NVIDIA GeForce GTX 750 Ti", "GeForce GTX 750 Ti", "5.0"),
        ("Quadro RTX 8000", "Quadro RTX 8000", "7.5"),
        ("Quadro GV100", "Quadro GV100", "7.0"),
        ("NVIDIA RTX PRO 4000 Blackwell", "RTX PRO 4000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "RTX PRO 4000 Blackwell SFF Edition", "12.0"),
        ("NVIDIA RTX 2000 Ada Generation", "RTX 2000 Ada Generation", "8.9"),
        ("NVIDIA A2", "A2", "8.6"),
        ("NVIDIA A16", "A16", "8.6"),
        ("NVIDIA B300", "B300", "10.3"),
        ("NVIDIA GB10", "GB10", "12.1"),
        ("Jetson AGX Orin", "Jetson AGX Orin", "8.7"),
        ("Jetson AGX Thor", "Jetson T5000", "11.0"),
        ("Tesla V100-SXM3-32GB", "Tesla V100 SXM3 32GB", "7.0"),
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "A100 40GB SXM4", "8.0"),
    ],
)
def test_tricky_names(compat, name, row, cc):
    spec = compat.gpu(name)
    assert spec is not None and spec.name == row, name
    assert spec.compute_capability == cc
    assert compat.gpu_compute_capability(name) == cc


def test_family_and_truncated_names_answer_cc_only_when_candidates_agree(compat):
    # several rows, one CC: gpu() declines, the CC is still determined
    for name, cc in [("NVIDIA A100", "8.0"), ("A100", "8.0"), ("NVIDIA H100", "9.0"), ("Tesla V100", "7.0"),
                     ("NVIDIA A100-4C", "8.0"), ("NVIDIA A100-3-20C", "8.0"), ("Tesla V100-SXM2...", "7.0"),
                     ("NVIDIA GeForce RTX 2080 ...", "7.5"), ("NVIDIA GeForce GTX 1050...", "6.1")]:
        assert compat.gpu(name) is None, name
        assert compat.gpu_compute_capability(name) == cc, name
        assert len(compat.gpu_candidates(name)) > 1, name
    # candidates disagree, or nothing matches: no answer
    for name in ["NVIDIA GeForce ...", "NVIDIA RTX ...", "NVIDIA GeForce RTX 2080 SUPER", "NVIDIA L20",
                 "NVIDIA B100", "AMD Instinct MI300X OAM", "", "   ", "NVIDIA", "GPU"]:
        assert compat.gpu(name) is None, name
        assert compat.gpu_compute_capability(name) is None, name


def test_no_false_matches_between_neighbours(compat):
    assert compat.gpu("NVIDIA GeForce RTX 4090").name != compat.gpu("NVIDIA GeForce RTX 4090 D").name
    assert compat.gpu("NVIDIA TITAN X (Pascal)").compute_capability != compat.gpu("GeForce GTX TITAN X").compute_capability
    assert compat.gpu("Quadro P4000").name == "Quadro P4000" and compat.gpu("Tesla P4").name == "Tesla P4"
    assert compat.gpu("NVIDIA RTX A2000").name == "RTX A2000"
    assert compat.gpu("NVIDIA RTX 2000 Ada Generation").name == "RTX 2000 Ada Generation"
    assert compat.gpu("NVIDIA RTX PRO 2000 Blackwell").name == "RTX PRO 2000 Blackwell"
    # "NVIDIA A100-SXM4-40GB" is a model name, not a vGPU profile
    assert compat.gpu("NVIDIA A100-SXM4-40GB").memory_bytes == 40 * 2**30
    # a vGPU slice or MIG instance is its board, but not the board's memory
    assert compat.gpu("NVIDIA A100-SXM4-40GB MIG 1g.5gb").memory_bytes is None
    assert compat.gpu("GRID P4-1Q").memory_bytes is None


def test_cc_only_rows_are_sourced_and_leave_specs_unknown(compat):
    rows = compat.table("gpus")["rows"]
    for r in rows:
        assert r.get("compute_capability"), r["name"]
        assert r.get("architecture"), r["name"]
        assert isinstance(r.get("datacenter"), bool), r["name"]
        assert r.get("confidence"), r["name"]
    titan = compat.gpu("NVIDIA TITAN V")
    assert titan.memory_bytes is None and titan.fp32_tflops is None and titan.tdp_w is None
    ids = {s["id"] for s in compat.table("gpus")["sources"] if isinstance(s, dict)}
    assert {"cuda-gpus", "cuda-legacy-gpus", "cuda-gpus-2022", "device-readouts"} <= ids


def test_ambiguous_names_never_shadow_an_exact_name(compat):
    exact = {}
    for g in compat.gpus():
        for n in [g.name] + g.aliases:
            exact[n.lower()] = g.name
    for r in compat.table("gpus")["rows"]:
        for fam in r.get("ambiguous_names") or []:
            assert fam.lower() not in exact, fam
            assert len(compat.gpu_candidates(fam)) > 1, fam
