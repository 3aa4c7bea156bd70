"""host.environment: every row of compat_data/env_vars.json judged against the recorded environment variables.

One generic rule: the table says which variable, under which condition (its ``when`` operator), hurts how and how
to fix it; this module only evaluates the operators against the facts. A variable set in the environment envdoctor
ran in is what the judged interpreter inherits (host.env); a paste's variables are what the pasted text showed
(pythons[i].env).
"""

from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Tuple

from ..compat.env_vars import EnvVarRule, env_vars_table
from ..domain.arch import arch_runs, parse_cc, sm_name
from ..domain.envvars import (
    alloc_conf_problems,
    arch_entry_cc,
    arch_entry_targets,
    arch_list_entries,
    ifname_matches,
    visible_devices,
)
from ..domain.versions import parse_version
from ..model.facts import Facts, ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ..queries import gpu_capabilities
from ..remedies import placeholder, set_env, unset_env
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

# a row may name NO_GPU_VISIBLE (CUDA_VISIBLE_DEVICES) or INTERCONNECT (NCCL_*) instead of the check's own category
ENVIRONMENT = Findings("host.environment", "ENV_VAR_HARMFUL", kinds=("{rule}",),
                       categories=("NO_GPU_VISIBLE", "INTERCONNECT"))
_HARM = {"break": "it breaks the run", "slow": "it slows the run", "noise": "it floods the logs"}

Hit = Tuple[str, List[Evidence]]  # what the operator found (for the detail), and the facts it compared against


def recorded_env(facts: Facts, names: List[str]) -> Dict[str, Tuple[Optional[str], str]]:
    """variable -> (value or None when recorded unset, its fact path), for the variables the facts recorded: the
    host section's (the environment envdoctor ran in, inherited by the judged interpreter), else what an
    interpreter's section holds (a paste shows its variables there)."""
    out: Dict[str, Tuple[Optional[str], str]] = {}
    host_env = facts.host.env or {}
    for n in names:
        if n in host_env:
            out[n] = (host_env[n], f"host.env.{n}")
    for i, py in enumerate(facts.pythons):
        for n in names:
            if n not in out and n in (py.env or {}):
                out[n] = (py.env[n], f"pythons[{i}].env.{n}")
    return out


def _gpus(facts: Facts) -> Optional[list]:
    d = facts.driver
    return list(d.gpus) if d.status == ProbeStatus.OK and d.gpus else None


def _cores(facts: Facts) -> Tuple[Optional[float], List[Evidence]]:
    """The CPUs this process may use: the affinity mask (else os.cpu_count()) capped by the cgroup quota."""
    h = facts.host
    visible = h.cpu_affinity_count or h.cpu_logical_count
    ev = [Evidence("host.cpu_affinity_count" if h.cpu_affinity_count else "host.cpu_logical_count", visible)]
    if h.cgroup_cpu_quota is not None:
        ev.append(Evidence("host.cgroup_cpu_quota", h.cgroup_cpu_quota))
    counts = [c for c in (visible, h.cgroup_cpu_quota) if c]
    return (min(counts), ev) if counts else (None, [])


def _context(name: str, facts: Facts) -> bool:
    gpus = _gpus(facts) or []
    if name == "infiniband_present":
        return bool(facts.host.infiniband_devices)
    if name == "gpu_present":
        return bool(gpus)
    if name == "multi_gpu":
        return len(gpus) > 1 or any(py.torch and (py.torch.device_count or 0) > 1 for py in facts.pythons)
    if name == "mixed_gpus":
        return len({g.name for g in gpus if g.name}) > 1
    raise ValueError(name)  # the table's loader refuses any other name


def _same(a: str, b: str, rule: EnvVarRule) -> bool:
    return a.casefold() == b.casefold() if rule.ignore_case else a == b


