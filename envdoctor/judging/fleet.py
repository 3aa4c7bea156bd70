"""The fleet judged: each node's facts by the one judge (``judging.judge``), then the registered fleet checks over all
of them, as a ``model.fleet.FleetReport``: live (rank 0 of `envdoctor fleet`) and on a saved report alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from ..checks.fleet import FleetContext
from ..model.findings import CheckResult
from ..model.fleet import FleetData, FleetReport

if TYPE_CHECKING:
    from ..compat.queries import Compat


def judge_fleet(fleet: FleetData, compat: Optional[Compat] = None) -> FleetReport:
    from ..compat import load_compat
    from . import judge

    compat = compat or load_compat()
    node_reports = {n.key: judge(n.facts, compat) for n in fleet.nodes if n.facts is not None}
    checks = run_fleet_checks(FleetContext(fleet, node_reports), compat)
    return FleetReport(fleet, node_reports, checks, compat_as_of=compat.as_of)


def run_fleet_checks(ctx: FleetContext, compat: Compat) -> List[CheckResult]:
    """The registered fleet checks (area "fleet") over the fleet: the same runner as every check's."""
    from ..checks import all_checks, run_checks
    from ..model.facts import Facts

    return run_checks(Facts(), compat, [c for c in all_checks() if c.area == "fleet"], fleet=ctx)
