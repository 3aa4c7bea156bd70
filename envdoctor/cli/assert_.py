"""`envdoctor assert`: the static checks against declared requirements and a target fleet (no GPU needed).

The work is in envdoctor.services.assertions; here are its options and where they come from (flags, project file).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

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


def _assert_inputs(args) -> Dict[str, Any]:
    from ..model.config import ConfigError, ProjectConfig, load_config

    cfg = ProjectConfig()
    if not args.no_config:
        try:
            cfg = load_config(args.config)
        except ConfigError as e:
            raise UsageError(str(e)) from None
    sources = []
    if cfg.path:
        sources.append(cfg.label)
    if args.require or args.target_driver is not None or args.target_gpus:
        sources.insert(0, "command line")
    return {
        "requirements": list(cfg.require) + list(args.require),
        "target_driver": args.target_driver if args.target_driver is not None else cfg.target_driver,
        "target_gpus": list(args.target_gpus) or list(cfg.target_gpus),
        "source": " + ".join(sources) or "nothing declared",
        "fail_on": args.fail_on or cfg.fail_on or "error",
        "only": (args.only or []) + cfg.only,
        "ignore": (args.ignore or []) + cfg.ignore,
    }


def _globs(values: List[str], option: str, checks: list) -> Optional[List[str]]:
    import fnmatch

    out = [part.strip() for v in values for part in v.split(",") if part.strip()]
    for pat in out:
        if not any(fnmatch.fnmatchcase(c.id, pat) for c in checks):
            raise UsageError(f"{option} {pat}: matches no check `assert` runs "
                             f"({', '.join(c.id for c in checks)})")
    return out or None


def cmd_assert(args) -> int:
    from ..compat import load_compat
    from ..model.targets import TargetError
    from ..services.assertions import AssertOptions, assert_report, static_checks

    inputs = _assert_inputs(args)
    checks = static_checks()
    only = _globs(inputs["only"], "--only", checks)
    ignore = _globs(inputs["ignore"], "--ignore", checks)
    compat = load_compat()
    options = AssertOptions(requirements=inputs["requirements"], target_driver=inputs["target_driver"],
                            target_gpus=inputs["target_gpus"], source=inputs["source"],
                            pythons=[python_target(p) for p in (args.pythons or [])],
                            python_timeout_s=args.python_timeout)
    try:
        report = assert_report(options, compat, only=only, ignore=ignore)
    except TargetError as e:
        raise UsageError(str(e)) from None
    report = with_data_label(report, compat)
    if args.format == "junit":
        from ..report.junit import render_junit

        write(render_junit(report, fail_on=inputs["fail_on"], redact=not args.no_redact), args.output)
    else:
        print_report(report, args, utf8=False)
    return EXIT_FINDINGS if report.fails(inputs["fail_on"]) else EXIT_OK


COMMANDS = {"assert": cmd_assert}
