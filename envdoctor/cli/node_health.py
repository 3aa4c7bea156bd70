"""`envdoctor node-health`: the fast node check for Slurm (HealthCheckProgram, LBNL NHC) and Kubernetes
node-problem-detector (custom plugin): one line on stdout, an exit status the scheduler reads, the drain or taint
command on stderr for the operator (printed, never run). The contract is in services/node_health.py."""

from __future__ import annotations

from .common import (
    HelpFormatter,
    UsageError,
    add_textfile_option,
    json_document,
    python_target,
    write,
    write_textfile,
)

EPILOG = """exit codes (node-problem-detector's custom-plugin contract):
  0  healthy: no finding at or above --fail-on
  1  unhealthy: drain or taint the node (the command is printed on stderr)
  2  unknown: nothing could be judged, a check or a probe crashed, or a usage error
  3  envdoctor itself failed (a bug: please report it)
  130/143/129  interrupted by SIGINT/SIGTERM (a scheduler's timeout)/SIGHUP

examples:
  slurm.conf:  HealthCheckProgram=/usr/local/bin/envdoctor-node-health
               (a two-line script: exec envdoctor node-health --expect-gpu --scheduler slurm)
  nhc.conf:    * || check_cmd_status -t 10 -r 0 envdoctor node-health --expect-gpu
  NPD plugin:  "path": "/usr/local/bin/envdoctor", "args": ["node-health", "--expect-gpu",
               "--scheduler", "kubernetes"]   (README "Node health" has the whole config)
"""


def add_parsers(sub) -> None:
    p = sub.add_parser("node-health", help="fast node check for Slurm/NHC and node-problem-detector",
                       description="Judge only the node's own state (driver, GPUs, Xid errors, PCIe, NVLink, "
                                   "fabric, container GPU access, host memory and /dev/shm) in about a second, "
                                   "without importing torch, and answer in the schedulers' contract.",
                       epilog=EPILOG, formatter_class=HelpFormatter)
    p.add_argument("--expect-gpu", action="store_true",
                   help="GPUs belong on this node: no NVIDIA hardware is then unhealthy")
    p.add_argument("--with-torch", action="store_true",
                   help="also judge the interpreter's torch build against the driver (imports torch there: "
                        "slower, seconds)")
    p.add_argument("--python", action="append", metavar="PATH", dest="pythons",
                   help="with --with-torch: the interpreter to judge (default: as for check)")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the node unhealthy (default: error)")
    p.add_argument("--max-length", type=_length, default=80, metavar="BYTES",
                   help="longest stdout line, in bytes (default: 80, node-problem-detector's max_output_length)")
    p.add_argument("--scheduler", choices=("auto", "slurm", "kubernetes", "none"), default="auto",
                   help="whose drain/taint command to print on stderr (default: auto, from the environment; "
                        "both when it cannot tell)")
    p.add_argument("--format", choices=("line", "json", "openmetrics"), default="line",
                   help="stdout: the one line (default), the verdict as JSON, or the report as metrics")
    p.add_argument("--no-redact", action="store_true", help="keep host names and paths in JSON and metrics")
    add_textfile_option(p)


def _length(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of bytes") from None
    if value < 20:
        raise argparse.ArgumentTypeError(f"{value}: at least 20 bytes, or the line says nothing")
    return value


def cmd_node_health(args) -> int:
    import os
    import sys

    from ..services.node_health import NodeHealthOptions, node_health

    if args.pythons and not args.with_torch:
        raise UsageError("--python needs --with-torch (node-health judges no interpreter without it)")
    if args.textfile is not None and not os.path.isdir(args.textfile):
        raise UsageError(f"--textfile {args.textfile}: not a directory")
    health = node_health(NodeHealthOptions(
        with_torch=args.with_torch, expect_gpu=args.expect_gpu, fail_on=args.fail_on, max_length=args.max_length,
        scheduler=args.scheduler, pythons=[python_target(p) for p in (args.pythons or [])]))
    if args.format == "json":
        write(json_document(health.to_dict(), indent=2, sort_keys=True), None, utf8=True)
    elif args.format == "openmetrics":
        from ..report.openmetrics import render_openmetrics

        write(render_openmetrics(health.report, redact=not args.no_redact), None, utf8=True)
    else:
        write(health.line, None)
    if health.remedies:
        sys.stderr.write("To take this node out of service (envdoctor never runs these):\n"
                         + "".join(f"  {c}\n" for c in health.remedies))
    write_textfile(health.report, args.textfile)
    return health.exit_code


COMMANDS = {"node-health": cmd_node_health}
