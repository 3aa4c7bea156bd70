"""A GPU named as a person types it in a paste ("RTX 5090", "2 Quadro K4200 GPU cards") determines its compute
capability the way `--target-gpu` resolves a typed name (queries.typed_gpu_cc, used by gpu_capabilities): the count
and trailing words dropped, the vendor words they leave out tried in turn. A name nothing determines stays None."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.queries import typed_gpu_cc


@pytest.mark.parametrize("name,cc", [
    ("RTX 5090", "12.0"),  # the table's "GeForce RTX 5090"
    ("GTX 1070", "6.1"),
    ("2 Quadro K4200 GPU cards", "3.0"),  # corpus nccl-014
    ("Quadro K4200 GPU", "3.0"),
    ("NVIDIA A100-SXM4-40GB", "8.0"),  # NVML's own name: the table answers it as it is
])
def test_typed_names_find_their_compute_capability(name, cc):
    compat = load_compat()
    assert typed_gpu_cc(compat, name) == cc


def test_a_name_nothing_determines_is_none():
    assert typed_gpu_cc(load_compat(), "banana GPU") is None
