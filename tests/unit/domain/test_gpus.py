"""envdoctor.domain.gpus: one label for a GPU in every finding."""

from __future__ import annotations

import pytest

from envdoctor.domain.gpus import gpu_label
from envdoctor.facts import Gpu


@pytest.mark.parametrize("gpu, want", [
    (Gpu(index=0, name="NVIDIA A100-SXM4-80GB"), "GPU 0 (NVIDIA A100-SXM4-80GB)"),
    (Gpu(index=3, name=None), "GPU 3"),
    (Gpu(index=1, name=""), "GPU 1"),
])
def test_gpu_label(gpu, want):
    assert gpu_label(gpu) == want
