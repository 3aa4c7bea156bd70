"""Advice about DataLoader workers that `envdoctor watch` prints, followed on a real CPU training loop (torch CPU
venv) on this box: the run is not slower for it (issue 41, "Done when": "for each advice you print about workers
or threads, a test on a real loop shows that following it does not make the run slower on that box, or the advice
is not given there"). A loop whose workers are too few for its input (pure-Python work per sample) runs under
watch with the step timer; the num_workers its fixes propose is then followed: the loop as given and as advised,
alternating, steps per second compared; never seconds: the box is a loaded 2-core machine shared with other jobs.
Where watch proposes no more workers than the loop has, its report must say why (the rule withheld it)."""

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

BURN = "20000"  # pure-Python loop iterations per sample: the loader's decode, CPU-bound
PAIRS, STEPS = 5, 80
MATMUL = "768"  # the step's own work (a matmul on one thread, about 0.6x of a batch's loading): a training step

# a training loop with WORKERS loader workers; SECONDS_ > 0: runs that long (under watch, with the step timer),
# else STEPS steps timed after WARM and steps per second printed
LOOP = r"""
import json, os, time, warnings
warnings.simplefilter("ignore")
import torch
from torch.utils.data import DataLoader, Dataset
E = os.environ
BURN, WORKERS, STEPS, WARM, N = int(E["BURN"]), int(E["WORKERS"]), int(E.get("STEPS", "0")), 5, int(E["MATMUL"])
SECONDS = float(E.get("SECONDS_", "0"))
torch.set_num_threads(1)
class DS(Dataset):
    def __len__(self):
        return 10 ** 6
    def __getitem__(self, i):
        acc = 0
        for k in range(BURN):
            acc += k * k % 7
        return torch.randn(32), torch.randint(0, 4, ())
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
loader = DataLoader(DS(), batch_size=16, num_workers=WORKERS)
w = torch.randn(N, N) / N ** 0.5
if SECONDS:
    from envdoctor.watch import timed
    loader = timed(loader)
t0, end = None, time.monotonic() + SECONDS
for step, (x, y) in enumerate(loader):
    if step == WARM:
        t0 = time.perf_counter()  # after the workers' start
    h = torch.tanh(torch.mm(torch.randn(N, N), w))  # the step's numerical work
    loss = torch.nn.functional.cross_entropy(model(x), y) + 0 * h.mean()
    model.zero_grad()
    loss.backward()
    if STEPS and step == WARM + STEPS:
        print(json.dumps({"steps_per_s": STEPS / (time.perf_counter() - t0)}))
        break
    if SECONDS and time.monotonic() > end:
        break
"""


def _env(workers: int, **extra: str) -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", BURN=BURN, MATMUL=MATMUL, WORKERS=str(workers),
                **extra)


def _rate(python: str, script: Path, workers: int, steps: int) -> float:
    p = subprocess.run([python, str(script)], capture_output=True, text=True, timeout=600,
                       env=_env(workers, STEPS=str(steps)))
    assert p.returncode == 0, p.stderr[-2000:]
    return float(json.loads(p.stdout.strip().splitlines()[-1])["steps_per_s"])


def _advice(python: str, script: Path, workers: int) -> Tuple[List[int], List[str], str]:
    """The loop as given under `envdoctor watch`: the num_workers values its fixes propose, the fixes that name a
    worker count (summary and commands), and every warning watch gave (for the skip and failure messages)."""
    argv = [sys.executable, "-m", "envdoctor", "watch", "--duration", "90", "--format", "json", "--", python,
            str(script)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=str(REPO),
                       env=_env(workers, SECONDS_="15"))
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    counts: List[int] = []
    fixes: List[str] = []
    for f in out["findings"]:
        fix = f.get("fix") or {}
        cmds = " ".join(fix.get("commands") or [])
        found = [int(n) for n in re.findall(r"num_workers=(\d+)", cmds)]
        if found:
            counts += found
            fixes.append(f"{f['category']}: {fix.get('summary')} / {cmds}")
    said = " | ".join(f"{f['category']} ({f['severity']}): {f['summary']}" for f in out["findings"])
    return counts, fixes, said


def _given() -> int:
    """Fewer workers than the rule would give this box when it is the run's own: the cores it may use less one for
    the training process (a 2-core box: 0, the loop loads in its training process; 4 cores and more: 1)."""
    return 0 if len(os.sched_getaffinity(0)) < 4 else 1


def test_following_the_num_workers_advice_does_not_slow_the_run(cpu_venv, tmp_path):
    """The loop as given has too few workers for its per-sample CPU work. Where watch proposes more workers
    (DATALOADER_IN_MAIN_PROCESS or the input-bound fixes: DataLoader(..., num_workers=k)), the loop run with k
    makes at least 0.9x the steps per second it made as given (medians of 5 runs each, alternating, 80 steps each
    after 5 of warm-up: single runs on the loaded box vary 2x). Where it proposes none above the loop's own count, the rule withheld it, and the fix must
    say why (the cores are taken: the run's own or other processes'); the test then skips, quoting watch."""
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    given = _given()
    counts, fixes, said = _advice(cpu_venv.python, script, given)
    if not counts:
        pytest.skip(f"watch proposed no num_workers for a loop with {given} worker(s) on this box, nothing to "
                    f"follow (watch said: {said or 'no findings'})")
    more = [n for n in counts if n > given]
    if not more:  # withheld: never the current count or fewer as "more", and the fix says why
        why = " ".join(fixes)
        assert re.search(r"keep \d+|already have the cores|would queue", why), fixes
        pytest.skip(f"watch withheld more workers for a loop with {given} on this box: {why}")
    k = max(more)
    before: List[float] = []
    after: List[float] = []
    for _ in range(PAIRS):  # alternating: a change in the box's load falls on both
        before.append(_rate(cpu_venv.python, script, given, STEPS))
        after.append(_rate(cpu_venv.python, script, k, STEPS))
    ratio = statistics.median(after) / statistics.median(before)
    print(f"num_workers {given} -> {k}: {ratio:.2f}x steps/s (medians of {PAIRS}; as given "
          f"{[round(b, 1) for b in before]}, advised {[round(x, 1) for x in after]}); load "
          f"{os.getloadavg()[0]:.1f}; watch's fixes: {fixes}")
    assert ratio >= 0.9, (f"num_workers={k} made {ratio:.2f}x the steps/s of {given} worker(s); watch's fixes: "
                          f"{fixes}", before, after)
