"""What the fleet checks share: the odd ones out among the ranks' values, and each rank's own environment."""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from ..model.findings import Evidence, Finding, Fix, Severity
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