def _buildable(ctx: CheckContext, nvcc: str, entry: str) -> Optional[bool]:
    """Can this nvcc build SASS for the entry's compute capability? None when the compat data cannot tell."""
    cc = arch_entry_cc(entry)
    if cc is None:
        return None  # a named arch ("Ampere") or garbage: torch.utils.cpp_extension says so itself
    targets = ctx.compat.ptxas_targets(nvcc) if hasattr(ctx.compat, "ptxas_targets") else None
    if targets:
        base = sm_name(cc)
        return any(re.fullmatch(rf"{base}[af]?", t) for t in targets)
    row = ctx.compat.arch_support(cc) if hasattr(ctx.compat, "arch_support") else None
    v = parse_version(nvcc)
    if row is None or v is None or row.first_cuda is None:
        return None
    if v < parse_version(row.first_cuda):
        return False
    if row.last_cuda is not None and v > parse_version(row.last_cuda):
        return False
    return True


def _evaluate(rule: EnvVarRule, value: Optional[str], ctx: CheckContext) -> Optional[Hit]:
    """What makes the row hold, or None (it does not hold, or the facts it needs are unknown)."""
    op, facts = rule.op, ctx.facts
    if op == "not_in":
        if value is None:
            return ("", []) if rule.unset_matches else None
        return None if any(_same(value.strip(), v, rule) for v in rule.values) else ("", [])
    if value is None:
        return None
    v = value.strip()
    if op == "set":
        return "", []
    if op == "equals":
        return ("", []) if _same(v, rule.values[0], rule) else None
    if op == "in":
        return ("", []) if any(_same(v, x, rule) for x in rule.values) else None
    if op == "empty":
        return ("", []) if not v else None
    items = [x.strip() for x in v.split(",")] if rule.list_ok else [v]
    if op == "not_positive_integer":
        ok = all(re.fullmatch(r"\d+", x) and int(x) > 0 for x in items)
        return None if ok else ("", [])
    if op == "above_cores":
        if not re.fullmatch(r"\d+", items[0]):
            return None
        cores, ev = _cores(facts)
        if cores is None or int(items[0]) <= cores:
            return None
        return f"{int(items[0])} threads for {cores:g} usable CPUs.", ev
    if op == "no_interface":
        names = facts.host.network_interfaces
        if names is None or not v or ifname_matches(v, names):
            return None
        return (f"This machine's interfaces: {', '.join(names) or 'none'}.",
                [Evidence("host.network_interfaces", list(names))])
    if op == "bad_alloc_conf":
        problems = alloc_conf_problems(v)
        if not problems:
            return None
        return "Not accepted: " + "; ".join(problems) + ".", []
    if op in ("hides_all_gpus", "names_missing_gpu"):
        gpus = _gpus(facts)
        seen, stop = visible_devices(value, len(gpus) if gpus else None, [g.uuid for g in gpus or []])
        ev = [Evidence("driver.gpus", len(gpus))] if gpus else []
        if seen is None:
            return None  # a MIG entry, or indices and UUIDs without the GPU list to check them against
        if (op == "hides_all_gpus" and seen) or (op == "names_missing_gpu" and (not seen or stop is None)):
            return None
        where = f"the list stops at {stop!r}" if stop is not None else "the value is empty"
        return f"CUDA sees {len(seen)} GPU(s): {where}.", ev
    if op == "arch_unbuildable":
        tk = facts.toolkits.on_path
        nvcc = tk.version if tk is not None else None
        if not nvcc:
            return None
        bad = [e for e in arch_list_entries(v) if _buildable(ctx, nvcc, e) is False]
        return (f"nvcc {nvcc} cannot build {', '.join(bad)}.",
                [Evidence("toolkits.on_path.version", nvcc)]) if bad else None
    if op == "arch_misses_gpus":
        targets = [t for e in arch_list_entries(v) for t in arch_entry_targets(e)]
        ccs = [(label, cc, path) for label, cc, path in gpu_capabilities(facts, ctx.compat) if cc]
        if not targets or not ccs or any(arch_runs(targets, cc)[0] for _, cc, _ in ccs):
            return None
        return (f"It builds {' '.join(targets)}; the GPUs here are "
                f"{', '.join(f'{label} (compute capability {cc})' for label, cc, _ in ccs)}.",
                [Evidence(path, cc) for _, cc, path in ccs])
    raise ValueError(op)  # the table's loader refuses any other operator


