"""What `envdoctor watch` costs: the sampler's own CPU time next to the watched process's, in the same run.

    python scripts/bench_watch_overhead.py [--seconds 20] [--interval 0.5] [--workers 2]

A stand-in training process (a busy loop with ``--workers`` forked children, like a DataLoader's) runs while the
watch's readers (NVML where there is one, the process tree, the host's CPU/disk/memory counters) sample it every
``--interval`` for ``--seconds`` in this process. Printed: the sampler's CPU time as a share of one core and as a
ratio to the watched tree's CPU time over the same window, the cost of one tick, and the step timer's cost per
step against a bare loop over the same iterable (interleaved rounds, best of each).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORKLOAD = """
import multiprocessing as mp, time, sys
def spin(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
if __name__ == '__main__':
    seconds, workers = float(sys.argv[1]), int(sys.argv[2])
    ctx = mp.get_context('fork')
    ps = [ctx.Process(target=spin, args=(seconds,)) for _ in range(workers)]
    [p.start() for p in ps]
    spin(seconds)
    [p.join() for p in ps]
"""


def tree_cpu(pid: int) -> float:
    import psutil

    total = 0.0
    try:
        root = psutil.Process(pid)
        for p in [root] + root.children(recursive=True):
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


def sampler_cost(seconds: float, interval: float, workers: int) -> None:
    from envdoctor.watch.record import Recorder
    from envdoctor.watch.sample import GpuReader, HostReader, ProcessTree, Unseen

    child = subprocess.Popen([sys.executable, "-c", WORKLOAD, str(seconds + 3), str(workers)])
    try:
        time.sleep(1.0)  # the workers are up
        unseen = Unseen()
        gpu, host, tree = GpuReader(unseen), HostReader(unseen, [os.getcwd()]), ProcessTree(unseen, child.pid)
        rec = Recorder()
        watched0, own0, wall0 = tree_cpu(child.pid), time.process_time(), time.monotonic()
        ticks = 0
        tick_cpu = []
        while time.monotonic() - wall0 < seconds:
            t = time.monotonic()
            c = time.process_time()
            gpus = gpu.read()
            sample = {"t_s": t - wall0, "gpus": gpus, "host": host.read(),
                      "procs": tree.read({p for g in gpus for p in (g.get("pids") or [])})}
            rec.add(sample)
            tick_cpu.append(time.process_time() - c)
            ticks += 1
            tree.wait_until(t + interval)  # as the watch waits: the main thread's state sampled meanwhile
        own = time.process_time() - own0
        watched = tree_cpu(child.pid) - watched0
        wall = time.monotonic() - wall0
        gpu.close()
    finally:
        child.kill()
        child.wait()
    tick_cpu.sort()
    print(f"sampler: {ticks} ticks at {interval:g} s over {wall:.1f} s; what it saw: "
          + ("; ".join(unseen.lines) if unseen.lines else "everything"))
    print(f"  sampler CPU        {own:.3f} s = {100 * own / wall:.2f}% of one core")
    print(f"  watched tree CPU   {watched:.3f} s = {100 * watched / wall:.1f}% of one core "
          f"({1 + workers} processes)")
    print(f"  ratio sampler / watched = {own / watched:.4f}" if watched > 0 else "  watched tree used no CPU")
    print(f"  one tick: p50 {1000 * tick_cpu[len(tick_cpu) // 2]:.2f} ms CPU, max {1000 * tick_cpu[-1]:.2f} ms")


def timer_cost(n: int, rounds: int = 5) -> None:
    from envdoctor.watch import timer

    os.environ["ENVDOCTOR_WATCH_DIR"] = "/nonexistent-envdoctor-bench"  # no watch: flushes find no directory
    data = list(range(n))
    bare, timed = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        for _x in data:
            pass
        bare.append(time.perf_counter() - t)
        t = time.perf_counter()
        for _x in timer.timed(data, name="bench"):
            pass
        timed.append(time.perf_counter() - t)
    timer._reporter().loops.clear()  # no summary at exit
    b, w = min(bare), min(timed)
    print(f"step timer: {n} steps, bare loop {1e9 * b / n:.0f} ns/step, timed() {1e9 * w / n:.0f} ns/step: "
          f"{1e6 * (w - b) / n:.2f} us added per step (ratio {w / b:.1f}x of an empty loop body)")


def epochs_cost(steps: int, epoch_counts: list, watch: bool) -> None:
    """The timer's cost per step when the same total of steps is split into more and more epochs, each one
    re-wrapping the loader in timed() (as `for epoch ...: for batch in timed(loader)` does), against the bare
    loop over the same epochs, in this run. Flat across the epoch counts is the goal: a cost that grows with
    the number of epochs is a cost that grows with the run."""
    import shutil
    import tempfile

    from envdoctor.watch import timer

    d = tempfile.mkdtemp(prefix="envdoctor-bench-") if watch else "/nonexistent-envdoctor-bench"
    os.environ["ENVDOCTOR_WATCH_DIR"] = d
    timer._REPORTER = None
    print(f"step timer over {steps} steps split into epochs ({'a watch directory present' if watch else 'no watch'}):")
    base = None
    for epochs in epoch_counts:
        loader = list(range(max(1, steps // epochs)))
        bare, timed = [], []
        for _ in range(3):
            t = time.perf_counter()
            for _e in range(epochs):
                for _x in loader:
                    pass
            bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            for _e in range(epochs):
                for _x in timer.timed(loader, name="bench"):
                    pass
            timed.append(time.perf_counter() - t)
        n = epochs * len(loader)
        added = 1e6 * (min(timed) - min(bare)) / n
        base = base if base is not None else added
        print(f"  {epochs:>6} epochs of {len(loader):>6} steps: {added:6.2f} us added per step "
              f"({added / base if base else float('nan'):.2f}x the 1-epoch figure)")
        timer._reporter().loops.clear()
        getattr(timer._reporter(), "by_key", {}).clear()  # (older timers kept no such map)
    if watch:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200000)
    ap.add_argument("--epochs", type=lambda t: [int(x) for x in t.split(",")], default=None, metavar="N,N,...",
                    help="only the timer across epoch counts (e.g. 1,100,3125), with and without a watch directory")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    if a.epochs:
        epochs_cost(a.steps, a.epochs, watch=False)
        epochs_cost(a.steps, a.epochs, watch=True)
        return 0
    sampler_cost(a.seconds, a.interval, a.workers)
    timer_cost(a.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
