"""`envdoctor watch` on real CPU training loops (torch CPU venv), each named right with and without the step
timer (issue 41, "Done when"): main-process loading, checkpoint saves of a few steps each, fsync'd logging every
step, a periodic evaluation pass, a cold first epoch, a CPU quota on the run (a cgroup the test makes; skipped
with the reason where it cannot), another process taking the CPUs. The tests assert verdict codes and
categories, never seconds: the box is a loaded 2-core machine shared with other jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.slow

TRAIN = r"""
import os, random, sys, time, warnings
warnings.simplefilter("ignore")
import torch
from torch.utils.data import DataLoader, Dataset

E = os.environ
WORKERS, TIMED, SECONDS = int(E.get("WORKERS", "0")), E.get("TIMED") == "1", float(E.get("SECONDS_", "4"))
BURN = int(E.get("BURN", "0"))  # pure-Python work per sample: decoding in the training process
COLD = E.get("COLD")  # a file read 4 random 16 KiB blocks per sample, dropped from the page cache at the start
CKPT, CKPT_EVERY = E.get("CKPT"), int(E.get("CKPT_EVERY", "0"))
LOG = E.get("LOG")  # a log line per step, flushed and fsync'd
EVAL_EVERY = int(E.get("EVAL_EVERY", "0"))
EVAL_EVERY_S = float(E.get("EVAL_EVERY_S", "0"))  # or after this many seconds of training, whatever the box's speed
EVAL_S = float(E.get("EVAL_S", "0.4"))  # each evaluation pass computes this long
SLEEP_EVERY = int(E.get("SLEEP_EVERY", "0"))
LEN = int(E.get("LEN", "1024"))
torch.set_num_threads(1)
if E.get("QUOTA_CGROUP"):  # the loop (not the import before it) runs under a CPU quota
    with open(os.path.join(E["QUOTA_CGROUP"], "cgroup.procs"), "w") as fh:
        fh.write(str(os.getpid()))

class DS(Dataset):
    def __len__(self):
        return LEN
    def __getitem__(self, i):
        if BURN:
            acc = 0
            for k in range(BURN):
                acc += k * k % 7
        if COLD:
            if not hasattr(self, "fd"):
                self.fd = os.open(COLD, os.O_RDONLY)
                os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)
            rnd = random.Random(i)
            for _ in range(4):
                os.pread(self.fd, 16384, rnd.randrange(4096) * 16384)
        return torch.randn(32), torch.randint(0, 4, ())

