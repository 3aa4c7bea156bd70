"""Gaps in the steps named by what the training process did in them (issue 41, round 3): a save's writes counted
in the real window of the tick that read them (the I/O counters are read after the tick's t_s, late on a loaded
box), a short save among saves in every tick, a gap the process spent waiting for a core, a gap too short to be
named by its state samples, and the step timer's brief stalls (under its STALL_MIN_S) named only by their I/O."""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.checks._watch_main import gap_activity, name_gaps
from envdoctor.domain.recording import analyze, summarize
from envdoctor.model.facts import Facts, ProbeStatus, Watch
from envdoctor.services.collect import judge
from envdoctor.watch import timer
from tests.unit.checks.test_watch_main import _main, _procs
from tests.unit.checks.watch_series import series, verdicts

LATE = 0.3  # the counters read this long after the tick's t_s (GPU, host and tree reads on a loaded box)


def _late(n: int, wchar: Dict[int, int], states: str = "RRRRRRRRRR", oncpu: Dict[int, str] = None,
          base_wchar: int = 1000) -> List[Dict[str, Any]]:
    """Ticks every 0.5 s whose I/O was read LATE s after t_s and whose letters were taken between that read and the
    next tick (as ProcessTree.wait_until takes them)."""
    samples = series([], procs=_procs([_main(states, wchar=wchar.get(i, base_wchar), syscw=4) for i in range(n)]))
    for i, s in enumerate(samples):
        m = s["procs"]["main"]
        t = s["t_s"]
        m["io_t_s"] = round(t + LATE, 3)
        m["states_t_s"] = [round(t - 0.5 + LATE + 0.02, 3), round(t, 3)]
        m["oncpu"] = (oncpu or {}).get(i, "9" * len(states))
    return samples


def _watch(samples, summary=None) -> Watch:
    return Watch(status=ProbeStatus.OK, source="test", samples=samples, summary=summary or {}, cpu_available=2.0)


def test_a_save_read_in_the_tick_after_its_gap_is_a_checkpoint():
    """The save ran 5.02-5.28 s, while the watcher read the GPUs and the host: its 64 MB were in the counters read at
    5.3 s (the tick of t_s 5.0, whose nominal window 4.5-5.0 s misses the gap) and no state was sampled in it. By
    the nominal windows the gap wrote nothing and the next tick's letters (running) named it an evaluation."""
    w = _watch(_late(30, {10: 64_000_000}))
    a = analyze(w.samples, 0.5)
    got = gap_activity(w, a, 5.02, 0.26)
    assert got["name"] == "checkpoint" and got["wrote"] >= 60_000_000, got
    assert set(name_gaps(w, a, [(5.02, 0.26)])) == {"checkpoint"}


def test_short_saves_in_every_tick_are_checkpoints_not_the_run_s_own_rate():
    """Saves of 0.09 s two per tick (every tick writes 128 MB): the typical tick's rate is the saves, and taking it
    off as the run's own left the gaps with nothing written (named by their letters: an evaluation). The run's own
    rate comes from the ticks without gaps; none here, so nothing is taken off."""
    n = 30
    samples = _late(n, {i: 128_000_000 for i in range(3, n - 2)})  # the saves' ticks (after the start-up)
    gaps = [(i * 0.5 + LATE + off, 0.09, True) for i in range(2, n - 3) for off in (0.1, 0.3)]
    w = _watch(samples)
    named = name_gaps(w, analyze(samples, 0.5), gaps)
    assert set(named) == {"checkpoint"} and named["checkpoint"]["count"] == len(gaps), named


def test_a_brief_gap_without_writes_or_reads_is_not_counted():
    """A step under STALL_MIN_S that stood out, with nothing written or read: as long as a preemption on a loaded
    box, so it names nothing (a long one would be named by its letters)."""
    samples = _late(30, {})
    w = _watch(samples)
    a = analyze(samples, 0.5)
    assert name_gaps(w, a, [(5.4, 0.08, True), (8.4, 0.08, True)]) == {}
    assert set(name_gaps(w, a, [(5.32, 0.6, False)])) == {"evaluation"}


def test_a_gap_with_few_state_samples_and_no_io_is_unknown():
    w = _watch(_late(30, {}))
    assert gap_activity(w, analyze(w.samples, 0.5), 5.35, 0.06)["name"] == "unknown"  # 3 letters


def test_a_gap_spent_waiting_for_a_core_is_not_an_evaluation():
    """Letters R throughout (running or ready to run), but in the gap the thread was on a CPU 5% of the time
    against 95% in the rest of the run: it waited on the run queue (another tenant's time), it did not compute."""
    samples = _late(30, {}, oncpu={12: "0000000000", 13: "0000000000"})
    for s in samples:  # the run's own on-CPU share (schedstat) from the ticks
        s["procs"]["main"].update(run_ms=475.0, cpu_wait_ms=25.0)
    w = _watch(samples)
    a = analyze(samples, 0.5)
    assert gap_activity(w, a, 5.85, 0.6)["name"] == "cpu-wait"
    assert gap_activity(w, a, 8.85, 0.6)["name"] == "evaluation"


def _judged(samples, steps, t0):
    summary = summarize(samples, 0.5, steps, t0)
    return summary, judge(Facts(watch=_watch(samples, summary)), only=["watch.stalls"])


