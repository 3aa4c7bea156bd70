"""Replay readers on real recordings (tests/fixtures/timeseries, ../shared/fixtures/real/timeseries) and on the
formats' own layouts; unknown columns and foreign text are ignored."""

from __future__ import annotations

import pytest

from envdoctor.watch.replay import ReplayError, replay
from tests.paths import FIXTURES, SHARED

REAL = SHARED / "fixtures" / "real" / "timeseries"


def _real(name: str) -> str:
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared fixtures are read, never copied)")
    return path.read_text(encoding="utf-8")


def _util(w, gpu):
    return [g["util_pct"] for s in w.samples for g in s.get("gpus", []) if g["index"] == gpu]


def test_query_gpu_csv_with_index_and_units():
    w = replay((FIXTURES / "timeseries" / "015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt").read_text())
    assert w.source.startswith("nvidia-smi --query-gpu")
    assert len(w.samples) == 17
    first = w.samples[0]["gpus"][0]
    assert first == {"index": 0, "util_pct": 99.0, "mem_util_pct": 52.0, "mem_used_mib": 30994.0,
                     "mem_total_mib": 32480.0}
    assert w.interval_s == pytest.approx(5.0, abs=0.01)  # -l 5, read from the timestamps
    assert sorted(_util(w, 0))[:2] == [32.0, 35.0]


def test_gpustat_frame_of_eight_gpus():
    w = replay((FIXTURES / "timeseries" / "017-8x-v100-sxm2-arcface-partial-fc-model-parallel-train-gpustat-i.txt")
               .read_text())
    assert len(w.samples) == 1 and len(w.samples[0]["gpus"]) == 8
    g0 = w.samples[0]["gpus"][0]
    assert (g0["util_pct"], g0["temperature_c"], g0["mem_used_mib"], g0["mem_total_mib"]) == (94.0, 64.0, 30338, 32510)


def test_headerless_query_csv_is_grouped_by_gpu_count():
    w = replay(_real("013-8x-h100-8b-gpt-train-steady-query-gpu-lms100.txt"))
    assert len(w.samples) == 100 and all(len(s["gpus"]) == 8 for s in w.samples)
    assert w.interval_s == pytest.approx(0.1, abs=0.005)
    assert any("without their header" in n for n in w.summary["notes"])
    assert w.samples[0]["gpus"][0]["power_w"] == 559.85


def test_dmon_pucvmet_columns_and_dashes():
    w = replay(_real("005-2x-gtx1050ti-tf-cifar10-num-gpus-1-second-gpu-idle-dmon-pucvmet.txt"))
    g1 = w.samples[0]["gpus"][1]
    assert g1["index"] == 1 and g1["util_pct"] == 0 and g1["mem_used_mib"] == 3741 and g1["power_w"] is None
    assert w.samples[0]["gpus"][0]["pcie_rx_mbps"] == 1732


def test_dcgmi_smact_is_a_percentage():
    w = replay(_real("009-t4-resnet18-heavy-aug-num-workers-3-dcgmi-dmon.txt"))
    assert _util(w, 0) == [61, 100, 100, 75, 100]
    assert w.samples[0]["gpus"][0]["sm_active_pct"] == pytest.approx(36.7)


def test_gpustat_in_a_markdown_quote():
    w = replay(_real("018-3x-gtx-titan-x-guided-denoise-dataparallel-train-gpustat.txt"))
    assert [len(s["gpus"]) for s in w.samples] == [3, 3, 3]
    assert _util(w, 2) == [49, 35, 0]


def test_vmstat_drops_the_since_boot_line():
    w = replay(_real("001-gtx1070ti-fast-neural-style-dataloader-in-main-vmstat-2.txt"))
    assert [s["host"]["cpu_busy_pct"] for s in w.samples] == [14.0, 21.0, 15.0, 13.0]
    assert any("since boot" in n for n in w.summary["notes"])


def test_two_tools_together_share_one_timeline():
    text = _real("001-gtx1070ti-fast-neural-style-dataloader-in-main-vmstat-2.txt") + "\n" + \
        _real("002-gtx1070ti-fast-neural-style-dataloader-in-main-dmon-su.txt")
    w = replay(text, interval_s=2.0)
    assert w.source == "nvidia-smi dmon, vmstat"
    assert sum(1 for s in w.samples if "host" in s) == 4 and sum(1 for s in w.samples if "gpus" in s) == 8


