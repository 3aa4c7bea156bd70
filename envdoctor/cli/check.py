"""`envdoctor check` (the default command: collect, judge, print) and `envdoctor collect` (the snapshot)."""

from __future__ import annotations

import functools
from typing import Any, Dict, Optional

from .common import (
    EXIT_CODES_HELP,
    EXIT_OK,
    HelpFormatter,
    UsageError,
    add_bench_options,
    add_collect_options,
    add_output_options,
    add_textfile_option,
    check_writable,
    collect_options,
    data_target,
    json_document,
    python_target,
    python_timeout,
    read_text,
    split_globs,
    wait_progress,
    write,
)
from .live import bench_options, expect_gpu, judge_and_print, partial_report, run_bench


def add_parsers(sub) -> None:
    p = sub.add_parser("check", help="collect, judge and print findings (default)",
                       epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
    add_collect_options(p)
    add_output_options(p)
    add_textfile_option(p)
    p.add_argument("--facts", metavar="FILE",
                   help="judge a snapshot written by `envdoctor collect` instead of this machine ('-': stdin)")
    p.add_argument("--bench", action="store_true",
                   help="also run the quick benchmark suite (`envdoctor bench`) and judge it in the same report")
    add_bench_options(p, names=False)

    p = sub.add_parser("collect", help="write the facts snapshot as JSON",
                       epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
    add_collect_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.add_argument("--no-redact", action="store_true", help="keep host names, home paths and GPU UUIDs")


def cmd_check(args) -> int:
    from ..services.check import CheckError, CheckOptions, check_facts
    from ..services.collect import Interrupted

    only, ignore = split_globs(args.only), split_globs(args.ignore, "--ignore")  # before minutes of probing
    expect = expect_gpu(args)
    if args.facts and args.bench:
        raise UsageError("--bench measures this machine; it cannot judge a --facts snapshot (run `envdoctor bench` "
                         "where the snapshot was taken)")
    check_writable(args.output)
    _check_textfile_dir(args.textfile)
    if args.facts:
        _check_no_collect_options(args)
        options = CheckOptions(snapshot=read_text(args.facts), snapshot_name=args.facts, only=only, ignore=ignore,
                               expect_gpu=expect)
    else:
        options = CheckOptions(collect=collect_options(args), only=only, ignore=ignore, expect_gpu=expect)
    bench = bench_options(args, names=[]) if args.bench else None
    try:
        facts = check_facts(options, meanwhile=functools.partial(_warm_up, args), progress=wait_progress(args))
        if bench is not None:
            facts = run_bench(facts, options.collect, bench, args)
    except CheckError as e:
        raise UsageError(str(e)) from None
    except Interrupted as e:
        partial_report(e, args, only, ignore, expect)
        raise
    return judge_and_print(facts, args, only, ignore, expect, table=bool(facts.bench.results))


def _check_textfile_dir(directory) -> None:
    """--textfile: a directory that exists, checked before minutes of probing."""
    import os

    if directory is not None and not os.path.isdir(directory):
        raise UsageError(f"--textfile {directory}: not a directory")


def _warm_up(args) -> None:
    """While the probes wait on the target's `import torch`: the checks, the compat data and the renderer."""
    from ..services.collect import warm_up

    warm_up()
    if args.format == "console":
        from ..report import console  # noqa: F401  (rich)
    elif args.format == "json":
        from ..report import redact  # noqa: F401


def _check_no_collect_options(args) -> None:
    """With --facts nothing is probed: options that only steer probing cannot apply (usage error)."""
    given = [name for name, on in (("--python", bool(args.pythons)), ("--data", bool(args.data_paths)),
                                   ("--no-torch", args.no_torch), ("--python-timeout", args.python_timeout is not None),
                                   ("--load-pcie", args.load_pcie), ("--smoke", args.smoke != "quick")) if on]
    if given:
        raise UsageError(f"{', '.join(given)} cannot apply with --facts: a snapshot is judged as it was collected")


def cmd_collect(args) -> int:
    from ..report.redact import redact_facts_dict
    from ..services.collect import collect

    check_writable(args.output)
    facts = collect(collect_options(args))
    data = facts.to_dict()
    if not args.no_redact:
        data = redact_facts_dict(data, [facts.host.hostname] if facts.host.hostname else [])
    write(json_document(data, indent=2, sort_keys=True), args.output, utf8=True)
    return EXIT_OK


def early_payloads(args) -> Optional[Dict[str, Any]]:
    """What start_early starts for these parsed options (payload_launch.start_early's arguments), or None: nothing
    for a run that probes no interpreter (--facts), measures first (--bench), or whose options cmd_check will
    refuse (its usage error then comes with no payload left running)."""
    if args.facts or args.bench:
        return None
    try:  # read as collect_options reads them, without its import of the services (hundreds of ms)
        check_writable(args.output)
        pythons = [python_target(p) for p in (args.pythons or [])]
        data_paths = [data_target(p) for p in (args.data_paths or [])]
    except UsageError:
        return None
    return {"pythons": pythons, "timeout_s": python_timeout(args), "inspect_torch": not args.no_torch,
            "smoke": args.smoke, "data_paths": data_paths}


def start_early(args) -> int:
    """The inspect payload this run's pythons probe will adopt, started as soon as the options are parsed (cli.main),
    before the heavy imports: the target's `import torch` is the floor of a plain run. How many were started."""
    plan = early_payloads(args)
    if plan is None:
        return 0
    from ..probes import payload_launch

    return payload_launch.start_early(**plan)


COMMANDS = {"check": cmd_check, "collect": cmd_collect}
EARLY = {"check": start_early}
