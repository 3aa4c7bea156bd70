"""The console report fits 100 columns with colour off, on every machine snapshot the tests build."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.report.console import render_console
from envdoctor.services.collect import judge
from tests import machines as m
from tests.unit.checks import health_facts
from tests.unit.checks import test_health as health

MIB = 2**20


def _snapshots():
    out = {name: build() for name, (build, _) in m.SCENARIOS.items()}
    h = health.healthy()
    out["h100x8-healthy"] = h
    out["h100x8-nvlink-down"] = health._link_down(h)
    out["h100x8-x8"] = health.replace_gpu(h, 2, pcie_width_current=8)
    out["h100x8-gen1-under-load"] = health.replace_gpu(h, 0, pcie_gen_current=1)
    out["h100x8-sw-thermal"] = health.replace_gpu(h, 1, throttle_reasons=["sw_thermal_slowdown"], temperature_c=87.0)
    out["h100x8-shm"] = health_facts.with_host(h, shm_total_bytes=64 * MIB, shm_free_bytes=64 * MIB,
                                     container=m.Container(runtime="docker"))
    out["h100x8-hdd"] = health._hdd(h)
    out["h100x8-quota"] = health_facts.with_host(h, cgroup_cpu_quota=4.0)
    out["h100x8-idle-gen1"] = health.replace_gpu(
        h, 0, pcie_gen_current=1, utilization_gpu_pct=0.0, under_load=False, pcie_gen_under_load=None)
    out["old-driver-with-companions"] = dataclasses.replace(
        m.h100_old_driver(), pythons=[m.torch_env("2.1.0+cu121", "12.1", m.ARCH_2_1_TO_2_7, available=False,
                                                  packages=[m.Package("torchvision", "0.16.0+cu121"),
                                                            m.Package("torchaudio", "2.1.0+cu121")])])
    return out


SNAPSHOTS = _snapshots()


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_console_fits_100_columns(name, verbose):
    text = render_console(judge(SNAPSHOTS[name]), verbose=verbose, color=False)
    wide = [line for line in text.splitlines() if len(line) > 100]
    assert not wide, wide
    assert "\x1b[" not in text


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_checks_with_nothing_to_judge_are_not_called_unread(name):
    """A check skipped because its subject is absent (no watch recording, no CUDA library pins ...) did not
    apply; "could not be judged (facts unknown)" is for facts that were there to read and were not."""
    from envdoctor.report.summary import skip_label

    report = judge(SNAPSHOTS[name])
    unread = [c.id for c in report.checks if c.status == "skipped" and skip_label(c, report.facts) is None]
    assert not [i for i in unread if i.startswith("watch.") or i == "packages.torch-requires"], unread


def _bench_snapshot():
    from envdoctor.model.facts import Bench, BenchResult, ProbeStatus
    from tests.unit.bench.test_bench import _mm, _with_results, h100

    facts = h100()
    results = [
        dataclasses.replace(_mm(1125.5, facts), name="matmul_fp8"),
        dataclasses.replace(_mm(300.0, facts), name="matmul_fp16"),
        BenchResult("disk_rand_read", ProbeStatus.OK, device="/mnt/datasets/imagenet-21k/train", value=18633.0,
                    unit="IOPS", duration_s=12.3, params={"path": "/mnt/datasets/imagenet-21k/train"}),
        BenchResult("membw_host", ProbeStatus.SKIPPED, device="cpu",
                    reason="host memory bandwidth depends on the DIMMs and channels populated: " + "x" * 90),
    ]
    facts = _with_results(facts, results)
    return dataclasses.replace(facts, bench=Bench(status=ProbeStatus.OK, results=results))


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_the_bench_table_fits_the_width_and_cuts_no_name_or_figure(width):
    """At any width from 80 on, the table fits; a benchmark name, a figure with its unit and a verdict are never
    cut; below NOTES_COLUMN_MIN_WIDTH the notes follow the table, whole."""
    from envdoctor.report.bench_view import NOTES_COLUMN_MIN_WIDTH

    text = render_console(judge(_bench_snapshot()), color=False, width=width)
    table = text[text.index("Benchmarks ("):]
    wide = [line for line in table.splitlines() if len(line) > width]
    assert not wide, wide
    for word in ("matmul_fp8", "matmul_fp16", "disk_rand_read", "membw_host", "TFLOP/s", "IOPS", "12.3 s",
                 "no reference"):
        assert any(word in line for line in table.splitlines()), (word, table)
    assert ("notes" in table.splitlines()[1]) == (width >= NOTES_COLUMN_MIN_WIDTH + 32 - 6)  # the 32-char data path
    flat = " ".join(table.split())
    assert "depends on the DIMMs and channels populated" in flat
