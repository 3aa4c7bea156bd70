"""What the fleet checks share: the odd ones out among the ranks' values, and each rank's own environment."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..model.facts import Facts, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Report, Severity
from ..model.fleet import FleetData, exit_words, stage_words
from .base import Findings


def outliers(values: Dict[Any, Any]) -> Optional[Tuple[Any, List[Any], bool]]:
    """(majority value, the keys holding another value, whether the majority is strict) over the known values;
    None when they all agree or fewer than two are known. With no strict majority, the first key's value is the
    reference (rank 0's node comes first)."""
    known = {k: v for k, v in values.items() if v is not None}
    if len(known) < 2 or len(set(known.values())) < 2:
        return None
    counts = Counter(known.values()).most_common()
    strict = counts[0][1] > counts[1][1]
    ref = counts[0][0] if strict else next(iter(known.values()))
    return ref, [k for k, v in known.items() if v != ref], strict


def _env_value(env: Dict[str, Any], name: str) -> Any:
    """What must match: the value, except CUDA_VISIBLE_DEVICES, which names each rank's own GPUs (so differs by
    design under Slurm): there, how many GPUs it leaves."""
    v = env.get(name)
    if name == "CUDA_VISIBLE_DEVICES" and v is not None:
        return f"{len([x for x in str(v).split(',') if x.strip()])} GPU(s)"
    return "unset" if v is None else v


def rank_env_findings(findings: Findings, fleet: Any, ranks: List[Dict[str, Any]]) -> List[Finding]:
    envs = {r["rank"]: r["payload"].get("env") if isinstance(r.get("payload"), dict) else r.get("env")
            for r in ranks}
    envs = {k: v for k, v in envs.items() if isinstance(v, dict)}
    if len(envs) < 2:
        return []
    out = []
    for name in sorted({n for v in envs.values() for n in v}):
        found = outliers({k: _env_value(v, name) for k, v in envs.items()})
        if found is None:
            continue
        ref, odd, strict = found
        values = {k: _env_value(envs[k], name) for k in odd}
        lines = [f"{fleet.who(k)}: {values[k]}" for k in odd]
        out.append(findings(
            "rank-env", Severity.WARNING, f"{name} differs between ranks: {'; '.join(lines)} "
            f"(rank {next(k for k in envs if k not in odd)} and others: {ref})",
            detail="Each rank's process reads its own environment: a thread count, a visible-GPU count or an NCCL "
                   "setting that differs between ranks makes one rank slower than the others (every collective "
                   "waits for it) or NCCL choose another transport there. Interface names "
                   "(NCCL_SOCKET_IFNAME) may differ by design on unlike nodes.",
            evidence=[Evidence(f"ranks[{k}].env.{name}", envs[k].get(name), expected=str(ref)) for k in odd],
            fix=Fix(f"Set {name} the same way for every rank (the launcher's environment, not a per-node shell "
                    "profile)")))
    return out


# ------------------------------------------------------------------ what must match across the nodes and ranks

def _python(f: Facts):
    return f.pythons[0] if f.pythons else None


def _torch_version(f: Facts) -> Optional[str]:
    p = _python(f)
    if p is None:
        return None
    if p.torch is not None and p.torch.version:
        return p.torch.version
    pkg = p.package("torch")
    return pkg.version if pkg else None


def _torch_variant(f: Facts) -> Optional[str]:
    p = _python(f)
    pkg = p.package("torch") if p else None
    if pkg is not None and pkg.variant:
        return pkg.variant
    if p is not None and p.torch is not None and p.torch.version is not None:
        return f"cu{p.torch.cuda}" if p.torch.cuda else None
    return None


def _gpu_models(f: Facts) -> Optional[str]:
    if f.driver.status != ProbeStatus.OK:
        return None
    names = Counter(g.name or "unknown model" for g in f.driver.gpus)
    return ", ".join(f"{n} x {name}" for name, n in sorted(names.items())) or "no GPU"


def _problems(report: Optional[Report]) -> Optional[str]:
    if report is None:
        return None
    cats = sorted({f.category for f in report.problems})
    return ", ".join(cats) if cats else "none"


# (what, value of a node, severity when nodes differ, why it matters)
NODE_FACTS: List[Tuple[str, str, Callable[[Facts, Optional[Report]], Any], str]] = [
    ("torch version", Severity.ERROR, lambda f, r: _torch_version(f),
     "ranks running different torch builds can disagree on collective protocols and hang or crash"),
    ("torch CUDA variant", Severity.ERROR, lambda f, r: _torch_variant(f),
     "a CPU or other-CUDA build on one node changes what runs there"),
    ("NCCL version", Severity.ERROR, lambda f, r: (_python(f).torch.nccl_version
                                                   if _python(f) and _python(f).torch else None),
     "NCCL requires the same version on every rank of a communicator"),
    ("Python version", Severity.ERROR, lambda f, r: _python(f).python_version if _python(f) else None,
     "pickled objects and compiled extensions differ between Python versions"),
    ("NVIDIA driver", Severity.WARNING, lambda f, r: f.driver.version,
     "different driver branches give different CUDA and NCCL behaviour and speed"),
    ("driver's CUDA", Severity.WARNING, lambda f, r: f.driver.cuda_driver_version,
     "the highest CUDA the driver runs differs"),
    ("cuDNN", Severity.WARNING, lambda f, r: (_python(f).torch.cudnn_version if _python(f) and _python(f).torch
                                              else None),
     "convolution kernels and their speed differ"),
    ("GPU models", Severity.WARNING, lambda f, r: _gpu_models(f),
     "a job runs at the speed of its slowest GPU"),
    ("envdoctor version", Severity.WARNING, lambda f, r: f.envdoctor_version,
     "another envdoctor may read different facts"),
    ("problems found", Severity.WARNING, lambda f, r: _problems(r),
     "the nodes are not set up alike"),
]

# the rank's own runtime, as each rank's process sees it (ranks of one node may run different interpreters)
RANK_FACTS = [("torch version", "torch_version", Severity.ERROR), ("NCCL version", "nccl_version", Severity.ERROR),
              ("Python version", "python_version", Severity.ERROR), ("torch CUDA", "torch_cuda", Severity.ERROR),
              ("envdoctor version", "envdoctor_version", Severity.WARNING)]


# ------------------------------------------------------------------ a rank that died or never arrived

MISSING = Findings("fleet.ranks", "FLEET_RANK_UNREACHABLE",
                   kinds=("interrupted", "missing", "died", "not-arrived", "late", "unsettled"))


def died_finding(fleet: FleetData, r: int, ex: Dict[str, Any]) -> Finding:
    reported = bool((fleet.rank(r) or {}).get("payload"))
    host = fleet.host_of(r)
    killed = ex.get("signal") == "SIGKILL"
    return MISSING.error(
        "died", f"{fleet.who(r)} died {stage_words(ex.get('stage'))}: {exit_words(ex)}"
        + ("; its report had arrived, the rest of the run had not" if reported else ""),
        detail="Its launcher-side parent recorded how it ended on the launcher's store before the launcher saw it "
               "(envdoctor/fleet/arrival.py); "
               + ("the other ranks' errors follow from it, and the report was written by rank 0's launched process "
                  "in its place, from the launcher's store (the other ranks' facts never reached it). "
                  if r == 0 and fleet.orphaned else "the other ranks' errors and rank 0's stop follow from it. ")
               + ("SIGKILL comes from the kernel's OOM killer or from a `kill -9` (the launcher's own escalation "
                  "included): the node's kernel log says which." if killed else ""),
        evidence=[Evidence(f"fleet.arrivals[{r}].exit", ex)],
        fix=Fix(f"Read rank {r}'s own output" + (f" on {host}" if host else "")
                + " (torchrun prints each worker's exit code and error file) and that node's kernel log; then run "
                  "`envdoctor check` on that node",
                commands=["dmesg -T | grep -iE 'killed process|out of memory'"] if killed else []))


def missing_finding(fleet: FleetData, r: int, m: Dict[str, Any], came: Optional[Dict[str, Any]]) -> Finding:
    heard = m.get("last_heard")
    what = {"hello": "never said hello", "start-up": "never joined the process group"}.get(
        str(m.get("stage")), "did not send its report")
    board = f"; the board has it at '{came.get('stage')}'" if came is not None and came.get("stage") else ""
    return MISSING.error(
        "missing", f"{fleet.who(r)} {what}: {m.get('reason')}"
        + (f"; last heard from at {heard}" if heard else "; never heard from") + board,
        detail="A rank that dies or cannot reach rank 0 makes every collective of a training job hang or "
               "fail on this node set; the report below covers only the ranks that answered.",
        evidence=[Evidence("fleet.missing", {k: v for k, v in m.items() if v is not None})],
        fix=Fix("Read that rank's own output (torchrun prints each worker's exit code and error file) and "
                "the node's kernel log; then run `envdoctor check` on that node"))


def unsettled_finding(fleet: FleetData, r: int) -> Finding:
    came = fleet.arrival(r) or {}
    return MISSING.warning(
        "unsettled", f"{fleet.who(r)} sent its report, then neither finished nor had its exit recorded on the "
        f"launcher's store before rank 0 stopped waiting (last on the board: '{came.get('stage')}'): whether it "
        "ended cleanly is unknown",
        detail="Every rank writes 'done' at its end, and a rank that dies has its exit recorded by its launched "
               "process (envdoctor/fleet/arrival.py); rank 0 waits for one or the other from every rank, within a "
               "bound. This rank's report is in the tables; what became of it afterwards is not.",
        evidence=[Evidence(f"fleet.arrivals[{r}]", came)],
        fix=Fix(f"Read torchrun's summary for rank {r} (its exit code) and that rank's own output"))