if COLD:  # the first epoch reads from the disk, the next ones from the page cache
    fd = os.open(COLD, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
loader = DataLoader(DS(), batch_size=16, num_workers=WORKERS, shuffle=False)
if TIMED:
    from envdoctor.watch import timed
BLOB = torch.zeros(64 << 20, dtype=torch.uint8) if CKPT else None
log = open(LOG, "a") if LOG else None
step, end = 0, time.monotonic() + SECONDS
trained_since = time.monotonic()
while time.monotonic() < end:
    for x, y in (timed(loader) if TIMED else loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
        step += 1
        if log is not None:
            log.write(f"step {step} loss {loss.item():.4f}\n")
            log.flush()
            os.fsync(log.fileno())
        if CKPT_EVERY and step % CKPT_EVERY == 0:
            with open(CKPT, "wb") as fh:
                torch.save({"model": model.state_dict(), "blob": BLOB}, fh)
                fh.flush()
                os.fsync(fh.fileno())
        due = EVAL_EVERY_S and time.monotonic() - trained_since >= EVAL_EVERY_S
        if (EVAL_EVERY and step % EVAL_EVERY == 0) or due:
            with torch.no_grad():  # an evaluation pass: forward only, in the loop, no reads or writes
                t = time.monotonic()
                a = torch.ones(160, 160)
                while time.monotonic() - t < EVAL_S:
                    a = torch.tanh(a @ a)
            trained_since = time.monotonic()
        if SLEEP_EVERY and step % SLEEP_EVERY == 0:
            time.sleep(0.4)
        if time.monotonic() > end:
            break
"""


def _watch(venv, tmp_path: Path, timed: bool, seconds: float = 4.0, prefix: Optional[List[str]] = None,
           **env_extra: str):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    env = dict(os.environ, TIMED="1" if timed else "0", PYTHONPATH=str(REPO), NO_COLOR="1", SECONDS_=str(seconds),
               **{k.upper(): str(v) for k, v in env_extra.items()})
    argv = [sys.executable, "-m", "envdoctor", "watch", "--duration", "120", "--format", "json", "--",
            venv.python, str(script)]
    p = subprocess.run((prefix or []) + argv, capture_output=True, text=True, env=env, timeout=240, cwd=str(REPO))
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    findings: Dict[str, dict] = {}
    for f in out["findings"]:  # one per category; the watch_main and watch.stalls verdicts first where two share one
        key = f.get("about") or f["category"]
        if key not in findings or f["code"].startswith(("watch.cpu-share/", "watch.main-process/", "watch.stalls/")):
            findings[key] = f
    return out["facts"]["watch"], findings, {c["id"]: c for c in out["checks"]}


def _codes(findings) -> List[str]:
    return sorted(f["code"] for f in findings.values())


TIMER = pytest.mark.parametrize("timed", [False, True], ids=["no-timer", "timer"])


def _contended(w, findings) -> bool:
    """Whether the box was so busy that the training process spent at least CPU_WAIT_SHARE of its time ready to
    run without a core (measured by watch from schedstat); then that is what held the run back, and the report
    must say so: CPU_CONTENDED, other processes named. Seen on clean-clone CI runs at load 4-10 on 2 cores, where
    a loop's fsyncs or pauses were a small part of its time: the test asserts the rule on what was measured, not
    what the machine happened to do (issue 40)."""
    from envdoctor.checks._watch_cpu import CPU_WAIT_SHARE

    main = w["summary"]["processes"].get("main") or {}
    if (main.get("cpu_wait_share") or 0) < CPU_WAIT_SHARE:
        return False
    f = findings.get("CPU_CONTENDED")
    assert f is not None and f["code"] == "watch.cpu-share/other-processes", (_codes(findings), main)
    assert "CHECKPOINT_STALL" not in findings, _codes(findings)
    return True


def _starved(w, findings) -> bool:
    """Whether the training process waited for a core at least CPU_WAIT_SHARE of its time while its loader workers
    were CPU-bound: then the lulls that name an evaluation pass need not exist (starved workers never fill their
    queue) or are the box's time, not the pass's, and the report must say what held the run back instead: the CPU,
    taken by other processes (INPUT_CPU_BOUND naming them, or CPU_CONTENDED), never a checkpoint or a pause. Seen on
    a clean-clone CI run at load 6-11 on 2 cores (the process waited 60% of its time, ran 10%); at load 5-6 the pass
    was named in 5 of 5 runs, which the branch below then asserts."""
    from envdoctor.checks._watch_cpu import CPU_WAIT_SHARE

    main = w["summary"]["processes"].get("main") or {}
    if (main.get("cpu_wait_share") or 0) < CPU_WAIT_SHARE or "EVALUATION_STALL" in findings:
        return False
    cpu = findings.get("CPU_CONTENDED") or findings.get("INPUT_CPU_BOUND")
    assert cpu is not None and (cpu["code"] == "watch.cpu-share/other-processes"
                                or "other processes" in cpu["summary"]), (_codes(findings), main)
    for wrong in ("CHECKPOINT_STALL", "LOOP_PAUSED"):
        assert wrong not in findings, (wrong, _codes(findings))
    return True


@TIMER
def test_loading_in_the_training_process_is_named(cpu_venv, tmp_path, timed):
    w, findings, _ = _watch(cpu_venv, tmp_path, timed, workers=0, burn=20000)
    assert w["summary"]["dataloader_workers"] == 0
    f = findings.get("DATALOADER_IN_MAIN_PROCESS")
    assert f is not None and f["code"] == "watch.dataloader/main-process", (_codes(findings), w["summary"])
    main = w["summary"]["processes"]["main"]
    assert main["share"]["running"] >= 0.5, main  # the process's own state was sampled
    if not timed:  # from its own state alone: no worker count without knowing loading's share of the step
        assert not any("num_workers=" in c for c in f["fix"]["commands"]), f["fix"]


@TIMER
def test_checkpoint_saves_are_named_checkpoints(cpu_venv, tmp_path, timed):
    ckpt = tmp_path / "last.pt"
    w, findings, _ = _watch(cpu_venv, tmp_path, timed, seconds=5.0, workers=0, ckpt=str(ckpt), ckpt_every=150)
    f = findings.get("CHECKPOINT_STALL")
    assert f is not None and f["code"] == "watch.stalls/checkpoint", (_codes(findings), w["summary"])
    assert "LOOP_PAUSED" not in findings and "EVALUATION_STALL" not in findings, _codes(findings)


@TIMER
def test_fsynced_logging_every_step_is_the_loop_waiting_on_its_writes(cpu_venv, tmp_path, timed):
    from envdoctor.checks.watch_main import DISK_SHARE, SYNC_WRITE_TICKS

    w, findings, _ = _watch(cpu_venv, tmp_path, timed, workers=0, log=str(tmp_path / "train.log"))
    main = w["summary"]["processes"].get("main") or {}
    if not _contended(w, findings):
        sw = main.get("synced_writes") or {}
        # the sampler saw the loop's synced writes in most of its samples, whatever the disk
        assert sw.get("tick_share", 0.0) >= SYNC_WRITE_TICKS, (_codes(findings), main)
        f = findings.get("LOOP_WAITS_ON_WRITES")
        if (sw.get("disk_share") or 0.0) >= DISK_SHARE:  # they cost it time in state D: named
            assert f is not None and f["code"] == "watch.main-process/sync-writes", (_codes(findings), main)
        else:  # a disk that acknowledged them at once (measured idle: 0.09-0.26 of the time in D, and under
            # DISK_SHARE in one clean-clone CI run) cost the loop nothing worth a word: not named
            assert f is None, (_codes(findings), main)
    assert "CHECKPOINT_STALL" not in findings, _codes(findings)


@TIMER
def test_a_periodic_evaluation_pass(cpu_venv, tmp_path, timed):
    w, findings, checks = _watch(cpu_venv, tmp_path, timed, seconds=5.0, workers=0, eval_every=150)
    if timed:  # the timer sees the steps stop; the process computed meanwhile, without reads or writes
        f = findings.get("EVALUATION_STALL")
        assert f is not None and f["code"] == "watch.stalls/evaluation", (_codes(findings), w["summary"])
    else:  # without the timer and with the loading in the training process, a pass of computing looks like the
        # training's own computing to /proc: the report says it cannot tell, rather than pass or guess
        assert checks["watch.stalls"]["status"] == "skipped" and "unknown" in checks["watch.stalls"]["reason"], \
            checks["watch.stalls"]
    # it is not named anything it is not (no checkpoint, no pause, no writes)
    for wrong in ("CHECKPOINT_STALL", "LOOP_PAUSED", "LOOP_WAITS_ON_WRITES"):
        assert wrong not in findings, (wrong, _codes(findings))


def test_an_evaluation_pass_without_the_timer_is_named_from_the_idle_loader_workers(cpu_venv, tmp_path):
    """Two workers that decode (a pure-Python loop per sample) feed the loop; after every 2 s of training it
    evaluates for 2 s in the training process. No timer, no GPU: the workers stand idle (their prefetch queue full)
    while the training process computes, which names the pass an evaluation, not a checkpoint or a pause. The passes
    come by the clock, not every N steps: on a loaded box the steps slow down 3-5 times, and a pass every 60 steps
    then came once or twice in the run with the workers' lulls at the detector's least (two ticks), while on an idle
    box the passes filled the run and the workers worked in too few ticks to tell a lull (missed on clean-clone CI
    runs, 2 of 6). Measured with this shape: named in 3 of 3 runs idle, 4 of 4 beside four CPU burners and 3 of 3
    beside eight (load 10)."""
    w, findings, checks = _watch(cpu_venv, tmp_path, False, seconds=12.0, workers=2, burn=20000, eval_every_s=2.0,
                                 eval_s=2.0, len=4096)
    if _starved(w, findings):
        return
    f = findings.get("EVALUATION_STALL")
    assert f is not None and f["code"] == "watch.stalls/evaluation", \
        (_codes(findings), checks["watch.stalls"], w["summary"].get("processes"))
    for wrong in ("CHECKPOINT_STALL", "LOOP_PAUSED"):
        assert wrong not in findings, (wrong, _codes(findings))


@TIMER
def test_pauses_in_the_loop_are_named_pauses(cpu_venv, tmp_path, timed):
    w, findings, _ = _watch(cpu_venv, tmp_path, timed, seconds=5.0, workers=0, sleep_every=100)
    if _contended(w, findings):
        return
    got = findings.get("LOOP_PAUSED")
    assert got is not None and got["code"] in ("watch.stalls/pause", "watch.main-process/sleeps"), \
        (_codes(findings), w["summary"]["processes"].get("main"))
    assert "CHECKPOINT_STALL" not in findings and "EVALUATION_STALL" not in findings, _codes(findings)


@TIMER
def test_a_cold_first_epoch_is_reported_apart(cpu_venv, tmp_path, timed):
    data = tmp_path / "data.bin"
    with open(data, "wb") as fh:  # 64 MiB of real blocks (not sparse), on the disk before the run
        for _ in range(64):
            fh.write(os.urandom(1 << 20))
        fh.flush()
        os.fsync(fh.fileno())
    w, findings, _ = _watch(cpu_venv, tmp_path, timed, seconds=5.0, workers=0, cold=str(data), len=1024)
    f = findings.get("COLD_FIRST_EPOCH")
    want = "watch.phases/cold-first-epoch" if timed else "watch.phases/cold-start-reads"
    assert f is not None and f["code"] == want, (_codes(findings), w["summary"].get("step_loops_detail"),
                                                 w["summary"]["processes"].get("reads"))


CGROUP_V1 = Path("/sys/fs/cgroup/cpu")


def _quota_cgroup(tmp_path: Path, cpus: float) -> Path:
    """A cgroup with a CPU quota, v2 (cpu.max) or v1 (cpu.cfs_quota_us); skipped where this test cannot make it."""
    name = f"envdoctor-test-{os.getpid()}"
    v2 = Path("/sys/fs/cgroup")
    if (v2 / "cgroup.controllers").exists():
        d = v2 / name
        try:
            d.mkdir()
            (d / "cpu.max").write_text(f"{int(cpus * 100000)} 100000\n")
        except OSError as e:
            pytest.skip(f"cannot make a cgroup v2 with a CPU quota here ({e.strerror}): needs write access to "
                        "/sys/fs/cgroup with the cpu controller enabled")
        return d
    if not CGROUP_V1.is_dir():
        pytest.skip("no cgroup cpu controller mounted at /sys/fs/cgroup(/cpu)")
    d = CGROUP_V1 / name
    try:
        d.mkdir()
        (d / "cpu.cfs_period_us").write_text("100000\n")
        (d / "cpu.cfs_quota_us").write_text(f"{int(cpus * 100000)}\n")
    except OSError as e:
        pytest.skip(f"cannot make a cgroup v1 with a CPU quota here ({e.strerror}): needs root or a delegated "
                    "cgroup")
    return d


@TIMER
def test_a_cpu_quota_on_the_run_is_named(cpu_venv, tmp_path, timed):
    # a tenth of a CPU: on a shared box a process may get less than half a CPU anyway, and a quota it never
    # reaches throttles nothing (measured: 0 of 31 periods throttled at 0.5 CPUs, load 7 on 2 cores)
    d = _quota_cgroup(tmp_path, 0.1)
    try:
        w, findings, _ = _watch(cpu_venv, tmp_path, timed, seconds=4.0, workers=0, burn=5000, quota_cgroup=str(d))
    finally:
        try:
            d.rmdir()
        except OSError:
            pass
    got = [f for f in findings.values() if f["code"] == "watch.cpu-share/quota-throttled"]
    assert got and got[0]["category"] == "CPU_STARVED", \
        (_codes(findings), w["summary"]["processes"].get("cgroup_throttled_pct_p50"))
    assert w["summary"]["processes"]["cgroup_quota_cpus"] == 0.1
    # no loader worker proposed under a tenth of a CPU: it would take turns with the step on the same core
    loader = findings.get("DATALOADER_IN_MAIN_PROCESS")
    if loader is not None:
        cmds = " ".join(loader["fix"].get("commands") or [])
        assert "num_workers=0" in cmds or "num_workers=" not in cmds, loader["fix"]


@TIMER
def test_another_process_taking_the_cpus_is_named(cpu_venv, tmp_path, timed):
    n = 2 * len(os.sched_getaffinity(0)) + 2
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        w, findings, _ = _watch(cpu_venv, tmp_path, timed, workers=0)
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
    f = findings.get("CPU_CONTENDED")
    assert f is not None and f["code"] == "watch.cpu-share/other-processes", \
        (_codes(findings), w["summary"]["processes"].get("main"))
