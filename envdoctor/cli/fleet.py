"""`envdoctor fleet`: its options and its handler; the work is services/fleet.py (the rank's part in envdoctor.fleet,
the judge in judging/fleet.py), the renderers report/fleet.py."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List

from . import signals
from .common import (
    DEFAULT_PYTHON_TIMEOUT_S,
    EXIT_CODES_HELP,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    HelpFormatter,
    UsageError,
    check_writable,
    fit_text,
    positive_seconds,
    read_text,
    write,
)

DEFAULT_TIMEOUT_S = 120.0


def _sizes(text: str) -> List[int]:
    out = []
    for part in text.split(","):
        p = part.strip().upper()
        scale = 1
        for suffix, s in (("KIB", 1 << 10), ("MIB", 1 << 20), ("GIB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20),
                          ("G", 1 << 30)):
            if p.endswith(suffix):
                p, scale = p[: -len(suffix)], s
                break
        try:
            value = int(float(p) * scale)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a size (e.g. 1M,16M,256M)") from None
        if value < 4:
            raise argparse.ArgumentTypeError(f"{part!r}: a message is at least 4 bytes (one float32)")
        out.append(value)
    return out


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "fleet", help="one report for every node of a job (run under torchrun)",
        description="Run under the job's launcher, like training: torchrun --nnodes N --nproc-per-node G -m "
                    "envdoctor fleet. One rank per node collects that node's facts (the probes of `check`), "
                    "every rank names its device, rank 0 gathers over torch.distributed and prints one report: "
                    "what differs between nodes, each node's findings counted, stragglers, all-reduce bandwidth. "
                    "Needs torch (and envdoctor) in the training interpreter.",
        epilog=EXIT_CODES_HELP + "\nUnder torchrun, torchrun's own exit status is 1 whenever rank 0 exits non-zero.\n",
        formatter_class=HelpFormatter)
    p.add_argument("--backend", choices=("nccl", "gloo"), default=None,
                   help="torch.distributed backend (default: nccl when CUDA is available, else gloo)")
    p.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"how long rank 0 waits for the others at each round, and every collective's timeout "
                        f"(default: {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--bench", action="store_true",
                   help="also measure: each rank's matmul and host-to-device copy, and an all-reduce sweep")
    p.add_argument("--bench-budget", type=positive_seconds, default=4.0, metavar="SECONDS",
                   help="seconds for each per-rank kernel and for each all-reduce scope's sweep (default: 4)")
    p.add_argument("--sizes", type=_sizes, default=None, metavar="LIST",
                   help="all-reduce message sizes, e.g. 1M,16M,256M (default: 1M..1G on GPUs, 64K..4M on CPUs)")
    p.add_argument("--python-timeout", type=positive_seconds, default=DEFAULT_PYTHON_TIMEOUT_S, metavar="SECONDS",
                   help=f"time allowed to import torch when probing each node (default: {DEFAULT_PYTHON_TIMEOUT_S:g})")
    p.add_argument("--report", metavar="FILE",
                   help="judge a saved fleet report (--format json -o FILE) again, offline: nothing is launched")
    p.add_argument("--format", choices=("console", "json", "markdown"), default="console")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit code 1 (default: error)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence")
    p.add_argument("--no-redact", action="store_true", help="keep host names and GPU UUIDs in JSON/Markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (rank 0) instead of stdout")


def _render(rep: Any, args: Any) -> str:
    from ..report.fleet import render_console, render_json, render_markdown

    if args.format == "json":
        return render_json(rep, redact=not args.no_redact)
    if args.format == "markdown":
        return render_markdown(rep, redact=not args.no_redact)
    import shutil

    width = shutil.get_terminal_size((80, 24)).columns
    return fit_text(render_console(rep, verbose=args.verbose, width=width), width)


def cmd_fleet(args: Any) -> int:
    """cli -> services.fleet (the rank's part, then the judge) -> report.fleet; the exit code and the process's
    way out (os._exit) are the command line's."""
    from ..services import fleet as service

    check_writable(args.output)
    if args.report:
        text = read_text(args.report)
        try:
            saved = service.judge_saved(text)
        except service.FleetError as e:
            raise UsageError(f"{args.report}: {e}") from None
        write(_render(saved, args), args.output, utf8=args.format != "console")
        return EXIT_FINDINGS if saved.has_at_least(args.fail_on) else EXIT_OK
    options = service.FleetOptions(backend=args.backend, timeout_s=args.timeout, bench=args.bench, sizes=args.sizes,
                                   bench_budget_s=args.bench_budget, python_timeout_s=args.python_timeout)
    try:
        # issue 41 (envdoctor/fleet/arrival.py): a stop during `import torch` is held until the rank's run begins
        # (so it still ends in a report), and the rank is forked once torch is imported: the parent waits and puts
        # an unclean end of the rank on the launcher's store, at once, before the launcher sees it. Both touch
        # signals and processes, so the command line hands them to the service
        # Rank 0 is forked too: when it dies before its report is out, its launched process writes the report in
        # its place (rank 0 named as dead, the others as the store had them), then leaves the same way
        from ..fleet.arrival import hold_stop_signals, supervise

        def orphan(place: Any, end: dict, stopped: bool) -> None:
            _hold_signals()
            write(_render(service.orphan_report(options, os.environ, place, end, stopped), args), args.output,
                  utf8=args.format != "console")

        rep = service.run(options, os.environ, before_judging=_hold_signals, before_torch=hold_stop_signals,
                          after_torch=lambda place: supervise(
                              place, os.environ, orphan=lambda end, stopped: orphan(place, end, stopped)))
    except service.FleetError as e:
        raise UsageError(str(e)) from None
    except service.RankFailed as e:
        sys.stderr.write(f"envdoctor fleet: {e}\n")
        # rank 0 could not take part: the job is unusable (2). Another rank leaves with 0: rank 0 names it as
        # missing, and a non-zero exit would only make torchrun stop rank 0 before its report is written
        _leave(EXIT_USAGE if e.rank == 0 else EXIT_OK)
        return EXIT_USAGE
    if rep is None:  # not rank 0: nothing on stdout
        _leave(EXIT_OK)
        return EXIT_OK
    write(_render(rep, args), args.output, utf8=args.format != "console")
    from ..fleet.arrival import report_written

    report_written()  # rank 0's launched process writes none in its place
    code = EXIT_FINDINGS if rep.has_at_least(args.fail_on) else EXIT_OK
    _leave(code)
    return code


def _hold_signals() -> None:
    """Rank 0 holds every rank's part: the seconds of judging and writing are not interrupted. torchrun sends
    SIGTERM to the workers still running when one exits non-zero, and SIGKILL only after its grace period."""
    signals.ignore_stops()


def _leave(code: int) -> None:
    """Exit now: the process group's threads (a receive that will never complete, a peer gone) must not hold
    the interpreter's shutdown; everything this rank had to say is written and flushed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


COMMANDS = {"fleet": cmd_fleet}
