"""`envdoctor fleet` as a call: typed options in, the fleet's report out (``model.fleet.FleetReport``), nothing
printed, no signal touched. The sources of the facts are below the judge (``fleet/``: the rank's rounds over
torch.distributed); the judge is ``judging.fleet.judge_fleet``; the renderers are ``report/fleet.py``.

- ``run(options, env)``: this rank's part of a job started by a launcher; rank 0 gets the report, every other
  rank None. ``before_judging`` is called on rank 0 once every rank's part is held, before the judging (the
  command line ignores SIGTERM there: a torchrun stopping the workers must not cut rank 0's report short).
- ``judge_saved(text)``: a saved JSON fleet report judged again, offline.
- ``orphan_report(...)``: rank 0 died before its report was out: the report its launched process writes instead.

Errors: ``FleetError`` for what stops the run before it starts (not under a launcher, no torch, a malformed test
hook, a saved report that is none): the command line's usage error. ``RankFailed``: this rank could not take
part once started (its message names the rank).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional

from ..domain.fastclass import dataclass
from ..model.fleet import FleetReport

if TYPE_CHECKING:
    from ..compat.queries import Compat

class FleetError(ValueError):
    """`envdoctor fleet` cannot run here, or a saved report is not one: a one-line reason (exit 2)."""


class RankFailed(Exception):
    """This rank could not take part after it started: ``rank`` and a one-line reason."""

    def __init__(self, rank: int, message: str) -> None:
        super().__init__(message)
        self.rank = rank


@dataclass
class FleetOptions:
    """The run's options; their defaults are the command line's (cli/fleet.py), which alone offers them."""

    backend: Optional[str]  # "nccl" or "gloo"; None: nccl when CUDA is available, else gloo
    timeout_s: float  # each round's deadline and every collective's timeout
    bench: bool
    sizes: Optional[List[int]]  # all-reduce message sizes in bytes (None: the defaults)
    bench_budget_s: float
    python_timeout_s: float  # the node's facts: time allowed to import torch


def judge_saved(text: str, compat: Optional[Compat] = None) -> FleetReport:
    """A saved fleet report (`envdoctor fleet --format json -o FILE`) judged again: FleetError when it is not one."""
    from ..judging.fleet import judge_fleet
    from ..model.fleet import FleetReportError, fleet_from_report

    try:
        fleet = fleet_from_report(json.loads(text))
    except (ValueError, FleetReportError) as e:
        raise FleetError(str(e)) from None
    return judge_fleet(fleet, compat)


def orphan_report(options: FleetOptions, env: Mapping[str, str], place: Any, end: Dict[str, Any],
                  stopped: bool) -> FleetReport:
    """Rank 0 ended before its report was written: the report its launched process writes in its place, from the
    launcher's store (fleet/orphan.py), judged as any other."""
    from ..fleet.orphan import orphan_fleet
    from ..judging.fleet import judge_fleet

    return judge_fleet(orphan_fleet(place, env, end, stopped, options.timeout_s, options.backend))


def run(options: FleetOptions, env: Mapping[str, str],
        before_judging: Optional[Callable[[], None]] = None,
        before_torch: Optional[Callable[[], None]] = None,
        after_torch: Optional[Callable[[Any], None]] = None) -> Optional[FleetReport]:
    """This rank's part of the job (the launcher's variables in ``env``); rank 0 returns the fleet's report,
    the others None. FleetError before anything starts; RankFailed when this rank cannot take part.
    ``before_torch`` runs just before torch.distributed is imported and ``after_torch(place)`` once it is (the
    command line holds stop signals and forks the rank's supervisor there: fleet/arrival.py)."""
    from ..fleet import testing
    from ..fleet.launch import NotLaunched, place_from_env

    try:
        place = place_from_env(env)
        testing.overrides(env, -1)  # a malformed hook is a usage error before anything starts
        testing.exit_at(env, -1, "after-init")
    except (NotLaunched, testing.HookError) as e:
        raise FleetError(str(e)) from None
    testing.at(env, place.rank, "at-launch")
    if before_torch is not None:
        before_torch()
    try:
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - no torch, or a torch that does not import
        raise FleetError(f"`envdoctor fleet` runs inside the training interpreter and needs torch there "
                         f"({sys.executable}: import torch.distributed failed: {type(e).__name__}: {e})") from None
    if not dist.is_available():
        raise FleetError("this torch build has no torch.distributed")
    if after_torch is not None:
        after_torch(place)
    import torch

    if options.backend == "nccl" and not torch.cuda.is_available():
        raise FleetError("--backend nccl needs CUDA GPUs, and torch sees none here (use --backend gloo)")
    from ..fleet.rank import Options, run_rank
    from .collect import CollectOptions, collect

    node = CollectOptions(pythons=[sys.executable], python_timeout_s=options.python_timeout_s)
    rank_options = Options(backend=options.backend, timeout_s=options.timeout_s, bench=options.bench,
                           sizes=options.sizes, bench_budget_s=options.bench_budget_s,
                           collect=lambda: collect(node).to_dict(), collect_timeout_s=options.python_timeout_s)
    try:
        fleet = run_rank(place, rank_options, dict(env))
    except Exception as e:  # noqa: BLE001 - a rank that cannot take part says why, never a traceback
        from ..fleet.comm import short_error

        raise RankFailed(place.rank, f"rank {place.rank}: {type(e).__name__}: {short_error(e)}") from e
    if fleet is None:  # not rank 0
        return None
    if before_judging is not None:
        before_judging()
    from ..judging.fleet import judge_fleet

    return judge_fleet(fleet)
