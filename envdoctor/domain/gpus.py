"""How a GPU is named in findings."""

from __future__ import annotations

from typing import Any


def gpu_label(gpu: Any) -> str:
    """'GPU 0 (NVIDIA A100-SXM4-80GB)', or 'GPU 0' when the model is unknown (``gpu`` is a facts.Gpu)."""
    return f"GPU {gpu.index} ({gpu.name})" if gpu.name else f"GPU {gpu.index}"
