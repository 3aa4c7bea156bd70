"""compat_data/env_vars.json: environment variables that break or slow a run, each with the rule that says when.

A row names the variable, the condition under which it hurts (``when``: one operator of the small rule
language below), what the variable does, the harm (``break``, ``slow`` or ``noise``), the severity, the fix
(``unset`` it, or ``export`` a value) and its source. The generic check ``host.environment`` evaluates every
row against the recorded environment; the probes record every variable the table names. Bad rows fail at load.
"""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from . import _parse as P
from ._parse import loaded
from ._parse import source_text as _src

__all__ = ["OPERATORS", "CONTEXTS", "FIX_TOKENS", "EnvVarRule", "EnvVarTable", "parse_env_vars",
           "env_vars_table", "recorded_names", "describe_condition", "FIX_TOKEN_WORDS"]

# operator -> what its "value" must be: None (no value), "str", "strs" (a non-empty list of strings)
OPERATORS: Dict[str, Optional[str]] = {
    "set": None,  # set to anything, the empty string included
    "equals": "str",
    "in": "strs",
    "not_in": "strs",  # set to a value not in the list ("unset": true also counts an unset variable)
    "empty": None,  # set to the empty string (or only blanks)
    "not_positive_integer": None,  # not a positive whole number ("list": true allows OpenMP's "4,2")
    "above_cores": None,  # a number larger than the CPUs this process may use (affinity, cgroup quota)
    "no_interface": None,  # NCCL_SOCKET_IFNAME syntax that selects none of this machine's interfaces
    "bad_alloc_conf": None,  # not the <option>:<value>,... syntax with the options PyTorch documents
    "hides_all_gpus": None,  # a CUDA_VISIBLE_DEVICES under which CUDA sees no GPU
    "names_missing_gpu": None,  # a CUDA_VISIBLE_DEVICES whose list stops at an entry this machine lacks
    "arch_unbuildable": None,  # a TORCH_CUDA_ARCH_LIST entry the nvcc on PATH cannot build
    "arch_misses_gpus": None,  # a TORCH_CUDA_ARCH_LIST none of whose targets runs on a GPU here
}
# facts a row may require ("only_if") before it counts at its severity
CONTEXTS = ("infiniband_present", "multi_gpu", "mixed_gpus", "gpu_present")
# what an "export" fix may compute from the facts, and what each stands for in words (explain)
FIX_TOKEN_WORDS = {"{cores}": "<the usable CPUs>", "{gpu_indices}": "<this machine's GPU indices>",
                   "{gpu_archs}": "<this machine's GPUs' compute capabilities>"}
FIX_TOKENS = tuple(FIX_TOKEN_WORDS)
HARMS = ("break", "slow", "noise")
_SEVERITIES = ("error", "warning", "info")
_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class EnvVarRule:
    id: str  # the finding's kind: "cuda-launch-blocking"
    variable: str
    op: str
    values: Tuple[str, ...]  # the operator's value(s): () for operators without one
    does: str  # what the variable does
    why: str  # why this value hurts (one line, the finding's summary after "VAR=value: ")
    harm: str  # "break", "slow", "noise"
    severity: str
    fix: Tuple[Tuple[str, Optional[str]], ...]  # ("unset", None) or ("export", "value with {tokens}")
    source: str
    as_of: str
    category: Optional[str] = None  # a catalogue category; None: the check's own (ENV_VAR_HARMFUL)
    ignore_case: bool = False
    unset_matches: bool = False  # not_in: an unset variable matches too
    list_ok: bool = False  # not_positive_integer: a comma list of positive integers is valid
    only_if: Tuple[str, ...] = ()
    otherwise: Optional[str] = None  # the severity when an only_if context does not hold; None: no finding


_CONTEXT_WORDS = {"infiniband_present": "InfiniBand/RoCE devices are present", "multi_gpu": "there is more than one GPU",
                  "mixed_gpus": "the GPUs are of different models", "gpu_present": "an NVIDIA GPU is seen"}


