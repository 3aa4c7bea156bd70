"""Command line: argument parsing and exit codes only (the work is in app, checks and report)."""

from __future__ import annotations

import argparse
import errno
import functools
import json
import os
import sys
from typing import List, Optional, Sequence

from . import __version__

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

class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def _split_globs(values: Optional[List[str]], option: str = "--only") -> Optional[List[str]]:
    """The check-id globs of --only/--ignore; one that matches no check is a usage error: a typo in
    `--only` would otherwise run nothing and print "No problems found" with exit code 0."""
    if not values:
        return None
    out = [part.strip() for v in values for part in v.split(",") if part.strip()]
    if out:
        import fnmatch

        from .checks import all_checks

        ids = [c.id for c in all_checks()]
        for pat in out:
            if not any(fnmatch.fnmatchcase(i, pat) for i in ids):
                raise UsageError(f"{option} {pat}: matches no check id (`envdoctor list-checks` lists them)")
    return out or None


DEFAULT_PYTHON_TIMEOUT_S = 60.0
# `diagnose` reads at most this much of each input: a GitHub issue body is at most 65,536 characters and
# collect_env a few KB, so more is a log someone piped in whole; the rest is dropped and stderr says so


def _positive_seconds(text: str) -> float:
    """--python-timeout: a positive, finite number of seconds (nan, inf, 0 and -1 would never or always fire)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("console", "json", "markdown"), default="console",
                   help="output format (default: console)")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit code 1 (default: error)")
    p.add_argument("--only", action="append", metavar="GLOBS",
                   help="run only these checks (ids or globs, comma-separated, repeatable): driver.*")
    p.add_argument("--ignore", action="append", metavar="GLOBS", help="skip these checks (ids or globs)")
    p.add_argument("-v", "--verbose", action="store_true", help="show evidence and probe timings")
    p.add_argument("--no-redact", action="store_true",
                   help="keep host names, home paths and GPU UUIDs in JSON/Markdown output")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")


def _add_collect_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--python", action="append", metavar="PATH", dest="pythons",
                   help="interpreter to diagnose, or a venv/conda prefix (repeatable; default: $VIRTUAL_ENV or $CONDA_PREFIX python, "
                        "else python3 on PATH)")
    p.add_argument("--data", action="append", metavar="PATH", dest="data_paths",
                   help="where the training data lives (repeatable; default: the current directory)")
    p.add_argument("--no-torch", action="store_true",
                   help="do not import torch in the target interpreter (its build is still read from its files)")
    p.add_argument("--python-timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                   help=f"time allowed to import torch in each interpreter (default: {DEFAULT_PYTHON_TIMEOUT_S:g})")
    p.add_argument("--expect-gpu", action="store_true",
                   help="this machine should have NVIDIA GPUs: no NVIDIA hardware is then an error (also "
                        "`expect-gpu = true` under [tool.envdoctor] in pyproject.toml)")
    p.add_argument("--no-config", action="store_true",
                   help="do not read [tool.envdoctor] from pyproject.toml or envdoctor.toml")
    p.add_argument("--load-pcie", action="store_true",
                   help="copy host->GPU for ~2 s in the target interpreter to read PCIe links under load "
                        "(idle links sit at Gen1; off by default because it uses the GPUs)")


def _add_bench_options(p: argparse.ArgumentParser, names: bool) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envdoctor",
        description="Will this machine's GPU deep-learning stack work, and at the speed you pay for? "
                    "`envdoctor` alone is `envdoctor check`.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_CommandListFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show the version and the matrix in use")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="collect, judge and print findings (default)",
                       epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_collect_options(p)
    _add_output_options(p)
    p.add_argument("--facts", metavar="FILE",
                   help="judge a snapshot written by `envdoctor collect` instead of this machine ('-': stdin)")
    p.add_argument("--bench", action="store_true",
                   help="also run the quick benchmark suite (`envdoctor bench`) and judge it in the same report")
    _add_bench_options(p, names=False)

    p = sub.add_parser("collect", help="write the facts snapshot as JSON",
                       epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_collect_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.add_argument("--no-redact", action="store_true", help="keep host names, home paths and GPU UUIDs")

    p = sub.add_parser("diagnose", help="judge pasted reports, tables, logs, tracebacks",
                       epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", metavar="FILE", help="files to read ('-' or nothing: stdin)")
    _add_output_options(p)

    p = sub.add_parser("bench", help="measure matmul, memory, copies, disks; judge",
                       epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_collect_options(p)
    _add_output_options(p)
    _add_bench_options(p, names=True)

    sub.add_parser("list-checks", help="every check id and its categories")
    p = sub.add_parser("explain", help="explain a category, check id or finding code")
    p.add_argument("code", help="e.g. DRIVER_TOO_OLD_FOR_TORCH_CUDA, driver.cuda-compat or driver.cuda-compat/too-old")
    from .cli_extra import add_parsers
    from .fleet.cli import add_parser as add_fleet_parser

    add_parsers(sub, EXIT_CODES_HELP)
    from .watch.command import add_parser as add_watch_parser

    add_watch_parser(sub, EXIT_CODES_HELP)
    add_fleet_parser(sub, EXIT_CODES_HELP)
    return parser


class _CommandListFormatter(argparse.RawDescriptionHelpFormatter):
    """Each command and its one-line help on one line at 80 columns (scripts and people read that list):
    argparse measures subcommand names without their extra indent, so `list-checks` and `update-data`
    would otherwise push their help onto a line of its own."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            longest = max((len(name) for name in action.choices), default=0)
            self._action_max_length = max(self._action_max_length, longest + self._current_indent + 4)


