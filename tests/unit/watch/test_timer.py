"""The step timer (envdoctor.watch.timer): constant work per step however many epochs re-wrap the loader, no
traceback at interpreter exit, a report directory nobody else can plant, and a summary after a watch went away.
Costs are counted (writes, loops kept), never timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envdoctor.watch import timer
from envdoctor.watch.command import mark_steps_directory, release_steps_directory, steps_directory
from tests.paths import REPO


@pytest.fixture()
def reporter(tmp_path: Path, monkeypatch):
    d = tmp_path / "watch"
    d.mkdir(mode=0o700)
    (d / timer.watch_mark(os.getpid())).touch()  # a live watch reads it (this process stands in for it)
    monkeypatch.setenv("ENVDOCTOR_WATCH_DIR", str(d))
    monkeypatch.setattr(timer, "_REPORTER", None)
    monkeypatch.setattr(timer.atexit, "register", lambda f: None)
    r = timer._reporter()
    writes = []
    real = timer._write_private
    monkeypatch.setattr(timer, "_write_private", lambda p, data: (writes.append(p), real(p, data)))
    r.writes = writes
    return r


def test_re_wrapping_the_same_loader_every_epoch_keeps_one_loop_and_bounded_writes(reporter, monkeypatch) -> None:
    monkeypatch.setattr(timer, "FLUSH_S", 3600.0)  # no flush interval passes during the test
    loader = [1, 2, 3, 4]
    for _epoch in range(3125):
        for _ in timer.timed(loader):
            pass
    assert len(reporter.loops) == 1
    stats = reporter.loops[0]
    assert stats.steps == 3125 * 4
    # the epochs' ends wrote nothing (before: one write of every loop at each epoch's end, 3,125 loops by then)
    assert len(reporter.writes) <= 1
    reporter.flush()
    data = json.loads(Path(reporter.writes[-1]).read_text())
    assert [loop["steps"] for loop in data["loops"]] == [12500]


def test_two_loaders_stay_two_loops(reporter) -> None:
    train, val = [1, 2, 3], [4, 5]
    for _ in range(3):
        for _ in timer.timed(train):
            pass
        for _ in timer.timed(val):
            pass
    assert sorted(s.steps for s in reporter.loops) == [6, 9]


def test_no_traceback_at_interpreter_exit_when_the_loop_breaks(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, REPO_PATH)
        from envdoctor.watch.timer import timed
        class Holder:  # a reference cycle: collected only at the interpreter's last GC, builtins half gone
            pass
        h = Holder()
        h.self = h
        h.it = timed(iter(range(100)))
        for i in h.it:
            if i == 3:
                break
    """).replace("REPO_PATH", repr(str(REPO)))
    for watch_dir in (None, tmp_path / "w"):
        env = dict(os.environ)
        if watch_dir is not None:
            watch_dir.mkdir(mode=0o700)
            env["ENVDOCTOR_WATCH_DIR"] = str(watch_dir)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 0
        assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


def test_safe_dir_refuses_links_other_owners_modes(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir(mode=0o700)
    assert timer.safe_dir(str(good))
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    assert not timer.safe_dir(str(loose))
    link = tmp_path / "link"
    link.symlink_to(good)
    assert not timer.safe_dir(str(link))
    f = tmp_path / "file"
    f.write_text("x")
    assert not timer.safe_dir(str(f))


def test_a_planted_link_at_the_report_name_is_replaced_not_followed(tmp_path: Path) -> None:
    d = tmp_path / "w"
    d.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (d / "steps-1.json").symlink_to(victim)
    timer._write_private(str(d / "steps-1.json"), '{"loops": []}')
    assert victim.read_text() == "precious"
    assert not (d / "steps-1.json").is_symlink() and json.loads((d / "steps-1.json").read_text()) == {"loops": []}
    assert sorted(p.name for p in d.iterdir()) == ["steps-1.json"]


def test_a_launched_command_gets_its_own_directory_and_pid_mode_only_a_safe_default(tmp_path: Path) -> None:
    default = tmp_path / "envdoctor-watch-0"
    default.mkdir(mode=0o700)
    first, made1, _ = steps_directory(str(default), launching=True)
    second, made2, _ = steps_directory(str(default), launching=True)
    assert made1 and made2 and len({first, second, str(default)}) == 3  # two watches never share one
    assert timer.safe_dir(first) and timer.safe_dir(second)
    os.rmdir(first)
    os.rmdir(second)
    assert steps_directory(str(default), launching=False) == (str(default), False, "")  # --pid: the safe default
    default.chmod(0o777)
    path, made, why = steps_directory(str(default), launching=False)
    assert path == "" and not made and "not this user's private directory" in why
    fresh = tmp_path / "fresh"
    path, made, why = steps_directory(str(fresh), launching=False)
    assert path == str(fresh) and made and timer.safe_dir(path)


def test_summary_goes_to_stderr_when_the_watch_went_away(reporter, capsys) -> None:
    for _ in timer.timed([1, 2, 3]):
        pass
    reporter.flush()
    assert reporter.seen_watch
    for p in Path(reporter.dir).iterdir():
        p.unlink()
    Path(reporter.dir).rmdir()  # `watch --pid` ended and removed what it made
    reporter.at_exit()
    assert "envdoctor timed(list): 3 steps" in capsys.readouterr().err


def test_steps_that_stop_the_loop_are_counted_as_stalls_waits_are_not() -> None:
    s = timer.StepStats("loader")
    for _ in range(100):
        s.step_done(0.010, 0.001)
    for _ in range(3):
        s.step_done(2.0, 0.001)  # a checkpoint save inside the step
    s.step_done(2.0, 1.95)  # a long wait for the batch: input, not a stall
    for _ in range(50):
        s.step_done(0.010, 0.001)
    d = s.summary()
    assert d["stall_count"] == 3 and abs(d["stall_s"] - 3 * 1.999) < 1e-6 and len(d["stall_at"]) == 3
    assert s.typical_s is not None and s.typical_s < 0.1  # the stalls did not move the typical step


def test_short_steps_are_never_stalls_however_uneven() -> None:
    s = timer.StepStats("loader")
    for i in range(1000):
        s.step_done(0.001 if i % 2 else 0.2, 0.0)
    assert s.summary()["stall_count"] == 0


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          timeout=60)
    return int(proc.stdout)


