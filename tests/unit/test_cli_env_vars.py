"""End to end on this machine: `envdoctor check --format json` run with harmful variables set finds them, and run
again with the fix applied (the variables unset) finds the environment green."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HARMFUL = {"CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "999"}


def _check(env):
    out = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--format", "json"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    report = json.loads(out.stdout)
    (res,) = [c for c in report["checks"] if c["id"] == "host.environment"]
    return report, res


def test_check_finds_the_variables_and_is_green_once_they_are_unset():
    base = {k: v for k, v in os.environ.items() if k not in HARMFUL}
    report, res = _check({**base, **HARMFUL})
    assert res["status"] == "failed"
    got = {f["code"]: f for f in res["findings"]}
    blocking = got["host.environment/cuda-launch-blocking"]
    assert (blocking["category"], blocking["severity"]) == ("ENV_VAR_HARMFUL", "warning")
    assert blocking["evidence"][0]["path"] == "host.env.CUDA_LAUNCH_BLOCKING"
    assert blocking["fix"]["commands"] == ["unset CUDA_LAUNCH_BLOCKING"]
    threads = got["host.environment/omp-num-threads-above-cores"]
    assert threads["evidence"][0]["value"] == "999"
    assert report["facts"]["host"]["env"]["CUDA_LAUNCH_BLOCKING"] == "1"
    # the fix applied: the same command without the variables
    report, res = _check(base)
    assert res["status"] in ("passed", "noted"), res
    assert not [f for f in res["findings"] if f["severity"] in ("error", "warning")]
    assert report["facts"]["host"]["env"]["CUDA_LAUNCH_BLOCKING"] is None
