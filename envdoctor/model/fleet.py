"""The fleet's data as rank 0 holds it: every rank's record, the nodes with their facts, the collectives, who
is missing. JSON in and out, so a saved fleet report is judged again offline (``envdoctor fleet --report``).

Model layer (docs/architecture.md): the fleet checks (checks/fleet.py) and the fleet pipeline (fleet/) both read
it, so it sits below both."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional

from ..domain.fastclass import dataclass
from .facts import Facts, FactsError
from .findings import CheckResult, Finding, Report, Severity, order_findings

FLEET_KIND = "envdoctor-fleet-report"
FLEET_SCHEMA_VERSION = 1


@dataclass
class Node:
    key: str  # "node 1": the launcher's node rank; else "host 0", "host 1" ... (model.assign_node_keys)
    hostname: Optional[str]
    node_rank: Optional[int]
    ranks: List[int]
    facts: Optional[Facts] = None  # what its local rank 0 collected; None: not received (see facts_error)
    facts_error: Optional[str] = None

    @property
    def label(self) -> str:
        return f"{self.key} ({self.hostname or 'unknown host'})"

    @property
    def collector(self) -> Optional[int]:
        return self.ranks[0] if self.ranks else None


@dataclass
class FleetData:
    backend: str
    world_size: int
    timeout_s: float
    ranks: List[Dict[str, Any]]  # one record per rank that said hello (see rank.py), in rank order
    missing: List[Dict[str, Any]] = field(default_factory=list)  # {"rank", "stage", "reason", "last_heard"}
    collectives: List[Dict[str, Any]] = field(default_factory=list)  # {"scope", "ranks", "sweep", "error"}
    started_at: Optional[str] = None
    duration_s: Optional[float] = None
    interrupted: Optional[str] = None  # "SIGTERM at 20:31:05 UTC": the launcher stopped rank 0 early
    nodes: List[Node] = field(default_factory=list)
    # every rank's arrival as the board held it when rank 0 wrote the report (fleet/arrival.py): {"rank", "hostname",
    # "pid", "local_rank", "node_rank", "stage", "stages": {stage: unix time}, "exit": {"code" | "signal",
    # "stage", "at", "pid"}}; a rank that never wrote has "stage" None and "host_from": "placement" where the
    # launcher's placement names its host. Empty: no board (an older report, or the store could not be used).
    arrivals: List[Dict[str, Any]] = field(default_factory=list)
    deadline_at: Optional[float] = None  # unix time rank 0 stopped waiting for the ranks to start (lateness)
    # rank 0 died before its report was out: its launched process (its supervisor, fleet/arrival.py) wrote this
    # one from the launcher's store, and says so here ("rank 0 died ...: its launched process wrote this report")
    orphaned: Optional[str] = None

    def rank(self, r: int) -> Optional[Dict[str, Any]]:
        return next((x for x in self.ranks if x.get("rank") == r), None)

    def arrival(self, r: int) -> Optional[Dict[str, Any]]:
        return next((x for x in self.arrivals if x.get("rank") == r), None)

    def who(self, r: int) -> str:
        """"rank 3 (node 0, host gpu-a, local rank 3)": how a report names a rank. A rank that never said hello
        is named by its arrival on the board, else by the launcher's placement ("host gpu-a by placement")."""
        rec = self.rank(r) or {}
        came = self.arrival(r) or {}
        bits = []
        node = next((n for n in self.nodes if r in n.ranks), None)
        if node is not None:
            bits.append(node.key)
        elif came.get("node_rank") is not None:
            bits.append(f"node {came['node_rank']}")
        if rec.get("hostname"):
            bits.append(f"host {rec['hostname']}")
        elif came.get("hostname"):
            bits.append(f"host {came['hostname']}" + (" by the launcher's placement"
                                                  if came.get("host_from") == "placement" else ""))
        local = rec.get("local_rank") if rec.get("local_rank") is not None else came.get("local_rank")
        if local is not None:
            bits.append(f"local rank {local}")
        return f"rank {r}" + (f" ({', '.join(bits)})" if bits else "")

    def host_of(self, r: int) -> Optional[str]:
        rec = self.rank(r) or {}
        return rec.get("hostname") or (self.arrival(r) or {}).get("hostname")

    def fate(self, r: int) -> Optional[str]:
        """What became of a rank that did not finish cleanly, in words ("died during start-up: killed by
        SIGKILL"), from its exit record; "never arrived" for a rank the board never saw; None otherwise."""
        came = self.arrival(r)
        if came is None:
            return None
        if came.get("exit"):
            return f"died {stage_words(came['exit'].get('stage'))}: {exit_words(came['exit'])}"
        if not came.get("stage"):
            return "never arrived"
        if self.unsettled(r):
            return f"its end is unknown (last on the board: '{came.get('stage')}')"
        return None

    def unsettled(self, r: int) -> bool:
        """A rank whose report arrived but which neither wrote "done" nor had its exit recorded by the time rank 0,
        done with the run (not stopped), stopped waiting for it (fleet/rank.py ``wait_settled``): whether it
        finished or died is not known, and the report says so (issue 41: never silently left out). Only in a run
        where every rank answered: with one missing, gloo may have closed the pairs and the others' go with them."""
        if r == 0 or self.interrupted or self.orphaned or self.missing:  # a rank missing: no go, no "done" soon
            return False
        came = self.arrival(r) or {}
        return bool((self.rank(r) or {}).get("payload")) and bool(came.get("stage")) \
            and came.get("stage") != "done" and not came.get("exit")

    def reported_cell(self, r: int) -> str:
        """The ranks table's "reported" cell: "yes", "MISSING", and what the board adds ("yes, then died
        mid-run: killed by SIGKILL", "MISSING: never arrived")."""
        rec = self.rank(r) or {}
        fate = self.fate(r)
        if rec.get("payload"):
            return f"yes, then {fate}" if fate and fate != "never arrived" else "yes"
        if fate:
            return f"MISSING: {fate}"
        came = self.arrival(r) or {}
        if any(m.get("rank") == r and m.get("cut_short") for m in self.missing):
            return "MISSING: rank 0 died first" if self.orphaned and self.fate(0) else \
                "MISSING: the run was stopped first"
        return "MISSING: it arrived and waited for the group" if came.get("stage") == "started" else "MISSING"