def describe_condition(rule: EnvVarRule) -> str:
    """The row's condition in words: "CUDA_LAUNCH_BLOCKING is 1", "CUDA_DEVICE_ORDER is unset or not PCI_BUS_ID"."""
    values = " or ".join(rule.values)
    words = {
        "set": "is set", "equals": f"is {values}", "in": f"is {values}", "empty": "is empty",
        "not_in": ("is unset or not " if rule.unset_matches else "is set and not ") + values,
        "not_positive_integer": "is not a positive whole number" + (" (or a comma list of them)" if rule.list_ok else ""),
        "above_cores": "is more than the CPUs this process may use", "no_interface": "selects no network interface here",
        "bad_alloc_conf": "is not the allocator syntax PyTorch documents",
        "hides_all_gpus": "leaves CUDA no GPU of this machine", "names_missing_gpu": "names a GPU this machine lacks",
        "arch_unbuildable": "names a capability the nvcc on PATH cannot build",
        "arch_misses_gpus": "builds for none of this machine's GPUs",
    }[rule.op]
    text = f"{rule.variable} {words}" + (" (any case)" if rule.ignore_case else "")
    if rule.only_if:
        text += f", when {' and '.join(_CONTEXT_WORDS[c] for c in rule.only_if)}"
        text += f" (otherwise: {rule.otherwise})" if rule.otherwise else " (otherwise: no finding)"
    return text


@dataclass(frozen=True)
class EnvVarTable:
    title: str
    as_of: str
    rows: List[EnvVarRule]

    def names(self) -> List[str]:
        """Every variable a row names, in the table's order, once each."""
        return list(dict.fromkeys(r.variable for r in self.rows))


def _fix(r: Dict[str, Any]) -> Tuple[Tuple[str, Optional[str]], ...]:
    items = r["fix"]
    if not isinstance(items, list) or not items:
        raise ValueError("fix must be a non-empty list of {\"unset\": true} or {\"export\": \"value\"}")
    out: List[Tuple[str, Optional[str]]] = []
    for item in items:
        if item == {"unset": True}:
            out.append(("unset", None))
        elif isinstance(item, dict) and set(item) == {"export"} and isinstance(item["export"], str) \
                and item["export"].strip():
            for token in re.findall(r"\{[^}]*\}", item["export"]):
                if token not in FIX_TOKENS:
                    raise ValueError(f"fix export {item['export']!r}: {token} is not one of {', '.join(FIX_TOKENS)}")
            out.append(("export", item["export"]))
        else:
            raise ValueError(f"fix item {item!r} is neither {{\"unset\": true}} nor {{\"export\": \"value\"}}")
    return tuple(out)


def _when(r: Dict[str, Any]) -> Tuple[str, Tuple[str, ...], Dict[str, bool]]:
    when = r["when"]
    if not isinstance(when, dict) or "op" not in when:
        raise ValueError("when must be an object with an \"op\"")
    op = when["op"]
    if op not in OPERATORS:
        raise ValueError(f"when.op {op!r} is not one of {', '.join(OPERATORS)}")
    flags = {k: when[k] for k in ("ignore_case", "unset", "list") if k in when}
    unknown = set(when) - {"op", "value"} - set(flags)
    if unknown:
        raise ValueError(f"when has unknown keys {sorted(unknown)}")
    for k, v in flags.items():
        if not isinstance(v, bool):
            raise ValueError(f"when.{k} = {v!r} is not true/false")
    if flags.get("unset") and op != "not_in":
        raise ValueError("when.unset is only for op not_in")
    if flags.get("list") and op not in ("not_positive_integer", "above_cores"):
        raise ValueError("when.list is only for op not_positive_integer or above_cores")
    kind = OPERATORS[op]
    value = when.get("value")
    if kind is None:
        if value is not None:
            raise ValueError(f"when.op {op} takes no value")
        return op, (), flags
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"when.op {op} needs a string value")
        return op, (value,), flags
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"when.op {op} needs a non-empty list of strings")
    return op, tuple(value), flags


