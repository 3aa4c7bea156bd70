"""What several commands share: exit codes, usage errors, option groups, reading input, writing and
rendering the output, the interpreter and data targets (the signals: cli/signals.py).

Command modules import this module and never one another; nothing here imports a command module.
Heavy modules (app, checks, report, compat) are imported inside the functions that use them, so that
`envdoctor --help` and every command's start-up import only what they run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

# the one default of every --python-timeout, and --smoke thorough's (probes/payload_launch.py: stdlib only, and
# loaded before the payload starts anyway)
from ..probes.payload_launch import DEFAULT_TIMEOUT_S as DEFAULT_PYTHON_TIMEOUT_S
from ..probes.payload_launch import THOROUGH_TIMEOUT_S

EXIT_OK = 0  # no finding at or above --fail-on
EXIT_FINDINGS = 1  # at least one finding at or above --fail-on, or no check judged anything
EXIT_USAGE = 2  # usage error or unreadable input (bad --facts file, nothing recognisable in a paste)
EXIT_INTERNAL = 3  # envdoctor itself failed

EXIT_CODES_HELP = """exit codes:
  0  no finding at or above --fail-on (default: error)
  1  at least one finding at or above --fail-on, or nothing could be judged
  2  usage error or unreadable input (bad --facts file, nothing recognisable in a paste)
  3  envdoctor itself failed (a bug: please report it)
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs keep their line breaks (the exit-code table, examples) as RawDescription does,
    but a line longer than the terminal wraps under itself (fit_text), so that --help fits 80 columns too."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return fit_text("\n".join(indent + line for line in text.splitlines()), width + len(indent)) + (
            "\n" if text.endswith("\n") else "")


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def split_globs(values: Optional[List[str]], option: str = "--only") -> Optional[List[str]]:
    """The check-id globs of --only/--ignore; one that matches no check is a usage error: a typo in
    `--only` would otherwise run nothing and print "No problems found" with exit code 0."""
    if not values:
        return None
    out = [part.strip() for v in values for part in v.split(",") if part.strip()]
    if out:
        import fnmatch

        from ..checks import all_checks

        ids = [c.id for c in all_checks()]
        for pat in out:
            if not any(fnmatch.fnmatchcase(i, pat) for i in ids):
                raise UsageError(f"{option} {pat}: matches no check id (`envdoctor list-checks` lists them)")
    return out or None




