"""`envdoctor recommend`: the newest torch for a driver, GPUs and a Python (the work is in envdoctor.services.recommend)."""

from __future__ import annotations

import sys
from typing import Any

from .common import EXIT_CODES_HELP, EXIT_FINDINGS, EXIT_OK, UsageError, emit, query_command, write

EPILOG = EXIT_CODES_HELP + """
for an install script:
  --format json: the whole answer; its "install" object names the build (torch, variant, index_url, packages, pip_args) and driver_branch, the driver branch to install first (null: the driver in place runs it); "install" is null when nothing fits (why_none says why)
  --format pip-args: pip's arguments on one shell-quoted line, only when the build installs on the machine as it is; else nothing on stdout, exit 1, and why on stderr (nothing fits, or a driver branch to install first):
    args=$(envdoctor recommend --format pip-args) && eval "python3 -m pip install $args"
"""


def add_parsers(sub: Any) -> None:
    p = query_command(sub, "recommend", "the newest torch for a driver, GPU, Python", EPILOG,
                      description="From this machine's facts, or --driver/--gpu/--python/--os given by hand "
                                  "(planning a rental), the newest torch with matching torchvision/torchaudio "
                                  "whose CUDA variant runs on the driver and has kernels for every GPU, and the "
                                  "pip and uv commands.", formats=("pip-args",))
    p.add_argument("--driver", metavar="VERSION", help="driver version (default: this machine's)")
    p.add_argument("--gpu", action="append", default=[], metavar="NAME",
                   help="GPU model or sm_XX (repeatable; default: this machine's GPUs)")
    p.add_argument("--python", dest="python_version", metavar="X.Y",
                   help="Python version (default: the active interpreter's)")
    p.add_argument("--os", choices=("linux", "windows"), default=None, help="(default: this machine's)")


def cmd_recommend(args) -> int:
    from ..report.recommend_view import render_recommendation
    from ..services.recommend import RecommendError, RecommendOptions, pip_args_line, recommend_for

    options = RecommendOptions(driver=args.driver, gpus=list(args.gpu), python_version=args.python_version,
                               os=args.os)
    try:
        payload = recommend_for(options)
    except RecommendError as e:
        raise UsageError(str(e)) from None
    if args.format == "pip-args":
        line, why = pip_args_line(payload)
        if line is None:
            sys.stderr.write(f"envdoctor recommend: {why}\n")
            return EXIT_FINDINGS
        write(line, None)
        return EXIT_OK
    emit(payload, render_recommendation(payload), args.format)
    return EXIT_OK if payload.get("recommendation") else EXIT_FINDINGS  # nothing fits: exit 1, and why_none says why


COMMANDS = {"recommend": cmd_recommend}