def _rule(r: Dict[str, Any]) -> EnvVarRule:
    from ..model.catalogue import CATEGORIES

    rid = P.text(r, "id")
    if not _ID.match(rid):
        raise ValueError(f"id {rid!r} is not lower-case words joined by '-' (it becomes a finding code)")
    variable = P.text(r, "variable")
    if not _NAME.match(variable):
        raise ValueError(f"variable {variable!r} is not an environment variable name")
    op, values, flags = _when(r)
    harm, severity = P.text(r, "harm"), P.text(r, "severity")
    if harm not in HARMS:
        raise ValueError(f"harm {harm!r} is not one of {', '.join(HARMS)}")
    if severity not in _SEVERITIES:
        raise ValueError(f"severity {severity!r} is not one of {', '.join(_SEVERITIES)}")
    category = P.opt_text(r, "category")
    if category is not None and category not in CATEGORIES:
        raise ValueError(f"category {category!r} is not in the catalogue")
    only_if = tuple(P.strings(r, "only_if"))
    for c in only_if:
        if c not in CONTEXTS:
            raise ValueError(f"only_if {c!r} is not one of {', '.join(CONTEXTS)}")
    otherwise = P.opt_text(r, "otherwise")
    if otherwise is not None and (otherwise not in _SEVERITIES or not only_if):
        raise ValueError(f"otherwise {otherwise!r} needs an only_if and one of {', '.join(_SEVERITIES)}")
    as_of = P.text(r, "as_of")
    datetime.date.fromisoformat(as_of)  # ValueError names the bad date
    source = _src(r["source"])
    if not re.search(r"https?://", source):
        raise ValueError(f"source {source!r} names no URL of the documentation")
    return EnvVarRule(
        id=rid, variable=variable, op=op, values=values, does=P.text(r, "does"), why=P.text(r, "why"),
        harm=harm, severity=severity, fix=_fix(r), source=source, as_of=as_of, category=category,
        ignore_case=bool(flags.get("ignore_case")), unset_matches=bool(flags.get("unset")),
        list_ok=bool(flags.get("list")), only_if=only_if, otherwise=otherwise)


def parse_env_vars(doc: Dict[str, Any]) -> EnvVarTable:
    """Build the table; CompatDataError naming the row on a bad one."""
    rows = P.rows("env_vars.json", "rows", doc["rows"], _rule)
    seen: Dict[str, int] = {}
    for i, row in enumerate(rows):
        if row.id in seen:
            raise P.CompatDataError(f"env_vars.json: rows[{i}] (id {row.id}) duplicates rows[{seen[row.id]}]")
        seen[row.id] = i
    return EnvVarTable(doc["title"], str(doc["as_of"]), rows)


def env_vars_table(compat: Any) -> EnvVarTable:
    """The table of a loaded Compat (parsed at load), or an EnvVarTable itself; LookupError when absent."""
    if isinstance(compat, EnvVarTable):
        return compat
    return loaded(compat, "env_vars")


def recorded_names() -> Tuple[List[str], Optional[str]]:
    """The variables a probe records: those of the bundled table and of an installed update's (whichever of the two
    the matrix in use is, its variables are among them), read from these two files alone, so that `collect` does not
    load the whole matrix for a list of names; and what could not be read, when something could not."""
    from .datadir import bundled_dir, installed_update
    from .validate import validate_file

    dirs = [bundled_dir()]
    try:
        update = installed_update()
    except (OSError, ValueError):
        update = None
    if update is not None:
        dirs.append(update.directory)
    names: List[str] = []
    problems: List[str] = []
    for d in dirs:
        path = d / "env_vars.json"
        if not path.exists():
            problems.append(f"no {path}")
            continue
        try:
            names.extend(parse_env_vars(validate_file(path)).names())
        except (P.CompatDataError, ValueError) as e:
            problems.append(str(e))
    return list(dict.fromkeys(names)), "; ".join(problems) or None
