"""Issue 42, round 9 after first sight (FIRST_SIGHT_O.md), helper round9fix.

A CUDA runtime library of an older major (``libcudart.so.10.2: cannot open shared object file``) asked for by
mmcv's compiled ``_ext`` (mmcv-005, open-mmlab/mmcv; llmdet-001 is the same cause without the traceback): mmcv is a
third-party torch extension (compat_data/torch_family.json), so the cause is that extension's build
(THIRD_PARTY_EXTENSION_MISMATCH), not torch's CUDA variants (CUDA_VARIANT_MIXED, the reading before)."""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings, serious as _serious

# mmcv-005: the traceback through mmcv/ops and mmcv's ext_loader
MMCV_EXT = (
    "Traceback (most recent call last):\n"
    "  File \"<stdin>\", line 1, in <module>\n"
    "  File \"/opt/conda/lib/python3.7/site-packages/mmcv/ops/__init__.py\", line 1, in <module>\n"
    "    from .bbox import bbox_overlaps\n"
    "  File \"/opt/conda/lib/python3.7/site-packages/mmcv/ops/bbox.py\", line 3, in <module>\n"
    "    ext_module = ext_loader.load_ext('_ext', ['bbox_overlaps'])\n"
    "  File \"/opt/conda/lib/python3.7/site-packages/mmcv/utils/ext_loader.py\", line 12, in load_ext\n"
    "    ext = importlib.import_module('mmcv.' + name)\n"
    "ImportError: libcudart.so.10.2: cannot open shared object file: No such file or directory\n")


def test_an_old_cudart_asked_for_by_mmcvs_extension_is_that_extensions_build(compat) -> None:
    got = _serious(MMCV_EXT, compat)
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in got, sorted(got)
    assert "CUDA_VARIANT_MIXED" not in got


def test_near_miss_mmcv_named_without_a_load_error_stays_quiet(compat) -> None:
    text = ("  File \"/opt/conda/lib/python3.7/site-packages/mmcv/ops/bbox.py\", line 3, in <module>\n"
            "    ext_module = ext_loader.load_ext('_ext', ['bbox_overlaps'])\n")
    assert not [f for f in _findings(text, compat) if f.category == "THIRD_PARTY_EXTENSION_MISMATCH"]
