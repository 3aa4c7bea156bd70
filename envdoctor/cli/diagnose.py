"""`envdoctor diagnose`: judge pasted reports, tables, logs and tracebacks (the work is services/diagnose.py)."""

from __future__ import annotations

import sys

from .common import (
    EXIT_CODES_HELP,
    HelpFormatter,
    Progress,
    UsageError,
    add_output_options,
    check_writable,
    print_report,
    report_exit_code,
    split_globs,
)


def add_parsers(sub) -> None:
    p = sub.add_parser("diagnose", help="judge pasted reports, tables, logs, tracebacks",
                       epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
    p.add_argument("files", nargs="*", metavar="FILE", help="files to read ('-' or nothing: stdin)")
    add_output_options(p)


def cmd_diagnose(args) -> int:
    from ..services.diagnose import DiagnoseError, DiagnoseOptions, diagnose

    files = args.files or ["-"]
    if files == ["-"] and sys.stdin.isatty():
        raise UsageError("diagnose reads pasted text from files or stdin: "
                         "envdoctor diagnose report.txt, or: pbpaste | envdoctor diagnose -")
    options = DiagnoseOptions(files=files, only=split_globs(args.only), ignore=split_globs(args.ignore, "--ignore"))
    check_writable(args.output)
    # a long log takes seconds: past 2 s a progress line on stderr (a terminal only; stdout stays the report)
    progress = Progress(label="envdoctor diagnose")
    progress.tick_in_background()
    try:
        report = diagnose(options, progress=progress.phase)
    except DiagnoseError as e:
        raise UsageError(str(e)) from None
    finally:
        progress.done()
    print_report(report, args)
    return report_exit_code(report, args.fail_on)


COMMANDS = {"diagnose": cmd_diagnose}