class _VersionAction(argparse.Action):
    """--version names the matrix in use too (bundled, or an update-data install), read only when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .compat import CompatDataError, active_choice

        try:
            compat, why_not = active_choice()
            data = f"compat matrix as of {compat.as_of} ({compat.label})"
            if why_not:
                data += f"; not using the installed update: {why_not}"
        except CompatDataError as e:
            data = f"compat matrix unreadable: {e}"
        sys.stdout.write(f"envdoctor {__version__}\n{data}\n")
        parser.exit()


def _command_names(parser: argparse.ArgumentParser) -> List[str]:
    """The subcommands, read from the parser itself: a command is registered once, in build_parser()."""
    # argparse has no public getter for the subparsers; _SubParsersAction has been its name since Python 2.7
    return [name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices]


def _normalise_argv(argv: Sequence[str], commands: Sequence[str]) -> List[str]:
    """Options alone (or nothing) mean `check`; a first word that is no command is a usage error, not
    arguments for `check` (which would print check's help for `envdoctor bench --help`)."""
    argv = list(argv)
    if not argv:
        return ["check"]
    if argv[0] in commands or argv[0] in ("-h", "--help", "--version"):
        return argv
    if not argv[0].startswith("-") or argv[0] == "-":
        raise UsageError(f"unknown command {argv[0]!r}; the commands are: {', '.join(commands)} "
                         "(`envdoctor --help`; options alone mean `check`)")
    return ["check"] + argv


def _write(text: str, output: Optional[str], utf8: bool = False) -> None:
    """Write to FILE (always UTF-8) or stdout. ``utf8``: a document (Markdown, JSON) goes to stdout as UTF-8
    bytes whatever the terminal's encoding (a redirect on a C-locale box or a Windows code page), so the file
    the user pastes is the one GitHub reads; other text is written in the terminal's encoding, "?" for the rest."""
    text = text if text.endswith("\n") else text + "\n"
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


def _render(report, args) -> str:
    from .cli_extra import with_data_label
    from .report import render_console, render_json, render_markdown

    report = with_data_label(report)

    if args.format == "json":
        return render_json(report, redact=not args.no_redact)
    if args.format == "markdown":
        return render_markdown(report, redact=not args.no_redact)
    to_file = bool(args.output and args.output != "-")
    return render_console(report, verbose=args.verbose, color=False if to_file else None,
                          file=None if to_file else sys.stdout) if not to_file else \
        render_console(report, verbose=args.verbose, color=False)


def _exit_code(report, fail_on: str) -> int:
    return EXIT_FINDINGS if report.fails(fail_on) else EXIT_OK  # a report that judged nothing fails too


def _python_target(value: str) -> str:
    from .app import OptionsError, python_target

    try:
        return python_target(value)
    except OptionsError as e:
        raise UsageError(str(e)) from None


def _data_target(value: str) -> str:
    from .app import OptionsError, data_target

    try:
        return data_target(value)
    except OptionsError as e:
        raise UsageError(str(e)) from None


def _collect_options(args):
    from .app import CollectOptions

    return CollectOptions(
        pythons=[_python_target(p) for p in (args.pythons or [])],
        data_paths=[_data_target(p) for p in (args.data_paths or [])],
        inspect_torch=not args.no_torch,
        python_timeout_s=args.python_timeout if args.python_timeout is not None else DEFAULT_PYTHON_TIMEOUT_S,
        load_pcie=args.load_pcie,
    )


def _read_paste(path: str, compat) -> tuple:
    """(text, what was skipped or None): a paste of any size, read in bounded memory (diagnose.bounded_read)."""
    from .diagnose import decode_text
    from .diagnose.bounded_read import read_bounded, trigger_keywords

    name = "stdin" if path == "-" else os.path.basename(path) or path
    try:
        if path == "-":
            data, note = read_bounded(sys.stdin.buffer, name, trigger_keywords(compat))
        else:
            with open(path, "rb") as fh:
                data, note = read_bounded(fh, name, trigger_keywords(compat))
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: is a directory") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    return decode_text(data), note


def _read_text(path: str, limit: Optional[int] = None) -> str:
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
    from .diagnose import decode_text  # UTF-8, or the UTF-16 a Windows shell redirect writes

    return decode_text(data)


def cmd_check(args) -> int:
    from .app import Interrupted, collect, judge
    from .facts import Facts, FactsError

    only, ignore = _split_globs(args.only), _split_globs(args.ignore, "--ignore")  # before minutes of probing
    expect = _expect_gpu(args)
    if args.facts and args.bench:
        raise UsageError("--bench measures this machine; it cannot judge a --facts snapshot (run `envdoctor bench` "
                         "where the snapshot was taken)")
    _check_selection(only, ignore)
    _check_output(args.output)
    if args.facts:
        _check_no_collect_options(args)
        text = _read_text(args.facts)
        try:
            facts = Facts.from_json(text)
        except FactsError as e:
            raise UsageError(f"{args.facts}: {e}") from None
        facts = facts if facts.origin != "live" else _as_snapshot(facts)
    else:
        options = _collect_options(args)
        bench = _bench_options(args, names=[]) if args.bench else None
        try:
            facts = collect(options, meanwhile=functools.partial(_warm_up, args))
            if bench is not None:
                facts = _run_bench(facts, options, bench, args)
        except Interrupted as e:
            _partial_report(e, args, only, ignore, expect)
            raise
    with _signals_deferred() as deferred:  # everything is read: a signal now waits for the report
        report = judge(facts, only=only, ignore=ignore, expect_gpu=expect)
        text = _render(report, args)
        if args.format != "console" or (args.output and args.output != "-"):
            _write(text, args.output, utf8=args.format != "console")
        if facts.bench.results:
            _write_bench_table(report, args)
    return deferred.exit_code(_exit_code(report, args.fail_on))


def _warm_up(args) -> None:
    """While the probes wait on the target's `import torch`: the checks, the compat data and the renderer."""
    from .app import warm_up

    warm_up()
    if args.format == "console":
        from .report import console  # noqa: F401  (rich)
    elif args.format == "json":
        from .report import redact  # noqa: F401


def _bench_options(args, names):
    from .bench.run import BenchOptions
    from .bench.suite import PlanError, expand_names

    try:
        expand_names(names)
    except PlanError as e:
        raise UsageError(str(e)) from None
    for opt in ("sustain", "budget"):
        v = getattr(args, opt)
        if v is not None and not (0 < v <= 24 * 3600):
            raise UsageError(f"--{opt} {v:g}: give a number of seconds above 0")
    from .bench.run import STARTUP_TIMEOUT_S

    return BenchOptions(python="", names=list(names), device=args.device, data_paths=[
        _data_target(p) for p in (args.data_paths or [])], sustain_s=args.sustain, budget_s=args.budget,
        force=args.force, allow_write=not args.no_write, thorough=getattr(args, "thorough", False),
        # --python-timeout bounds `import torch` + CUDA start-up in the bench payload too
        startup_timeout_s=args.python_timeout if args.python_timeout is not None else STARTUP_TIMEOUT_S)


def _run_bench(facts, options, bench, args):
    import dataclasses

    from .app import Interrupted, bench_python, run_benchmarks
    from .report.bench_view import LiveProgress

    bench = dataclasses.replace(bench, python=bench_python(facts, options))
    live = args.format == "console" and sys.stderr.isatty()
    measured: list = []  # every result as it comes: what a Ctrl-C or SIGTERM still prints

    def record(event) -> None:
        if event.get("event") == "result" and isinstance(event.get("result"), dict):
            measured.append(event["result"])
        progress(event)

    with LiveProgress(live) as progress:
        try:
            return run_benchmarks(facts, bench, record)
        except (Interrupted, KeyboardInterrupt) as e:
            signum = e.signum if isinstance(e, Interrupted) else 2
            raise Interrupted(signum, facts=_with_partial_bench(facts, measured, signum)) from None


def _with_partial_bench(facts, measured, signum: int):
    """The facts with the benchmarks measured before a signal, the run marked partial (never "all well")."""
    import dataclasses
    import signal

    from .facts import Bench, BenchResult, FactsError, ProbeRun, ProbeStatus, from_dict

    results = list(facts.bench.results)
    for data in measured:
        try:
            results.append(from_dict(BenchResult, data, "bench.result"))
        except FactsError:
            continue
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    ran = sum(1 for r in results if r.status == ProbeStatus.OK)
    bench = Bench(status=ProbeStatus.OK if ran else ProbeStatus.FAILED, results=results,
                  reason=f"interrupted by {name}: {ran} of the planned measurements ran (partial)")
    probes = list(facts.probes) + [ProbeRun("bench", ProbeStatus.FAILED, f"interrupted by {name} before it "
                                            "finished", None)]
    return dataclasses.replace(facts, bench=bench, probes=probes)


def _write_bench_table(report, args) -> None:
    """The results table beside the findings: console and Markdown (JSON has them in facts.bench)."""
    from .compat import load_compat
    from .report.bench_view import render_markdown_table

    compat = load_compat()
    to_file = bool(args.output and args.output != "-")
    if args.format == "markdown":
        from .report.inert import inert

        text = render_markdown_table(inert(report.facts), compat)
        if not args.no_redact:  # pasted into issues: home paths and host names go, as in the rest of the report
            from .report.redact import redact_text

            host = report.facts.host.hostname
            text = redact_text(text, [host] if host else [])
    elif args.format == "console":
        return  # the console report holds the table, before its verdict
    else:
        return
    if to_file:
        _append(text, args.output)
    else:
        _write(text, None)


def _append(text: str, output: str) -> None:
    try:
        with open(output, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {output}: {e.strerror}") from None


def cmd_bench(args) -> int:
    if args.list:
        from .bench.suite import KERNELS, describe

        if args.format == "json":
            _write(json.dumps({"benchmarks": [
                {"name": k.name, "kind": k.kind, "devices": list(k.devices), "quick": k.quick,
                 "gpu_budget_s": k.gpu_budget_s, "cpu_budget_s": k.cpu_budget_s, "what": k.what,
                 "multi_gpu": k.multi_gpu} for k in KERNELS.values()]}, indent=2) + "\n", None)
        else:
            _write("\n".join(describe()), None)
        return EXIT_OK
    only, ignore = _split_globs(args.only), _split_globs(args.ignore, "--ignore")
    names = args.names
    if args.no_torch:  # torch is not imported, so only what runs in envdoctor's own process: the disk reads
        from .bench.suite import KERNELS, expand_names

        asked = expand_names(names) if names else [k for k, v in KERNELS.items() if v.kind == "disk"]
        torch_ones = [n for n in asked if KERNELS[n].kind != "disk"]
        if torch_ones and names:
            raise UsageError(f"--no-torch: {', '.join(torch_ones)} run torch kernels in the target interpreter "
                             "(the disk benchmarks run without it)")
        names = [n for n in asked if KERNELS[n].kind == "disk"]
    bench = _bench_options(args, names=names)
    from .app import collect, judge

    expect = _expect_gpu(args)
    options = _collect_options(args)
    from .app import Interrupted

    try:
        facts = _run_bench(collect(options), options, bench, args)
    except Interrupted as e:
        _partial_report(e, args, only, ignore, expect)
        raise
    with _signals_deferred() as deferred:
        report = judge(facts, only=only, ignore=ignore, expect_gpu=expect)
        text = _render(report, args)
        if args.format != "console" or (args.output and args.output != "-"):
            _write(text, args.output, utf8=args.format != "console")
        _write_bench_table(report, args)
    return deferred.exit_code(_exit_code(report, args.fail_on))


def _expect_gpu(args) -> bool:
    """--expect-gpu, else `expect-gpu` under [tool.envdoctor] in the nearest project file (envdoctor.config)."""
    if getattr(args, "expect_gpu", False):
        return True
    if getattr(args, "no_config", False):
        return False
    from .config import ConfigError, load_config

    try:
        return bool(load_config().expect_gpu)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _partial_report(e, args, only, ignore, expect_gpu: bool = False) -> None:
    """After SIGINT/SIGTERM: the report on what was read before the signal, marked partial (never "all well")."""
    from .app import judge

    if e.facts is None:
        return
    try:
        report = judge(e.facts, only=only, ignore=ignore, expect_gpu=expect_gpu)
        text = _render(report, args)
        if args.format != "console" or (args.output and args.output != "-"):
            _write(text, args.output, utf8=args.format != "console")
    except (OSError, UsageError):
        pass  # a closed pipe or an unwritable file: the exit code still says what happened


def _check_selection(only, ignore) -> None:
    """--only/--ignore that leave no check: a usage error, not "No problems found" on nothing judged."""
    from .checks import all_checks, select

    if (only or ignore) and not select(all_checks(), only, ignore):
        raise UsageError("--only/--ignore leave no check to run (`envdoctor list-checks` lists them)")


def _check_output(output: Optional[str]) -> None:
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


def _check_no_collect_options(args) -> None:
    """With --facts nothing is probed: options that only steer probing cannot apply (usage error)."""
    given = [name for name, on in (("--python", bool(args.pythons)), ("--data", bool(args.data_paths)),
                                   ("--no-torch", args.no_torch), ("--python-timeout", args.python_timeout is not None),
                                   ("--load-pcie", args.load_pcie)) if on]
    if given:
        raise UsageError(f"{', '.join(given)} cannot apply with --facts: a snapshot is judged as it was collected")


def _as_snapshot(facts):
    import dataclasses

    return dataclasses.replace(facts, origin="snapshot")


def cmd_collect(args) -> int:
    from .app import collect
    from .report.redact import redact_facts_dict

    _check_output(args.output)
    facts = collect(_collect_options(args))
    data = facts.to_dict()
    if not args.no_redact:
        data = redact_facts_dict(data, [facts.host.hostname] if facts.host.hostname else [])
    _write(json.dumps(data, indent=2, sort_keys=True), args.output, utf8=True)
    return EXIT_OK


def cmd_diagnose(args) -> int:
    from .compat import load_compat
    from .diagnose import NothingRecognised, diagnose_report

    files = args.files or ["-"]
    if files == ["-"] and sys.stdin.isatty():
        raise UsageError("diagnose reads pasted text from files or stdin: "
                         "envdoctor diagnose report.txt, or: pbpaste | envdoctor diagnose -")
    _check_output(args.output)
    compat = load_compat()
    read = [_read_paste(f, compat) for f in files]  # any size: head, tail and the middle's error lines
    texts = [t for t, _ in read]
    from .checks import all_checks, select

    try:
        names = ["stdin" if f == "-" else os.path.basename(f) or f for f in files]
        report = diagnose_report(texts, compat, select(all_checks(), _split_globs(args.only),
                                                       _split_globs(args.ignore, "--ignore")), names=names,
                                 read_notes=[n for _, n in read if n])
    except NothingRecognised as e:
        raise UsageError(str(e)) from None
    text = _render(report, args)
    if args.format != "console" or (args.output and args.output != "-"):
        _write(text, args.output, utf8=args.format != "console")
    return _exit_code(report, args.fail_on)


def cmd_list_checks(args) -> int:
    from .checks import all_checks

    lines = []
    for c in all_checks():
        lines.append(f"{c.id:<28} {c.title}")
        if c.categories:
            lines.append(f"{'':<28}   categories: {', '.join(c.categories)}")
    _write("\n".join(lines), None)
    return EXIT_OK


def cmd_explain(args) -> int:
    from .catalogue import CATEGORIES
    from .checks import all_checks

    code = args.code.strip()
    from .fleet.checks import FLEET_CHECKS

    checks = all_checks() + list(FLEET_CHECKS)  # the fleet checks judge nodes, not one machine: not registered
    category = CATEGORIES.get(code.upper())
    check = None
    if category is None and code.startswith(_SIGNATURE_PREFIX):
        return _explain_signature(code)
    if category is None:
        check_id = code.split("/", 1)[0]
        check = next((c for c in checks if c.id == check_id), None)
        if check is None:
            raise UsageError(f"unknown code {code!r}: give a category (e.g. DRIVER_TOO_OLD_FOR_TORCH_CUDA), a check "
                             "id or a finding code; `envdoctor list-checks` lists them")
    if check is not None and "/" in code and not _known_finding_code(code):
        raise UsageError(f"unknown finding code {code!r}: {check.id} reports no such kind "
                         f"(`envdoctor explain {check.id}` explains the check)")
    out = []
    cats = [category] if category else [CATEGORIES[c] for c in check.categories if c in CATEGORIES]
    if check:
        out += [f"{check.id}: {check.title}"]
        if "/" in code:
            out += [f"finding code: {code}"]
        out += [""]
    for cat in cats:
        emitted_by = [c.id for c in checks if cat.name in c.categories]
        out += [f"{cat.name}: {cat.title}", "", f"What it means: {cat.meaning}", f"Why it matters: {cat.why}",
                f"How to fix: {cat.fix}"]
        if emitted_by:
            out += [f"Reported by: {', '.join(emitted_by)}"]
        out += [""]
    _write("\n".join(out).rstrip(), None)
    return EXIT_OK


@functools.lru_cache(maxsize=1)
def _finding_codes() -> tuple:
    """(codes, dynamic prefixes) the checks can emit, read from their source: a code is a string literal
    "area.check/kind"; an f-string "area.check/{...}" makes every kind under that prefix possible. Read once per
    process (the package's own source does not change under it; every `explain` used to parse ~40 files)."""
    import ast
    import pathlib
    import re

    code_re = re.compile(r"[a-z_]+\.[a-z0-9-]+/[a-z0-9-]+")
    codes, prefixes, dynamic = set(), set(), set()
    here = pathlib.Path(__file__).resolve().parent
    for path in sorted((here / "checks").glob("*.py")) + [here / "diagnose" / "__init__.py",
                                                          here / "fleet" / "checks.py"]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return None, None  # cannot tell: accept every code rather than reject a real one
        # a finding builder: NAME = Findings("area.check", ...), then NAME.warning("kind", ...) or NAME("kind", ...)
        builders = {n.targets[0].id: n.value.args[0].value for n in tree.body
                    if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)
                    and isinstance(n.value.func, ast.Name) and n.value.func.id == "Findings" and n.value.args
                    and isinstance(n.value.args[0], ast.Constant)}
        # a helper that takes the builder as a parameter (def _per_gpu(rule, ...): rule.warning("per-gpu", ...))
        # emits its kinds for each builder a call in this file passes it
        helpers = {fn.name: _builder_param_kinds(fn) for fn in tree.body if isinstance(fn, ast.FunctionDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and helpers.get(node.func.id):
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    if isinstance(arg, ast.Name) and arg.id in builders:
                        codes.update(f"{builders[arg.id]}/{kind}" for kind in helpers[node.func.id])
            # cases.report(NVLINK.error, "inactive", ...): a builder (or its severity method) handed over with the kind
            if isinstance(node, ast.Call) and len(node.args) >= 2 and builders:
                b = node.args[0].value if isinstance(node.args[0], ast.Attribute) else node.args[0]
                kind = node.args[1]
                if isinstance(b, ast.Name) and b.id in builders and isinstance(kind, ast.Constant) \
                        and isinstance(kind.value, str):
                    codes.add(f"{builders[b.id]}/{kind.value}")
            if isinstance(node, ast.Call) and node.args and builders:
                f = node.func.value if isinstance(node.func, ast.Attribute) else node.func
                if isinstance(f, ast.Name) and f.id in builders:
                    kind = node.args[0]
                    if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
                        codes.add(f"{builders[f.id]}/{kind.value}")
                    else:  # a kind computed at run time: known when the file spells the full codes out
                        dynamic.add(builders[f.id])
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and code_re.fullmatch(node.value):
                codes.add(node.value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"[a-z_]+\.[a-z0-9-]+/", node.value):  # "area.check/" + kind
                prefixes.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                head = str(node.values[0].value)
                if re.fullmatch(r"[a-z_]+\.[a-z0-9-]+/", head):
                    prefixes.add(head)
    prefixes |= {f"{c}/" for c in dynamic if not any(code.startswith(f"{c}/") for code in codes)}
    return frozenset(codes), frozenset(prefixes)


def _builder_param_kinds(fn) -> set:
    """The kinds a function emits through a builder it receives as a parameter: param.warning("kind", ...)."""
    import ast

    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    kinds = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        f = node.func.value if isinstance(node.func, ast.Attribute) else node.func
        if isinstance(f, ast.Name) and f.id in params:
            kinds.add(node.args[0].value)
    return kinds


def _known_finding_code(code: str) -> bool:
    codes, prefixes = _finding_codes()
    if codes is None:
        return True
    return code in codes or any(code.startswith(p) and len(code) > len(p) for p in prefixes)


# `diagnose` names a matched error message by its signature (compat_data/error_signatures.json), not by
# the check id (messages.signatures) that the other finding codes start with
_SIGNATURE_PREFIX = "messages.signature/"


def _explain_signature(code: str) -> int:
    from .catalogue import CATEGORIES
    from .compat import active_compat
    from .compat.signatures import signatures_from

    sig_id = code[len(_SIGNATURE_PREFIX):].split("/", 1)[0]  # ".../<id>/<category>": a cause the row also proves
    sig = next((s for s in signatures_from(active_compat()) if s.id == sig_id), None)
    if sig is None:
        raise UsageError(f"unknown error signature {sig_id!r} in {code!r} (compat_data/error_signatures.json)")
    cat = CATEGORIES.get(sig.category)
    out = [f"{code}: a known error message (messages.signatures)", "", f"Message pattern: {sig.pattern}",
           f"Category: {sig.category}" + (f" ({cat.title})" if cat else ""), f"Severity: {sig.severity}",
           "", f"What it means: {sig.explanation}", f"How to fix: {sig.fix}", f"Source: {sig.source}"]
    if sig.alternatives:
        out += ["", "Other possible causes, depending on the rest of the paste: "
                + ", ".join(sorted({a.category for a in sig.alternatives}))]
    if getattr(sig, "also", ()):
        out += ["", "The same message also proves, when the paste shows its context: "
                + ", ".join(f"{a.category} ({a.when})" for a in sig.also)]
    _write("\n".join(out), None)
    return EXIT_OK


COMMANDS = {"check": cmd_check, "collect": cmd_collect, "diagnose": cmd_diagnose,
            "list-checks": cmd_list_checks, "explain": cmd_explain, "bench": cmd_bench}


class _Deferred:
    """A signal that arrived while the report was being judged and printed: exit with its code afterwards."""

    active = False
    signum: Optional[int] = None

    def exit_code(self, code: int) -> int:
        if self.signum is None:
            return code
        import signal

        sys.stderr.write(f"envdoctor: {signal.Signals(self.signum).name} arrived while the report was printed\n")
        return 128 + self.signum


_DEFERRED = _Deferred()


class _signals_deferred:  # noqa: N801 - used as a context manager
    def __enter__(self) -> _Deferred:
        _DEFERRED.active, _DEFERRED.signum = True, None
        return _DEFERRED

    def __exit__(self, *exc) -> None:
        _DEFERRED.active = False


def _on_signal(signum, _frame) -> None:
    """SIGINT/SIGTERM: kill every child's process group now, then unwind (the partial report is printed).
    While the report of facts already read is being judged and printed, the signal waits for it instead."""
    import signal

    from .app import Interrupted
    from .probes.runner import stop_all_children

    if _DEFERRED.active:
        if _DEFERRED.signum is not None:  # a second one: stop at once
            _exit_now(signum, _frame)
        _DEFERRED.signum = signum
        return

    stop_all_children()
    from . import app

    app.PENDING_SIGNAL[0] = signum  # should the raise below land where Python drops it, the wait raises it
    # a second signal while the partial report is printed: stop at once
    signal.signal(signal.SIGINT, _exit_now)
    signal.signal(signal.SIGTERM, _exit_now)
    raise Interrupted(signum)


def _exit_now(signum, _frame) -> None:
    from .probes.runner import stop_all_children

    stop_all_children()
    os._exit(128 + signum)


def _install_signal_handlers() -> dict:
    """Our handlers for SIGINT and SIGTERM (main thread only); returns the previous ones to restore."""
    import signal
    import threading

    previous: dict = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for sig in (signal.SIGINT, signal.SIGTERM):
        old = signal.getsignal(sig)
        if old == signal.SIG_IGN:  # started with it ignored (nohup, a background job): keep it so
            continue
        previous[sig] = old
        signal.signal(sig, _on_signal)
    return previous


def _restore_signal_handlers(previous: dict) -> None:
    import signal

    from .probes.runner import allow_children

    for sig, old in previous.items():
        signal.signal(sig, old if old is not None else signal.SIG_DFL)
    allow_children()


def cmd_watch(args) -> int:
    from .watch.command import WatchUsageError
    from .watch.command import cmd_watch as run

    try:
        return run(args)
    except WatchUsageError as e:
        raise UsageError(str(e)) from None


def _extra_commands() -> None:
    from .cli_extra import COMMANDS as EXTRA
    from .fleet.cli import COMMANDS as FLEET

    COMMANDS.update(EXTRA)
    COMMANDS["watch"] = cmd_watch
    COMMANDS.update(FLEET)


_extra_commands()


def main(argv: Optional[Sequence[str]] = None) -> int:
    from .app import Interrupted

    previous = _install_signal_handlers()  # first: a signal at any moment ends in a report or a clear line
    try:
        parser = build_parser()
        try:
            argv = _normalise_argv(sys.argv[1:] if argv is None else argv, _command_names(parser))
        except UsageError as e:
            sys.stderr.write(f"envdoctor: {e}\n")
            return EXIT_USAGE
        args = parser.parse_args(argv)
        return _main(args)
    except Interrupted as e:
        sys.stderr.write(f"envdoctor: interrupted by {e.signal_name}"
                         + ("; the report above is partial\n" if e.facts is not None else "\n"))
        return 128 + e.signum
    finally:
        _restore_signal_handlers(previous)


def _main(args) -> int:
    try:
        os.getcwd()
    except FileNotFoundError:
        sys.stderr.write("envdoctor: the current directory no longer exists (deleted while this shell was in "
                         "it): cd to an existing directory\n")
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except UsageError as e:
        sys.stderr.write(f"envdoctor: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:  # a SIGINT that arrived while our handler was not installed (not the main thread)
        from .probes.runner import stop_all_children

        stop_all_children()
        sys.stderr.write("envdoctor: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except OSError as e:
        if e.errno not in _OUTPUT_ERRNOS or os.environ.get("ENVDOCTOR_DEBUG"):
            return _internal_error(e)
        # `envdoctor > /dev/full`, a full disk or quota under the redirect: not a bug in envdoctor
        sys.stderr.write(f"envdoctor: cannot write the output: {e.strerror}\n")
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - last resort: a bug is reported as exit 3, with a one-line reason
        return _internal_error(e)


_OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO)


def _internal_error(e: BaseException) -> int:
    if os.environ.get("ENVDOCTOR_DEBUG"):
        raise e
    sys.stderr.write(f"envdoctor: internal error: {type(e).__name__}: {e} "
                     "(set ENVDOCTOR_DEBUG=1 for the traceback)\n")
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
