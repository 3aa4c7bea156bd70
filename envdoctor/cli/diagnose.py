"""`envdoctor diagnose`: judge pasted reports, tables, logs and tracebacks (the work is in envdoctor.diagnose)."""

from __future__ import annotations

import os
import sys
from typing import Callable, Optional

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


def _read_paste(path: str, compat, progress: Optional[Progress] = None) -> tuple:
    """(text, what was skipped or None): a paste of any size, read in bounded memory (diagnose.bounded_read)."""
    from ..diagnose import decode_text
    from ..diagnose.bounded_read import MiB, read_bounded, trigger_keywords

    name = "stdin" if path == "-" else os.path.basename(path) or path

    def reading(fh) -> Optional[Callable[[int], None]]:
        if progress is None:
            return None
        try:
            size = f" of {os.fstat(fh.fileno()).st_size / MiB:.0f}"
        except (OSError, ValueError, AttributeError):
            size = ""
        return lambda done: progress.phase(f"reading {name}: {done / MiB:.0f}{size} MiB")

    try:
        if path == "-":
            data, note = read_bounded(sys.stdin.buffer, name, trigger_keywords(compat), reading(sys.stdin.buffer))
        else:
            with open(path, "rb") as fh:
                data, note = read_bounded(fh, name, trigger_keywords(compat), reading(fh))
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: is a directory") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    return decode_text(data), note


def cmd_diagnose(args) -> int:
    from ..compat import load_compat
    from ..diagnose import NothingRecognised, diagnose_report

    files = args.files or ["-"]
    if files == ["-"] and sys.stdin.isatty():
        raise UsageError("diagnose reads pasted text from files or stdin: "
                         "envdoctor diagnose report.txt, or: pbpaste | envdoctor diagnose -")
    check_writable(args.output)
    compat = load_compat()
    # a long log takes seconds: past 2 s a progress line on stderr (a terminal only; stdout stays the report)
    progress = Progress(label="envdoctor diagnose")
    progress.tick_in_background()
    try:
        read = [_read_paste(f, compat, progress) for f in files]  # any size: head, tail and the middle's errors
        texts = [t for t, _ in read]
        from ..checks import all_checks, select

        size = sum(len(t) for t in texts) / (1 << 20)
        progress.phase(f"judging what was read ({size:.1f} MiB of text)")
        try:
            names = ["stdin" if f == "-" else os.path.basename(f) or f for f in files]
            report = diagnose_report(texts, compat, select(all_checks(), split_globs(args.only),
                                                           split_globs(args.ignore, "--ignore")), names=names,
                                     read_notes=[n for _, n in read if n])
        except NothingRecognised as e:
            raise UsageError(str(e)) from None
    finally:
        progress.done()
    print_report(report, args)
    return report_exit_code(report, args.fail_on)


COMMANDS = {"diagnose": cmd_diagnose}