def positive_seconds(text: str) -> float:
    """--python-timeout: a positive, finite number of seconds (nan, inf, 0 and -1 would never or always fire)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("console", "json", "markdown", "openmetrics"), default="console",
                   help="output format (default: console; openmetrics: Prometheus metrics, README \"Metrics\")")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit code 1 (default: error)")
    p.add_argument("--only", action="append", metavar="GLOBS",
                   help="run only these checks (ids or globs, comma-separated, repeatable): driver.*")
    p.add_argument("--ignore", action="append", metavar="GLOBS", help="skip these checks (ids or globs)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence and probe timings")
    p.add_argument("--no-redact", action="store_true",
                   help="keep host names, home paths and GPU UUIDs in JSON/Markdown output")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")


def add_collect_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--python", action="append", metavar="PATH", dest="pythons",
                   help="interpreter to diagnose, or a venv/conda prefix (repeatable; default: $VIRTUAL_ENV or $CONDA_PREFIX python, "
                        "else python3 on PATH)")
    p.add_argument("--data", action="append", metavar="PATH", dest="data_paths",
                   help="where the training data lives (repeatable; default: the current directory)")
    p.add_argument("--no-torch", action="store_true",
                   help="do not import torch in the target interpreter (its build is still read from its files)")
    p.add_argument("--python-timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help=f"time allowed to import torch in each interpreter (default: {DEFAULT_PYTHON_TIMEOUT_S:g})")
    p.add_argument("--smoke", choices=("quick", "thorough", "off"), default="quick",
                   help="try what a training run does, each step in its own bounded child of the target interpreter "
                        "(quick, the default: imports, the C++ toolchain torch.compile uses, a DataLoader with "
                        "workers, a checkpoint, a one-rank process group, GPU kernels, beside the import; "
                        "thorough: also every dependent of torch imported fresh and an end-to-end torch.compile, "
                        "up to a minute; off)")
    p.add_argument("--expect-gpu", action="store_true",
                   help="this machine should have NVIDIA GPUs: no NVIDIA hardware is then an error (also "
                        "`expect-gpu = true` under [tool.envdoctor] in pyproject.toml)")
    p.add_argument("--no-config", action="store_true",
                   help="do not read [tool.envdoctor] from pyproject.toml or envdoctor.toml")
    p.add_argument("--load-pcie", action="store_true",
                   help="copy host->GPU for ~2 s in the target interpreter to read PCIe links under load "
                        "(idle links sit at Gen1; off by default because it uses the GPUs)")


def add_bench_options(p: argparse.ArgumentParser, names: bool) -> None:
    if names:
        p.add_argument("names", nargs="*", metavar="NAME",
                       help="benchmarks to run (default: the quick suite; 'all': every one; --list names them)")
        p.add_argument("--list", action="store_true", help="list the benchmarks with their budgets and exit")
    p.add_argument("--device", choices=("cpu", "cuda", "all"), default="cuda",
                   help="where torch kernels run (default: cuda; cpu runs every torch code path on the CPU; "
                        "all: the GPU kernels on every GPU, then the host-side ones on the CPU)")
    p.add_argument("--sustain", type=float, metavar="SECONDS",
                   help="pressure probe: large matmuls on every GPU at once for SECONDS, NVML sampled every 0.5 s")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="rescale the benchmarks' budgets to this total (not counting --sustain)")
    p.add_argument("--force", action="store_true", help="also measure GPUs that another process is using")
    p.add_argument("--thorough", action="store_true",
                   help="mamf-finder's matmul procedure (50 + 100 iterations per shape, its shape range; minutes)")
    p.add_argument("--no-write", action="store_true",
                   help="never write a temporary file for the disk benchmarks (read an existing large file or skip)")


def query_command(sub: Any, name: str, help: str, epilog: Optional[str] = None,
                   description: Optional[str] = None, formats: Sequence[str] = ()) -> argparse.ArgumentParser:
    """A command that answers a question from the matrix or this machine: it prints console text or JSON (or one
    of ``formats`` more, which its handler prints)."""
    p = sub.add_parser(name, help=help, description=description, epilog=epilog, formatter_class=HelpFormatter)
    p.add_argument("--format", choices=("console", "json", *formats), default="console",
                   help="output format (default: console)")
    return p


def write(text: str, output: Optional[str], utf8: bool = False) -> None:
    """Write to FILE (always UTF-8) or stdout. ``utf8``: a document (Markdown, JSON) goes to stdout as UTF-8
    bytes whatever the terminal's encoding (a redirect on a C-locale box or a Windows code page), so the file
    the user pastes is the one GitHub reads; other text is written in the terminal's encoding, "?" for the rest."""
    from ..domain.safe_text import escape_surrogates

    # a lone surrogate (a non-UTF-8 byte of a path the machine gave) is written out as \xe9, never a crash
    text = escape_surrogates(text if text.endswith("\n") else text + "\n")
    if output and output != "-":
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise UsageError(f"cannot write {output}: {e.strerror}") from None
        return
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a StringIO (tests, notebooks): it takes str
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    encoding = "utf-8" if utf8 else (getattr(sys.stdout, "encoding", None) or "utf-8")
    buffer.write(text.encode(encoding, "replace"))
    buffer.flush()


def json_document(data: Any, **kw: Any) -> str:
    """``json.dumps(data, **kw)`` with every lone surrogate in its strings written out as ``\\xe9`` text: the JSON
    a command prints or writes, parsable by any reader and encodable as UTF-8 (domain/safe_text.py)."""
    from ..domain.safe_text import escape_json_surrogates

    return escape_json_surrogates(json.dumps(data, **kw))