def test_brief_timer_stalls_that_wrote_are_checkpoint_saves():
    """The step timer's stalls under STALL_MIN_S (0.09 s saves, 40 of them, 36% of the steps' time) were not
    counted at all: the loop was said not to stop. Named by the writes in them, they are checkpoint saves."""
    n = 30
    samples = _late(n, {i: 128_000_000 for i in range(4, n - 6)})
    t0 = 1000.0
    ends = [t0 + i * 0.5 + LATE + off + 0.09 for i in range(3, n - 7) for off in (0.1, 0.3)]
    steps = [{"name": "train", "steps": 4000, "wait_s": 0.1, "step_s": 10.0, "stall_count": 0, "stall_s": 0.0,
              "stall_at": [], "stall_each_s": [], "brief_count": len(ends), "brief_s": round(0.09 * len(ends), 3),
              "brief_at": ends, "brief_each_s": [0.09] * len(ends), "started": t0 + 0.5}]
    summary, report = _judged(samples, steps, t0)
    assert summary["step_brief_count"] == 40 and summary["step_brief_fraction"] == 0.36
    (f,) = report.findings
    assert (f.code, f.category) == ("watch.stalls/checkpoint", "CHECKPOINT_STALL"), f
    assert "The step loop stopped 40 times for 3.6 s (36% of the run" in f.summary, f.summary


def test_brief_timer_stalls_with_nothing_written_name_nothing():
    n = 30
    samples = _late(n, {})
    t0 = 1000.0
    ends = [t0 + i * 0.5 + 0.4 for i in range(3, n - 7) for _ in (0, 1)]
    steps = [{"name": "train", "steps": 4000, "wait_s": 0.1, "step_s": 10.0, "stall_count": 0, "stall_s": 0.0,
              "stall_at": [], "stall_each_s": [], "brief_count": len(ends), "brief_s": round(0.09 * len(ends), 3),
              "brief_at": ends, "brief_each_s": [0.09] * len(ends), "started": t0 + 0.5}]
    _, report = _judged(samples, steps, t0)
    assert report.findings == []


def test_the_timer_counts_brief_stalls_apart():
    s = timer.StepStats("loader")
    for i in range(600):
        s.step_done(0.090 if i % 150 == 149 else 0.001, 0.0005)  # a 0.09 s save every 150 steps
    d = s.summary()
    assert d["stall_count"] == 0 and d["brief_count"] == 4, d
    assert len(d["brief_at"]) == 4 and d["brief_each_s"] == [0.0895] * 4
    quiet = timer.StepStats("loader")
    for i in range(600):
        quiet.step_done(0.001 + 0.0002 * (i % 3), 0.0005)  # uneven steps, no stop
    assert quiet.summary()["brief_count"] == 0


def _workers_run(worker_cpu: List[float], main_states: List[str]):
    """Ticks of a run with two loader workers (their CPU % each, half the given sum), no GPU, no timer."""
    procs = _procs([_main(st, wchar=1000, syscw=4, oncpu="9" * len(st)) for st in main_states], workers=2)
    for p, c in zip(procs, worker_cpu):
        p["worker_cpu_pct"] = [c / 2, c / 2]
    return series([], procs=procs)


def test_an_evaluation_without_the_timer_is_named_from_the_idle_workers():
    """Issue 41: a periodic evaluation pass was not named without the timer. The workers decode at 90% of a core
    while the loop trains (it waits on them: P), and stand at 0 for 3 ticks every 7 while the training process
    computes: the loop took no batches and computed, an evaluation."""
    cpu, states = [], []
    for _ in range(6):
        cpu += [90.0] * 4 + [0.0] * 3
        states += ["RPRPRPRPRP"] * 4 + ["RRRRRRRRRR"] * 3
    v = verdicts(_workers_run(cpu, states), cpu_available=2.0)
    f = v["findings"]["EVALUATION_STALL"]
    assert f.code == "watch.stalls/evaluation" and "loader workers stood idle" in f.summary, f.summary
    # the same lulls with the training process asleep meanwhile: a pause, not an evaluation
    asleep = [s if s.startswith("RP") else "NNNNNNNNNN" for s in states]
    paused = verdicts(_workers_run(cpu, asleep), cpu_available=2.0)["checks"]["watch.stalls"].findings
    assert [f.code for f in paused] == ["watch.stalls/pause"], paused


def test_workers_busy_only_as_each_epoch_starts_are_no_lulls():
    """A loop whose step is slower than its loading: the workers fill their queue as each epoch starts and then
    wait; the training process computes throughout. Nothing tells an evaluation from the training here: not
    named, and without workers at all the check says the phase is unknown."""
    cpu = ([90.0] + [0.0] * 9) * 5
    v = verdicts(_workers_run(cpu, ["RRRRRRRRRR"] * 50), cpu_available=2.0)
    assert "EVALUATION_STALL" not in v["findings"] and v["checks"]["watch.stalls"].status == "passed"
    alone = series([], procs=_procs([_main("RRRRRRRRRR", wchar=1000, syscw=4)] * 50))
    c = verdicts(alone, cpu_available=2.0)["checks"]["watch.stalls"]
    assert c.status == "skipped" and "unknown" in c.reason, c
