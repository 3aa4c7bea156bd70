"""Issue 42: which category a CPU-only build takes (helper cpubuild, 2026-12-07).

TORCH_CPU_ONLY_BUILD is torch's own CPU build (+cpu, torch.version.cuda is None); a framework or library other than
torch without its GPU part (a CPU-only package where a GPU build exists, or a release with no GPU build for the
platform) is FRAMEWORK_CPU_ONLY_BUILD. Before the split, catalogue rows about DGL, Faiss and JAX said
TORCH_CPU_ONLY_BUILD under their own headlines while LightGBM's and CatBoost's said FRAMEWORK_CPU_ONLY_BUILD; the
tests below hold the split for every catalogue row and for the definitions a user reads."""

from __future__ import annotations

import json
import re

import pytest

from envdoctor.model.catalogue import CATEGORIES
from tests.paths import REPO

ROWS = json.loads((REPO / "compat_data" / "error_signatures.json").read_text(encoding="utf-8"))["rows"]
# frameworks and libraries other than torch that publish (or lack) GPU builds of their own; torch's companions and
# extensions are judged by their own categories
OTHER_FRAMEWORKS = re.compile(
    r"\b(?:jax|jaxlib|tensorflow|dgl|faiss|paddle\w*|onnx ?runtime\w*|lightgbm|catboost|xgboost|mxnet|cupy|dlib|"
    r"llama[-_.]?cpp\w*|numpyro|tabby|blender|upbge)\b", re.I)


def _categories(row: dict) -> set:
    """Every category a row can emit: its own, its alternatives' and its also's."""
    return {row["category"]} | {a["category"] for key in ("alternatives", "also") for a in row.get(key) or []}


def torch_rows_naming_other_frameworks(rows: list) -> list:
    """(row id, the name) for each row that can emit TORCH_CPU_ONLY_BUILD while its pattern or headline names a
    framework other than torch."""
    out = []
    for row in rows:
        if "TORCH_CPU_ONLY_BUILD" not in _categories(row):
            continue
        pattern = row.get("pattern") or " ".join(row.get("family", {}).get("all", []))  # a family: its words
        m = OTHER_FRAMEWORKS.search(pattern.replace("\\", "")) or OTHER_FRAMEWORKS.search(row.get("title") or "")
        if m:
            out.append((row["id"], m.group(0)))
    return out


def test_no_catalogue_row_about_another_framework_says_torch() -> None:
    assert torch_rows_naming_other_frameworks(ROWS) == []


@pytest.mark.parametrize("rid", ["jax-no-gpu-backend", "dgl-cuda-not-enabled", "faiss-no-gpu-classes",
                                 "gbdt-gpu-learner-not-built", "catboost-gpu-library-not-loaded",
                                 "framework-cpu-build-said"])
def test_the_other_frameworks_rows_say_framework(rid) -> None:
    (row,) = [r for r in ROWS if r["id"] == rid]
    assert row["category"] == "FRAMEWORK_CPU_ONLY_BUILD"


def test_the_guard_would_catch_a_row_about_another_framework() -> None:
    rows = [{"id": "a", "pattern": "Device API cuda is not enabled\\. Please install the cuda version of dgl",
             "category": "TORCH_CPU_ONLY_BUILD"},
            {"id": "b", "pattern": "has no attribute 'StandardGpuResources'", "title": "Faiss is the CPU-only build",
             "category": "NOTE", "alternatives": [{"category": "TORCH_CPU_ONLY_BUILD", "when": "always"}]},
            {"id": "c", "pattern": "Torch not compiled with CUDA enabled", "category": "TORCH_CPU_ONLY_BUILD"}]
    assert torch_rows_naming_other_frameworks(rows) == [("a", "dgl"), ("b", "Faiss")]


def test_the_definitions_say_the_split() -> None:
    torch, other = CATEGORIES["TORCH_CPU_ONLY_BUILD"], CATEGORIES["FRAMEWORK_CPU_ONLY_BUILD"]
    assert torch.meaning.startswith("torch is a CPU build")
    assert "other than torch" in other.meaning and "where a GPU build exists" in other.meaning
    assert "no GPU build for this platform" in other.meaning
