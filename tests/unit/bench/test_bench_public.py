"""compat_data/bench.json against public measurements of the GPUs people rent: a healthy card at a measured
figure is never flagged, a card at 79% of it is, and how many expectations sit within -15%/+20% of them.

Each row is a published measurement, with the shape and counting convention of the kernel the payload runs
(matmul: 2*M*N*K per second; device memory: bytes read + written per second of one memcpy within the GPU, as
DCGM's dcgmproftester -t 1005 and p2pBandwidthLatencyTest's unidirectional diagonal count it (BabelStream's Copy
kernel reads 10-29% higher on the same GPUs: another method, so not a row here); host copies: one direction, GB = 1e9 bytes). ``independent`` says
whether the measurement is another one than the row's own figure (a different publisher, tool or shape)."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.bench.expect import expect
from envdoctor.compat import load_compat
from envdoctor.model.facts import Bench, BenchResult, Facts, ProbeStatus
from tests.paths import FIXTURES

COMPAT = load_compat()
AZ = "https://github.com/Azure/AI-benchmarking-guide/blob/"
AZ_H100 = AZ + "f350e7e65b82cfcb9220b32b582bc34342d9c1a6/Azure%20Results/ND_H100_v5_results.md"
AZ_H200 = AZ + "7f20e5fa3b2f9a46d8404af1f6fb14b049d6d5cc/Azure_Results/ND_H200_v5_results.md"
AZ_A100 = AZ + "3bb66cacc25632d8ece36bc1d5128c5ea886a60b/Azure_Results/ND_A100_v4_results.md"
AZ_GB200 = AZ + "fa799957e3c223546ed7726dff043cdcb62327ee/Azure_Results/ND_GB200_v6_results.md"
MAMF = "https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"
TPT = "https://github.com/zzc0721/torch-performance-test-data/blob/main/database.md"
DCGM = "https://github.com/NVIDIA/DCGM/blob/72fa3feaa67d716a75323a8f47c34ff3ee73f824/nvvs/diag-skus.yaml.in"

# (GPU as NVML names it, kernel, measured, MxNxK or None, PCIe gen of the host link, source, independent)
MEASURED = [
    ("NVIDIA H100 80GB HBM3", "matmul_bf16", 794.5, (2048, 2048, 13312), None, MAMF, True),
    ("NVIDIA H100 80GB HBM3", "matmul_fp8", 1290.1, (8192, 8192, 8192), None, AZ_H100, True),
    ("NVIDIA H100 80GB HBM3", "matmul_fp8", 1402.6, (1024, 9216, 14336), None, MAMF, False),
    ("NVIDIA H100 80GB HBM3", "membw_device", 2540.0, None, None, DCGM, False),
    ("NVIDIA H100 80GB HBM3", "membw_device", 2501.5, None, None, "https://github.com/NVIDIA/nccl/issues/1264", True),
    ("NVIDIA H100 80GB HBM3", "h2d_pinned", 51.0, None, 5, AZ_H100, False),
    ("NVIDIA H100 80GB HBM3", "d2h_pinned", 52.77, None, 5, "https://github.com/NVIDIA/nvbandwidth/issues/24", True),
    ("NVIDIA H200", "matmul_fp8", 1300.6, (8192, 8192, 8192), None, AZ_H200, True),
    ("NVIDIA H200", "matmul_fp8", 1453.4, (1280, 4096, 12032), None, MAMF, False),
    ("NVIDIA H200", "membw_device", 3110.0, None, None, DCGM, False),
    ("NVIDIA H200", "h2d_pinned", 52.0, None, 5, AZ_H200, False),
    ("NVIDIA A100-SXM4-80GB", "matmul_fp16", 256.5, (16384, 16384, 16384), None, AZ_A100, True),
    ("NVIDIA A100-SXM4-80GB", "membw_device", 1564.0, None, None, DCGM, False),
    ("NVIDIA A100-SXM4-80GB", "h2d_pinned", 26.28, None, 4, AZ_A100, True),
    ("NVIDIA GB200", "matmul_fp8", 2876.6, (8192, 8192, 8192), None, AZ_GB200, True),
    ("NVIDIA GB200", "matmul_fp8", 3615.6, (19456, 5120, 1536), None, MAMF, False),
    ("NVIDIA GB200", "h2d_pinned", 201.0, None, None, AZ_GB200, False),
    ("NVIDIA GB200", "d2h_pinned", 193.0, None, None, AZ_GB200, False),
    ("NVIDIA B200", "matmul_bf16", 1745.0, (1792, 16128, 3072), None, MAMF, True),
    ("NVIDIA B200", "matmul_fp8", 3432.5, (15360, 4096, 3072), None, MAMF, False),
    ("NVIDIA B200", "membw_device", 5430.0, None, None, DCGM, False),
    # another B200 subsystem id in the same table: a healthy card of that variant is not flagged either
    ("NVIDIA B200", "membw_device", 5808.3, None, None, DCGM, False),
    ("NVIDIA GH200 480GB", "matmul_bf16", 821.0, None, None,
     "https://github.com/stas00/ml-engineering/pull/60", False),
    ("NVIDIA GH200 480GB", "h2d_pinned", 346.0, None, None, "https://github.com/NVIDIA/nvbandwidth/issues/23", False),
    ("NVIDIA GeForce RTX 4090", "h2d_pinned", 26.09, None, 4, "https://github.com/NVIDIA/nvbandwidth/issues/15", False),
    ("NVIDIA GeForce RTX 4090", "matmul_bf16", 164.8, (8192, 8192, 8192), None, TPT, False),
]


def _facts(name: str, r: BenchResult, gen) -> Facts:
    base = Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())
    drv = base.driver
    g = dataclasses.replace(drv.gpus[0], name=name, pcie_gen_max=gen or drv.gpus[0].pcie_gen_max, pcie_width_max=16)
    return dataclasses.replace(base, driver=dataclasses.replace(drv, gpus=[g] + drv.gpus[1:]),
                               bench=Bench(status=ProbeStatus.OK, results=[r]))


def _judge(name, kernel, value, shape, gen):
    unit = "TFLOP/s" if kernel.startswith("matmul") else "GB/s"
    params = {"pci_bus_id": "0000:18:00", "gpu_name": name}
    if shape:
        params["shape"] = list(shape)
    r = BenchResult(kernel, ProbeStatus.OK, device="cuda:0", value=value, unit=unit, params=params)
    return expect(_facts(name, r, gen), COMPAT, r)


@pytest.mark.parametrize("name,kernel,value,shape,gen,source,independent", MEASURED,
                         ids=[f"{m[0]}:{m[1]}:{m[2]:g}" for m in MEASURED])
def test_a_healthy_card_at_a_public_figure_is_not_flagged_and_one_at_79_percent_is(
        name, kernel, value, shape, gen, source, independent):
    e = _judge(name, kernel, value, shape, gen)
    assert e.expected is not None, e.basis
    assert e.verdict == "ok", (e.expected, e.ratio, e.basis)
    slow = _judge(name, kernel, round(value * 0.79, 2), shape, gen)
    if kernel.startswith(("matmul", "membw")) and "(measured:" in e.basis:
        # a measured matmul or device-memory row warns below 90%: a card at 79% of healthy is caught (a derived
        # row's line sits at 80%: an estimate is not held to the measured figure's precision)
        assert slow.verdict != "ok", (slow.expected, slow.ratio, slow.basis)


def within(expected: float, measured: float) -> bool:
    return 0.85 <= expected / measured <= 1.20


def test_expectations_sit_within_minus_15_plus_20_percent_of_the_public_figures():
    rows = [(m, _judge(*m[:5])) for m in MEASURED]
    inside = [m for m, e in rows if within(e.expected, m[2])]
    assert len(inside) == len(MEASURED), [(m[:3], e.expected) for m, e in rows if not within(e.expected, m[2])]