IOSTAT = """Linux 6.1.0 (box) \t12/01/2026 \t_x86_64_\t(2 CPU)

avg-cpu:  %user   %nice %system %iowait  %steal   %idle
           9.00    0.00    3.00    1.00    0.00   87.00

Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util
vda              5.00    100.00     0.00   0.00    1.00    20.00    1.00      4.00     0.00   0.00    2.00     4.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00    0.01   0.50

avg-cpu:  %user   %nice %system %iowait  %steal   %idle
          20.00    0.00   10.00   40.00    0.00   30.00

Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util
vda           1000.00 128000.00     0.00   0.00   30.00   128.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00   30.00  99.00
"""


def test_iostat_x_sysstat12_columns():
    """The layout of sysstat 12's `iostat -x 1` (the d/f columns it added are ignored); the first report
    averages since boot and is dropped."""
    w = replay(IOSTAT)
    assert len(w.samples) == 1
    h = w.samples[0]["host"]
    assert h["cpu_iowait_pct"] == 40.0 and h["cpu_busy_pct"] == 30.0
    assert h["disks"]["vda"] == {"read_mbps": 125.0, "write_mbps": 0.0, "iops": 1000.0, "await_ms": 30.0,
                                 "util_pct": 99.0, "queue": 30.0}


def test_iostat_old_layout_with_await_and_mb():
    text = ("Device:         rrqm/s   wrqm/s     r/s     w/s    rMB/s    wMB/s avgrq-sz avgqu-sz   await  svctm  %util\n"
            "sda               0.14     4.55    0.47    2.27     0.01     0.03    24.94     0.01    2.99   0.57   0.15\n")
    h = replay(text).samples[0]["host"]["disks"]["sda"]
    assert h["await_ms"] == 2.99 and h["read_mbps"] == 0.01 and h["util_pct"] == 0.15


@pytest.mark.parametrize("text", ["", "hello world\n", "Traceback (most recent call last):\n  x\n", "\x00\x01garbage",
                                  "# gpu sm\n  x y\n", "#Entity GPUTL\nCPU 0 5\n"])
def test_nothing_recognised_is_a_clear_error(text):
    with pytest.raises(ReplayError, match="no recording found"):
        replay(text)


def test_unknown_columns_are_ignored():
    text = "# gpu   sm  newcol   mem\n# Idx    %   units    %\n    0   50   xyz     10\n    0   60   abc     11\n"
    w = replay(text)
    assert _util(w, 0) == [50, 60] and "newcol" not in w.samples[0]["gpus"][0]


def test_real_iostat_and_vmstat_captured_side_by_side():
    """Captured on the development VM (tests/fixtures/SOURCES.md): a 1 ms-await disk next to saturated CPUs."""
    base = FIXTURES / "timeseries" / "devbox-2cpu-odirect-reader-contended-"
    w = replay((base.parent / (base.name + "iostat-x-1.txt")).read_text() + "\n"
               + (base.parent / (base.name + "vmstat-1.txt")).read_text())
    assert w.source == "iostat -x, vmstat" and len(w.samples) == 5  # the since-boot reports dropped
    disks = w.summary["disks"]["vda"]
    assert 0.7 <= disks["await_ms_p50"] <= 1.4 and disks["util_pct_p90"] < 25
    assert w.summary["host"]["cpu_busy_pct"]["p50"] >= 90 and w.summary["host"]["run_queue"]["p50"] >= 9

    from envdoctor.checks._watch import cpu_saturated, storage_busy
    from envdoctor.domain.recording import analyze

    a = analyze(w.samples, w.interval_s)
    assert storage_busy(a) is None and cpu_saturated(a, w) is not None


# --------------------------------------------------------------------------- impossible values are refused

def _real_csv() -> str:
    return (FIXTURES / "timeseries" / "015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt").read_text()


def _replace_first_data_row(text: str, edit) -> str:
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln[:1].isdigit() and "," in ln)
    lines[i] = edit(lines[i])
    return "\n".join(lines) + "\n"


def test_utilisation_above_100_is_refused_in_one_line():
    bad = _replace_first_data_row(_real_csv(), lambda ln: ln.replace(" 99 %", " 99999 %", 1))
    assert bad != _real_csv()
    with pytest.raises(ReplayError) as e:
        replay(bad)
    msg = str(e.value)
    assert "util_pct 99999" in msg and "impossible" in msg and "\n" not in msg


def test_a_missing_column_is_refused_not_shifted():
    def drop_second_value(line: str) -> str:
        parts = line.split(",")
        return ",".join(parts[:2] + parts[3:])
    with pytest.raises(ReplayError) as e:
        replay(_replace_first_data_row(_real_csv(), drop_second_value))
    assert "values for the header's" in str(e.value)


