"""diagnose.unexplained-error (issue 29): an error line no finding explains is an UNRECOGNISED_ERROR warning, the
verdict "Not judged" (never "No problems found"), and --fail-on warning counts it."""

from __future__ import annotations

import json

import pytest

from envdoctor.checks.base import CheckContext, SkipCheck
from envdoctor.checks.diagnose_unexplained import check_unexplained, error_lines, is_error_line
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, PasteSource
from envdoctor.report import render_console
from envdoctor.report.summary import verdict
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES

ERROR_LINES = [
    "KeyError: 'model.layers.31.mlp.gate_proj.weight'",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError:",
    "error: command '/usr/bin/gcc' failed with exit status 1",
    "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
    "/tmp/x.cpp:3:10: fatal error: cuda.h: No such file or directory",
    "ERROR: Could not find a version that satisfies the requirement torch==2.2.2",
    "Failed to initialize NVML: Driver/library version mismatch",
    "Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but",
    "[  12.345678] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
    "[Sun Feb 23 16:24:36 2025] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x31:0x40:2477)",
    "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
    "Segmentation fault (core dumped)",
    "2024-05-01 10:00:00,123 ERROR worker.py:99 -- Worker died",
    "(RayWorkerWrapper pid=5486) ERROR 05-06 08:55:19 worker_base.py:145] Error executing method init_device.",
    "ERROR 03-20 23:26:06 [core.py:340] EngineCore hit an exception: Traceback (most recent call last):",
    "node23:12098:12141 [2] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'",
    "Error while creating shared memory segment /dev/shm/nccl-AbCdEf (size 9637888)",
    "thread 'main' panicked at /src/driver/sys/mod.rs:61:9:",
    "2024-11-12 10:07:56.895 [E:onnxruntime:Default, session.cc:12 Init] Could not load the provider",
]
NOT_ERROR_LINES = [
    "error: 0",
    "Errors: None",
    "ECC errors: 0",
    "failed: 0, passed: 12",
    "=== 12 passed, 0 failed in 3.2s ===",
    "No errors found",
    "        Uncorrectable Error               : 4",  # a counter of nvidia-smi -q: gpu.memory-errors reads it
    "Remapping Failure Occurred        : No",
    "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.",
    "UserWarning: CUDA initialization failed, falling back",
    "WARNING: the driver failed to report its version",
    "I get the following error:",
    "I failed to build the image with the latest container.",
    "# ERROR",
    "[    1.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023",
    "Successfully installed torch-2.3.0",
    "Error handling is described in the documentation.",
    # a logger record's traceback frames and source lines, its warnings and infos
    "(RayWorkerWrapper pid=5486) ERROR 05-06 08:55:19 worker_base.py:145]   File \"/x/worker.py\", line 137, in run",
    "(RayWorkerWrapper pid=5486) ERROR 05-06 08:55:19 worker_base.py:145]     return executor(*args, **kwargs)",
    "ERROR 03-20 23:26:06 [core.py:340] Traceback (most recent call last):",
    "WARNING 11-18 03:39:14 config.py:128] None quantization is not fully optimized yet.",
    "INFO 05-06 08:55:20 api_server.py:12] the previous request failed: retrying",
]


@pytest.mark.parametrize("line", ERROR_LINES)
def test_error_lines(line) -> None:
    assert is_error_line(line)


@pytest.mark.parametrize("line", NOT_ERROR_LINES)
def test_not_error_lines(line) -> None:
    assert not is_error_line(line)


def test_an_assembled_message_is_listed_through_its_line() -> None:
    msgs = ["NVRM: API mismatch: the client has the version 535.54.03, but",
            "NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has 530.30.02.",
            "UserWarning: something"]
    assert error_lines(msgs) == [(0, msgs[0])]


def _ctx(messages) -> CheckContext:
    facts = Facts(origin="paste", paste=PasteSource(messages=list(messages), not_found=["driver version"]))
    return CheckContext(facts, load_compat())


def test_check_passes_without_error_lines() -> None:
    assert check_unexplained(_ctx(["UserWarning: TypedStorage is deprecated"])) == []


def test_check_lists_every_error_line() -> None:
    (f,) = check_unexplained(_ctx(["KeyError: 'x'", "UserWarning: w", "error: command 'gcc' failed"]))
    assert f.code == "diagnose.unexplained-error/error-line" and f.category == "UNRECOGNISED_ERROR"
    assert f.severity == "warning" and f.confidence == "medium"
    assert [(e.path, e.value) for e in f.evidence if e.path.startswith("paste.messages")] == [
        ("paste.messages[0]", "KeyError: 'x'"), ("paste.messages[2]", "error: command 'gcc' failed")]
    assert ("paste.not_found", ["driver version"]) in [(e.path, e.value) for e in f.evidence]
    assert "KeyError: 'x'" in f.summary and "1 more error line" in f.summary
    assert "nvidia-smi" in f.fix.commands and "full traceback" in f.detail


def test_check_skips_without_paste_or_messages() -> None:
    with pytest.raises(SkipCheck):
        check_unexplained(CheckContext(Facts(), load_compat()))
    with pytest.raises(SkipCheck):
        check_unexplained(_ctx([]))


def _diagnose(text: str):
    return diagnose_report([text], load_compat())