def _token_values(facts: Facts, ctx: CheckContext) -> Dict[str, Optional[str]]:
    cores, _ = _cores(facts)
    gpus = _gpus(facts)
    ccs = sorted({cc for _, cc, _ in gpu_capabilities(facts, ctx.compat) if cc}, key=parse_cc)
    return {"{cores}": str(max(1, math.floor(cores))) if cores else None,
            "{gpu_indices}": ",".join(str(g.index) for g in gpus) if gpus else None,
            "{gpu_archs}": " ".join(ccs) or None}


def _fix(rule: EnvVarRule, ctx: CheckContext) -> Fix:
    tokens = _token_values(ctx.facts, ctx)
    commands, said = [], []
    for action, template in rule.fix:
        if action == "unset":
            commands.append(unset_env(ctx.facts, rule.variable))
            said.append(f"unset {rule.variable}")
            continue
        text = template or ""
        missing = [t for t in re.findall(r"\{[a-z_]+\}", text) if tokens.get(t) is None]
        for t, val in tokens.items():
            if val is not None:
                text = text.replace(t, val)
        value = placeholder("<" + text.strip("{}").replace("_", " ") + ">") if missing else text
        commands.append(set_env(ctx.facts, rule.variable, value))
        said.append(f"set {rule.variable}={value}")
    summary = " or ".join(said)
    summary = summary[0].upper() + summary[1:]
    where = " (and remove it from the job script, shell profile or container image that sets it)" \
        if rule.fix[0][0] == "unset" else ""
    url = re.search(r"https?://\S+?(?=;|\s|$)", rule.source)
    return Fix(summary + where, commands=commands, url=url.group(0) if url else None)


_EXPECTED = {"equals": "unset, or not {values}", "in": "unset, or not one of {values}",
             "not_in": "one of {values}", "set": "unset", "empty": "unset, or not empty",
             "not_positive_integer": "a positive whole number", "above_cores": "at most the usable CPUs",
             "no_interface": "prefixes of an interface here", "bad_alloc_conf": "option:value,... as PyTorch documents",
             "hides_all_gpus": "unset, or GPUs of this machine", "names_missing_gpu": "only GPUs of this machine",
             "arch_unbuildable": "capabilities this nvcc builds", "arch_misses_gpus": "this machine's GPUs' capabilities"}


@check(ENVIRONMENT, "No environment variable breaks or slows the run")
def environment(ctx: CheckContext) -> List[Finding]:
    try:
        table = env_vars_table(ctx.compat)
    except LookupError as e:
        raise SkipCheck(str(e)) from None
    env = recorded_env(ctx.facts, table.names())
    if not env:
        if ctx.facts.paste is not None:
            raise SkipCheck("environment variables unknown: the pasted text shows none of the "
                            f"{len(table.names())} the table judges")
        host = ctx.facts.host
        why = f"the host probe did not run ({host.status}: {host.reason})" if host.status != ProbeStatus.OK \
            else "recorded by an envdoctor older than compat_data/env_vars.json"
        raise SkipCheck(f"environment variables not recorded: {why}")
    out: List[Finding] = []
    for rule in table.rows:
        if rule.variable not in env:
            continue
        value, path = env[rule.variable]
        hit = _evaluate(rule, value, ctx)
        if hit is None:
            continue
        severity = rule.severity
        if rule.only_if and not all(_context(c, ctx.facts) for c in rule.only_if):
            if rule.otherwise is None:
                continue
            severity = rule.otherwise
        extra, evidence = hit
        shown = f"{rule.variable}={value!r}" if value is not None else f"{rule.variable} unset"
        expected = _EXPECTED.get(rule.op, "unset, or a value that does not hurt here").format(
            values="/".join(rule.values))
        out.append(ENVIRONMENT(
            rule.id, severity, f"{shown}: {rule.why}", category=rule.category,
            detail=" ".join(p for p in (rule.does, extra, f"Harm: {_HARM[rule.harm]}.") if p),
            evidence=[Evidence(path, value, expected=expected, source=f"compat_data/env_vars.json row {rule.id}"),
                      *evidence],
            fix=_fix(rule, ctx)))
    return out
