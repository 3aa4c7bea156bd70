"""`envdoctor explain`: what a category, a check id, a finding code or an NVIDIA status means, and how to fix it.

Everything it knows comes from the check registry's declarations (``envdoctor.checks.catalog``): each
``Findings`` builder declares its kinds and categories, so a code a check can raise is a code `explain` knows.
The answer is services/explain.py's; this module prints it.
"""

from __future__ import annotations

from .common import EXIT_OK, UsageError, fit_text, write


def add_parsers(sub) -> None:
    p = sub.add_parser("explain", help="explain a category, check id, finding code, action or NVIDIA status")
    p.add_argument("code", help="e.g. DRIVER_TOO_OLD_FOR_TORCH_CUDA, driver.cuda-compat, driver.cuda-compat/too-old, "
                                "an action a finding carries (drain-node) or an NVIDIA library status "
                                "(CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice, ncclSystemError)")


def cmd_explain(args) -> int:
    from ..services.explain import ExplainError, explain

    try:
        lines = explain(args.code)
    except ExplainError as e:
        raise UsageError(str(e)) from None
    write(fit_text("\n".join(lines)), None)
    return EXIT_OK


COMMANDS = {"explain": cmd_explain}