TIMED_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, REPO_PATH)
    from envdoctor.watch.timer import timed
    for _ in timed([1, 2, 3, 4]):
        pass
""")


@pytest.mark.parametrize("mark", ["none", "dead", "alive"])
def test_a_directory_whose_watch_is_gone_does_not_swallow_the_summary(tmp_path: Path, mark) -> None:
    """Issue 41: a `watch --pid` directory that outlived its watch took every later run's summary (written there,
    never printed). A timer now writes only while a watch that marked the directory lives."""
    d = tmp_path / "w"
    d.mkdir(mode=0o700)
    if mark == "dead":
        (d / timer.watch_mark(_dead_pid())).touch()
    elif mark == "alive":
        (d / timer.watch_mark(os.getpid())).touch()
    env = dict(os.environ, ENVDOCTOR_WATCH_DIR=str(d))
    proc = subprocess.run([sys.executable, "-c", TIMED_SCRIPT.replace("REPO_PATH", repr(str(REPO)))],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    reports = sorted(p.name for p in d.iterdir() if p.name.startswith("steps-"))
    if mark == "alive":
        assert len(reports) == 1 and "envdoctor timed(" not in proc.stderr
    else:
        assert reports == [] and "envdoctor timed(list): 4 steps" in proc.stderr


def test_a_watch_marks_its_directory_and_leaves_nothing_behind(tmp_path: Path, monkeypatch) -> None:
    d = tmp_path / "envdoctor-watch-0"
    path, made, _ = steps_directory(str(d), launching=False)
    dead = _dead_pid()
    (d / f"steps-{dead}.json").write_text("{}")  # what a watch killed before its clean-up left
    (d / timer.watch_mark(dead)).touch()
    assert mark_steps_directory(path) and timer.watch_running(path)
    assert sorted(p.name for p in d.iterdir()) == [timer.watch_mark(os.getpid())]  # the dead's leftovers gone
    # the watched process goes on and writes once more after the watch took its mark away: still removed
    writes = iter([str(d / "steps-4242.json")])
    real_rmdir = os.rmdir

    def rmdir_racing(p):
        late = next(writes, None)
        if late:
            Path(late).write_text("{}")
        return real_rmdir(p)

    monkeypatch.setattr(os, "rmdir", rmdir_racing)
    monkeypatch.setattr("envdoctor.watch.command.RELEASE_PAUSE_S", 0.0)
    assert release_steps_directory(path, made, {4242})
    assert not d.exists()


def test_a_checkpoint_of_three_steps_is_a_stall_and_jitter_is_not() -> None:
    """Issue 41: stalls were seen only at ten typical steps and 0.5 s, and checkpoint saves of 3-7 steps each
    (20-35% of a run) went unseen. Now a step stands out against the run's own steps (mean and deviation)."""
    import random

    rnd = random.Random(3)
    s = timer.StepStats("loader")
    stalls = 0
    for i in range(2000):
        work = 0.2 * rnd.uniform(0.9, 1.1)
        if i % 100 == 99:
            work = 0.2 * rnd.choice([3, 4, 5, 7])  # a checkpoint save inside this step
            stalls += 1
        s.step_done(work + 0.001, 0.001)
    d = s.summary()
    assert d["stall_count"] == stalls == 20
    # a noisy loop without stops: steps spread like a real run's (log-normal, sigma 0.3), no stall
    s = timer.StepStats("loader")
    for _ in range(5000):
        s.step_done(0.05 * rnd.lognormvariate(0, 0.3), 0.0)
    assert s.summary()["stall_count"] <= 3


def test_each_epoch_and_each_stall_is_kept_apart() -> None:
    """Issue 41: one row per epoch (the loader wrapped again) for a cold first epoch, and each stall's length beside
    its end for naming the gap; both bounded however long the run."""
    s = timer.StepStats("loader")
    s.new_epoch()
    for _ in range(20):
        s.step_done(0.030, 0.020)  # the first epoch: reads from the disk
    s.new_epoch()
    for _ in range(20):
        s.step_done(0.010, 0.001)
    s.step_done(1.0, 0.001)  # a save inside a step
    d = s.summary()
    assert [r[0] for r in d["epochs"]] == [20, 21] and d["epoch_count"] == 2
    assert abs(d["epochs"][0][1] - 0.6) < 1e-6 and abs(d["epochs"][0][2] - 0.4) < 1e-6
    assert d["stall_count"] == 1 and d["stall_each_s"] == [0.999] and len(d["stall_at"]) == 1
    for _ in range(timer.EPOCHS_KEPT + 10):
        s.new_epoch()
        s.step_done(0.010, 0.001)
    d = s.summary()
    assert len(d["epochs"]) == timer.EPOCHS_KEPT and d["epoch_count"] == timer.EPOCHS_KEPT + 12
