"""The report when rank 0 itself dies (issue 41): written by rank 0's launched process, its supervisor
(``arrival.supervise``), from what the launcher's store holds, before the launcher sees the death.

Rank 0 gathers every rank's part and writes the report; when it dies first (the OOM killer, a `kill -9`, a crash)
nothing it gathered survives. Its supervisor still knows how it ended (waitpid) and can read the board: every
rank's last stage and the exit records. So the report names rank 0 as dead, with its host and where it was, and
lists the other ranks as the board had them, none blamed: they lost the rank they were reporting to. A rank
that wrote nothing on the board yet is not said to have "never arrived": rank 0's death came first, and the
report is written at once (the others wait on rank 0, so nothing more will come).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Mapping, Optional

from ..model.fleet import FleetData, exit_words, group_nodes, stage_words
from . import arrival
from .launch import Place

STORE_S = 5.0  # the store was up a moment ago (the agent's); a store rank 0 hosted itself died with it
WAIT_EXIT_S = 5.0  # rank 0 stopped by the launcher: the cause's exit record, if its supervisor writes it now


def orphan_fleet(place: Place, env: Mapping[str, str], end: Dict[str, Any], stopped: bool, timeout_s: float,
                 backend: Optional[str]) -> FleetData:
    """The fleet as rank 0's supervisor knows it once rank 0 ended without its report: ``end`` is its exit
    record (``arrival.describe_exit`` with pid, and the stage when the board took it); ``stopped``: the launcher
    had told the group to stop (rank 0's end is then no fault of its own, and has no exit record)."""
    board: Optional[arrival.Board] = None
    error = None
    try:
        store = arrival.connect(dict(env), 0, place.world_size, STORE_S, host_store=False)
        board = arrival.Board(store, 0, arrival.run_key(env), arrival.identity(place))
    except Exception as e:  # noqa: BLE001 - the report then says only what the supervisor itself knows
        error = f"the launcher's store could not be read: {arrival._short(e)}"
    if board is not None and stopped:
        board.wait_exit(time.monotonic() + WAIT_EXIT_S)
    came = {a["rank"]: a for a in board.read(place.world_size)} if board is not None else {}
    if board is not None and board.error:
        error = board.error
    mine: Dict[str, Any] = dict(arrival.identity(place), stage=None)
    mine.update(came.get(0) or {}, pid=end.get("pid"))
    if not stopped:
        mine["exit"] = dict(end, hostname=place.hostname)
        mine["exit"].setdefault("stage", mine.get("stage") or "launched")
    came[0] = mine
    started = (mine.get("stages") or {}).get("started")
    how = f"ended ({exit_words(end)})" if stopped else \
        f"died {stage_words(mine['exit'].get('stage'))}: {exit_words(end)}"
    fleet = FleetData(backend=backend or mine.get("backend") or "?", world_size=place.world_size, timeout_s=timeout_s,
                      ranks=[_record(place, end)], started_at=_utc(started))
    fleet.orphaned = (f"rank 0 {how} before its report was written; its launched process wrote this one from "
                      "the launcher's store" + (f" ({error})" if error else ""))
    if stopped:
        fleet.interrupted = f"{exit_words(end)}, before its report was written"
    fleet.missing = [_missing(r, came.get(r)) for r in range(1, place.world_size)]
    fleet.arrivals = [came[r] for r in sorted(came)]
    fleet.nodes = group_nodes(fleet.ranks, {})
    fleet.duration_s = round(time.time() - started, 3) if isinstance(started, (int, float)) else None
    return fleet


def _record(place: Place, end: Dict[str, Any]) -> Dict[str, Any]:
    """Rank 0's record: only where it ran (what it had gathered died with it)."""
    return {"rank": 0, "local_rank": place.local_rank, "node_rank": place.node_rank, "world_size": place.world_size,
            "local_world_size": place.local_world_size, "hostname": place.hostname, "pid": end.get("pid")}


def _missing(r: int, came: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    stage = (came or {}).get("stage")
    where = f" (the board has it at '{stage}')" if stage else " (not on the board yet)"
    return {"rank": r, "stage": "hello" if stage in (None, "started") else "report", "last_heard": None,
            "reason": "rank 0 died before its report was written" + where, "cut_short": True}


def _utc(t: Any) -> Optional[str]:
    import datetime as _dt

    if not isinstance(t, (int, float)):
        return None
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__: List[str] = ["orphan_fleet"]
