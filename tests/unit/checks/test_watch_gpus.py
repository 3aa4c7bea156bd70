"""watch_gpus' checks, GPU by GPU: one never working (watch.idle-gpu), one lagging (watch.straggler), all stopping
together (watch.stalls), memory (watch.gpu-memory), clocks (watch.throttle); each passing, failing and skipped on
series built to sit on either side of its rule."""

from __future__ import annotations

from tests.unit.checks.watch_series import cats, series, steady, verdicts


def check(v, check_id: str):
    return v["checks"][check_id]


def the_finding(v, check_id: str):
    (f,) = [f for f in check(v, check_id).findings]
    return f


def test_one_gpu_never_working_is_idle_unused_not_a_straggler():
    v = verdicts(series([steady(92.0), [0.0] * 40], mem_used_mib=[[30000] * 40, [3000] * 40]))
    assert v["findings"]["GPU_IDLE_UNUSED"].code == "watch.idle-gpu/unused"
    assert "GPU_STRAGGLER" not in cats(v) and "GPU_BOUND" in cats(v)


def test_a_stall_without_disk_samples_is_not_called_a_checkpoint():
    u = steady(95.0, 20) + [1.0] * 8 + steady(95.0, 20)
    f = verdicts(series([u]))["findings"]["GPU_UNDERFED"]
    assert f.code == "watch.stalls/stall" and "no disk samples" in f.summary


def test_checkpoint_stalls_without_gpus_come_from_the_step_timer():
    host = [{"cpu_busy_pct": 50.0, "disks": {"vda": {"read_mbps": 0.0, "write_mbps": 400.0 if i % 5 == 0 else 0.0,
                                                     "iops": 100.0, "await_ms": 2.0, "util_pct": 30.0}}}
            for i in range(40)]
    steps = [{"steps": 500, "wait_s": 0.5, "step_s": 20.0, "stall_count": 4, "stall_s": 9.0}]
    v = verdicts(series([], host=host), steps=steps)
    f = v["findings"]["CHECKPOINT_STALL"]
    assert f.code == "watch.stalls/checkpoint" and "4 times for 9 s" in f.summary and "45%" in f.summary
    no_disk = verdicts(series([], host=[{"cpu_busy_pct": 50.0}] * 40), steps=steps)
    assert no_disk["findings"]["CHECKPOINT_STALL"].code == "watch.stalls/stall"
    few = [{"steps": 500, "wait_s": 0.5, "step_s": 20.0, "stall_count": 1, "stall_s": 0.6}]
    assert verdicts(series([], host=host), steps=few)["checks"]["watch.stalls"].status == "passed"
    c = verdicts(series([], host=host))["checks"]["watch.stalls"]
    assert c.status == "skipped" and "stalls" in c.reason


# --------------------------------------------------------------------------- each check: passing, failing, skipped

TWO_BUSY = series([steady(92.0), steady(90.0)])  # two GPUs at work side by side: nothing to say about them
NO_GPUS = series([], host=[{"cpu_busy_pct": 50.0}] * 40)  # host samples only


def test_idle_gpu_names_the_gpu_that_never_worked_passes_busy_ones_and_skips_without_gpu_samples():
    v = verdicts(series([steady(92.0), [0.0] * 40], mem_used_mib=[[30000] * 40, [3000] * 40]))
    f = the_finding(v, "watch.idle-gpu")
    assert (f.code, f.category, f.severity) == ("watch.idle-gpu/unused", "GPU_IDLE_UNUSED", "warning")
    assert f.summary == ("GPU 1 (holding 3000 MiB) did no work (utilisation p90 under 5%) while GPU 0 ran at "
                         "p50 92%")
    assert [(e.path, e.value) for e in f.evidence] == [("watch.summary.gpus[1].util_p90", 0.0)]
    assert check(verdicts(TWO_BUSY), "watch.idle-gpu").status == "passed"
    c = check(verdicts(NO_GPUS), "watch.idle-gpu")
    assert (c.status, c.reason) == ("skipped", "no GPU samples in the recording")


