"""The fleet checks: pure functions of the fleet's data (the nodes' facts, the ranks' records and
measurements) and of each node's report from the one judge (``services.collect.judge``). No process, file or socket: they
run the same live and on a saved report (``envdoctor fleet --report``). Registered like every other check; they
read ``ctx.fleet`` (a ``FleetContext``, set by judging/fleet.py) and skip elsewhere ("no fleet run"): one
machine's report counts them among the checks that did not apply, as it does the watch checks.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Tuple

from ..domain.fastclass import dataclass
from ..model.catalogue import CATEGORIES
from ..model.findings import Evidence, Finding, Fix, Report, Severity
from ..model.fleet import FleetData, Node
from ._fleet import (
    MISSING,
    NODE_FACTS,
    RANK_FACTS,
    died_finding,
    missing_finding,
    outliers,
    rank_env_findings,
    unsettled_finding,
)
from .base import Check, CheckContext, Findings, SkipCheck, registrar

# a rank whose kernel runs below this fraction of the median of its peers' is a straggler: envdoctor's line,
# a policy (the quick kernels' run-to-run spread on one healthy GPU is a few percent: bench's 5-run medians)
STRAGGLER_FRACTION = 0.8


@dataclass(frozen=True)
class FleetContext:
    fleet: FleetData
    node_reports: Dict[str, Report]  # node key -> that node's report from services.collect.judge


CHECKS: List[Check] = []
check = registrar(CHECKS)


def fleet_of(ctx: CheckContext) -> FleetContext:
    if ctx.fleet is None:  # one machine's facts (check, diagnose, watch)
        raise SkipCheck("no fleet run to judge (`envdoctor fleet` judges the ranks of several machines)", not_applicable="not a fleet run")
    return ctx.fleet


# ------------------------------------------------------------------ missing ranks




@check(MISSING, "Every rank arrived, reported to rank 0 within the timeout, and finished")
def missing_ranks(ctx: CheckContext) -> List[Finding]:
    fleet = fleet_of(ctx).fleet
    out: List[Finding] = []
    causes: List[int] = []
    waited: List[int] = []
    missing = {m.get("rank"): m for m in fleet.missing}
    dead = {a["rank"]: a["exit"] for a in fleet.arrivals if isinstance(a.get("exit"), dict)}
    for r in sorted(set(missing) | set(dead), key=lambda x: (x is None, x)):
        m = missing.get(r) or {}
        came = fleet.arrival(r) if isinstance(r, int) else None
        if r in dead:
            out.append(died_finding(fleet, r, dead[r]))
            causes.append(r)
            continue
        started = ((came or {}).get("stages") or {}).get("started")
        if came is not None and not came.get("stage"):
            # the board never saw it: it is late, or failed before envdoctor ran in it (no supervisor)
            when = (f"before rank 0 was stopped ({fleet.interrupted})" if fleet.interrupted else
                    f"within the {fleet.timeout_s:g} s deadline")
            out.append(MISSING.error(
                "not-arrived", f"{fleet.who(r)} never arrived: it did not announce itself on the launcher's store "
                f"{when}; it starts late, or its process failed before envdoctor ran in it",
                detail="Every rank writes its arrival on the launcher's store before init_process_group; this one "
                       "never did and left no exit record, so its interpreter or environment failed at launch "
                       "(the launcher's log has its exit code) or it had not started yet.",
                evidence=[Evidence(f"fleet.arrivals[{r}]", came)],
                fix=Fix(f"Read rank {r}'s own output (torchrun prints each worker's exit code): a rank that starts "
                        "late is a slow node (image pull, file system, CPU); one that fails at once cannot run "
                        "envdoctor or its interpreter there")))
            causes.append(r)
            continue
        if started is not None and fleet.deadline_at is not None and started > fleet.deadline_at:
            late = started - fleet.deadline_at + fleet.timeout_s
            out.append(MISSING.error(
                "late", f"{fleet.who(r)} came late: it announced itself {late:.0f} s after rank 0 began to wait, "
                f"past the {fleet.timeout_s:g} s deadline",
                detail="The job cannot start until its last rank does: a rank this late holds up every start.",
                evidence=[Evidence(f"fleet.arrivals[{r}].stages.started", started,
                                   expected=f"<= {fleet.deadline_at}")],
                fix=Fix("Find what delays that node's start (image pull, file system, an overloaded CPU), or raise "
                        "--timeout if the delay is expected")))
            causes.append(r)
            continue
        if (m.get("stage") == "start-up" and came is not None and came.get("stage") == "started") or \
                m.get("cut_short"):
            # arrived and waited for the group, or still at work when the launcher stopped the run: named as a
            # cause only if no other rank is
            waited.append(r)
            continue
        out.append(missing_finding(fleet, r, m, came))
        causes.append(r)
    out += [unsettled_finding(fleet, a["rank"]) for a in fleet.arrivals if fleet.unsettled(a["rank"])]
    if waited and not causes:
        for r in waited:
            if (fleet.arrival(r) or {}).get("stage") != "started" or missing[r].get("stage") != "start-up":
                out.append(missing_finding(fleet, r, missing[r], fleet.arrival(r)))
                continue
            out.append(MISSING.error(
                "missing", f"{fleet.who(r)} arrived but the process group did not form: "
                f"{missing[r].get('reason')}",
                detail="Every rank named arrived and waited in init_process_group; the group did not form "
                       "(the rendezvous address, a firewall, or the network interface gloo/NCCL chose).",
                evidence=[Evidence("fleet.missing", {k: v for k, v in missing[r].items() if v is not None})],
                fix=Fix("Check that every node reaches MASTER_ADDR:MASTER_PORT and that GLOO_SOCKET_IFNAME/"
                        "NCCL_SOCKET_IFNAME name the right interface")))
    if fleet.interrupted:
        if causes:
            named = ", ".join(f"rank {r}" for r in causes)
            out.append(MISSING.warning(
                "interrupted", f"the run was cut short after {named} failed: the launcher stopped the remaining "
                f"ranks, and rank 0 wrote what had arrived ({fleet.interrupted})",
                detail="torchrun stops every worker when one exits with an error; rank 0 taking that signal is a "
                       "consequence, not a fault of rank 0.", evidence=[Evidence("fleet.interrupted", fleet.interrupted)]))
        else:
            out.append(MISSING.error(
                "interrupted", f"rank 0 was stopped before the end of the run: {fleet.interrupted}",
                detail="torchrun stops every worker when one exits with an error; no rank's exit is recorded on "
                       "the launcher's store, so the launcher's own log says which one failed.",
                evidence=[Evidence("fleet.interrupted", fleet.interrupted)]))
    return out


# ------------------------------------------------------------------ consistency

INCONSISTENT = Findings("fleet.consistency", "FLEET_INCONSISTENT", kinds=("node-facts", "rank-runtime", "rank-env"))




@check(INCONSISTENT, "What must match across nodes and ranks matches")
def consistency(cctx: CheckContext) -> List[Finding]:
    ctx = fleet_of(cctx)
    fleet = ctx.fleet
    nodes = [n for n in fleet.nodes if n.facts is not None]
    out: List[Finding] = []
    if len(nodes) >= 2:
        for what, severity, get, why in NODE_FACTS:
            values = {n.key: get(n.facts, ctx.node_reports.get(n.key)) for n in nodes}
            found = outliers(values)
            if found is None:
                continue
            ref, odd, strict = found
            by = {n.key: n for n in nodes}
            same = [k for k, v in values.items() if v == ref]
            lines = [f"{by[k].label}, rank{'s' if len(by[k].ranks) > 1 else ''} "
                     f"{', '.join(map(str, by[k].ranks))}: {values[k]}" for k in odd]
            ref_text = (f"{len(same)} of {len(nodes)} nodes have {ref}" if strict else
                        f"no majority; rank 0's node, {by[same[0]].label}, has {ref}")
            out.append(INCONSISTENT(
                "node-facts", severity, f"{what} differs: {'; '.join(lines)} ({ref_text})", detail=why,
                evidence=[Evidence(f"nodes[{k}].{what}", values[k], expected=str(ref)) for k in odd],
                fix=Fix("Fix each node's own findings (listed per node)" if what == "problems found" else
                        f"Make the {what} the same on every node: the nodes named differ from the others")))
    ranks = [r for r in fleet.ranks if r.get("payload")]
    if len(ranks) >= 2:
        for what, key, severity in RANK_FACTS:
            values = {r["rank"]: r.get(key) for r in ranks}
            found = outliers(values)
            if found is None:
                continue
            ref, odd, strict = found
            same = [k for k, v in values.items() if v == ref]
            lines = [f"{fleet.who(k)}: {values[k]}" for k in odd]
            ref_text = f"{len(same)} of {len(ranks)} ranks have {ref}" if strict else \
                f"no majority; rank {same[0]} has {ref}"
            out.append(INCONSISTENT(
                "rank-runtime", severity, f"{what} of the running ranks differs: {'; '.join(lines)} ({ref_text})",
                detail="What each rank's own process imported: ranks of one job must run the same stack.",
                evidence=[Evidence(f"ranks[{k}].{key}", values[k], expected=str(ref)) for k in odd],
                fix=Fix("Start every rank from the same environment (the same image or venv on every node)")))
    if len(ranks) >= 2:
        out += rank_env_findings(INCONSISTENT, fleet, ranks)
    if len(nodes) < 2 and not out:
        raise SkipCheck(f"{len(nodes)} node{'s' if len(nodes) != 1 else ''} with facts and every rank's runtime "
                        "alike: nothing to compare across nodes")
    return out


# ------------------------------------------------------------------ the nodes' own findings, merged


@check("fleet.node-findings", "Each node's own findings (the checks of `check`), merged and counted",
       categories=tuple(sorted(CATEGORIES)))
def node_findings(cctx: CheckContext) -> List[Finding]:
    ctx = fleet_of(cctx)
    fleet = ctx.fleet
    judged = [n for n in fleet.nodes if n.key in ctx.node_reports]
    if not judged:
        raise SkipCheck("no node's facts arrived")
    by_code: Dict[str, List[Tuple[Node, Finding]]] = {}
    for n in judged:
        for f in ctx.node_reports[n.key].problems:
            by_code.setdefault(f.code, []).append((n, f))
    out = []
    for code, items in by_code.items():
        first = items[0][1]
        labels = [n.label for n, _ in items]
        worst = max((f.severity for _, f in items), key=lambda s: Severity.ORDER[s])
        out.append(Finding(code, first.category, worst,
                           f"{len(items)} of {len(judged)} nodes: {first.category}: {first.summary}"
                           + (f" ({', '.join(labels)})" if len(judged) > 1 else ""),
                           detail=first.detail,
                           evidence=[Evidence("fleet.nodes", labels)] + list(first.evidence),
                           fix=first.fix, subject=first.subject))
    return out


# ------------------------------------------------------------------ stragglers

STRAGGLER = Findings("fleet.stragglers", "FLEET_STRAGGLER", kinds=("matmul-bf16", "matmul-fp32", "h2d-pinned"))


@check(STRAGGLER, "No rank's matmul or host-to-device copy is far below the others'")
def stragglers(ctx: CheckContext) -> List[Finding]:
    fleet = fleet_of(ctx).fleet
    by_name: Dict[str, List[Tuple[int, float, Dict[str, Any]]]] = {}
    cpu_hosts: Dict[str, List[Any]] = {}
    for rec in fleet.ranks:
        for res in rec.get("bench") or []:
            if res.get("status") != "ok" or not isinstance(res.get("value"), (int, float)):
                continue
            by_name.setdefault(res["name"], []).append((rec["rank"], float(res["value"]), res))
            if str(res.get("device", "")).startswith("cpu"):
                cpu_hosts.setdefault(res["name"], []).append(rec.get("hostname"))
    if not by_name:
        raise SkipCheck("no per-rank measurement (run with --bench)")
    out: List[Finding] = []
    judged = 0
    for name, items in sorted(by_name.items()):
        hosts = cpu_hosts.get(name, [])
        if hosts and len(set(hosts)) < len(hosts):
            continue  # CPU ranks on one host measure the same cores at once: not independent
        if len(items) < 2:
            continue
        judged += 1
        values = [v for _, v, _ in items]
        median = statistics.median(values)
        r, slowest, res = min(items, key=lambda x: x[1])
        if median > 0 and slowest < median * STRAGGLER_FRACTION:
            rec = fleet.rank(r) or {}
            gpu = rec.get("gpu") or {}
            where = ", ".join(filter(None, [gpu.get("name"), gpu.get("pci_bus_id"), gpu.get("uuid")]))
            out.append(STRAGGLER.warning(
                name.replace("_", "-"),
                f"{fleet.who(r)} is a straggler: {name} {slowest:g} {res.get('unit') or ''} against a median of "
                f"{median:g} over {len(items)} ranks ({slowest / median:.0%})" + (f"; its GPU: {where}" if where else ""),
                detail="Synchronous training waits for the slowest rank at every step: the whole job runs at its "
                       f"speed. Below {STRAGGLER_FRACTION:.0%} of the median is envdoctor's straggler line.",
                evidence=[Evidence(f"ranks[{r}].bench.{name}", slowest, expected=f">= {median * STRAGGLER_FRACTION:g}")]
                + [Evidence(f"ranks[{x}].bench.{name}", v) for x, v, _ in items if x != r],
                fix=Fix("Run `envdoctor bench` on that node: its clocks, power limit, PCIe link and the processes "
                        "sharing its GPU are the usual causes")))
    if not judged:
        raise SkipCheck("no two independent measurements of one kernel (ranks on one host share its CPUs; "
                        "a GPU per rank, or one rank per host, is compared)")
    return out


# ------------------------------------------------------------------ collectives and the transport

COLLECTIVE = Findings("fleet.collectives", "FLEET_RANK_UNREACHABLE", kinds=("failed", "busbw"),
                      categories=("INTERCONNECT",))
TRANSPORT = Findings("fleet.transport", "INTERCONNECT", kinds=("socket-fallback",))


@check(COLLECTIVE, "All-reduce completes across the ranks (algbw, busbw)", categories=("FLEET_RANK_UNREACHABLE",))
def collectives(cctx: CheckContext) -> List[Finding]:
    ctx = fleet_of(cctx)
    if not ctx.fleet.collectives:
        raise SkipCheck("no all-reduce sweep ran (run with --bench)")
    ran = [c for c in ctx.fleet.collectives if not c.get("skipped")]
    if not ran:
        raise SkipCheck(f"all-reduce sweep {ctx.fleet.collectives[0]['skipped']}")
    out = []
    for c in ran:
        if c.get("error"):
            out.append(COLLECTIVE.error(
                "failed", f"all-reduce over {c.get('scope')} (ranks {c.get('ranks')}) failed: {c['error']}",
                detail="Training's gradient all-reduce goes the same way: it would fail or hang here.",
                evidence=[Evidence("fleet.collectives", c.get("scope"))]))
        elif c.get("sweep"):
            best = max(c["sweep"], key=lambda s: s.get("busbw_gbs") or 0)
            out.append(COLLECTIVE.info(
                "busbw", f"all-reduce over {c.get('scope')} ({len(c.get('ranks') or [])} ranks, "
                f"{ctx.fleet.backend}): best busbw {best['busbw_gbs']:g} GB/s (algbw {best['algbw_gbs']:g} GB/s) "
                f"at {_size(best['bytes'])}", category="INTERCONNECT",
                evidence=[Evidence("fleet.collectives", c.get("scope"))]))
    return out


@check(TRANSPORT, "A multi-node NCCL job uses InfiniBand where the nodes have it")
def transport(ctx: CheckContext) -> List[Finding]:
    fleet = fleet_of(ctx).fleet
    logs = {r["rank"]: r.get("nccl_transport") for r in fleet.ranks if r.get("nccl_transport")}
    if fleet.backend != "nccl" or not logs:
        raise SkipCheck("no NCCL_DEBUG=INFO log of this run to read (NCCL backend only; not when NCCL_DEBUG "
                        "was set by the user)")
    if len([n for n in fleet.nodes]) < 2:
        raise SkipCheck("one node: NCCL's network transport is only used between nodes")
    ib_nodes = [n.label for n in fleet.nodes if n.facts is not None and n.facts.host.infiniband_devices]
    out = []
    for r, t in sorted(logs.items()):
        channels = t.get("channels") or {}
        socket = t.get("network") == "Socket" or ("NET/Socket" in channels and "NET/IB" not in channels)
        if socket and ib_nodes:
            out.append(TRANSPORT.error(
                "socket-fallback", f"NCCL on {fleet.who(r)} talks to other nodes over TCP sockets although "
                f"InfiniBand devices are present ({', '.join(ib_nodes)})",
                detail="Sockets run at a fraction of InfiniBand's bandwidth: inter-node all-reduce and the whole "
                       "job slow down many times.",
                evidence=[Evidence(f"ranks[{r}].nccl_transport", t)],
                fix=Fix("Let NCCL use the IB devices: unset NCCL_IB_DISABLE and NCCL_NET=Socket, check "
                        "NCCL_IB_HCA names live ports (ibstat), and that the container sees /dev/infiniband",
                        commands=["ibstat", "env | grep ^NCCL_"])))
    return out


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"