def render(report, args) -> str:
    report = with_data_label(report)

    # only the renderer asked for is imported: a JSON run never loads rich
    if args.format == "json":
        from ..report import render_json

        return render_json(report, redact=not args.no_redact)
    if args.format == "openmetrics":
        from ..report.openmetrics import render_openmetrics

        return render_openmetrics(report, redact=not args.no_redact)
    if args.format == "markdown":
        from ..report import render_markdown

        return render_markdown(report, redact=not args.no_redact)
    from ..report import render_console

    to_file = bool(args.output and args.output != "-")
    return render_console(report, verbose=args.verbose, color=False if to_file else None,
                          file=None if to_file else sys.stdout) if not to_file else \
        render_console(report, verbose=args.verbose, color=False)


def print_report(report, args, utf8: Optional[bool] = None) -> None:
    """The report, rendered for --format and written to -o FILE or stdout (the console renderer has printed a
    terminal's report itself). ``utf8``: documents go to stdout as UTF-8 (default: every format but console)."""
    text = render(report, args)
    if args.format != "console" or (args.output and args.output != "-"):
        write(text, args.output, utf8=args.format != "console" if utf8 is None else utf8)


def add_textfile_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--textfile", metavar="DIR",
                   help="also write the report as Prometheus metrics to DIR/envdoctor.prom, atomically, for "
                        "node_exporter's textfile collector (--collector.textfile.directory)")


def write_textfile(report, directory: Optional[str]) -> None:
    """--textfile DIR: the metrics file beside the ordinary output; a directory that cannot take it is a usage
    error (exit 2), said in one line."""
    if not directory:
        return
    from ..report.openmetrics import write_textfile as write_metrics

    try:
        write_metrics(report, directory)
    except OSError as e:
        raise UsageError(f"--textfile {directory}: {e.strerror or e}") from None


PROGRESS_AFTER_S = 2.0  # a wait shorter than this says nothing


def progress_wanted(stream: Any) -> bool:
    """Whether a progress line goes to ``stream``: where it is a terminal (a person is waiting; a log or a pipe
    is not filled with it), or always with ENVDOCTOR_PROGRESS=1, never with 0."""
    wanted = os.environ.get("ENVDOCTOR_PROGRESS")
    if wanted in ("0", "1"):
        return wanted == "1"
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or replaced stderr
        return False


