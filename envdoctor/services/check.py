"""`envdoctor check` as a call: options in, the facts it judges and the Report out; nothing printed.

The facts are this machine's (``services.collect.collect``, every probe at once) or a snapshot's (`check --facts`,
the JSON `envdoctor collect` writes); the one judge weighs them (``services.collect.judge``). A signal during the
collection is the command line's business (it owns the process): ``collect`` raises ``Interrupted`` with the facts
read so far, and cli/check.py prints the partial report.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, List, Optional

from ..domain.fastclass import dataclass
from ..model.facts import Facts, FactsError
from ..model.findings import Report
from .collect import CollectOptions, collect, judge


class CheckError(ValueError):
    """Options that cannot work (a selection that leaves no check) or an unreadable snapshot: the CLI's exit 2."""


@dataclass(frozen=True)
class CheckOptions:
    collect: Optional[CollectOptions] = None  # probe this machine with these (None: judge ``snapshot``)
    snapshot: Optional[str] = None  # `check --facts`: the snapshot's JSON text
    snapshot_name: str = "the snapshot"  # how an error names it (its file)
    only: Optional[List[str]] = None  # check-id globs, as the CLI validated them
    ignore: Optional[List[str]] = None
    expect_gpu: bool = False


def validate_selection(only: Optional[List[str]], ignore: Optional[List[str]]) -> None:
    """--only/--ignore that leave no check: an error, not "No problems found" on nothing judged."""
    from ..checks import all_checks, select

    if (only or ignore) and not select(all_checks(), only, ignore):
        raise CheckError("--only/--ignore leave no check to run (`envdoctor list-checks` lists them)")


def read_snapshot(text: str, name: str = "the snapshot") -> Facts:
    """A snapshot's facts; one written live is judged as a snapshot (its origin says so in the report)."""
    try:
        facts = Facts.from_json(text)
    except FactsError as e:
        raise CheckError(f"{name}: {e}") from None
    return facts if facts.origin != "live" else dataclasses.replace(facts, origin="snapshot")


def check_facts(options: CheckOptions, meanwhile: Optional[Callable[[], Any]] = None,
                progress: Optional[Callable[[float, List[str]], None]] = None) -> Facts:
    """The facts the check judges: the snapshot's, else this machine's (``meanwhile`` runs while the probes wait;
    ``progress`` is told which probes are still running, as ``collect`` tells it)."""
    validate_selection(options.only, options.ignore)
    if options.snapshot is not None:
        return read_snapshot(options.snapshot, options.snapshot_name)
    return collect(options.collect or CollectOptions(), meanwhile=meanwhile, progress=progress)


def check(options: CheckOptions, compat: Any = None) -> Report:
    """Collect (or read) the facts and judge them."""
    return judge(check_facts(options), compat, only=options.only, ignore=options.ignore,
                 expect_gpu=options.expect_gpu)