# where a rank was when it died, by the last stage it wrote on the board (fleet/arrival.py)
ARRIVAL_STAGES = ("launched", "started", "pg-formed", "reported", "done")
_STAGE_WORDS = {
    "launched": "before start-up (before it announced itself)",
    "started": "during start-up (before the process group formed)",
    "pg-formed": "mid-run (after the process group formed, before its report)",
    "reported": "mid-run (after it sent its report)",
    "done": "after its part was done",
}


def stage_words(stage: Optional[str]) -> str:
    return _STAGE_WORDS.get(stage or "launched", f"at stage {stage}")


def exit_words(ex: Dict[str, Any]) -> str:
    """"killed by SIGKILL" or "exited with code 3", and its pid."""
    if ex.get("lost_parent"):  # fleet/arrival.py record_lost_parent: its child said so
        return f"the process the launcher started (pid {ex.get('pid')}) was killed from outside"
    how = f"killed by {ex['signal']}" if ex.get("signal") else f"exited with code {ex.get('code')}"
    return how + (f" (pid {ex['pid']})" if ex.get("pid") is not None else "")


def assign_node_keys(ranks: List[Dict[str, Any]]) -> None:
    """Give each record its node's key, kept in the record ("node"): "node N" from the launcher's node rank, else
    "host N" by the order of each host's lowest rank. The key never holds the host name, so a redacted report
    (host names masked) still tells its nodes apart when judged again."""
    hosts: Dict[Any, str] = {}
    for rec in sorted(ranks, key=lambda x: x.get("rank", 0)):
        if rec.get("node"):
            continue
        if rec.get("node_rank") is not None:
            rec["node"] = f"node {rec['node_rank']}"
        else:
            rec["node"] = hosts.setdefault(rec.get("hostname"), f"host {len(hosts)}")


