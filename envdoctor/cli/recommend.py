"""`envdoctor recommend`: the newest torch for a driver, GPUs and a Python (the work is in envdoctor.services.recommend)."""

from __future__ import annotations

from typing import Any

from .common import EXIT_CODES_HELP, EXIT_FINDINGS, EXIT_OK, answer, query_command


def add_parsers(sub: Any) -> None:
    p = query_command(sub, "recommend", "the newest torch for a driver, GPU, Python", EXIT_CODES_HELP,
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


def cmd_recommend(args) -> int:
    from ..services.recommend import RecommendError, recommend_from_args

    payload = answer(args, recommend_from_args, RecommendError)
    return EXIT_OK if payload.get("recommendation") else EXIT_FINDINGS  # nothing fits: exit 1, and why_none says why


COMMANDS = {"recommend": cmd_recommend}
