"""Command line of `assert`, `matrix`, `recommend` and `update-data`: their parsers and argument handling.

Kept apart from cli.py so that cli.py only registers them; the work is in assertions.py, matrix.py,
recommend.py and update_data.py.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

ASSERT_FORMATS = ("console", "json", "markdown", "junit")


def add_parsers(sub: Any, epilog: str) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "assert", help="static checks for a declared fleet (no GPU)",
        description="Judge the target interpreter against declared requirements and a target fleet (driver, "
                    "GPUs) with the static checks only: no GPU or driver is needed, so it runs in a Docker "
                    "build. Requirements come from the flags and from [tool.envdoctor] in pyproject.toml or "
                    "envdoctor.toml (nearest upward from the working directory) or --config FILE.",
        epilog=epilog, formatter_class=fmt)
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
    from .cli import _positive_seconds  # one rule for --python-timeout: a positive, finite number

    p.add_argument("--python-timeout", type=_positive_seconds, default=60.0, metavar="SECONDS",
                   help="time allowed to import torch in each interpreter (default: 60)")
    p.add_argument("--format", choices=ASSERT_FORMATS, default="console", help="output format (default: console)")
    p.add_argument("--fail-on", choices=("error", "warning"), default=None,
                   help="lowest severity that makes the exit code 1 (default: error, or fail-on in the config)")
    p.add_argument("--only", action="append", metavar="GLOBS", help="run only these checks (ids or globs)")
    p.add_argument("--ignore", action="append", metavar="GLOBS", help="skip these checks (ids or globs)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence")
    p.add_argument("--no-redact", action="store_true", help="keep host names and home paths in the output")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")

    p = sub.add_parser("matrix", help="query the bundled matrix (cited rows)",
                       epilog=epilog, formatter_class=fmt)
    msub = p.add_subparsers(dest="query", metavar="QUERY")
    msub.required = True
    # each query: its name, help, and its one positional argument (name, help, nargs)
    queries: Tuple[Tuple[str, str, str, str, Optional[str]], ...] = (
        ("min-driver", "minimum driver for a CUDA version (GA, minor-version floor)", "cuda", "12.4, 12.4.1", None),
        ("max-cuda", "newest CUDA a driver runs", "driver", "535.104.05", None),
        ("torch", "a torch release: variants, Python range, arch lists, companions", "version", "2.5 or 2.5.1",
         None),
        ("gpu", "a GPU: compute capability, specs, supporting CUDA and torch builds", "name",
         "H100, 'RTX 5090', 'Tesla K80'", None),
        ("arch", "an architecture: first/last CUDA and torch builds with its kernels", "arch",
         "sm_90 or 9.0 (nothing: list every architecture)", "?"),
    )
    for name, query_help, arg, arg_help, nargs in queries:
        _query_command(msub, name, query_help).add_argument(arg, nargs=nargs, help=arg_help)
    msub.choices["min-driver"].add_argument("--os", choices=("linux", "windows"), default="linux")
    pb = _query_command(msub, "bench", "what a GPU should measure in `envdoctor bench` (expected, warning, error)")
    pb.add_argument("--gpu", required=True, metavar="NAME", help="'H100 SXM', A100-SXM4-80GB, 'RTX 4090', GH200")
    pb.add_argument("--link", action="append", metavar="KIND",
                    help="links to include: pcie4, pcie5x8, c2c, nvlink4, nvswitch_hopper ... (default: the GPU's)")

    p = _query_command(sub, "recommend", "the newest torch for a driver, GPU, Python", epilog,
                       description="From this machine's facts, or --driver/--gpu/--python/--os given by hand "
                                   "(planning a rental), the newest torch with matching torchvision/torchaudio "
                                   "whose CUDA variant runs on the driver and has kernels for the GPUs, and the "
                                   "pip and uv commands.")
    p.add_argument("--driver", metavar="VERSION", help="driver version (default: this machine's)")
    p.add_argument("--gpu", action="append", default=[], metavar="NAME",
                   help="GPU model or sm_XX (repeatable; default: this machine's GPUs)")
    p.add_argument("--python", dest="python_version", metavar="X.Y",
                   help="Python version (default: the active interpreter's)")
    p.add_argument("--os", choices=("linux", "windows"), default=None, help="(default: this machine's)")

    p = _query_command(sub, "update-data", "fetch a newer matrix (the only network use)", epilog,
                       description="Download a matrix manifest (version, as_of, sha256 per file) from --url or "
                                   "$ENVDOCTOR_DATA_URL, verify and validate every file, and install it "
                                   "atomically into the cache ($ENVDOCTOR_CACHE_DIR, $XDG_CACHE_HOME/envdoctor "
                                   "or ~/.cache/envdoctor). It is used only while newer than the bundled matrix.")
    p.add_argument("--url", help="manifest URL (default: $ENVDOCTOR_DATA_URL)")
    p.add_argument("--offline", action="store_true",
                   help="touch no network: say which matrix is in use and whether the installed update is valid")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per request (default: 30)")


def _query_command(sub: Any, name: str, help: str, epilog: Optional[str] = None,
                   description: Optional[str] = None) -> argparse.ArgumentParser:
    """A command that answers a question from the matrix or this machine: it prints console text or JSON."""
    p = sub.add_parser(name, help=help, description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", choices=("console", "json"), default="console",
                   help="output format (default: console)")
    return p


# --------------------------------------------------------------------------- assert


def _assert_inputs(args) -> Dict[str, Any]:
    from .cli import UsageError
    from .config import ConfigError, ProjectConfig, load_config

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

    from .cli import UsageError

    out = [part.strip() for v in values for part in v.split(",") if part.strip()]
    for pat in out:
        if not any(fnmatch.fnmatchcase(c.id, pat) for c in checks):
            raise UsageError(f"{option} {pat}: matches no check `assert` runs "
                             f"({', '.join(c.id for c in checks)})")
    return out or None


def cmd_assert(args) -> int:
    from .assertions import AssertOptions, assert_report, static_checks
    from .cli import EXIT_FINDINGS, EXIT_OK, UsageError, _python_target, _render, _write
    from .compat import load_compat
    from .targets import TargetError

    inputs = _assert_inputs(args)
    checks = static_checks()
    only = _globs(inputs["only"], "--only", checks)
    ignore = _globs(inputs["ignore"], "--ignore", checks)
    compat = load_compat()
    options = AssertOptions(requirements=inputs["requirements"], target_driver=inputs["target_driver"],
                            target_gpus=inputs["target_gpus"], source=inputs["source"],
                            pythons=[_python_target(p) for p in (args.pythons or [])],
                            python_timeout_s=args.python_timeout)
    try:
        report = assert_report(options, compat, only=only, ignore=ignore)
    except TargetError as e:
        raise UsageError(str(e)) from None
    report = with_data_label(report, compat)
    if args.format == "junit":
        from .report.junit import render_junit

        _write(render_junit(report, fail_on=inputs["fail_on"], redact=not args.no_redact), args.output)
    else:
        text = _render(report, args)
        if args.format != "console" or (args.output and args.output != "-"):
            _write(text, args.output)
    return EXIT_FINDINGS if report.fails(inputs["fail_on"]) else EXIT_OK


def with_data_label(report, compat=None):
    """The report with the matrix in use named (report headers say which data judged)."""
    import dataclasses

    if report.compat_source:
        return report
    from .compat import load_compat

    compat = compat or load_compat()
    return dataclasses.replace(report, compat_source=getattr(compat, "label", None))


# --------------------------------------------------------------------------- matrix, recommend, update-data


def _emit(payload: Dict[str, Any], text: str, fmt: str) -> None:
    from .cli import _write

    _write(json.dumps(payload, indent=2, sort_keys=False) if fmt == "json" else text, None)


def _answer(args, fn: Callable[[Any], Tuple[Dict[str, Any], str]], error: Type[Exception]) -> Dict[str, Any]:
    """Run ``fn(args)`` and print its (payload, text); ``error`` becomes a usage error. Returns the payload."""
    from .cli import UsageError

    try:
        payload, text = fn(args)
    except error as e:
        raise UsageError(str(e)) from None
    _emit(payload, text, args.format)
    return payload


def cmd_matrix(args) -> int:
    from .cli import EXIT_OK, EXIT_USAGE
    from .matrix import MatrixError, query

    payload = _answer(args, query, MatrixError)
    return EXIT_OK if payload.get("found", True) else EXIT_USAGE


def cmd_recommend(args) -> int:
    from .cli import EXIT_FINDINGS, EXIT_OK
    from .recommend import RecommendError, recommend_from_args

    payload = _answer(args, recommend_from_args, RecommendError)
    return EXIT_OK if payload.get("recommendation") else EXIT_FINDINGS  # nothing fits: exit 1, and why_none says why


def cmd_update_data(args) -> int:
    from .cli import EXIT_OK, EXIT_USAGE, UsageError
    from .update_data import UpdateError, offline_status, update_from_url

    if args.offline:
        payload, text = offline_status()
        _emit(payload, text, args.format)
        return EXIT_OK
    import os

    url = args.url or os.environ.get("ENVDOCTOR_DATA_URL")
    if not url:
        raise UsageError("update-data needs a manifest URL: --url URL or ENVDOCTOR_DATA_URL "
                         "(no default location is published yet)")
    try:
        payload, text = update_from_url(url, timeout_s=args.timeout)
    except UpdateError as e:
        from .cli import _write

        if args.format == "json":
            _write(json.dumps({"updated": False, "reason": str(e), **e.status}, indent=2), None)
        else:
            import sys

            sys.stderr.write(f"envdoctor: update-data: {e}\n")
        return EXIT_USAGE  # an unreadable download is unreadable input (README exit codes)
    _emit(payload, text, args.format)
    return EXIT_OK


COMMANDS = {"assert": cmd_assert, "matrix": cmd_matrix, "recommend": cmd_recommend,
            "update-data": cmd_update_data}