def test_straggler_whole_finding_passes_even_gpus_and_skips_one_gpu():
    n = 60
    lag = [90.0] * 10 + [2.0] * 30 + [90.0] * 20
    others = [[90.0] * 10 + [100.0] * 30 + [90.0] * 20 for _ in range(3)]
    power = [[500.0] * n] + [[500.0] * 10 + [150.0] * 30 + [500.0] * 20 for _ in range(3)]
    f = the_finding(verdicts(series([lag] + others, power_w=power)), "watch.straggler")
    assert (f.code, f.category, f.severity) == ("watch.straggler/lagging", "GPU_STRAGGLER", "warning")
    assert f.summary.startswith("GPU 0 stood idle for 15 s (1 episode, the longest 15 s from t=5 s)")
    assert "the other GPUs' power fell 70%" in f.summary
    assert [(e.path, e.value) for e in f.evidence] == [("watch.summary.lags[0].duration_s", 15.0)]
    assert check(verdicts(TWO_BUSY), "watch.straggler").status == "passed"
    c = check(verdicts(series([steady(92.0)])), "watch.straggler")
    assert c.status == "skipped" and "fewer than two working GPUs" in c.reason


def test_stalls_whole_finding_and_a_steady_run_passes():
    u = steady(95.0, 20) + [1.0] * 8 + steady(95.0, 20)
    host = [{"disks": {"nvme0n1": {"write_mbps": 1500.0 if 20 <= i < 28 else 1.0}}} for i in range(48)]
    v = verdicts(series([u, list(u)], host=host))
    assert "GPU_BOUND" in cats(v)  # the stall is told apart from the steady state
    f = the_finding(v, "watch.stalls")
    assert (f.code, f.category, f.severity) == ("watch.stalls/checkpoint", "CHECKPOINT_STALL", "warning")
    assert f.summary == ("All GPUs stopped together 1 time for 4 s (17% of the run, the longest 4 s) while the disk "
                         "wrote 1500 MB/s: checkpoint saves")
    assert [(e.path, e.value) for e in f.evidence] == [("watch.summary.stalls[0].duration_s", 4.0)]
    assert check(verdicts(TWO_BUSY), "watch.stalls").status == "passed"
    # skipped: no GPU samples and no step timer (test_checkpoint_stalls_without_gpus_come_from_the_step_timer)


def test_gpu_memory_whole_finding_passes_with_headroom_and_skips_without_the_total():
    f = the_finding(verdicts(series([steady(95.0)], mem_used_mib=[[79800] * 40], mem_total_mib=[[81559] * 40])),
                    "watch.gpu-memory")
    assert (f.code, f.category, f.severity) == ("watch.gpu-memory/nearly-full", "GPU_MEMORY_PRESSURE", "warning")
    assert f.summary == "GPU memory nearly full: GPU 0 97.84% of 81559 MiB (p90)"
    assert [(e.path, e.value, e.expected) for e in f.evidence] == [
        ("watch.summary.gpus[0].mem_used_pct_p90", 97.84, "< 97")]
    half = verdicts(series([steady(95.0)], mem_used_mib=[[40000] * 40], mem_total_mib=[[81559] * 40]))
    assert check(half, "watch.gpu-memory").status == "passed"
    c = check(verdicts(series([steady(95.0)], mem_used_mib=[[40000] * 40])), "watch.gpu-memory")
    assert (c.status, c.reason) == ("skipped", "GPU memory used against total unknown in the recording")


def test_throttle_whole_finding_passes_on_idle_reasons_and_skips_without_readings():
    reasons = [["sw_thermal_slowdown", "hw_slowdown"] if i > 20 else [] for i in range(40)]
    f = the_finding(verdicts(series([steady(95.0)], throttle_reasons=[reasons], temperature_c=[[88] * 40])),
                    "watch.throttle")
    assert (f.code, f.category, f.severity) == ("watch.throttle/during-run", "GPU_THROTTLED", "warning")
    assert f.summary == ("Clocks held back during the run: GPU 0 48% of steady samples (hw_slowdown, "
                         "sw_thermal_slowdown, up to 88 °C)")
    assert [(e.path, e.value, e.expected) for e in f.evidence] == [
        ("watch.summary.gpus[0].throttled_fraction", 0.475, "< 0.1")]
    idle = verdicts(series([steady(95.0)], throttle_reasons=[[["gpu_idle"]] * 40]))
    assert check(idle, "watch.throttle").status == "passed"
    c = check(verdicts(series([steady(95.0)])), "watch.throttle")
    assert (c.status, c.reason) == ("skipped", "no clock-event (throttle) readings in the recording")


def _main(states: str, wchar: int = 0):
    return {"count": 1, "trainers": 1, "torch_trainers": 1, "workers": 2,
            "main": {"pid": 7, "states": states, "wchar": wchar, "rchar": 0, "syscw": 1 if wchar else 0}}


