"""`envdoctor diagnose` as a call: pasted files (or texts) in, the judged Report out; nothing printed.

The paste's facts come from ``envdoctor.diagnose`` (the readers, a source of facts below the judge); the one
judge (``judging.judge``) weighs them under the paste policy, each machine on its own when the paste holds several.
A file of any size is read in bounded memory (``diagnose.bounded_read``: its head, its tail and the errors of its
middle). The command line (cli/diagnose.py) parses, shows progress, renders and sets the exit code.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import field
from typing import Any, BinaryIO, Callable, List, Optional, Sequence, Tuple

from ..diagnose import NothingRecognised, read_paste
from ..domain.fastclass import dataclass
from ..judging import PastePolicy, Selection, judge
from ..model.findings import Report


class DiagnoseError(ValueError):
    """A file that cannot be read, or input with nothing recognisable in it: the CLI's exit 2, in one line."""


@dataclass(frozen=True)
class DiagnoseOptions:
    files: List[str] = field(default_factory=lambda: ["-"])  # '-': stdin
    only: Optional[List[str]] = None  # check-id globs, as the CLI validated them
    ignore: Optional[List[str]] = None


def diagnose(options: DiagnoseOptions, compat: Any = None, progress: Optional[Callable[[str], None]] = None,
             stdin: Optional[BinaryIO] = None) -> Report:
    """Read ``options.files`` and judge them as one paste. ``progress`` is told what is being done ("reading
    x.log: 12 of 300 MiB", "judging ..."); ``stdin`` is read for '-' (default: this process's stdin)."""
    from ..checks import all_checks, select

    if compat is None:
        from ..compat import load_compat

        compat = load_compat()
    files = list(options.files) or ["-"]
    read = [read_file(f, compat, progress, stdin) for f in files]
    texts = [t for t, _ in read]
    if progress is not None:
        progress(f"judging what was read ({sum(len(t) for t in texts) / (1 << 20):.1f} MiB of text)")
    names = ["stdin" if f == "-" else os.path.basename(f) or f for f in files]
    try:
        return diagnose_report(texts, compat, select(all_checks(), options.only, options.ignore), names=names,
                               read_notes=[n for _, n in read if n])
    except NothingRecognised as e:
        raise DiagnoseError(str(e)) from None


def read_file(path: str, compat: Any, progress: Optional[Callable[[str], None]] = None,
              stdin: Optional[BinaryIO] = None) -> Tuple[str, Optional[str]]:
    """(text, what was skipped or None): a paste of any size, read in bounded memory (diagnose.bounded_read)."""
    from ..diagnose import decode_text
    from ..diagnose.bounded_read import MiB, read_bounded, trigger_keywords

    name = "stdin" if path == "-" else os.path.basename(path) or path

    def reading(fh: Any) -> Callable[[int], None]:
        """After each chunk: a signal the command line recorded ends the read (its handler raises nothing, and a
        long log is many chunks), and the progress line, when one is wanted."""
        from ..probes.runner import INTERRUPT

        if progress is None:
            return lambda _done: INTERRUPT.check()
        try:
            size = f" of {os.fstat(fh.fileno()).st_size / MiB:.0f}"
        except (OSError, ValueError, AttributeError):
            size = ""
        tell = progress

        def step(done: int) -> None:
            INTERRUPT.check()
            tell(f"reading {name}: {done / MiB:.0f}{size} MiB")

        return step

    try:
        if path == "-":
            source = stdin if stdin is not None else sys.stdin.buffer
            data, note = read_bounded(source, name, trigger_keywords(compat), reading(source))
        else:
            with open(path, "rb") as fh:
                data, note = read_bounded(fh, name, trigger_keywords(compat), reading(fh))
    except IsADirectoryError:
        raise DiagnoseError(f"cannot read {path}: is a directory") from None
    except OSError as e:
        raise DiagnoseError(f"cannot read {path}: {e.strerror}") from None
    return decode_text(data), note


def diagnose_report(texts: Sequence[Any], compat: Any, checks: Optional[list] = None,
                    names: Optional[Sequence[str]] = None, read_notes: Sequence[str] = ()) -> Report:
    """Diagnose pasted texts: the paste's facts (``diagnose.read_paste``; each machine's too, in
    ``facts.paste.machines``, when it holds several) judged by the one judge under the paste policy, as
    `check --facts` on ``report.facts`` judges them too. NothingRecognised (a ValueError) when nothing is readable.

    ``names`` name the texts (file names) in labels. ``read_notes`` say what of the input was not read
    (diagnose.bounded_read: the middle of a long log): the report lists them with what the paste does not show.
    """
    facts, _info = read_paste(list(texts), compat, names)
    report = judge(facts, compat, Selection(checks=checks), PastePolicy())
    if read_notes and report.facts.paste is not None:
        paste = report.facts.paste
        facts = dataclasses.replace(report.facts, paste=dataclasses.replace(
            paste, not_found=list(paste.not_found) + [n for n in read_notes if n not in paste.not_found]))
        report = dataclasses.replace(report, facts=facts)
    return report
