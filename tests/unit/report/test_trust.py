"""A report people can trust: no check mark without evidence, root cause first, infos are notes, Ctrl-C stops."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from typing import List

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.judging.settle import settle
from envdoctor.model.catalogue import CATEGORIES, CAUSES, NEUTRAL_CATEGORIES
from envdoctor.model.facts import (
    Container,
    Driver,
    Facts,
    Host,
    PasteSource,
    ProbeStatus,
    PythonEnv,
    Storage,
    SystemLibraries,
    Toolkits,
    Topology,
)
from envdoctor.model.findings import CheckResult, CheckStatus, Evidence, Finding, Fix, Report, Severity
from envdoctor.report import render_console, render_json, render_markdown
from envdoctor.services.collect import judge
from envdoctor.services.diagnose import diagnose_report
from tests import machines as m
from tests.paths import FIXTURES, REPO

ROOT = REPO
FIX = FIXTURES
A, OK = ProbeStatus.ABSENT, ProbeStatus.OK


# --------------------------------------------------------------------------- evidence or no check mark


def nothing_there() -> Facts:
    """Every probe ran and found nothing: no driver, no GPU, no InfiniBand, not WSL, no container, no torch."""
    return Facts(
        driver=Driver(status=A, reason="NVML library not found", device_nodes=[], xid_events=[],
                      kernel_log_readable=True),
        toolkits=Toolkits(status=A, reason="no nvcc"),
        system_libraries=SystemLibraries(status=A),
        pythons=[PythonEnv(status=OK, executable="/usr/bin/python3", python_version="3.11.2",
                           platform="linux-x86_64")],
        host=Host(status=OK, os="Linux", cpu_logical_count=4, cpu_affinity_count=4, memory_total_bytes=16 << 30,
                  shm_total_bytes=8 << 30, shm_free_bytes=8 << 30, wsl=False, container=Container(), env={},
                  kernel_modules=[], infiniband_devices=[]),
        storage=Storage(status=OK, paths=[]),
        topology=Topology(status=A),
    )


# What may pass on a machine with nothing on it, and the fact each of them judged there.
PASS_ON_NOTHING = {
    "torch.python-version": "the interpreter's version was read",
    "host.shm": "/dev/shm's size was read",
}


def test_on_a_machine_with_nothing_only_checks_that_read_a_fact_pass():
    results = run_checks(nothing_there(), load_compat(), all_checks())
    passed = {r.id for r in results if r.status == CheckStatus.PASSED}
    assert passed <= set(PASS_ON_NOTHING), sorted(passed - set(PASS_ON_NOTHING))
    for r in results:
        if r.status == CheckStatus.SKIPPED:
            assert r.reason and r.reason.strip()


def _ids(facts: Facts) -> dict:
    return {r.id: r for r in run_checks(facts, load_compat(), all_checks())}


# (check id, the facts it used to pass on without judging anything, words its skip reason must carry)
OFFENDERS = [
    ("driver.library-match", nothing_there(), "nothing to compare"),
    ("interconnect.peermem", nothing_there(), "no InfiniBand"),
    ("interconnect.peermem",
     dataclasses.replace(nothing_there(), host=dataclasses.replace(nothing_there().host,
                                                                   infiniband_devices=["mlx5_0"])), "no GPU"),
    ("platform.wsl", nothing_there(), "not WSL"),
    ("platform.container-gpu", nothing_there(), "not a container"),
    ("host.cpu", nothing_there(), "no GPU to judge"),
    ("host.memory", nothing_there(), "no GPU to judge"),
    ("gpu.xid", nothing_there(), "no NVIDIA driver"),
    ("gpu.xid", dataclasses.replace(m.healthy_a100(), driver=dataclasses.replace(
        m.healthy_a100().driver, kernel_log_readable=False, kernel_log_reason="dmesg: Operation not permitted")),
     "not readable"),
    ("driver.present", m.cpu_torch_cuda_vision(), "nothing here needs one"),
    ("host.environment", dataclasses.replace(nothing_there(), origin="paste", paste=PasteSource()),
     "the pasted text shows none"),
    ("host.environment", nothing_there(), "not recorded"),
]


@pytest.mark.parametrize("check_id,facts,words", OFFENDERS, ids=[f"{o[0]}-{i}" for i, o in enumerate(OFFENDERS)])
def test_known_offenders_skip_with_the_reason(check_id, facts, words):
    r = _ids(facts)[check_id]
    assert r.status == CheckStatus.SKIPPED and words in r.reason, (r.status, r.reason)
    assert all(f.severity == Severity.INFO for f in r.findings)  # a skip may carry notes, never problems


def test_the_same_checks_pass_when_they_judged_something():
    a100 = m.healthy_a100()
    ib = dataclasses.replace(a100, host=dataclasses.replace(a100.host, infiniband_devices=["mlx5_0"],
                                                             kernel_modules=["nvidia", "nvidia_peermem"]))
    assert _ids(ib)["interconnect.peermem"].status == CheckStatus.PASSED
    lib = dataclasses.replace(a100, driver=dataclasses.replace(a100.driver, kernel_module_version=a100.driver.version))
    assert _ids(lib)["driver.library-match"].status == CheckStatus.PASSED
    assert _ids(a100)["host.memory"].status == CheckStatus.PASSED


def test_a_skipped_checks_notes_are_in_the_report_and_console_shows_no_check_mark():
    facts = dataclasses.replace(m.healthy_a100(), driver=dataclasses.replace(
        m.healthy_a100().driver, kernel_log_readable=False, kernel_log_reason="dmesg: Operation not permitted"))
    report = judge(facts, only=["gpu.xid"])
    assert [f.code for f in report.findings] == ["gpu.xid/log-unreadable"]
    text = render_console(report, color=False, width=100, verbose=True)
    assert "✓ No GPU Xid errors" not in text and "- No GPU Xid errors in the kernel log (gpu.xid) — skipped" in text
    plain = render_console(report, color=False, width=100)
    assert "✓ gpu" not in plain and "1 check could not be judged (facts unknown): gpu.xid" in plain


# A general guard: run every check on every snapshot and paste with facts that record what is read. A check
# that passed must have read at least one fact that is there: a section read "ok", or a value that is not
# null/empty. Passing on nothing but unknowns and absent sections is a check mark without evidence. (It cannot
# see "read a fact that says the subject is absent", e.g. no InfiniBand: OFFENDERS above covers those.)

_TRACKED: dict = {}
_READS: list = []
_NOT_FACTS = {"reason", "source", "origin", "envdoctor_version", "collected_at", "schema_version", "probes"}


def _tracked_class(cls: type) -> type:
    if cls not in _TRACKED:
        names = {f.name for f in dataclasses.fields(cls)}

        def __getattribute__(self, name, _names=names):
            value = object.__getattribute__(self, name)
            if name in _names:
                _READS.append((name, value))
            return value

        _TRACKED[cls] = type(f"Tracked{cls.__name__}", (cls,), {"__getattribute__": __getattribute__,
                                                                 "__module__": cls.__module__})
    return _TRACKED[cls]


def _track(obj):
    """The same facts, as instances of subclasses that log every field read (dataclasses.replace still works)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        values = {f.name: _track(object.__getattribute__(obj, f.name)) for f in dataclasses.fields(obj)}
        return _tracked_class(type(obj))(**values)
    if isinstance(obj, list):
        return [_track(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _track(v) for k, v in obj.items()}
    return obj


def _evidence_read(reads) -> list:
    out = []
    for name, value in reads:
        if name == "status":
            if value == ProbeStatus.OK:
                out.append((name, value))
            continue
        if name in _NOT_FACTS or value is None or dataclasses.is_dataclass(value):
            continue
        if isinstance(value, (list, dict)):
            items = list(value.values()) if isinstance(value, dict) else value
            if not items or (name != "gpus" and all(dataclasses.is_dataclass(v) for v in items)):
                continue  # empty, or records whose own fields are what gets read (GPUs: their presence is a fact)
        out.append((name, value))
    return out


def _every_snapshot():
    from envdoctor.diagnose import read_paste

    compat = load_compat()
    snaps = [(n, b()) for n, (b, _) in m.SCENARIOS.items()] + [("nothing-there", nothing_there()), ("empty", Facts())]
    snaps += [(p.name, Facts.from_json(p.read_text(encoding="utf-8"))) for p in sorted((FIX / "snapshots").glob("*.json"))]
    for p in sorted((FIX / "pastes").glob("*.txt")):
        try:
            snaps.append((p.name, read_paste([p.read_text(encoding="utf-8")], compat)[0]))
        except Exception:  # noqa: BLE001 - a paste that recognises nothing has no facts to judge
            continue
    return snaps


def test_a_check_that_passed_read_a_fact_that_is_there():
    compat = load_compat()
    snaps = _every_snapshot()
    assert len(snaps) > 30
    bare = []
    for name, facts in snaps:
        tracked = _track(facts)
        for check in all_checks():
            _READS.clear()
            (r,) = run_checks(tracked, compat, [check])
            assert r.status != CheckStatus.ERRORED, (name, check.id, r.reason)
            if r.status == CheckStatus.PASSED and not _evidence_read(_READS):
                bare.append((check.id, name))
    assert not bare, bare


def test_the_tracker_sees_a_check_that_passes_on_nothing():
    from envdoctor.checks.base import Check

    def vacuous(ctx):
        return [] if ctx.facts.driver.version is None else []

    _READS.clear()
    (r,) = run_checks(_track(nothing_there()), load_compat(), [Check("x.vacuous", "Vacuous", vacuous, ("NOTE",))])
    assert r.status == CheckStatus.PASSED and _evidence_read(_READS) == []


# --------------------------------------------------------------------------- infos are notes


def _all_reports() -> List[Report]:
    compat = load_compat()
    reports = [judge(build()) for build, _ in m.SCENARIOS.values()]
    reports += [judge(nothing_there()), judge(Facts())]
    reports += [judge(Facts.from_json(p.read_text(encoding="utf-8"))) for p in sorted((FIX / "snapshots").glob("*.json"))]
    for p in sorted((FIX / "pastes").glob("*.txt")):
        try:
            reports.append(diagnose_report([p.read_text(encoding="utf-8")], compat))
        except Exception:  # noqa: BLE001 - a paste that recognises nothing is not what this test is about
            continue
    return reports


REPORTS = _all_reports()


def test_every_info_in_every_snapshot_and_paste_carries_a_neutral_category():
    infos = [f for r in REPORTS for f in r.findings if f.severity == Severity.INFO]
    assert len(infos) > 10  # the corpus does have notes
    bad = [(f.code, f.category) for f in infos if f.category not in NEUTRAL_CATEGORIES]
    assert not bad, bad
    assert all(f.about is None or f.about in CATEGORIES for f in infos)


def test_an_info_built_with_a_problem_category_becomes_a_note_about_it():
    f = Finding("host.cpu/x", "CPU_STARVED", Severity.INFO, "2 CPUs; no GPU to judge the ratio against")
    assert (f.category, f.about) == ("NOTE", "CPU_STARVED")
    w = Finding("host.cpu/y", "CPU_STARVED", Severity.WARNING, "2 CPUs for 8 GPUs")
    assert (w.category, w.about) == ("CPU_STARVED", None)


# --------------------------------------------------------------------------- root cause first


def _container_without_gpus() -> Facts:
    f = dataclasses.replace(m.healthy_a100(), driver=Driver(status=A, reason="NVML library not found"))
    return dataclasses.replace(f, host=dataclasses.replace(
        f.host, container=Container(runtime="docker", evidence="/.dockerenv", gpu_device_nodes=[])))


def test_causes_table_is_acyclic_and_uses_catalogue_categories():
    for root, consequences in CAUSES.items():
        assert root in CATEGORIES and set(consequences) <= set(CATEGORIES)
        seen, todo = set(), list(consequences)
        while todo:
            c = todo.pop()
            assert c != root, f"cycle through {root}"
            if c not in seen:
                seen.add(c)
                todo.extend(CAUSES.get(c, ()))


def test_no_driver_in_a_container_is_one_error_with_the_driver_under_it():
    report = judge(_container_without_gpus())
    serious = [f for f in report.findings if f.severity != Severity.INFO]
    assert [(f.category, f.caused_by) for f in serious] == [
        ("CONTAINER_NO_GPU_RUNTIME", None), ("NO_NVIDIA_DRIVER", "platform.container-gpu/no-runtime")]
    assert [f.code for f in report.problems] == ["platform.container-gpu/no-runtime"]
    text = render_console(report, color=False, width=100)
    assert "✗ 1 error — see fixes above (1 consequence listed under it)" in text
    root_at, cons_at = text.index("Running in a docker container"), text.index("↳ ✗ No NVIDIA driver")
    assert root_at < cons_at
    data = json.loads(render_json(report))
    assert [f["caused_by"] for f in data["findings"] if f["severity"] == "error"] == [
        None, "platform.container-gpu/no-runtime"]
    assert (data["summary"]["errors"], data["summary"]["root_causes"], data["summary"]["consequences"]) == (2, 1, 1)
    md = render_markdown(report)
    assert "↳ follows from the above: No NVIDIA driver" in md
    assert "### error: No NVIDIA driver" not in md  # listed under its root, no section of its own
    assert "Follows from it (fixed with it):" in md


def _finding(code: str, category: str, severity: str = Severity.ERROR, py: int = 0) -> Finding:
    return Finding(code, category, severity, code, evidence=[Evidence(f"pythons[{py}].torch.version", "2.5.1")],
                   fix=Fix("fix it"))


def test_root_cause_is_listed_first_even_when_its_check_comes_later():
    checks = [CheckResult("torch.import", "torch", "t", CheckStatus.FAILED,
                          [_finding("torch.import/failed", "TORCH_IMPORT_FAILED")]),
              CheckResult("libraries.shadowing", "libraries", "l", CheckStatus.FAILED,
                          [_finding("libraries.shadowing/preload", "SYSTEM_LIB_SHADOWING", Severity.WARNING)])]
    report = Report(Facts(), settle(checks), "0")
    assert [(f.code, f.caused_by) for f in report.findings] == [
        ("libraries.shadowing/preload", None), ("torch.import/failed", "libraries.shadowing/preload")]


def test_findings_about_different_interpreters_are_not_linked():
    checks = [CheckResult("torch.import", "torch", "t", CheckStatus.FAILED,
                          [_finding("torch.import/failed", "TORCH_IMPORT_FAILED", py=1)]),
              CheckResult("libraries.shadowing", "libraries", "l", CheckStatus.FAILED,
                          [_finding("libraries.shadowing/preload", "SYSTEM_LIB_SHADOWING", py=0)])]
    assert all(f.caused_by is None for f in Report(Facts(), settle(checks), "0").findings)


def test_a_note_about_the_problem_an_error_reports_goes_under_it():
    checks = [CheckResult("driver.present", "driver", "d", CheckStatus.SKIPPED,
                          [Finding("driver.present/absent", "NO_NVIDIA_DRIVER", Severity.INFO, "no driver")]),
              CheckResult("platform.container-gpu", "platform", "c", CheckStatus.FAILED,
                          [Finding("platform.container-gpu/no-runtime", "CONTAINER_NO_GPU_RUNTIME", Severity.ERROR,
                                   "container without GPUs", fix=Fix("--gpus all"))]),
              CheckResult("host.cpu", "host", "h", CheckStatus.PASSED,
                          [Finding("host.cpu/x", "CPU_STARVED", Severity.INFO, "a note about CPUs")])]
    report = Report(Facts(), settle(checks), "0")
    assert [(f.code, f.caused_by) for f in report.findings] == [
        ("platform.container-gpu/no-runtime", None), ("driver.present/absent", "platform.container-gpu/no-runtime"),
        ("host.cpu/x", None)]


def test_a_torch_import_failure_comes_before_what_follows_from_it():
    checks = [CheckResult("packages.extensions", "packages", "e", CheckStatus.FAILED,
                          [_finding("packages.extensions/import-failed", "THIRD_PARTY_EXTENSION_MISMATCH")]),
              CheckResult("torch.import", "torch", "t", CheckStatus.FAILED,
                          [_finding("torch.import/failed", "TORCH_IMPORT_FAILED")])]
    assert [f.code for f in Report(Facts(), settle(checks), "0").findings] == [
        "torch.import/failed", "packages.extensions/import-failed"]


# --------------------------------------------------------------------------- stops at once


def _marked(marker: str) -> List[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        out.append(int(d))
            except OSError:
                continue
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find orphans")

def _default_signals() -> None:
    """In the child: SIGINT/SIGTERM at their defaults. A test run started in the background (a CI job, `cmd &`,
    nohup) inherits SIGINT ignored, and envdoctor rightly keeps an ignored SIGINT ignored; what these tests
    exercise is a user's terminal, where the signal is delivered."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # likewise under nohup

# SIGHUP: the terminal hung up (an SSH drop) while the target interpreter hung (issue 40)
@pytest.mark.parametrize("signame,code", [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
@pytest.mark.parametrize("early", ["0", "1"])
def test_a_signal_ends_every_child_and_exits_with_its_code(tmp_path, signame, code, early):
    # early "1": the target's payload starts before envdoctor's own imports (probes/payload_launch.py), so the
    # signal may land before collection began: then there is nothing to report, but still no child survives
    marker = f"envdoctor-test-hang-{os.getpid()}-{signame}"
    fake = tmp_path / "python"
    # a target interpreter whose every run hangs for a minute, as an `import torch` stuck in a driver call
    # a hang far longer than any wait below, and a --python-timeout as long: an envdoctor that waited for either
    # instead of stopping at the signal fails by the communicate() timeout, whatever the machine's load
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import time; time.sleep(900)' {marker}\n")
    fake.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "ENVDOCTOR_EARLY_PAYLOAD": early}
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "--python", str(fake), "--python-timeout", "900",
                             "--data", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            restore_signals=True, start_new_session=True, preexec_fn=_default_signals)
    try:
        deadline = time.monotonic() + 120  # the hang has started: the payload is running
        while not _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _marked(marker), "the fake interpreter never started"
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=180)  # far less than the 900 s hang and the 900 s python timeout
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err.decode()
    assert f"interrupted by {signame}" in err.decode()
    text = out.decode()
    assert "No problems found" not in text
    if early == "0" or text.strip():  # a report, when one is printed, says it is partial
        assert "partial report" in text, text[-2000:]
    deadline = time.monotonic() + 60  # SIGKILLed: gone at once; allow a loaded kernel a moment to reap
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _marked(marker), "a child outlived envdoctor"
    with pytest.raises(ProcessLookupError):  # nor is anything left of envdoctor's own process group
        os.killpg(proc.pid, 0)


def test_keyboard_interrupt_in_the_python_api_kills_the_children(tmp_path):
    marker = f"envdoctor-test-api-{os.getpid()}"
    fake = tmp_path / "python"
    started = tmp_path / "started"
    # the fake says it has started (a file), and the SIGINT is sent then: not after a sleep, which on a loaded
    # machine could land before the child exists (testing nothing) or inside an import
    fake.write_text(f"#!/bin/sh\ntouch {started}\nexec {sys.executable} -c 'import time; time.sleep(900)' {marker}\n")
    fake.chmod(0o755)
    code = ("import os, signal, threading, time, sys\n"
            "from envdoctor.services.collect import doctor, CollectOptions\n"
            "def later():\n"
            f"    end = time.monotonic() + 120\n"
            f"    while not os.path.exists({str(started)!r}) and time.monotonic() < end:\n"
            "        time.sleep(0.02)\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "threading.Thread(target=later, daemon=True).start()\n"
            "try:\n"
            f"    doctor(CollectOptions(pythons=[{str(fake)!r}], data_paths=[{str(tmp_path)!r}], "
            "python_timeout_s=900))\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(42)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300,
                          preexec_fn=_default_signals)
    assert proc.returncode == 42, proc.stderr.decode()
    assert started.exists()  # the signal came while the child ran
    deadline = time.monotonic() + 60
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _marked(marker), "a child outlived the interrupted doctor()"
