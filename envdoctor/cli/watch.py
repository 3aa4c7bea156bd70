"""`envdoctor watch`: its options, the signals it forwards to the launched command (through
cli/signals.py), its output and exit code. The
work is services/watch.py (the recording: envdoctor.watch.command; the judge), the renderers report/watch.py and
report/watch_live.py (all imported only when the command runs)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import signals
from .common import (
    EXIT_CODES_HELP,
    EXIT_FINDINGS,
    HelpFormatter,
    UsageError,
    check_writable,
    fit_text,
    json_document,
    positive_seconds,
    read_text,
    report_exit_code,
    write,
)

FORMATS = ("console", "json", "markdown")


# what watch adds to the exit codes every command shares: a launched command's own status passes through, as
# `time` or `nohup` would pass it (a job script's `envdoctor watch -- python train.py` still fails when training does)
WATCH_EXIT_CODES = (
    "\nA launched command's own exit status passes through (128+N when a signal N killed it, 0 when --duration "
    "stopped it), unless --fail-on is given and a verdict reaches it (1).\n"
    "Without a launched command (--pid, --replay, the GPUs alone) the codes above apply.\n")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "watch", help="watch a training run (or judge a recording): what limits it",
        description="Sample the GPUs (NVML), the watched process tree (DataLoader workers) and the host (CPU, "
                    "disk under --data, memory) while a run goes, then say what limits it: the GPU, the disk, the "
                    "CPU, the DataLoader, one GPU lagging, stalls. `--replay FILE` judges nvidia-smi dmon / "
                    "--query-gpu CSV, dcgmi dmon, gpustat, iostat -x and vmstat output instead. In the training "
                    "script, `from envdoctor.watch import timed; for batch in timed(loader): ...` adds how long "
                    "each step waits for its batch.",
        epilog=EXIT_CODES_HELP + WATCH_EXIT_CODES, formatter_class=HelpFormatter)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the command to launch and watch (after --)")
    p.add_argument("--pid", type=int, help="watch a running process and its children (never signalled)")
    p.add_argument("--replay", action="append", metavar="FILE",
                   help="judge a recording instead of watching ('-': stdin; repeatable: two tools' outputs)")
    p.add_argument("--duration", type=positive_seconds, metavar="SECONDS",
                   help="stop watching after SECONDS (a launched command is then stopped as Ctrl-C would)")
    p.add_argument("--interval", type=positive_seconds, metavar="SECONDS",
                   help="seconds between samples (default 0.5; for --replay: the spacing of a recording "
                        "without timestamps, default 1)")
    p.add_argument("--data", action="append", metavar="PATH", help="the training data (repeatable): its disk is watched")
    p.add_argument("--format", choices=FORMATS, default="console", help="output format (default: console)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="also write the recording (a facts snapshot: `envdoctor check --facts FILE` judges it)")
    p.add_argument("--fail-on", choices=("error", "warning"), default=None,
                   help="exit 1 when a verdict is at least this severe (default: a launched command's own exit "
                        "status; without one, error)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence")
    p.add_argument("--no-redact", action="store_true", help="keep host names and home paths in the output")


def cmd_watch(args) -> int:
    """cli -> services.watch (the recording below the judge, then the judge) -> report.watch: options in, the
    report printed, the exit code (WATCH_EXIT_CODES)."""
    import importlib.util

    if importlib.util.find_spec("psutil") is None:
        # psutil is compiled, so envdoctor.pyz (scripts/build_pyz.py) cannot carry it; only watch samples with it
        raise UsageError("watch needs psutil (process and disk counters), which is not importable by "
                         f"{sys.executable} (envdoctor.pyz cannot carry it: it is compiled): install envdoctor with pip, which "
                         "brings psutil; check, diagnose, node-health, assert, recommend and matrix run without it")
    from ..services import watch as service

    cmd = list(args.cmd or [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    check_writable(args.output)
    # a recording another tool made is read here, as every command reads its input (64 MiB at most)
    replay = [(path, read_text(path, REPLAY_LIMIT)) for path in args.replay or []]
    options = service.WatchOptions(command=cmd, pid=args.pid, replay=replay, duration_s=args.duration,
                                   interval_s=args.interval, data_paths=list(args.data or []))
    try:
        if replay:
            result = service.watch(options)
        else:
            from ..report.watch_live import LiveView

            stop = service.Stop()
            with signals.forwarded(stop.signal):  # the process's one runtime hands each signal to the run
                result = service.watch(options, stop=stop, view=LiveView(sys.stderr))
    except service.WatchError as e:
        raise UsageError(str(e)) from None
    if args.output:
        from ..report.redact import redact_facts_dict

        data = result.facts.to_dict()
        write(json_document(redact_facts_dict(data) if not args.no_redact else data, indent=2, sort_keys=True),
              args.output, utf8=True)
    write(_render(result.report, args), None, utf8=args.format != "console")
    if result.exit_status is None:  # nothing launched: the exit codes every command has
        return report_exit_code(result.report, args.fail_on or "error")
    if args.fail_on and result.report.has_at_least(args.fail_on):
        return EXIT_FINDINGS
    return result.exit_status


REPLAY_LIMIT = 64 * 2**20


def _render(report: Any, args: Any) -> str:
    from ..report import watch as view

    if args.format == "json":
        return view.render_json(report, redact=not args.no_redact)
    if args.format == "markdown":
        return view.render_markdown(report, redact=not args.no_redact)
    from ..report.console import terminal_width

    # the console report fits the terminal (a header or a "not seen" line was 120 columns)
    return fit_text(view.render_console(report, args.verbose, terminal_width(), redact=not args.no_redact))


COMMANDS = {"watch": cmd_watch}
