"""envdoctor.domain.gpus: each GPU-name rule on the names real nvidia-smi outputs print, and the one label."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from envdoctor.domain.gpus import (
    TYPED_NAME_PREFIXES,
    cut_short,
    gpu_label,
    is_vgpu_name,
    key_variants,
    mig_board,
    name_key,
    vgpu_board,
)
from envdoctor.model.facts import Gpu, TorchDevice
from envdoctor.parsers.nvidia_smi_q import parse_nvidia_smi_q
from envdoctor.parsers.nvidia_smi_table import parse_nvidia_smi_table
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from tests.paths import SHARED

REAL = SHARED / "fixtures" / "real"


def _real_names() -> Dict[str, Path]:
    """Every GPU name in the real nvidia-smi captures (XML, -q, the default table), with the file it came from."""
    out: Dict[str, Path] = {}
    for path in sorted((REAL / "nvidia-smi-xml").glob("*.xml")):
        out.update({g.name: path for g in parse_nvidia_smi_xml(path.read_text(errors="replace")).gpus if g.name})
    for path in sorted((REAL / "other").glob("*nvidia-smi-q.txt")):
        out.update({g.name: path for g in parse_nvidia_smi_q(path.read_text(errors="replace")).gpus if g.name})
    for path in sorted((REAL / "nvidia-smi-table").glob("*.txt")):
        table = parse_nvidia_smi_table(path.read_text(errors="replace"))
        out.update({g.name: path for g in (table.gpus if table else []) if g.name})
    return out


NAMES = _real_names()
PHYSICAL = sorted(n for n in NAMES if not n.startswith("GRID "))
# the rules below are tried on every real name: without the captures they would pass on nothing
needs_real = pytest.mark.skipif(not NAMES, reason=f"no real nvidia-smi captures at {REAL} (../shared beside the clone)")


@needs_real
def test_the_real_captures_hold_the_names_these_rules_are_about():
    # so that a fixture set that lost them cannot make the tests below vacuous
    assert {"GRID P4-1Q", "Tesla V100-SXM2...", "NVIDIA RTX 6000 Ada Gene...", "A100-SXM4-40GB",
            "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3",
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"} <= set(NAMES)
    assert len(PHYSICAL) >= 25


@needs_real
@pytest.mark.parametrize("name, key", [
    ("NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3"),
    ("Tesla V100-SXM2-16GB", "tesla v100 sxm2 16gb"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "nvidia rtx pro 6000 blackwell max q workstation edition"),
    ("  NVIDIA GeForce RTX 4060 Ti ", "nvidia geforce rtx 4060 ti"),
])
def test_name_key_lowers_and_folds_punctuation(name, key):
    assert name.strip() in NAMES  # real names (padded as a table column pads them)
    assert name_key(name) == key


@needs_real
def test_name_key_of_every_real_name_is_words_and_spaces():
    for name in NAMES:
        key = name_key(name)
        assert key and key == key.lower() and "  " not in key and key.strip() == key, (name, key)
        assert all(c.isalnum() or c == " " for c in key), (name, key)
        assert name_key(key) == key  # idempotent: a key is its own key


def test_key_variants_drop_the_vendor_word_only():
    assert key_variants(name_key("Tesla V100-SXM2-16GB")) == ["tesla v100 sxm2 16gb", "v100 sxm2 16gb"]
    assert key_variants(name_key("NVIDIA A100-SXM4-80GB")) == ["nvidia a100 sxm4 80gb", "a100 sxm4 80gb"]
    # nvidia-smi 460 printed no vendor word ("A100-SXM4-40GB"), Quadro is a brand, not the vendor: kept whole
    assert key_variants(name_key("A100-SXM4-40GB")) == ["a100 sxm4 40gb"]
    assert key_variants(name_key("Quadro P2000")) == ["quadro p2000"]


def test_cut_short_names_from_the_default_table():
    assert cut_short("Tesla V100-SXM2...") == ("Tesla V100-SXM2", True)
    assert cut_short("NVIDIA RTX 6000 Ada Gene...") == ("NVIDIA RTX 6000 Ada Gene", True)
    assert cut_short("NVIDIA GeForce RTX 2080 ...") == ("NVIDIA GeForce RTX 2080", True)
    assert cut_short("NVIDIA GeForce RTX 2080 \u2026") == ("NVIDIA GeForce RTX 2080", True)
    for name in PHYSICAL:
        if not name.endswith("..."):
            assert cut_short(name) == (name.strip(), False), name


def test_vgpu_profile_names_give_their_board_and_no_physical_name_is_one():
    assert vgpu_board("GRID P4-1Q") == "P4"  # the real capture (grid-p4-1q-vgpu_windows_513.46.xml)
    # profile names from NVIDIA's vGPU user guide and a real `mdevctl types` listing: MIG-backed, B-series
    for name, board in [("GRID P40-24Q", "P40"), ("NVIDIA A100-4C", "A100"), ("NVIDIA A100-3-20C", "A100"),
                        ("GRID A100-40C", "A100"), ("GRID P40-2B", "P40"), ("GRID P40-2B4", "P40"),
                        ("NVIDIA RTX6000-Ada-4Q", "RTX6000-Ada")]:
        assert vgpu_board(name) == board and is_vgpu_name(name), name
    for name in PHYSICAL:  # "Max-Q", "-SXM4-80GB", "-SXM2..." are no profile suffix
        assert not is_vgpu_name(name) and vgpu_board(name) is None, name
    assert not is_vgpu_name(None) and not is_vgpu_name("")


def test_mig_device_names_give_their_board():
    assert mig_board("NVIDIA A100-SXM4-40GB MIG 1g.5gb") == "NVIDIA A100-SXM4-40GB"
    assert mig_board("NVIDIA H100 80GB HBM3 MIG 3g.40gb") == "NVIDIA H100 80GB HBM3"
    assert mig_board("MIG 3g.40gb Device 0") is None  # names no board
    assert all(mig_board(n) is None for n in PHYSICAL)


def test_typed_names_are_tried_bare_first():
    assert TYPED_NAME_PREFIXES[0] == "" and len(set(TYPED_NAME_PREFIXES)) == len(TYPED_NAME_PREFIXES)


def test_the_compat_lookup_uses_these_rules():
    from envdoctor.compat import load_compat

    compat = load_compat()
    p4 = compat.gpu("GRID P4-1Q")
    assert p4 is not None and "P4" in p4.name and p4.memory_bytes is None  # the board's row, not the slice's memory
    assert compat.gpu_compute_capability("A100-SXM4-40GB") == "8.0"  # no vendor word
    assert compat.gpu_compute_capability("Tesla V100-SXM2...") == "7.0"  # cut short, one model starts so


@pytest.mark.parametrize("gpu, details, want", [
    (Gpu(index=0, name="NVIDIA A100-SXM4-80GB"), (), "GPU 0 (NVIDIA A100-SXM4-80GB)"),
    (Gpu(index=3, name=None), (), "GPU 3"),
    (Gpu(index=1, name=""), (), "GPU 1"),
    (Gpu(index=2, name="NVIDIA H100 80GB HBM3"), ("sm_90",), "GPU 2 (NVIDIA H100 80GB HBM3, sm_90)"),
    (Gpu(index=4, name=None), ("sm_90",), "GPU 4 (sm_90)"),
    (TorchDevice(index=1, name="NVIDIA L4"), (), "GPU 1 (NVIDIA L4)"),
])
def test_gpu_label(gpu, details, want):
    assert gpu_label(gpu, *details) == want
