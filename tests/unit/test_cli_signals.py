"""Partial results survive a signal: bench prints what it measured; a signal while the report prints waits."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from envdoctor import cli
from envdoctor.cli import live, signals
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
    monkeypatch.setattr(signals, "install", lambda: {})
    code = cli.main(["bench", "matmul_bf16", "--format", "json"])
    out = capsys.readouterr()
    assert code == 128 + signal.SIGTERM
    import json

    report = json.loads(out.out)
    results = report["facts"]["bench"]["results"]
    assert [(r["name"], r["value"]) for r in results] == [("matmul", 123.4)]
    assert "partial" in report["facts"]["bench"]["reason"] and "partial" in out.err


def test_a_signal_recorded_while_the_bench_payload_runs_gives_the_partial_report(monkeypatch, capsys) -> None:
    # the handler raises nothing: it kills the payload (its stream ends "interrupted") and records the signal;
    # what was measured before is kept and the run is reported partial, not as a whole run
    from envdoctor.probes.runner import INTERRUPT

    facts = m.healthy_a100()
    measured = {"name": "matmul", "status": "ok", "reason": "ran", "device": "cuda:0", "value": 123.4,
                "unit": "TFLOP/s", "duration_s": 2.0}

    def run_benchmarks(facts, bench, progress):
        progress({"event": "result", "result": measured})
        INTERRUPT.set(signal.SIGHUP)  # as signals.on_signal does; the killed payload's run returns
        return facts

    monkeypatch.setattr("envdoctor.services.collect.run_benchmarks", run_benchmarks)
    monkeypatch.setattr("envdoctor.services.collect.collect", lambda options, **_kw: facts)
    monkeypatch.setattr(signals, "install", lambda: {})
    code = cli.main(["bench", "matmul_bf16", "--format", "json"])
    out = capsys.readouterr()
    assert code == 128 + signal.SIGHUP
    import json

    bench = json.loads(out.out)["facts"]["bench"]
    assert [(r["name"], r["value"]) for r in bench["results"]] == [("matmul", 123.4)]
    assert "interrupted by SIGHUP" in bench["reason"] and "partial" in out.err
    assert INTERRUPT.signum is None


def test_console_partial_bench_report_shows_the_table_before_a_partial_verdict(monkeypatch, capsys) -> None:
    facts = m.healthy_a100()

    def run_benchmarks(facts, bench, progress):
        progress({"event": "result", "result": {"name": "matmul", "status": "ok", "reason": "ran",
                                                "device": "cuda:0", "value": 123.4, "unit": "TFLOP/s"}})
        raise KeyboardInterrupt

    monkeypatch.setattr("envdoctor.services.collect.run_benchmarks", run_benchmarks)
    monkeypatch.setattr("envdoctor.services.collect.collect", lambda options, **_kw: facts)
    monkeypatch.setattr(signals, "install", lambda: {})
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["bench", "matmul_bf16"]) == 130
    out = capsys.readouterr().out
    assert "123.4 TFLOP/s" in out and out.index("Benchmarks") < out.index("partial report")
    assert max(len(line) for line in out.splitlines()) <= 80


def test_the_handler_records_the_signal_and_raises_nothing(tmp_path) -> None:
    # cli/signals.py: the one handler records the signal and kills the children, wherever the main thread is; the
    # waits read the flag (no raise that Python could drop inside an import); cli.main clears it (restore)
    import sys
    import threading
    import time

    from envdoctor.probes.runner import INTERRUPT, Runner, live_children

    result = {}
    t = threading.Thread(target=lambda: result.setdefault("run", Runner().run(
        [sys.executable, "-c", "import time; time.sleep(900)"], timeout=900)), daemon=True)
    previous = signals.install()
    try:
        t.start()
        end = time.monotonic() + 120
        while not live_children() and time.monotonic() < end:
            time.sleep(0.02)
        assert live_children() == 1
        signals.on_signal(signal.SIGTERM, None)  # returns: nothing raised into the caller
        assert INTERRUPT.signum == signal.SIGTERM
        t.join(60)
        assert result["run"].error == "interrupted"  # its child was killed by the handler
        with pytest.raises(Interrupted) as e:  # what a wait does with the flag
            INTERRUPT.check()
        assert e.value.signum == signal.SIGTERM
        assert Runner().run([sys.executable, "-c", "pass"]).error == "interrupted"  # no new child after a stop
    finally:
        signals.restore(previous)
    assert INTERRUPT.signum is None and Runner().run([sys.executable, "-c", "pass"]).ok  # the next main() starts clean


def test_a_signal_while_the_report_prints_waits_for_it(monkeypatch, capsys) -> None:
    # the handler only records it: the report of what was read is printed whole, then the exit code says it
    from envdoctor.probes.runner import INTERRUPT

    facts = m.healthy_a100()
    monkeypatch.setattr("envdoctor.services.collect.collect", lambda options, **_kw: facts)
    monkeypatch.setattr(signals, "install", lambda: {})
    real_print = live.print_report

    def print_then_signal(report, args):
        INTERRUPT.set(signal.SIGTERM)  # as signals.on_signal does, half-way through the output
        real_print(report, args)

    monkeypatch.setattr(live, "print_report", print_then_signal)
    assert cli.main(["check", "--format", "json"]) == 128 + signal.SIGTERM
    out = capsys.readouterr()
    assert '"findings"' in out.out  # the whole report
    assert out.err.strip().splitlines()[-1] == "envdoctor: SIGTERM arrived while the report was printed"
    assert INTERRUPT.signum is None  # cli.main cleared it


def test_a_second_signal_ends_the_process_at_once() -> None:
    import subprocess
    import sys

    code = ("import signal\nfrom envdoctor.cli import signals\nsignals.install()\n"
            "signals.on_signal(signal.SIGINT, None)\nprint('first recorded', flush=True)\n"
            "signals.on_signal(signal.SIGTERM, None)\nprint('not reached')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout == "first recorded\n" and proc.returncode == 128 + signal.SIGTERM, proc


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


def test_a_signal_recorded_before_collect_still_ends_it() -> None:
    # the CLI starts the target's payload before envdoctor's own imports; a signal then is only recorded (the
    # handler raises nothing into an import): collect() ends the run as it begins, instead of a whole report for a
    # run the user stopped
    from envdoctor.probes.runner import INTERRUPT
    from envdoctor.services import collect as app

    INTERRUPT.set(signal.SIGINT)
    try:
        with pytest.raises(Interrupted) as e:
            app.collect(app.CollectOptions(inspect_torch=False))
        assert e.value.signum == signal.SIGINT
    finally:
        INTERRUPT.clear()


def test_a_signal_recorded_while_the_probes_run_ends_the_wait_with_a_partial_report(monkeypatch) -> None:
    # the join loop reads the flag: the probes that finished are kept, the others say they were interrupted
    import threading

    from envdoctor.probes.runner import INTERRUPT
    from envdoctor.services import collect as app

    release = threading.Event()

    def slow():
        release.wait(120)
        return "late"

    jobs = {"fast": (lambda: "done", lambda why: why), "slow": (slow, lambda why: why)}
    timer = threading.Timer(0.5, INTERRUPT.set, args=(signal.SIGHUP,))
    timer.start()
    try:
        with pytest.raises(Interrupted) as e:
            app._run_with_deadline(jobs, 600)
    finally:
        release.set()
        timer.cancel()
        INTERRUPT.clear()
    assert e.value.signum == signal.SIGHUP
    assert e.value.partial["fast"][0] == "done"
    assert e.value.partial["slow"][0] == "interrupted by SIGHUP before it finished"


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
