"""`envdoctor assert`: the static checks against declared requirements and a target fleet (no GPU needed).

The work is in envdoctor.services.assertions; here are its options and where they come from (flags, project file).
"""

from __future__ import annotations

from typing import Any

from .common import (
    DEFAULT_PYTHON_TIMEOUT_S,
    EXIT_CODES_HELP,
    EXIT_FINDINGS,
    EXIT_OK,
    HelpFormatter,
    UsageError,
    positive_seconds,
    print_report,
    python_target,
    with_data_label,
    write,
)

ASSERT_FORMATS = ("console", "json", "markdown", "junit")


def add_parsers(sub: Any) -> None:
    fmt = HelpFormatter
    p = sub.add_parser(
        "assert", help="static checks for a declared fleet (no GPU)",
        description="Judge the target interpreter against declared requirements and a target fleet (driver, "
                    "GPUs) with the static checks only: no GPU or driver is needed, so it runs in a Docker "
                    "build. Requirements come from the flags and from [tool.envdoctor] in pyproject.toml or "
                    "envdoctor.toml (nearest upward from the working directory) or --config FILE.",
        epilog=EXIT_CODES_HELP, formatter_class=fmt)
    p.add_argument("--require", action="append", default=[], metavar="REQ",
                   help="PEP 508 requirement (repeatable): 'torch>=2.4', 'flash-attn', 'cuda>=12.4', "
                        "'cudnn>=9', 'python>=3.10'")
    p.add_argument("--target-driver", metavar="VERSION",
                   help="the fleet's NVIDIA driver (535.104.05): torch's CUDA must run on it")
    p.add_argument("--target-gpus", action="append", default=[], metavar="GPUS",
                   help="GPUs the build must serve, comma-separated model names or sm_XX: H100,A100 or sm_90")
    p.add_argument("--config", metavar="FILE", help="read [tool.envdoctor] from FILE instead of searching upward")
    p.add_argument("--no-config", action="store_true", help="do not read a project file")
    p.add_argument("--python", action="append", metavar="PATH", dest="pythons",
                   help="interpreter to judge, or a venv prefix (repeatable; default: the active environment's)")
    p.add_argument("--python-timeout", type=positive_seconds,  # one rule: a positive, finite number
                   default=DEFAULT_PYTHON_TIMEOUT_S, metavar="SECONDS",
                   help=f"time allowed to import torch in each interpreter (default: {DEFAULT_PYTHON_TIMEOUT_S:g})")
    p.add_argument("--format", choices=ASSERT_FORMATS, default="console", help="output format (default: console)")
    p.add_argument("--fail-on", choices=("error", "warning"), default=None,
                   help="lowest severity that makes the exit code 1 (default: error, or fail-on in the config)")
    p.add_argument("--only", action="append", metavar="GLOBS", help="run only these checks (ids or globs)")
    p.add_argument("--ignore", action="append", metavar="GLOBS", help="skip these checks (ids or globs)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence")
    p.add_argument("--no-redact", action="store_true", help="keep host names and home paths in the output")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")


def cmd_assert(args) -> int:
    from ..compat import load_compat
    from ..model.targets import TargetError
    from ..services.assertions import AssertError, AssertRequest, assert_report, plan

    request = AssertRequest(require=list(args.require), target_driver=args.target_driver,
                            target_gpus=list(args.target_gpus), only=list(args.only or []),
                            ignore=list(args.ignore or []), fail_on=args.fail_on, config=args.config,
                            read_config=not args.no_config,
                            pythons=[python_target(p) for p in (args.pythons or [])],
                            python_timeout_s=args.python_timeout)
    try:
        planned = plan(request)
    except AssertError as e:
        raise UsageError(str(e)) from None
    compat = load_compat()
    try:
        report = assert_report(planned.options, compat, only=planned.only, ignore=planned.ignore)
    except TargetError as e:
        raise UsageError(str(e)) from None
    report = with_data_label(report, compat)
    if args.format == "junit":
        from ..report.junit import render_junit

        write(render_junit(report, fail_on=planned.fail_on, redact=not args.no_redact), args.output)
    else:
        print_report(report, args, utf8=False)
    return EXIT_FINDINGS if report.fails(planned.fail_on) else EXIT_OK


COMMANDS = {"assert": cmd_assert}
