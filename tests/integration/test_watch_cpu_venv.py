"""`envdoctor watch` on a real CPU training loop (torch 2.13.0 CPU venv): the DataLoader's worker count read
from the process tree, and the step timer's data-wait fraction (issue 21, "Done when")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from envdoctor.checks._watch import WAIT_INPUT
from tests.paths import REPO

pytestmark = pytest.mark.slow

TRAIN = """
import os, time, warnings
warnings.simplefilter("ignore")
import torch
from torch.utils.data import DataLoader, Dataset

READ = os.environ.get("READ")  # a file read with O_DIRECT, 8 MiB at random offsets: the page cache never helps
CHUNK = 8 << 20

class DS(Dataset):
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        if SLEEP:
            time.sleep(SLEEP)
        if WMATMUL:  # numerical work on torch's intra-op threads (the worker's own pool: WORKER_THREADS)
            torch.mm(torch.ones(WMATMUL, WMATMUL), torch.ones(WMATMUL, WMATMUL))
        if BURN:  # decoding and augmentation stand-in: pure-Python work on the worker's own core
            acc = 0
            for k in range(BURN):
                acc += k * k % 7
        if READ:
            import mmap, random
            if not hasattr(self, "fd"):
                self.fd = os.open(READ, os.O_RDONLY | os.O_DIRECT)
                self.buf = mmap.mmap(-1, CHUNK)
                self.blocks = os.fstat(self.fd).st_size // CHUNK
            os.preadv(self.fd, [self.buf], random.randrange(self.blocks) * CHUNK)
        return torch.randn(32), torch.randint(0, 4, ())

WORKERS, SLEEP, TIMED = int(os.environ["WORKERS"]), float(os.environ["SLEEP"]), os.environ["TIMED"] == "1"
BURN = int(os.environ.get("BURN", "0"))  # loop iterations per sample
THREADS = int(os.environ.get("THREADS", "0"))  # torch.set_num_threads in the training process
WIDTH = int(os.environ.get("WIDTH", "64"))  # the hidden layer
MATMUL = int(os.environ.get("MATMUL", "0"))  # an N x N matmul in each step: torch runs it on its intra-op threads
WMATMUL = int(os.environ.get("WMATMUL", "0"))  # an N x N matmul for each sample, in the loader workers
WORKER_THREADS = int(os.environ.get("WORKER_THREADS", "0"))  # torch.set_num_threads in each worker (torch sets 1)
if THREADS:
    torch.set_num_threads(THREADS)
model = torch.nn.Sequential(torch.nn.Linear(32, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 4))
loader = DataLoader(DS(), batch_size=16, num_workers=WORKERS,
                    worker_init_fn=(lambda _: torch.set_num_threads(WORKER_THREADS)) if WORKER_THREADS else None)
if TIMED:
    from envdoctor.watch import timed
    loader = timed(loader)
CKPT = os.environ.get("CKPT")
BLOB = torch.zeros(96 << 20, dtype=torch.uint8) if CKPT else None  # 96 MiB saved with each checkpoint
step = 0
end = time.monotonic() + float(os.environ.get("SECONDS_", "3"))  # then exit: watch ends with it
for x, y in loader:
    if MATMUL:
        torch.mm(torch.ones(MATMUL, MATMUL), torch.ones(MATMUL, MATMUL))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
    if CKPT and step % 50 == 49:  # a checkpoint save in the loop, written through to the disk
        with open(CKPT, "wb") as fh:
            torch.save({"model": model.state_dict(), "blob": BLOB}, fh)
            fh.flush()
            os.fsync(fh.fileno())
    step += 1
    if time.monotonic() > end:
        break