def test_gpu_idle_gaps_are_named_by_what_the_training_process_did():
    """Issue 41: all GPUs idle together, and the training process computing (an evaluation pass on the CPU side,
    no writes), asleep (a pause) or writing (a save) meanwhile: the gap gets that name, not 'a checkpoint, an
    evaluation or a synchronisation'."""
    u = steady(95.0, 20) + [1.0] * 8 + steady(95.0, 20)
    for during, wchar, want in (("RRRRRRRRRR", 0, ("watch.stalls/evaluation", "EVALUATION_STALL")),
                                ("NNNNNNNNNN", 0, ("watch.stalls/pause", "LOOP_PAUSED")),
                                ("RRDDDDDDDD", 200_000_000, ("watch.stalls/checkpoint", "CHECKPOINT_STALL"))):
        procs = [_main(during if 20 <= i < 28 else "RRRRRNNNNN", wchar if 20 <= i < 28 else 0) for i in range(48)]
        f = the_finding(verdicts(series([u], procs=procs)), "watch.stalls")
        assert (f.code, f.category) == want, (during, f)
        assert f.summary.startswith("All GPUs stopped together 1 time for 4 s"), f.summary


def test_timer_stalls_are_named_by_the_gap_they_were():
    """The step timer's stalls as spans of the recording (stall_at, stall_each_s against the recording's start)
    fall on ticks where the training process wrote 64 MB: checkpoint saves, named from the process itself."""
    procs = [_main("RRDDDDDDRR" if i in (10, 20, 30) else "RRRRRRRRRR", 64_000_000 if i in (10, 20, 30) else 0)
             for i in range(40)]
    samples = series([], procs=procs)
    t0 = 1000.0
    steps = [{"name": "train", "steps": 400, "wait_s": 0.2, "step_s": 15.0, "stall_count": 3, "stall_s": 3.0,
              "stall_at": [t0 + 5.0, t0 + 10.0, t0 + 15.0], "stall_each_s": [1.0, 1.0, 1.0], "started": t0 + 0.5}]
    from envdoctor.domain.recording import summarize
    from envdoctor.model.facts import Facts, ProbeStatus, Watch
    from envdoctor.services.collect import judge

    summary = summarize(samples, 0.5, steps, t0)
    assert [g["start_s"] for g in summary["step_gaps"]] == [4.0, 9.0, 14.0]
    w = Watch(status=ProbeStatus.OK, source="test", samples=samples, summary=summary, cpu_available=2.0)
    (f,) = [f for f in judge(Facts(watch=w), only=["watch.stalls"]).findings]
    assert (f.code, f.category) == ("watch.stalls/checkpoint", "CHECKPOINT_STALL")
    assert "The step loop stopped 3 times for 3 s" in f.summary and "wrote 192 MB meanwhile" in f.summary


def test_one_gap_of_another_kind_beside_named_saves_is_said_not_named_apart():
    """Three saves (64 MB written in each gap) and one gap of computing without writes: under the stall bar on its
    own and alone of its kind, it is a collector's pause as often as an evaluation pass; the checkpoint finding
    says it, no EVALUATION_STALL is named."""
    procs = [_main("RRDDDDDDRR" if i in (10, 20, 30) else "RRRRRRRRRR", 64_000_000 if i in (10, 20, 30) else 0)
             for i in range(40)]
    samples = series([], procs=procs)
    t0 = 1000.0
    steps = [{"name": "train", "steps": 400, "wait_s": 0.2, "step_s": 15.0, "stall_count": 4, "stall_s": 3.6,
              "stall_at": [t0 + 5.0, t0 + 10.0, t0 + 15.0, t0 + 17.5], "stall_each_s": [1.0, 1.0, 1.0, 0.6],
              "started": t0 + 0.5}]
    from envdoctor.domain.recording import summarize
    from envdoctor.model.facts import Facts, ProbeStatus, Watch
    from envdoctor.services.collect import judge

    summary = summarize(samples, 0.5, steps, t0)
    w = Watch(status=ProbeStatus.OK, source="test", samples=samples, summary=summary, cpu_available=2.0)
    (f,) = [f for f in judge(Facts(watch=w), only=["watch.stalls"]).findings]
    assert (f.code, f.category) == ("watch.stalls/checkpoint", "CHECKPOINT_STALL")
    assert "1 gap of 0.6 s that looked like evaluation" in f.detail, f.detail
