"""Partial results survive a signal: bench prints what it measured; a signal while the report prints waits."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from envdoctor import cli
from envdoctor.cli import common, live
from envdoctor.model.facts import Facts
from envdoctor.services.collect import Interrupted
from tests import machines as m


def test_a_signal_during_bench_keeps_what_was_measured(monkeypatch, capsys) -> None:
    facts = m.healthy_a100()
    measured = {"name": "matmul", "status": "ok", "reason": "ran", "device": "cuda:0", "value": 123.4,
                "unit": "TFLOP/s", "duration_s": 2.0}

    def run_benchmarks(facts, bench, progress):
        progress({"event": "result", "result": measured})
        raise Interrupted(signal.SIGTERM)  # 16 s into a 17 s run

    monkeypatch.setattr("envdoctor.services.collect.run_benchmarks", run_benchmarks)
    monkeypatch.setattr("envdoctor.services.collect.collect", lambda options, **_kw: facts)
    monkeypatch.setattr(common, "install_signal_handlers", lambda: {})
    code = cli.main(["bench", "matmul_bf16", "--format", "json"])
    out = capsys.readouterr()
    assert code == 128 + signal.SIGTERM
    import json

    report = json.loads(out.out)
    results = report["facts"]["bench"]["results"]
    assert [(r["name"], r["value"]) for r in results] == [("matmul", 123.4)]
    assert "partial" in report["facts"]["bench"]["reason"] and "partial" in out.err


def test_console_partial_bench_report_shows_the_table_before_a_partial_verdict(monkeypatch, capsys) -> None:
    facts = m.healthy_a100()

    def run_benchmarks(facts, bench, progress):
        progress({"event": "result", "result": {"name": "matmul", "status": "ok", "reason": "ran",
                                                "device": "cuda:0", "value": 123.4, "unit": "TFLOP/s"}})
        raise KeyboardInterrupt

    monkeypatch.setattr("envdoctor.services.collect.run_benchmarks", run_benchmarks)
    monkeypatch.setattr("envdoctor.services.collect.collect", lambda options, **_kw: facts)
    monkeypatch.setattr(common, "install_signal_handlers", lambda: {})
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["bench", "matmul_bf16"]) == 130
    out = capsys.readouterr().out
    assert "123.4 TFLOP/s" in out and out.index("Benchmarks") < out.index("partial report")
    assert max(len(line) for line in out.splitlines()) <= 80


def test_a_signal_while_the_report_prints_waits_for_it() -> None:
    with common.signals_deferred() as deferred:
        common.on_signal(signal.SIGTERM, None)  # does not raise: the report of what was read is printed first
        assert deferred.signum == signal.SIGTERM
    assert deferred.exit_code(0) == 128 + signal.SIGTERM
    with pytest.raises(Interrupted):  # outside, a signal unwinds as before (the partial report path)
        common.on_signal(signal.SIGTERM, None)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # what cli.main does once it handled the signal: the next collect() in this process starts clean
    from envdoctor.probes.runner import PENDING_SIGNAL, allow_children

    assert PENDING_SIGNAL[0] == signal.SIGTERM
    PENDING_SIGNAL[0] = None
    allow_children()


def test_partial_bench_facts_are_marked_interrupted() -> None:
    facts = live.with_partial_bench(Facts(), [{"name": "h2d", "status": "ok", "reason": "ran", "value": 20.0,
                                               "unit": "GB/s"}, {"bad": 1}], signal.SIGINT)
    assert [r.name for r in facts.bench.results] == ["h2d"]
    assert facts.probes[-1].reason.startswith("interrupted by SIGINT")
    assert dataclasses.is_dataclass(facts)


def test_a_signal_before_the_probes_wait_still_gives_a_partial_report(monkeypatch) -> None:
    from envdoctor.services import collect as app

    def interrupted_at_start(jobs, deadline_s, meanwhile=None, progress=None):
        raise Interrupted(signal.SIGTERM)  # no partial results at all: the threads were still starting

    monkeypatch.setattr(app, "_run_with_deadline", interrupted_at_start)
    with pytest.raises(Interrupted) as e:
        app.collect(app.CollectOptions(inspect_torch=False))
    facts = e.value.facts
    assert facts is not None and facts.driver.status == "failed"
    assert all((p.reason or "").startswith("interrupted by SIGTERM") for p in facts.probes)


def test_a_signal_whose_raise_was_dropped_before_collect_still_ends_it() -> None:
    # the CLI starts the target's payload before envdoctor's own imports; a signal then may land where Python
    # drops the handler's exception (importlib's module-lock callbacks): the handler's PENDING_SIGNAL still ends
    # the run when collect() begins, instead of a whole report for a run the user stopped
    from envdoctor.probes.runner import PENDING_SIGNAL
    from envdoctor.services import collect as app

    PENDING_SIGNAL[0] = signal.SIGINT
    try:
        with pytest.raises(Interrupted) as e:
            app.collect(app.CollectOptions(inspect_torch=False))
        assert e.value.signum == signal.SIGINT
    finally:
        PENDING_SIGNAL[0] = None


def test_a_keyboard_interrupt_while_the_probe_threads_start_ends_their_children(monkeypatch, tmp_path) -> None:
    # the Python API (no handler of ours): Ctrl-C can land in Thread.start() of a later probe, before the join
    # loop began, while the first probe's child (the interpreter's payload) already runs in its own session;
    # found by .ci/run under load as a payload that outlived an interrupted doctor()
    import sys
    import threading
    import time

    from envdoctor.probes.runner import Runner, allow_children, live_children, stop_all_children
    from envdoctor.services import collect as app

    marker = tmp_path / "marker"
    started = threading.Event()
    result = {}

    def first_probe_then_interrupt(jobs, deadline_s, meanwhile=None, progress=None):
        code = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); time.sleep(900)"

        def probe():
            started.set()
            result["run"] = Runner().run([sys.executable, "-c", code, str(marker)], timeout=900)

        threading.Thread(target=probe, daemon=True).start()
        end = time.monotonic() + 120
        while not (marker.exists() and live_children()) and time.monotonic() < end:
            time.sleep(0.02)
        raise KeyboardInterrupt  # where the next Thread.start() would have been interrupted

    monkeypatch.setattr(app, "_run_with_deadline", first_probe_then_interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            app.collect(app.CollectOptions(inspect_torch=False))
        assert started.is_set() and marker.exists()  # the child ran when the interrupt came
        end = time.monotonic() + 60
        while "run" not in result and time.monotonic() < end:  # its run() returns once the child is killed
            time.sleep(0.02)
        assert result.get("run") is not None and result["run"].error == "interrupted", result
        assert live_children() == 0
    finally:
        stop_all_children()  # a failing run leaves no 900 s sleeper behind, and later tests may start commands
        allow_children()


def test_start_up_holds_the_signals_the_cli_handles() -> None:
    # envdoctor/__main__.py holds signals before anything of envdoctor's is imported, so it keeps its own copy
    import envdoctor.__main__ as entry
    from envdoctor.probes.runner import STOP_SIGNALS

    assert entry.STOP_SIGNALS == STOP_SIGNALS
    assert set(STOP_SIGNALS) >= {signal.SIGINT, signal.SIGTERM} | ({signal.SIGHUP} if hasattr(signal, "SIGHUP") else set())
