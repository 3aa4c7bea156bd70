"""`envdoctor bench`: measure matmul, memory, copies and disks on this machine and judge them."""

from __future__ import annotations

import json

from .common import (
    EXIT_CODES_HELP,
    EXIT_OK,
    HelpFormatter,
    UsageError,
    add_bench_options,
    add_collect_options,
    add_output_options,
    collect_options,
    fit_text,
    split_globs,
    write,
)
from .live import bench_options, expect_gpu, judge_and_print, partial_report, run_bench


def add_parsers(sub) -> None:
    p = sub.add_parser("bench", help="measure matmul, memory, copies, disks; judge",
                       epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
    add_collect_options(p)
    add_output_options(p)
    add_bench_options(p, names=True)


def cmd_bench(args) -> int:
    from ..services.bench import BenchError, bench_names, benchmarks

    if args.list:
        if args.format == "json":
            write(json.dumps({"benchmarks": benchmarks()}, indent=2) + "\n", None)
        else:
            import shutil

            from ..bench.suite import describe

            width = shutil.get_terminal_size((80, 24)).columns
            write(fit_text("\n".join(describe(width)), width), None)
        return EXIT_OK
    only, ignore = split_globs(args.only), split_globs(args.ignore, "--ignore")
    try:
        names = bench_names(args.names, inspect_torch=not args.no_torch)
    except BenchError as e:
        raise UsageError(str(e)) from None
    bench = bench_options(args, names=names)
    from ..services.collect import collect

    expect = expect_gpu(args)
    options = collect_options(args)
    from ..services.collect import Interrupted

    try:
        facts = run_bench(collect(options), options, bench, args)
    except Interrupted as e:
        partial_report(e, args, only, ignore, expect)
        raise
    return judge_and_print(facts, args, only, ignore, expect, table=True)


COMMANDS = {"bench": cmd_bench}
