"""`envdoctor watch` on a real CPU training loop (torch 2.13.0 CPU venv): the DataLoader's worker count read
from the process tree, and the step timer's data-wait fraction (issue 21, "Done when")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.slow

TRAIN = """
import os, time, warnings
warnings.simplefilter("ignore")
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        if SLEEP:
            time.sleep(SLEEP)
        return torch.randn(32), torch.randint(0, 4, ())

WORKERS, SLEEP, TIMED = int(os.environ["WORKERS"]), float(os.environ["SLEEP"]), os.environ["TIMED"] == "1"
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
loader = DataLoader(DS(), batch_size=16, num_workers=WORKERS)
if TIMED:
    from envdoctor.watch import timed
    loader = timed(loader)
end = time.monotonic() + 3.0  # a few seconds of training after the import, then exit: watch ends with it
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
    if time.monotonic() > end:
        break
"""


def _watch(venv, tmp_path, workers: int, sleep: float = 0.0, timed: bool = False):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    # the training process imports envdoctor.watch (timed) from this checkout
    env = dict(os.environ, WORKERS=str(workers), SLEEP=str(sleep), TIMED="1" if timed else "0",
               PYTHONPATH=str(REPO), NO_COLOR="1")
    p = subprocess.run([sys.executable, "-m", "envdoctor", "watch", "--duration", "90", "--format", "json", "--",
                        venv.python, str(script)], capture_output=True, text=True, env=env, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    return out["facts"]["watch"], {(f.get("about") or f["category"]): f for f in out["findings"]}, \
        {c["id"]: c for c in out["checks"]}


def test_num_workers_0_is_dataloader_in_main_process(cpu_venv, tmp_path):
    w, findings, checks = _watch(cpu_venv, tmp_path, workers=0)
    assert w["summary"]["dataloader_workers"] == 0 and w["summary"]["processes"]["torch_seen"]
    f = findings["DATALOADER_IN_MAIN_PROCESS"]
    assert "num_workers=" in f["fix"]["commands"][0]
    # no GPU here: the GPU-side verdicts say why they cannot judge rather than guess
    assert checks["watch.idle-gpu"]["status"] == "skipped" and "NVML" in checks["watch.idle-gpu"]["reason"]


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
