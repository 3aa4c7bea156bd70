"""`diagnose` on a paste that holds a recording: the watch verdicts judge it like `watch --replay`."""

from __future__ import annotations

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES


def test_a_pasted_query_gpu_log_inside_prose_is_judged():
    rec = (FIXTURES / "timeseries" / "015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt").read_text()
    text = "My training seems slow, here is what nvidia-smi logged:\n\n" + rec + "\nAny idea?\n"
    report = diagnose_report([text], load_compat())
    assert report.facts.watch is not None and len(report.facts.watch.samples) == 17
    assert any(f.about == "GPU_BOUND" for f in report.findings)
    assert any("a recording (nvidia-smi --query-gpu" in x for x in report.facts.paste.found)


def test_a_paste_without_a_recording_has_no_watch_section():
    report = diagnose_report(["RuntimeError: CUDA error: no kernel image is available for execution on the device"],
                             load_compat())
    assert report.facts.watch is None
    assert all(c.status == "skipped" for c in report.checks if c.id.startswith("watch."))