def test_memory_used_above_total_is_refused():
    text = ("index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
            "0, 50 %, 32480 MiB, 30994 MiB\n")
    with pytest.raises(ReplayError) as e:
        replay(text)
    assert "above the memory total" in str(e.value)


def test_impossible_host_values_are_refused():
    from envdoctor.watch.replay import check_plausible

    check_plausible([{"t_s": 0.0, "host": {"cpu_busy_pct": 99.0, "disks": {"sda": {"util_pct": 100.0,
                                                                                  "await_ms": 1.0}}}}], "iostat -x")
    for host in ({"cpu_iowait_pct": 250.0}, {"disks": {"sda": {"await_ms": -3.0}}},
                 {"disks": {"nvme0n1": {"util_pct": 340.0}}}):
        with pytest.raises(ReplayError) as e:
            check_plausible([{"t_s": 1.0, "host": host}], "iostat -x")
        assert "impossible" in str(e.value)


def test_the_cli_gives_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "rec.txt"
    f.write_text(_replace_first_data_row(_real_csv(), lambda ln: ln.replace(" 99 %", " 99999 %", 1)))
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "watch", "--replay", str(f)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "impossible" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- a busy box's own rounding

BUSY = FIXTURES / "timeseries" / "devbox-2cpu-busy-vmstat-1.txt"


def test_a_real_busy_vmstat_capture_whose_rows_sum_to_101_is_a_recording():
    """`vmstat 1 64` on the 2-core development VM with eight jobs on it (tests/fixtures/SOURCES.md): vmstat rounds
    each CPU column on its own, so rows print "86 15 0 0 0" (101) and "89 9 0 0 3"; such a row is a row."""
    text = BUSY.read_text(encoding="utf-8")
    sums = [sum(int(x) for x in line.split()[12:17]) for line in text.splitlines() if line.split()[:1] != ["r"]
            and line.split() and line.split()[0].isdigit()]
    assert max(sums) >= 101 and min(sums) <= 99  # the capture holds both roundings
    w = replay(text)
    assert w.source.startswith("vmstat") and len(w.samples) == 63  # 64 reports, the since-boot one dropped
    busy = [s["host"]["cpu_busy_pct"] for s in w.samples]
    assert max(busy) <= 100.0 and min(busy) >= 90.0
    assert w.summary["host"]["run_queue"]["p50"] >= 4


def test_a_vmstat_row_off_by_more_than_its_rounding_is_still_refused():
    text = (" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"
            " 2  0      0 978456 1641496 18436400    0    0   298     0 8715 33153 11  3 86  1  0\n"
            " 2  0      0 978456 1641496 18436400    0    0   298     0 8715 33153 90 60  0  0  0\n")
    with pytest.raises(ReplayError, match="cpu_busy_pct 150"):
        replay(text)


def test_rounded_rows_are_scaled_back_to_one_hundred():
    from envdoctor.watch.replay import _vmstat_cpu

    assert _vmstat_cpu({"us": 86, "sy": 15, "id": 0, "wa": 0, "st": 0}) == (100.0, 0.0)
    assert _vmstat_cpu({"us": 10, "sy": 3, "id": 86, "wa": 0, "st": 0}) == pytest.approx((13.13, 0.0), abs=0.01)
    assert _vmstat_cpu({"us": 11, "sy": 3, "id": 85, "wa": 1, "st": 0}) == (14.0, 1.0)  # 100: as printed


def test_host_reports_go_to_the_nearest_gpu_tick_in_any_order():
    """The bisection that made replay n log n gives the brute-force answer, ties to the earlier tick, and on
    ticks that go back in time (two captures pasted one after the other)."""
    import random

    from envdoctor.watch.replay import _nearest

    rnd = random.Random(7)
    for _ in range(200):
        times = sorted(round(rnd.uniform(0, 50), 1) for _ in range(rnd.randint(1, 30)))
        t = round(rnd.uniform(-5, 55), 1)
        k = _nearest(times, t)
        best = min(abs(x - t) for x in times)
        assert abs(times[k] - t) == best and all(x >= times[k] for x in times if abs(x - t) == best)


def test_a_replay_with_host_rows_between_unordered_gpu_ticks_matches_them_by_time():
    dmon = ("# gpu    sm   mem\n# Idx     %     %\n" + "".join(f"    0    {u}   10\n" for u in (10, 20, 30, 40)))
    vm = (" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"
          + "".join(f" 1  0 0 1 1 1 0 0 0 0 1 1 {u} 0 {100 - u} 0 0\n" for u in (50, 1, 2, 3, 4)))
    w = replay(dmon + vm)
    assert [s["host"]["cpu_busy_pct"] for s in w.samples] == [1.0, 2.0, 3.0, 4.0]
