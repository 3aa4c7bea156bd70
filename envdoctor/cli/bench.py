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
    if args.list:
        from ..bench.suite import KERNELS, describe

        if args.format == "json":
            write(json.dumps({"benchmarks": [
                {"name": k.name, "kind": k.kind, "devices": list(k.devices), "quick": k.quick,
                 "gpu_budget_s": k.gpu_budget_s, "cpu_budget_s": k.cpu_budget_s, "what": k.what,
                 "multi_gpu": k.multi_gpu} for k in KERNELS.values()]}, indent=2) + "\n", None)
        else:
            import shutil

            width = shutil.get_terminal_size((80, 24)).columns
            write(fit_text("\n".join(describe(width)), width), None)
        return EXIT_OK
    only, ignore = split_globs(args.only), split_globs(args.ignore, "--ignore")
    names = args.names
    if args.no_torch:  # torch is not imported, so only what runs in envdoctor's own process: the disk reads
        from ..bench.suite import KERNELS, expand_names

        asked = expand_names(names) if names else [k for k, v in KERNELS.items() if v.kind == "disk"]
        torch_ones = [n for n in asked if KERNELS[n].kind != "disk"]
        if torch_ones and names:
            raise UsageError(f"--no-torch: {', '.join(torch_ones)} run torch kernels in the target interpreter "
                             "(the disk benchmarks run without it)")
        names = [n for n in asked if KERNELS[n].kind == "disk"]
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
