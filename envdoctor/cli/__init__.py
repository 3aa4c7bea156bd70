"""Command line: argument parsing and exit codes only (the work is in app, checks, report and the services).

One module per command, each with ``add_parsers(sub)`` (its parser) and ``COMMANDS`` (name -> handler):
check (check, collect), diagnose, bench, list_checks, explain, assert_, matrix, recommend, update_data, watch,
fleet, node_health. What several share is in ``common`` (exit codes, UsageError, option groups, input, output),
``signals`` (the one signal runtime of the process) and ``live`` (check's and bench's run on this machine). A command module imports those two and never another
command module nor this one; this module only registers them and runs ``main``.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any, List, Optional, Sequence

from .. import __version__
from . import (
    assert_,
    bench,
    check,
    common,
    diagnose,
    explain,
    fleet,
    list_checks,
    matrix,
    node_health,
    recommend,
    signals,
    update_data,
    watch,
)
from .common import EXIT_CODES_HELP, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, UsageError

# in the order `envdoctor --help` lists them
_COMMAND_MODULES = (check, diagnose, bench, list_checks, explain, assert_, matrix, recommend, update_data, watch,
                    fleet, node_health)
COMMANDS = {name: handler for module in _COMMAND_MODULES for name, handler in module.COMMANDS.items()}
# what a command starts as soon as its options are parsed (check: the target's inspect payload)
EARLY_STARTS = {name: start for module in _COMMAND_MODULES for name, start in getattr(module, "EARLY", {}).items()}


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The whole command line's parser; with ``command``, that command's alone (the parser main builds before the
    payload starts costs one command's parser, not all thirteen)."""
    parser = argparse.ArgumentParser(
        prog="envdoctor",
        description="Will this machine's GPU deep-learning stack work, and at the speed you pay for? "
                    "`envdoctor` alone is `envdoctor check`.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_CommandListFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show the version and the matrix in use")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMAND_MODULES:
        module.add_parsers(sub if command is None else _OnlyOne(sub, command))
    return parser


class _OnlyOne:
    """The subparsers action of build_parser(command): only that command is registered; another command's parser
    and options go to a _Dropped parser (main has already refused a first word that is no command)."""

    def __init__(self, sub: Any, command: str) -> None:
        self.sub, self.command = sub, command

    def add_parser(self, name: str, **kw: Any) -> Any:
        if name == self.command or self.command in kw.get("aliases", ()):
            return self.sub.add_parser(name, **kw)
        return _Dropped()


class _Dropped:
    """A parser no one will run: whatever is added to it (arguments, groups, subcommands, defaults) is dropped."""

    def __getattr__(self, _name: str) -> Any:
        return self

    def __call__(self, *_a: Any, **_kw: Any) -> _Dropped:
        return self

    def __getitem__(self, _key: Any) -> _Dropped:
        return self


class _CommandListFormatter(common.HelpFormatter):
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
        from ..compat import CompatDataError, active_choice

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


def main(argv: Optional[Sequence[str]] = None) -> int:
    previous = signals.install()  # first: a signal at any moment ends in a report or a clear line
    # stdlib only, and loaded by signals.install: the flag the handler sets and the class the waits raise
    from ..probes.runner import INTERRUPT, Interrupted

    try:
        INTERRUPT.check()  # it came during the imports (envdoctor.__main__ held it): stop now
        try:
            argv = _normalise_argv(sys.argv[1:] if argv is None else argv, list(COMMANDS))
        except UsageError as e:
            sys.stderr.write(f"envdoctor: {e}\n")
            return EXIT_USAGE
        # cheap: only this command's options (every command module imports its heavy modules in its handler)
        parser = build_parser(argv[0] if argv[0] in COMMANDS else None)
        args = parser.parse_args(argv)  # the command line is read here, once
        # then the target's `import torch`, the floor of a plain run, started from the parsed options before
        # envdoctor's own heavy imports: the probe adopts the process (probes/payload_launch.py)
        start = EARLY_STARTS.get(args.command)
        if start is not None:
            start(args)
        code = _main(args)
        if INTERRUPT.is_set() and not signals.told():
            # the signal came where nothing waits (an import, the judging of a snapshot): the handler stopped the
            # children and the command finished; the signal still gives the exit code
            return _interrupted(INTERRUPT.signum or 0, partial=False)
        return code
    except Interrupted as e:
        return _interrupted(e.signum, partial=e.facts is not None)
    except BaseException:
        signum = INTERRUPT.signum
        if signum is None:
            raise
        # what a command made of children killed under it: the signal is the cause, not a bug
        return _interrupted(signum, partial=False)
    finally:
        from ..probes.payload_launch import discard_early

        discard_early()  # an early payload no probe adopted (a usage error, a command that never collected)
        signals.restore(previous)  # and the flag cleared: the next main() in this process starts clean


def _interrupted(signum: int, partial: bool) -> int:
    import signal

    from ..probes.runner import stop_all_children

    stop_all_children()
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    try:
        sys.stderr.write(f"envdoctor: interrupted by {name}" + ("; the report above is partial\n" if partial else "\n"))
    except (OSError, ValueError):  # the terminal hung up (SIGHUP): no one to tell, the exit code still says it
        pass
    return 128 + signum


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
        from ..probes.runner import stop_all_children

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
    from ..probes.runner import INTERRUPT

    if os.environ.get("ENVDOCTOR_DEBUG") or INTERRUPT.is_set():
        raise e  # with a signal recorded: main reports it as the signal (its children were killed under it)
    sys.stderr.write(f"envdoctor: internal error: {type(e).__name__}: {e} "
                     "(set ENVDOCTOR_DEBUG=1 for the traceback)\n")
    return EXIT_INTERNAL