def group_nodes(ranks: List[Dict[str, Any]], facts_by_rank: Dict[int, Dict[str, Any]]) -> List[Node]:
    """Ranks grouped by node (the launcher's node rank, else the host); a node's facts are its lowest local
    rank's (local rank 0 collects). A facts dict that does not load is kept as the node's facts_error."""
    assign_node_keys(ranks)
    nodes: Dict[str, Node] = {}
    for rec in sorted(ranks, key=lambda x: (x.get("local_rank") or 0, x.get("rank", 0))):
        key = str(rec["node"])
        node = nodes.setdefault(key, Node(key, rec.get("hostname"), rec.get("node_rank"), []))
        node.ranks.append(rec["rank"])
    out = sorted(nodes.values(), key=lambda n: min(n.ranks))
    for node in out:
        node.ranks.sort()
        collector = next((r for r in node.ranks if r in facts_by_rank), None)
        if collector is None:
            node.facts_error = "no facts arrived from this node's local rank 0"
            continue
        data = facts_by_rank[collector]
        try:
            node.facts = Facts.from_dict(data)
        except (FactsError, TypeError, ValueError) as e:
            node.facts_error = f"rank {collector}'s facts do not load: {e}"
    return out


def fleet_to_dict(fleet: FleetData) -> Dict[str, Any]:
    return {"backend": fleet.backend, "world_size": fleet.world_size, "timeout_s": fleet.timeout_s,
            "started_at": fleet.started_at, "duration_s": fleet.duration_s, "interrupted": fleet.interrupted,
            "ranks": fleet.ranks, "missing": fleet.missing, "collectives": fleet.collectives,
            "arrivals": fleet.arrivals, "deadline_at": fleet.deadline_at, "orphaned": fleet.orphaned}


class FleetReportError(ValueError):
    """A file that is not a saved fleet report (exit 2)."""


def fleet_from_report(data: Any) -> FleetData:
    """The fleet data of a saved JSON fleet report (``envdoctor fleet --format json -o FILE``)."""
    if not isinstance(data, dict) or data.get("kind") != FLEET_KIND:
        raise FleetReportError("not an envdoctor fleet report (no \"kind\": \"envdoctor-fleet-report\"; "
                               "`envdoctor fleet --format json -o FILE` writes one)")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > FLEET_SCHEMA_VERSION:
        raise FleetReportError(f"fleet report schema_version {version!r}: this envdoctor reads "
                               f"{FLEET_SCHEMA_VERSION} or older")
    fleet = data.get("fleet")
    nodes = data.get("nodes")
    if not isinstance(fleet, dict) or not isinstance(nodes, list) or not isinstance(fleet.get("ranks"), list):
        raise FleetReportError("fleet report without its \"fleet\" record or \"nodes\" list")
    ranks = [r for r in fleet["ranks"] if isinstance(r, dict) and isinstance(r.get("rank"), int)]
    facts_by_rank = {}
    for n in nodes:
        if isinstance(n, dict) and isinstance(n.get("facts"), dict) and isinstance(n.get("collector"), int):
            facts_by_rank[n["collector"]] = n["facts"]
    out = FleetData(backend=str(fleet.get("backend") or "?"), world_size=int(fleet.get("world_size") or len(ranks)),
                    timeout_s=float(fleet.get("timeout_s") or 0), ranks=ranks,
                    missing=[m for m in fleet.get("missing") or [] if isinstance(m, dict)],
                    collectives=[c for c in fleet.get("collectives") or [] if isinstance(c, dict)],
                    started_at=fleet.get("started_at"), duration_s=fleet.get("duration_s"),
                    interrupted=fleet.get("interrupted"),
                    arrivals=[a for a in fleet.get("arrivals") or [] if isinstance(a, dict)
                              and isinstance(a.get("rank"), int)],
                    deadline_at=fleet.get("deadline_at") if isinstance(fleet.get("deadline_at"), (int, float))
                    else None,
                    orphaned=fleet.get("orphaned") if isinstance(fleet.get("orphaned"), str) else None)
    out.nodes = group_nodes(ranks, facts_by_rank)
    return out


@dataclass
class FleetReport:
    """The fleet judged: each node's report from the one judge and the fleet checks' results over all of them
    (judging/fleet.py makes it; report/fleet.py renders it)."""

    fleet: FleetData
    node_reports: Dict[str, Report]
    checks: List[CheckResult]
    compat_as_of: Optional[str] = None

    @property
    def findings(self) -> List[Finding]:
        return order_findings(self.checks)

    @property
    def problems(self) -> List[Finding]:
        return [f for f in self.findings if f.severity != Severity.INFO]

    def has_at_least(self, threshold: str) -> bool:
        return any(Severity.at_least(f.severity, threshold) for f in self.findings)
