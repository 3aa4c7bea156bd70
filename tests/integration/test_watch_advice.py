"""Advice about threads that `envdoctor watch` prints, followed on a real CPU training loop (torch CPU venv) on
this box: the run is not slower for it (issue 41, "Done when": "for each advice you print about workers or
threads, a test on a real loop shows that following it does not make the run slower on that box, or the advice is
not given there"). The loop is run as given and as advised, alternating, and their steps per second compared;
never seconds: the box is a loaded 2-core machine shared with other jobs."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.slow

MATMUL = "768"  # the step's matmul: most of the step, so the pool's threads are runnable most of the time

# a training process whose intra-op pool is far wider than the cores (torch.set_num_threads from a config written
# for a bigger machine: torch 2.13 caps OMP_NUM_THREADS alone at the cores), a matmul of each step spread over it;
# STEPS steps timed after WARM, steps per second printed
LOOP = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import torch
from torch.utils.data import DataLoader, Dataset
E = os.environ
N, STEPS, WARM, SECONDS = int(E["MATMUL"]), int(E.get("STEPS", "0")), 5, float(E.get("SECONDS_", "0"))
torch.set_num_threads(int(E["THREADS"]))
class DS(Dataset):
    def __len__(self):
        return 10 ** 6
    def __getitem__(self, i):
        return torch.randn(32), torch.randint(0, 4, ())
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
loader = DataLoader(DS(), batch_size=16, num_workers=0)
w = torch.randn(N, N) / N ** 0.5
t0, end = None, time.monotonic() + SECONDS
for step, (x, y) in enumerate(loader):
    if step == WARM:
        t0 = time.perf_counter()
    h = torch.tanh(torch.mm(torch.randn(N, N), w))  # the step's numerical work, on torch's intra-op threads
    loss = torch.nn.functional.cross_entropy(model(x), y) + 0 * h.mean()
    model.zero_grad()
    loss.backward()
    if STEPS and step == WARM + STEPS:
        print(json.dumps({"steps_per_s": STEPS / (time.perf_counter() - t0), "threads": torch.get_num_threads()}))
        break
    if SECONDS and time.monotonic() > end:
        break
"""


def _env(threads: str, **extra: str) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", **extra)
    for k in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # only the advice's variable decides the pool
        env.pop(k, None)
    env["OMP_NUM_THREADS"] = env["THREADS"] = threads  # the advice's two forms: the variable, set_num_threads
    return env


def _rate(python: str, script: Path, threads: str, steps: int) -> float:
    p = subprocess.run([python, str(script)], capture_output=True, text=True, timeout=600,
                       env=_env(threads, MATMUL=MATMUL, STEPS=str(steps)))
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["threads"] == int(threads), got  # the pool is the one asked for
    return float(got["steps_per_s"])


def _advice(python: str, script: Path, threads: str) -> Tuple[List[str], str]:
    """The loop as given under `envdoctor watch`: the OMP_NUM_THREADS values its fixes propose ([] if none), and
    what watch.oversubscribed said (its status, its fix)."""
    argv = [sys.executable, "-m", "envdoctor", "watch", "--duration", "90", "--format", "json", "--", python,
            str(script)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=str(REPO),
                       env=_env(threads, MATMUL=MATMUL, SECONDS_="10"))
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    cmds = " ".join(c for f in out["findings"] for c in (f.get("fix") or {}).get("commands") or [])
    said = [f"{c['status']}" + "".join(f": {f['summary']} / {f['fix']['summary']}" for f in c["findings"])
            for c in out["checks"] if c["id"] == "watch.oversubscribed"]
    return re.findall(r"OMP_NUM_THREADS=(\d+)", cmds), " ".join(said)


def test_following_the_oversubscription_advice_does_not_slow_the_run(cpu_venv, tmp_path):
    """The pool as given: 8 threads per core this run may use. watch.oversubscribed proposes OMP_NUM_THREADS=k
    (or torch.set_num_threads(k)); the loop run with both makes at least 0.9x the steps per second it made as given (medians of 3 runs each,
    alternating, 40 steps each after 5 of warm-up). Where the watch proposes no thread count, there is nothing to
    follow (on a box where other processes' threads wait for the same cores the count is withheld: there a
    narrower pool cedes the cores, 0.19-0.31x as fast measured at load 5), and the test says so rather than time
    anything."""
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    given = str(8 * len(os.sched_getaffinity(0)))
    advised, said = _advice(cpu_venv.python, script, given)
    if not advised:  # no oversubscription seen, or other tenants wait for the same cores (then it is withheld)
        pytest.skip(f"watch proposed no OMP_NUM_THREADS for a pool of {given} threads on this box, nothing to "
                    f"follow (watch.oversubscribed {said})")
    k = advised[0]
    assert int(k) < int(given), (k, given)  # the advice narrows the pool
    before: List[float] = []
    after: List[float] = []
    for _ in range(3):  # alternating: a change in the box's load falls on both
        before.append(_rate(cpu_venv.python, script, given, 40))
        after.append(_rate(cpu_venv.python, script, k, 40))
    ratio = statistics.median(after) / statistics.median(before)
    assert ratio >= 0.9, (f"OMP_NUM_THREADS={k} made {ratio:.2f}x the steps/s of {given} threads", before, after)
