"""`envdoctor watch` as a call (services/watch.py): options in, the facts and the watch checks' report out, nothing
printed; bad options are WatchError; a signal handed to Stop reaches the launched command; the command line's exit
codes for a watch with nothing launched."""

from __future__ import annotations

import signal
import sys

import pytest

from envdoctor.services.watch import Stop, WatchError, WatchOptions, WatchResult, watch
from tests.paths import FIXTURES

GPU_BOUND = FIXTURES / "timeseries" / "015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt"


def test_a_replay_is_judged_by_the_watch_checks_and_nothing_is_printed(capsys):
    result = watch(WatchOptions(replay=[(str(GPU_BOUND), GPU_BOUND.read_text())]))
    assert isinstance(result, WatchResult) and result.exit_status is None
    assert result.facts.origin == "paste" and f"({GPU_BOUND.name})" in result.facts.watch.source
    assert result.report.checks and all(c.id.startswith("watch.") for c in result.report.checks)
    assert [f.about for f in result.report.findings] == ["GPU_BOUND"]
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("options, words", [
    (WatchOptions(replay=[("a.txt", "x")], pid=1), "takes no command and no --pid"),
    (WatchOptions(command=["true"], pid=1), "not both"),
    (WatchOptions(pid=0), "must be a process id"),
    (WatchOptions(command=["true"], interval_s=0.05), "below 0.1 s"),
    (WatchOptions(command=["true"], data_paths=["/nonexistent/data"]), "no such file"),
    (WatchOptions(pid=999999999), "no such process"),
    (WatchOptions(replay=[("LICENSE", "Apache License\n")]), "LICENSE: no recording found"),
    (WatchOptions(command=["/nonexistent/train"]), "cannot run /nonexistent/train"),
])
def test_options_that_cannot_work_are_a_watch_error(options, words):
    with pytest.raises(WatchError, match=words):
        watch(options)


def test_a_signal_handed_to_stop_reaches_the_launched_command_once():
    # what the command line's handler does with Ctrl-C: Stop.signal, before and while the command runs
    stop = Stop()
    stop.signal(signal.SIGINT)  # came before the launch: forwarded as the command starts (Stop.adopt)
    child = ("import signal, sys, time\ngot = []\nsignal.signal(signal.SIGINT, lambda *a: got.append(1))\n"
             "end = time.monotonic() + 60\nwhile not got and time.monotonic() < end:\n    time.sleep(0.05)\n"
             "sys.exit(7 if got else 1)\n")
    result = watch(WatchOptions(command=[sys.executable, "-c", child], interval_s=0.2), stop=stop)
    assert result.exit_status in (7, 128 + signal.SIGINT)  # its handler ran, or the signal beat its installation
    assert result.facts.watch.summary["stopped_by"] == "SIGINT"


@pytest.mark.parametrize("status, judged, fail_on, code", [
    (None, False, [], 1),  # nothing launched, nothing judged: exit 1 as every command (EXIT_CODES_HELP)
    (None, True, [], 0),
    (5, False, [], 5),  # a launched command's own status passes through
    (5, True, ["--fail-on", "warning"], 1),  # unless --fail-on and a verdict say otherwise
    (5, True, ["--fail-on", "error"], 5),
])
def test_the_exit_code(monkeypatch, capsys, status, judged, fail_on, code):
    from envdoctor.cli import main
    from envdoctor.model.facts import Facts, ProbeStatus, Watch
    from envdoctor.model.findings import CheckResult, Finding, Report
    from envdoctor.services import watch as service

    finding = Finding(code="watch.bottleneck/underfed", category="GPU_UNDERFED", severity="warning",
                      summary="The GPUs are steadily underused")
    check = CheckResult("watch.bottleneck", "watch", "What limits the run", "failed" if judged else "skipped",
                        findings=[finding] if judged else [], reason=None if judged else "too short")
    facts = Facts(watch=Watch(status=ProbeStatus.OK, source="live", samples=[], summary={}))
    monkeypatch.setattr(service, "watch", lambda *a, **k: WatchResult(facts, Report(facts, [check], "0"),
                                                                     exit_status=status))
    assert main(["watch", "--format", "json", *fail_on, *(["--", "true"] if status is not None else [])]) == code
    assert capsys.readouterr().err == ""
