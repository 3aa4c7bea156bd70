"""`envdoctor watch`: its options; the sampling, the launched command and the report are envdoctor.watch.command
(imported only when the command runs)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from .common import EXIT_CODES_HELP, HelpFormatter, UsageError, fit_text, positive_seconds, write

FORMATS = ("console", "json", "markdown")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "watch", help="watch a training run (or judge a recording): what limits it",
        description="Sample the GPUs (NVML), the watched process tree (DataLoader workers) and the host (CPU, "
                    "disk under --data, memory) while a run goes, then say what limits it: the GPU, the disk, the "
                    "CPU, the DataLoader, one GPU lagging, stalls. `--replay FILE` judges nvidia-smi dmon / "
                    "--query-gpu CSV, dcgmi dmon, gpustat, iostat -x and vmstat output instead. In the training "
                    "script, `from envdoctor.watch import timed; for batch in timed(loader): ...` adds how long "
                    "each step waits for its batch.",
        epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
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
                   help="exit 1 when a verdict is at least this severe (default: the command's own exit code)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence")
    p.add_argument("--no-redact", action="store_true", help="keep host names and home paths in the output")


def cmd_watch(args) -> int:
    import importlib.util

    if importlib.util.find_spec("psutil") is None:
        # psutil is compiled, so envdoctor.pyz (scripts/build_pyz.py) cannot carry it; only watch samples with it
        raise UsageError("watch needs psutil (process and disk counters), which is not importable by "
                         f"{sys.executable} (envdoctor.pyz cannot carry it: it is compiled): install envdoctor with pip, which "
                         "brings psutil; check, diagnose, node-health, assert, recommend and matrix run without it")
    from ..watch.command import WatchUsageError
    from ..watch.command import cmd_watch as run

    def fitted(text: str, output: Optional[str], utf8: bool = False) -> None:
        # the console report fits the terminal (a header or a "not seen" line was 120 columns); JSON, Markdown
        # and a file keep their lines
        write(fit_text(text) if args.format == "console" and output is None else text, output, utf8=utf8)

    try:
        return run(args, fitted)
    except WatchUsageError as e:
        raise UsageError(str(e)) from None


COMMANDS = {"watch": cmd_watch}