class Progress:
    """A progress line on stderr for a command that may take a while: nothing for the first ``after_s`` seconds
    (a short job prints nothing). With ``rewrite`` (diagnose of a long log) the line is rich's (a transient
    ``rich.live.Live`` on stderr, redrawn by rich's own thread every ``every_s`` with the elapsed seconds, cleared by
    ``done()`` before the report is printed); without it (check waiting on a slow interpreter, see
    ``wait_progress``) a whole line at most every ``every_s``, each on its own (a log keeps them). Only where
    ``progress_wanted``, and never on stdout, so `--format json` stays a document. ``clock`` and ``enabled`` are
    for tests."""

    def __init__(self, stream: Any = None, clock: Optional[Callable[[], float]] = None,
                 after_s: float = PROGRESS_AFTER_S, every_s: float = 0.5, enabled: Optional[bool] = None,
                 label: str = "envdoctor", rewrite: bool = True) -> None:
        import time

        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock or time.monotonic
        self.enabled = progress_wanted(self.stream) if enabled is None else enabled
        self.after_s, self.every_s, self.label, self.rewrite = after_s, every_s, label, rewrite
        self.start = self.clock()
        self.last: Optional[float] = None
        self.shown = 0  # lines written (a live line counts while it is up)
        self.text = "working"
        self._live: Any = None

    def line(self) -> Optional[str]:
        """The line to show now; None before ``after_s``."""
        elapsed = self.clock() - self.start
        if elapsed < self.after_s:
            return None
        return f"{self.label}: {self.text} ({elapsed:.0f} s)"

    def __rich__(self) -> Any:  # what the live line draws at each refresh
        from rich.text import Text

        line = self.line()
        if line is not None and not self.shown:
            self.shown = 1
        return Text(line or "", no_wrap=True, overflow="ellipsis")

    def update(self, text: str) -> None:
        self.text = text
        if not self.enabled:
            return
        now = self.clock()
        if self.rewrite:  # rich redraws the line by itself; a new text is drawn now (at most every every_s)
            self._start_live()
            if self._live is not None and self.line() is not None and (
                    self.last is None or now - self.last >= self.every_s):
                self.last = now
                try:
                    self._live.refresh()
                except (OSError, ValueError):
                    self.enabled = False
            return
        line = self.line()
        if line is None or (self.last is not None and now - self.last < self.every_s):
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            return
        self.last = now
        self.shown += 1

    def phase(self, text: str) -> None:
        """What is being done now: shown by the next redraw (the live line's) or ``update``."""
        self.update(text)

    def tick_in_background(self) -> None:
        """Keep the line redrawn while a step that reports nothing runs (judging): rich's own refresh thread."""
        if self.enabled and self.rewrite:
            self._start_live()

    def _start_live(self) -> None:
        if self._live is not None:
            return
        from rich.console import Console
        from rich.live import Live

        try:
            console = Console(file=self.stream, force_terminal=True, color_system=None, highlight=False)
            self._live = Live(self, console=console, refresh_per_second=1 / max(self.every_s, 0.05),
                              transient=True, redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        except (OSError, ValueError):  # a closed or replaced stderr
            self.enabled, self._live = False, None

    def done(self) -> None:
        """Stop the live line and clear it (the report follows on the same terminal)."""
        live, self._live = self._live, None
        if live is not None:
            try:
                live.stop()
            except (OSError, ValueError):
                pass
        self.shown = 0


def report_exit_code(report, fail_on: str) -> int:
    return EXIT_FINDINGS if report.fails(fail_on) else EXIT_OK  # a report that judged nothing fails too


def python_target(value: str) -> str:
    """--python VALUE as the interpreter to run (probes/payload_launch.python_target: the one reading of it)."""
    from ..probes.payload_launch import TargetError
    from ..probes.payload_launch import python_target as resolve

    try:
        return resolve(value)
    except TargetError as e:
        raise UsageError(str(e)) from None


def data_target(value: str) -> str:
    """--data VALUE as the path to read (probes/payload_launch.data_target)."""
    from ..probes.payload_launch import TargetError
    from ..probes.payload_launch import data_target as resolve

    try:
        return resolve(value)
    except TargetError as e:
        raise UsageError(str(e)) from None


def python_timeout(args: Any) -> float:
    """--python-timeout, else the default (--smoke thorough's longer one with that tier)."""
    if getattr(args, "python_timeout", None) is not None:
        return float(args.python_timeout)
    return THOROUGH_TIMEOUT_S if getattr(args, "smoke", None) == "thorough" else DEFAULT_PYTHON_TIMEOUT_S


def collect_options(args):
    from ..services.collect import CollectOptions

    return CollectOptions(
        pythons=[python_target(p) for p in (args.pythons or [])],
        data_paths=[data_target(p) for p in (args.data_paths or [])],
        inspect_torch=not args.no_torch,
        python_timeout_s=python_timeout(args),
        load_pcie=args.load_pcie,
        smoke=getattr(args, "smoke", None) or "off",
    )


def read_text(path: str, limit: Optional[int] = None) -> str:
    """The bytes of ``path`` ('-': stdin) as text; with ``limit``, at most that many (stderr says what was cut)."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1) if limit else sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1) if limit else fh.read()
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: is a directory") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if limit and len(data) > limit:
        data = data[:limit]
        sys.stderr.write(f"envdoctor: {'stdin' if path == '-' else path} is larger than {limit // 2**20} MiB: "
                         f"read only its first {limit // 2**20} MiB\n")
    from ..diagnose import decode_text  # UTF-8, or the UTF-16 a Windows shell redirect writes

    return decode_text(data)


def check_writable(output: Optional[str]) -> None:
    """-o FILE must be writable before minutes of probing, not after."""
    if not output or output == "-":
        return
    path = os.path.abspath(os.path.expanduser(output))
    if os.path.isdir(path):
        raise UsageError(f"cannot write {output}: is a directory")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write {output}: permission denied")
        return
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write {output}: no such directory {os.path.dirname(output) or parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {output}: permission denied in {os.path.dirname(output) or parent}")


def with_data_label(report, compat=None):
    """The report with the matrix in use named (report headers say which data judged)."""
    import dataclasses

    if report.compat_source:
        return report
    from ..compat import load_compat

    compat = compat or load_compat()
    return dataclasses.replace(report, compat_source=getattr(compat, "label", None))


# a line whose first word is one of these is a command to copy: never wrapped (a newline inside it would run half)
_COMMAND_WORDS = ("python", "pip", "pip3", "uv", "conda", "mamba", "micromamba", "envdoctor", "sudo", "apt",
                  "apt-get", "dnf", "yum", "zypper", "export", "set", "$env:", "nvidia-smi", "docker", "podman",
                  "wsl", "winget", "choco", "brew", "curl", "wget", "sh", "bash", "cd", "source", ".", "py")


def _is_command(stripped: str) -> bool:
    words = stripped.split(" ", 2)
    first = words[0]
    if len(words) > 1 and words[1].endswith(":"):
        return False  # prose that names a command ("envdoctor watch: 17 samples ..."), not one to copy
    # python3.11, ./run.sh, /usr/bin/python3: a command when arguments follow
    return first in _COMMAND_WORDS or (first.startswith(("python3", "./", "/")) and " " in stripped)


def fit_text(text: str, width: Optional[int] = None) -> str:
    """Plain console text fitted to the terminal (COLUMNS, else the terminal, else the console's default width,
    report.console.DEFAULT_WIDTH: the width watch's verdict was laid out for, so a pipe does not wrap it twice at
    80 after 100): a longer line wraps at
    spaces, an indented one with a hanging indent under its own text. Never cut: a word (a URL, a path), nor a
    command line, which is printed whole so that it can be copied (the check report wraps its commands with the
    shell's own continuation instead, remedies/shell_wrap.py)."""
    import shutil
    import textwrap

    from ..report.console import DEFAULT_WIDTH

    width = width or shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    out: List[str] = []
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        if len(line) <= width or not stripped or _is_command(stripped):
            out.append(line)
            continue
        indent = " " * (len(line) - len(stripped))
        hang = indent + "  " if indent else ""  # an indented line (a table's, a list's) hangs under its text
        out.extend(textwrap.wrap(stripped, width=width, initial_indent=indent, subsequent_indent=hang,
                                 break_long_words=False, break_on_hyphens=False) or [line])
    return "\n".join(out)


def emit(payload: Dict[str, Any], text: str, fmt: str) -> None:
    """A query command's answer: its JSON payload, or its console text (fitted to the terminal)."""
    write(json_document(payload, indent=2, sort_keys=False) if fmt == "json" else fit_text(text), None)


def answer(args, fn: Callable[[Any], Tuple[Dict[str, Any], str]], error: Type[Exception]) -> Dict[str, Any]:
    """Run ``fn(args)`` and print its (payload, text); ``error`` becomes a usage error. Returns the payload."""
    try:
        payload, text = fn(args)
    except error as e:
        raise UsageError(str(e)) from None
    emit(payload, text, args.format)
    return payload


# --------------------------------------------------------------------------- progress while waiting

PROGRESS_EVERY_S = 5.0  # while check waits: a line every 5 s, each on its own line


def wait_progress(args: Any, progress: Optional[Progress] = None) -> Optional[Callable[[float, List[str]], None]]:
    """``collect(progress=...)`` for a command that collects: a ``Progress`` line (after PROGRESS_AFTER_S, then
    every PROGRESS_EVERY_S) naming the probes still running (a hung interpreter's `import torch` is a silent minute
    otherwise); None where no line is wanted (``progress_wanted``). ``progress`` is for tests."""
    progress = progress or Progress(every_s=PROGRESS_EVERY_S, rewrite=False)
    if not progress.enabled:
        return None
    timeout = python_timeout(args)

    def tell(_elapsed_s: float, waiting: List[str]) -> None:
        if waiting:  # the elapsed seconds are the progress's own clock's, started as the collection starts
            what = [("the target interpreter (its `import torch`"
                     + (f"; --python-timeout {timeout:g} s)" if timeout else ")"))
                    if name == "pythons" else name for name in waiting]
            progress.update(f"still waiting for {', '.join(what)}")

    return tell
