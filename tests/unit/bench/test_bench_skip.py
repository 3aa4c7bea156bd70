"""`envdoctor bench` after the inspect payload found `import torch` failed or hung: the torch kernels are not
started (no second wait on the same hang), and --python-timeout bounds the bench payload's start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envdoctor.bench.run import BenchOptions, run_bench, torch_unusable
from envdoctor.model.facts import Driver, ProbeStatus, PythonEnv, TorchInfo
from tests.paths import REPO


def _hung(stage: str = "importing torch") -> PythonEnv:
    return PythonEnv(status=ProbeStatus.FAILED, reason=f"timed out after 6.4 s while {stage}",
                     executable="/opt/venv/bin/python", torch_inspected=True, failure="timeout", failure_stage=stage,
                     torch=TorchInfo(import_error=f"timed out after 6.4 s while {stage}", imported=False)
                     if stage == "importing torch" else TorchInfo(version="2.14.1+cu130", imported=True))


def test_torch_unusable_reads_what_the_inspect_payload_found() -> None:
    why, cuda_only = torch_unusable(_hung())
    assert "import torch hung in /opt/venv/bin/python" in why and not cuda_only
    failed = PythonEnv(status=ProbeStatus.OK, executable="/p", torch_inspected=True,
                       torch=TorchInfo(import_error="ImportError: libcudnn.so.9: cannot open shared object file"))
    assert "import torch failed in /p" in torch_unusable(failed)[0] and "libcudnn.so.9" in torch_unusable(failed)[0]
    assert "not installed" in torch_unusable(PythonEnv(status=ProbeStatus.OK, executable="/p",
                                                       torch_inspected=True))[0]
    assert torch_unusable(_hung("initialising CUDA")) == (torch_unusable(_hung("initialising CUDA"))[0], True)
    # imported, not inspected (--no-torch), or a timeout before torch: the kernels run (with their deadline)
    ok = PythonEnv(status=ProbeStatus.OK, executable="/p", torch_inspected=True,
                   torch=TorchInfo(version="2.13.0+cpu", imported=True))
    assert torch_unusable(ok) == (None, False)
    assert torch_unusable(PythonEnv(status=ProbeStatus.OK, torch_inspected=False)) == (None, False)
    assert torch_unusable(_hung("reading installed packages (before importing torch)")) == (None, False)
    assert torch_unusable(None) == (None, False)


def test_run_bench_never_starts_the_payload_after_a_hung_import(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    payload = tmp_path / "payload.py"
    payload.write_text(f"open({str(marker)!r}, 'w').close()\nimport time\ntime.sleep(600)\n")
    events = []
    bench = run_bench(BenchOptions(python=sys.executable, names=["matmul_fp32", "membw_host"], device="cpu",
                                   startup_timeout_s=600), Driver(status=ProbeStatus.ABSENT), progress=events.append,
                      payload=payload, inspected=_hung())
    assert not marker.exists()
    assert {r.name: r.status for r in bench.results} == {"matmul_fp32": "skipped", "membw_host": "skipped"}
    assert all("import torch hung" in r.reason for r in bench.results)
    assert "import torch hung" in bench.reason and len(events) == 2


def test_cuda_start_up_hang_skips_only_the_gpu_kernels(tmp_path: Path) -> None:
    argv_file = tmp_path / "argv.json"
    payload = tmp_path / "payload.py"
    payload.write_text(f"import json, sys\nopen({str(argv_file)!r}, 'w').write(json.dumps(sys.argv))\n"
                       "print(json.dumps({'envdoctor_bench': 1, 'event': 'done'}), flush=True)\n")
    bench = run_bench(BenchOptions(python=sys.executable, names=["matmul_fp32", "membw_host"], device="cuda"),
                      Driver(status=ProbeStatus.ABSENT), payload=payload, inspected=_hung("initialising CUDA"))
    gpu = next(r for r in bench.results if r.device == "cuda")
    assert gpu.status == "skipped" and "CUDA start-up hung" in gpu.reason
    argv = json.loads(argv_file.read_text())
    planned = json.loads(argv[argv.index("--plan") + 1])
    assert [(i["name"], i["device"]) for i in planned] == [("membw_host", "cpu")]  # the host kernel still runs


def test_cli_bench_on_an_interpreter_whose_torch_import_hangs(tmp_path: Path) -> None:
    """A real interpreter with a torch/__init__.py that sleeps (a stale PYTHONPATH entry): the bench must not
    wait its own 90 s start-up deadline on top of --python-timeout."""
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path / 'site'} exec {os.path.realpath(sys.executable)} \"$@\"\n")
    wrapper.chmod(0o755)
    out = subprocess.run([sys.executable, "-m", "envdoctor", "bench", "matmul_fp32", "--python", str(wrapper),
                          "--python-timeout", "4", "--device", "cpu", "--format", "json"],
                         capture_output=True, text=True, timeout=80, cwd=str(REPO))
    assert out.returncode in (0, 1), out.stderr[-2000:]
    doc = json.loads(out.stdout)
    r = next(r for r in doc["facts"]["bench"]["results"] if r["name"] == "matmul_fp32")
    # either the inspect payload saw the hang (the kernel is skipped) or, on a loaded machine, it timed out
    # before reaching torch and the bench payload was killed at --python-timeout, never at 90 s
    assert ("import torch hung" in r["reason"] and r["status"] == "skipped") or "within 4 s" in r["reason"], r


def test_every_benchmark_skipped_is_nothing_measured_never_no_problems_found() -> None:
    # `bench` on a machine without a GPU (or torch): the other checks passing said "✓ No problems found", exit 0
    import dataclasses

    from envdoctor.model.facts import Bench, BenchResult
    from envdoctor.report import render_console, render_markdown
    from envdoctor.report.summary import verdict
    from envdoctor.services.collect import judge
    from tests import machines

    base = machines.healthy_a100()
    assert verdict(judge(base)).startswith("No problems found")
    skipped = [BenchResult("matmul_fp32", ProbeStatus.SKIPPED, "no CUDA device: torch.cuda.is_available() is False",
                           device="cuda"),
               BenchResult("membw_device", ProbeStatus.SKIPPED, "no CUDA device", device="cuda")]
    report = judge(dataclasses.replace(base, bench=Bench(status=ProbeStatus.OK, results=skipped)))
    assert report.measured_nothing and report.fails("error")  # exit 1, as "nothing could be judged" is
    assert verdict(report) == "Nothing was measured: all 2 benchmarks were skipped (reasons above)"
    text = render_console(report, color=False)
    assert "No problems found" not in text and "✓ Nothing" not in text and "Nothing was measured" in text
    assert "No problems found" not in render_markdown(report)
    one = judge(dataclasses.replace(base, bench=Bench(status=ProbeStatus.OK, results=skipped[:1] + [
        BenchResult("disk_seq_read", ProbeStatus.FAILED, "read error", device="/data")])))
    assert verdict(one) == "Nothing was measured: all 2 benchmarks were skipped or failed (reasons above)"
    measured = dataclasses.replace(skipped[1], status=ProbeStatus.OK, value=1500.0, unit="GB/s", reason=None)
    fine = judge(dataclasses.replace(base, bench=Bench(status=ProbeStatus.OK, results=[skipped[0], measured])))
    assert not fine.measured_nothing