"""


def _watch(venv, tmp_path, workers: int, sleep: float = 0.0, timed: bool = False, read=None, seconds: float = 3.0,
           ckpt=None, **extra: int):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    # the training process imports envdoctor.watch (timed) from this checkout
    env = dict(os.environ, WORKERS=str(workers), SLEEP=str(sleep), TIMED="1" if timed else "0",
               PYTHONPATH=str(REPO), NO_COLOR="1", SECONDS_=str(seconds), **{k.upper(): str(v) for k, v in extra.items()})
    data = []
    if ckpt is not None:
        env["CKPT"] = str(ckpt)
        data = ["--data", str(ckpt.parent)]
    if read is not None:
        env["READ"] = str(read)
        data = ["--data", str(read.parent)]
    p = subprocess.run([sys.executable, "-m", "envdoctor", "watch", "--duration", "90", "--format", "json", *data,
                        "--", venv.python, str(script)], capture_output=True, text=True, env=env, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    return out["facts"]["watch"], {(f.get("about") or f["category"]): f for f in out["findings"]}, \
        {c["id"]: c for c in out["checks"]}


def test_num_workers_0_whose_steps_wait_is_dataloader_in_main_process(cpu_venv, tmp_path):
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=0, sleep=0.01, timed=True)
    assert w["summary"]["dataloader_workers"] == 0 and w["summary"]["processes"]["torch_seen"]
    f = findings["DATALOADER_IN_MAIN_PROCESS"]
    assert f["severity"] == "warning" and "num_workers=" in f["fix"]["commands"][0]
    # no GPU here: the GPU-side verdicts say why they cannot judge rather than guess
    assert checks["watch.idle-gpu"]["status"] == "skipped" and "NVML" in checks["watch.idle-gpu"]["reason"]


def test_num_workers_0_without_timer_or_gpu_is_judged_from_the_process_state(cpu_venv, tmp_path):
    """Loading in the main process, with neither a step timer nor a GPU to show whether the steps wait for it:
    the training process's own state says it (issue 41): its main thread busy nearly all the time on about one
    core is the loading and the step taking turns. No worker count is proposed from that alone (how much of it is
    loading only the timer can say); a process not that busy is not judged."""
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=0)
    assert w["summary"]["dataloader_workers"] == 0
    main = w["summary"]["processes"].get("main") or {}
    busy = (main.get("share") or {}).get("running", 0.0) >= 0.8 and (main.get("cpu_pct_p50") or 0.0) <= 150
    assert ("DATALOADER_IN_MAIN_PROCESS" in findings) == busy, (main, findings.keys())
    if busy:
        f = findings["DATALOADER_IN_MAIN_PROCESS"]
        assert f["code"] == "watch.dataloader/main-process" and f["confidence"] in ("medium", "low")
        assert "num_workers=" not in " ".join(f["fix"].get("commands") or []) + f["fix"]["summary"].replace(
            "num_workers >= 1", "")
    else:
        assert checks["watch.dataloader"]["status"] == "skipped"
        # not judged, with the reason that held: the process state could not say it, or (a loaded box, where the
        # import itself took most of the run) too little of the recording had torch loaded to say anything
        reason = checks["watch.dataloader"]["reason"]
        assert "whether the steps wait" in reason or "too short to say" in reason, reason


def test_num_workers_0_whose_input_keeps_up_is_no_warning(cpu_venv, tmp_path):
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=0, timed=True)
    # how much of a tiny step the main process's loading takes depends on the machine: the rule is what is tested
    waits = w["summary"]["data_wait_fraction"] >= 0.2
    assert ("DATALOADER_IN_MAIN_PROCESS" in findings) == waits, (w["summary"]["data_wait_fraction"], findings)
    assert checks["watch.dataloader"]["status"] == ("failed" if waits else "passed")


@pytest.mark.parametrize("timed", [False, True], ids=["no-timer", "timer"])
def test_workers_on_o_direct_reads_are_storage_bound(cpu_venv, tmp_path, timed):
    big = tmp_path / "data" / "shard.bin"
    big.parent.mkdir()
    with open(big, "wb") as fh:  # 256 MiB, real blocks on the disk (not a sparse file)
        chunk = os.urandom(1 << 20)
        for _ in range(256):
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    w, findings, _ = _watch(cpu_venv, tmp_path, workers=2, timed=timed, read=big, seconds=6.0)
    verdict = [f for f in findings.values() if f["code"].startswith("watch.bottleneck/")]
    blocked = (w["summary"].get("processes") or {}).get("worker_disk_sleep_share")
    assert blocked is not None, w["summary"].get("processes")  # the workers' states were read
    wait = w["summary"].get("data_wait_fraction")
    # with the timer, the step's own wait decides whether the input limits it: workers blocked in reads while
    # the batches still arrive in time (a loaded box slows the step as much) are no storage bottleneck
    keeps_up = timed and wait is not None and wait < WAIT_INPUT
    if blocked >= 0.5 and not keeps_up:  # the workers wait on their reads (a fast enough disk: they would not)
        assert [f["category"] for f in verdict] == ["INPUT_STORAGE_BOUND"], (verdict, w["summary"].get("disks"),
                                                                              w["summary"].get("processes"))
    elif keeps_up:
        assert "INPUT_STORAGE_BOUND" not in [f["category"] for f in verdict], (verdict, wait)
    else:
        assert "INPUT_STORAGE_BOUND" not in [f["category"] for f in verdict] or w["summary"].get("disks"), verdict


def test_num_workers_2_has_two_workers_and_no_such_finding(cpu_venv, tmp_path):
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=2)
    assert w["summary"]["dataloader_workers"] == 2
    assert "DATALOADER_IN_MAIN_PROCESS" not in findings and checks["watch.dataloader"]["status"] == "passed"


def test_timed_loader_on_a_sleeping_dataset_is_input_bound(cpu_venv, tmp_path):
    w, findings, _ = _watch(cpu_venv, tmp_path, workers=0, sleep=0.02, timed=True)
    s = w["summary"]
    assert s["step_count"] >= 3 and s["data_wait_fraction"] > 0.5
    verdict = [f for f in findings.values() if f["code"].startswith("watch.bottleneck/")]
    assert len(verdict) == 1 and verdict[0]["category"].startswith("INPUT_"), verdict
    assert "wait for their batch" in verdict[0]["summary"]


def test_checkpoint_saves_in_the_loop_are_checkpoint_stalls(cpu_venv, tmp_path):
    ckpt = tmp_path / "ckpt" / "last.pt"
    ckpt.parent.mkdir()
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=2, timed=True, ckpt=ckpt, seconds=8.0)
    s = w["summary"]
    assert "step_stall_count" in s, s  # the timer counted (a fast disk may save in under the 0.5 s a stall needs)
    if (s.get("step_stall_fraction") or 0) >= 0.1:
        f = findings["CHECKPOINT_STALL"]
        assert f["code"] in ("watch.stalls/checkpoint", "watch.stalls/stall"), f
        assert "stopped" in f["summary"]
    else:
        assert "CHECKPOINT_STALL" not in findings and checks["watch.stalls"]["status"] == "passed", s


@pytest.mark.parametrize("timed", [False, True], ids=["no-timer", "timer"])
def test_workers_that_burn_cpu_are_cpu_bound(cpu_venv, tmp_path, timed):
    """__getitem__ computes (a pure-Python loop per sample): the workers are runnable (state R) whether they get
    a core or another tenant of this shared box holds it, and that, not their share of a core, makes the verdict
    INPUT_CPU_BOUND (it was INPUT_BOUND, 'other processes hold them', when the workers got 24% of a core each)."""
    w, findings, _ = _watch(cpu_venv, tmp_path, workers=2, timed=timed, seconds=6.0, burn=200000)
    p = w["summary"].get("processes") or {}
    verdict = [f["category"] for f in findings.values() if f["code"].startswith("watch.bottleneck/")]
    running = p.get("worker_running_share")
    assert running is not None and p.get("workers_max") == 2, p  # the workers' states were read
    # computing workers are runnable however few cycles they get; none of them waits on a read
    assert running >= 0.5 and (p.get("worker_disk_sleep_share") or 0) < 0.5, p
    wait = w["summary"].get("data_wait_fraction")
    if timed and wait is not None and wait < WAIT_INPUT:
        # the step timer measured steps that hardly waited for their batch (a loaded machine slowed the step as
        # much as the workers; seen: 0.185 at load 10 on 2 cores): by the rule the input keeps up
        assert "INPUT_CPU_BOUND" not in verdict, (verdict, p, wait)
    else:
        assert verdict == ["INPUT_CPU_BOUND"], (verdict, p, wait)
    if timed:
        assert w["summary"]["step_count"] >= 1


@pytest.mark.parametrize("timed", [False, True], ids=["no-timer", "timer"])
def test_workers_with_torch_thread_pools_are_oversubscribed(cpu_venv, tmp_path, timed):
    """Two workers, each with a torch pool of 4 threads per CPU this run may use, computing matmuls for every
    sample: the workers are the loop's limit, so they compute nearly all the time and their pools want 8 x the
    cores. CPU_STARVED exactly when the run's own runnable threads (state R, p50 while the workers live) reach
    1.5 x the CPUs. How many of the pools' threads the machine ran at once is the machine's (a loaded 2-core CI box
    ran 2.0 runnable against 2 CPUs): the test asserts the rule on what was measured, not the measurement."""
    pool = min(64, 4 * len(os.sched_getaffinity(0)))
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=2, timed=timed, seconds=6.0, worker_threads=pool,
                                 wmatmul=384)
    p = w["summary"].get("processes") or {}
    own, cpus = p.get("threads_running_p50"), w["cpu_available"]
    assert own is not None and cpus, p
    assert own > 0, (own, cpus, p)  # the computing workers were seen runnable
    assert ("CPU_STARVED" in findings) == (own >= 1.5 * cpus), (own, cpus, findings.get("CPU_STARVED"))
    assert checks["watch.oversubscribed"]["status"] == ("failed" if own >= 1.5 * cpus else "passed")
    if "CPU_STARVED" in findings:
        assert findings["CPU_STARVED"]["evidence"][0]["path"] == "watch.summary.processes.threads_running_p50"
