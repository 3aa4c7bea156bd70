"""`envdoctor matrix`: query the bundled compatibility matrix (the answers, with their citations, come from
envdoctor.services.matrix)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .common import EXIT_CODES_HELP, EXIT_OK, EXIT_USAGE, HelpFormatter, answer, query_command


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("matrix", help="query the bundled matrix (cited rows)",
                       epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
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
        query_command(msub, name, query_help).add_argument(arg, nargs=nargs, help=arg_help)
    msub.choices["min-driver"].add_argument("--os", choices=("linux", "windows"), default="linux")
    pb = query_command(msub, "bench", "what a GPU should measure in `envdoctor bench` (expected, warning, error)")
    pb.add_argument("--gpu", required=True, metavar="NAME", help="'H100 SXM', A100-SXM4-80GB, 'RTX 4090', GH200")
    pb.add_argument("--link", action="append", metavar="KIND",
                    help="links to include: pcie4, pcie5x8, c2c, nvlink4, nvswitch_hopper ... (default: the GPU's)")

def cmd_matrix(args) -> int:
    from ..services.matrix import MatrixError, query

    payload = answer(args, query, MatrixError)
    return EXIT_OK if payload.get("found", True) else EXIT_USAGE


COMMANDS = {"matrix": cmd_matrix}