def test_unrecognised_paste_is_not_judged() -> None:
    report = _diagnose((FIXTURES / "pastes" / "unrecognised-error.txt").read_text(encoding="utf-8"))
    (f,) = [f for f in report.findings if f.severity != "info"]
    assert f.category == "UNRECOGNISED_ERROR" and "KeyError" in f.summary
    assert verdict(report).startswith("Not judged")
    assert "No problems found" not in render_console(report, width=100)
    data = report.to_dict()
    assert data["summary"]["not_recognised"] == 1 and data["summary"]["warnings"] == 1


def test_the_nvrm_line_alone_is_a_driver_library_mismatch() -> None:
    line = ("NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has the version "
            "530.30.02")
    report = _diagnose(line)
    assert [f.category for f in report.problems] == ["DRIVER_LIBRARY_MISMATCH"]


@pytest.mark.parametrize("escaped", ["#012", "#011#012"])
def test_a_syslog_escaped_kernel_message_is_read_whole(escaped) -> None:
    """rsyslog's "#012" line feeds inside one record (batch4 311, and an invented Xid record of the same kind)."""
    text = (f"Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but{escaped}"
            f"NVRM: this kernel module has the version 530.30.02.  Please{escaped}NVRM: make sure that this kernel "
            "module and all NVIDIA driver components have the same version.")
    report = _diagnose(text)
    assert [f.category for f in report.problems] == ["DRIVER_LIBRARY_MISMATCH"]
    xid = ("Mar  3 01:02:03 node7 kernel: [ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=77, GPU has fallen "
           "off the bus.#012NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.")
    report = _diagnose(xid)
    assert report.facts.driver.xid_events and report.facts.driver.xid_events[0].code == 79
    assert "UNRECOGNISED_ERROR" not in {f.category for f in report.problems}


def test_a_recognised_line_and_an_unrecognised_one() -> None:
    text = ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n\n"
            "ValueError: shards do not add up: 31 != 32\n")
    report = _diagnose(text)
    cats = {f.category for f in report.problems}
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in cats and "UNRECOGNISED_ERROR" in cats
    (u,) = [f for f in report.problems if f.category == "UNRECOGNISED_ERROR"]
    quoted = [e.value for e in u.evidence if e.path.startswith("paste.messages")]
    assert quoted == ["ValueError: shards do not add up: 31 != 32"]
    assert not verdict(report).startswith("Not judged")  # a cause was found: the verdict counts the problems


def test_a_healthy_paste_stays_clean() -> None:
    text = (FIXTURES / "pastes" / "healthy-windows.txt").read_text(encoding="utf-8")
    report = _diagnose(text)
    assert "UNRECOGNISED_ERROR" not in {f.category for f in report.all_findings}


def test_the_program_error_is_not_called_no_problems() -> None:
    report = _diagnose("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert not report.problems
    assert verdict(report).startswith("No environment problem found: the error the paste shows is the program's")


def test_the_quoted_line_is_redacted() -> None:
    from envdoctor.report.json_report import render_json

    report = _diagnose("OSError: cannot read /home/alice/secret-project/weights.bin: bad header\n")
    data = json.loads(render_json(report, redact=True))
    quoted = [e["value"] for f in data["findings"] for e in f["evidence"] if e["path"].startswith("paste.messages")]
    assert quoted and all("alice" not in q and "~/secret-project" in q for q in quoted)


def test_fail_on_warning_counts_it(tmp_path, capsys) -> None:
    from envdoctor.cli import main

    paste = tmp_path / "p.txt"
    paste.write_text("KeyError: 'model.layers.31.mlp.gate_proj.weight'\n", encoding="utf-8")
    assert main(["diagnose", str(paste)]) == 0
    assert main(["diagnose", "--fail-on", "warning", str(paste)]) == 1
    out = capsys.readouterr().out
    assert "Not judged" in out and "No problems found" not in out


_RECORD = "(RayWorkerWrapper pid=5486) ERROR 05-06 08:55:19 worker_base.py:145] "


def test_the_lines_of_an_explained_logger_record_are_explained() -> None:
    """vLLM logs a failure and its traceback as lines of one record (the format of vllm-project/vllm#4618): once a
    signature explains the exception, the record's first line ("Error executing method") is explained too."""
    lines = ["Error executing method init_device. This might cause deadlock in distributed execution.",
             "Traceback (most recent call last):", '  File "/x/distributed_c10d.py", line 2050, in all_reduce',
             "    work = group.allreduce([tensor], opts)",
             "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error "
             "(run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"]
    report = _diagnose("\n".join(_RECORD + x for x in lines) + "\n")
    assert [f.category for f in report.problems] == ["SHM_TOO_SMALL"]  # NCCL's bare system error: a /dev/shm lead
    other = "(RayWorkerWrapper pid=77) ERROR 05-06 08:55:21 engine.py:9] ValueError: the shard map is empty\n"
    report = _diagnose("\n".join(_RECORD + x for x in lines) + "\n" + other)
    (u,) = [f for f in report.problems if f.category == "UNRECOGNISED_ERROR"]
    assert [e.value for e in u.evidence if e.path.startswith("paste.messages")] == [other.strip()]


@pytest.mark.parametrize("line", ERROR_LINES)
def test_every_error_line_reaches_the_check_as_a_message(line) -> None:
    """The message reader keeps every line this check would count (its trigger words cover the error-line shapes):
    a line lost before the check is an error nobody is told about ("No problems found", or "nothing recognised")."""
    from envdoctor.compat import load_compat
    from envdoctor.diagnose import read_paste

    facts, _ = read_paste([line + "\n"], load_compat())
    assert any(line.strip() in m or m in line for m in facts.paste.messages), facts.paste.messages
