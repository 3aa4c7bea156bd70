"""What ``envdoctor explain`` prints, read from the registry: the checks, the finding codes their ``Findings``
declare (checks/registry.py ``finding_codes``), the categories (catalogue.py) and the error signatures
(compat_data/error_signatures.json). No source is parsed: a code is known because a check declared it.

``explain_lines(code)`` is the whole command: the lines to print, or ``UnknownCode`` with the message to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from ..model.actions import ACTIONS
from ..model.catalogue import CATEGORIES, CATEGORY_ACTIONS, action_for
from .base import Check
from .registry import ALL_CHECKS, builders, finding_code

if TYPE_CHECKING:
    from ..compat.queries import Compat

    # the matrix, or a function that loads it (compat.active_compat) only when a code needs it
    CompatSource = Union[Compat, Callable[[], Compat]]

# `diagnose` names a matched error message by its signature (compat_data/error_signatures.json): the kinds of
# messages.signatures' builder are the signatures' ids, explained from the signature's row
SIGNATURE_PREFIX = "messages.signature/"
# host.environment's kinds are the ids of compat_data/env_vars.json's rows, explained from the row
ENV_ROW_PREFIX = "host.environment/"
# messages.status-codes' kinds name rows of compat_data/status_codes.json (an enum name is explained from it too)
STATUS_PREFIX = "messages.status-codes/"


class UnknownCode(ValueError):
    """Not a category, check id, declared finding code or known error signature; the message says what is."""


def check_by_id(check_id: str) -> Optional[Check]:
    return next((c for c in ALL_CHECKS if c.id == check_id), None)


def known_finding_code(code: str) -> bool:
    """Whether a check declares ``code`` (a kind it names, or one its kind template stands for)."""
    return finding_code(code) is not None


def explain_lines(code: str, compat: CompatSource) -> List[str]:
    """The lines `envdoctor explain CODE` prints: a category, a check id or a finding code ("area.check/kind"),
    or a matched error message's code (messages.signature/<id>). ``compat`` is the compatibility data, or a
    function returning it (``compat.active_compat``), called only for an error signature's code."""
    code = code.strip()
    if code.lower() in ACTIONS:
        return action_lines(code.lower())
    category = CATEGORIES.get(code.upper())
    if category is None and code.startswith(SIGNATURE_PREFIX):
        return signature_lines(code, compat)
    if category is None and code.startswith(ENV_ROW_PREFIX):
        return env_row_lines(code, compat)
    if category is None and code.startswith(STATUS_PREFIX):
        return status_lines(code, compat)
    check = declared = None
    if category is None:
        declared = finding_code(code) if "/" in code else None
        check = declared.check if declared is not None else check_by_id(code.split("/", 1)[0])
        if check is None and "/" not in code and "." not in code and _status_row(code, compat) is not None:
            return status_lines(code, compat)  # an enum name: CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice, ncclSystemError
        if check is None:
            raise UnknownCode(f"unknown code {code!r}: give a category (e.g. DRIVER_TOO_OLD_FOR_TORCH_CUDA), a check "
                              "id, a finding code or an NVIDIA status name (e.g. CUDA_ERROR_NO_DEVICE); `envdoctor list-checks` lists "
                              "the checks")
        if "/" in code and declared is None:
            raise UnknownCode(f"unknown finding code {code!r}: {check.id} reports no such kind "
                              f"(`envdoctor explain {check.id}` explains the check)")
    out: List[str] = []
    if category is not None:
        cats = [category]
    else:
        names = declared.categories if declared is not None else check.categories
        cats = [CATEGORIES[c] for c in names if c in CATEGORIES]
    if check is not None:
        out += [f"{check.id}: {check.title}"]
        if declared is not None:
            out += [f"finding code: {code}"]
            if declared.template:
                out += [f"declared as: {declared.code} (the part in braces is computed from the facts)"]
            action = action_for(code, declared.builder.category_of(declared.kind))
            out += [f"Action (for a scheduler, as a warning or error): {action}: {ACTIONS[action]}"]
        else:
            kinds = sorted(fc for fc in _codes_of(check.id))
            if kinds:
                out += ["Actions (for a scheduler, as a warning or error): "
                        + ", ".join(f"{k.split('/', 1)[1]} {a}" for k, a in kinds)]
        out += [""]
    # the checks whose builders declare the category (a relay such as fleet.node-findings declares none)
    for cat in cats:
        owners = {b.owner for b in builders() if cat.name in b.all_categories}
        emitted_by = [c.id for c in ALL_CHECKS if c.id in owners]
        action = CATEGORY_ACTIONS.get(cat.name)
        out += [f"{cat.name}: {cat.title}", "", f"What it means: {cat.meaning}", f"Why it matters: {cat.why}",
                f"How to fix: {cat.fix}"]
        if action is not None:
            out += [f"Action (for a scheduler, the category's default; an info note's is none): {action}: "
                    f"{ACTIONS[action]}"]
        if emitted_by:
            out += [f"Reported by: {', '.join(emitted_by)}"]
        out += [""]
    while out and not out[-1]:
        out.pop()
    return out


def action_lines(action: str) -> List[str]:
    """An action of the vocabulary (model/actions.py): what it asks, NVIDIA's names for it, the categories whose
    default it is and the codes that carry it instead of their category's."""
    from ..model.actions import NVML_RECOVERY, XID_BUCKETS
    from ..model.catalogue import CODE_ACTIONS

    buckets = [b for b, a in XID_BUCKETS.items() if a == action]
    nvml = [name for name, a in NVML_RECOVERY.values() if a == action]
    cats = [c for c, a in CATEGORY_ACTIONS.items() if a == action]
    codes = [c for c, a in CODE_ACTIONS.items() if a == action]
    return [f"{action}: an action for a scheduler (one of {', '.join(ACTIONS)})", "", f"What it asks: {ACTIONS[action]}",
            "NVIDIA's Xid resolution buckets: " + (", ".join(buckets) or "none"),
            "NVML's GPU recovery actions: " + (", ".join(nvml) or "none"),
            "The default of: " + (", ".join(cats) or "no category"),
            "Also: " + (", ".join(codes) or "no code of another category's default")]


def _codes_of(check_id: str) -> List[Any]:
    """(code, action) for every finding code ``check_id``'s builders declare."""
    from .registry import finding_codes

    return [(c, action_for(c, fc.builder.category_of(fc.kind))) for c, fc in finding_codes().items()
            if fc.check.id == check_id]


def signature_lines(code: str, compat: CompatSource) -> List[str]:
    """A matched error message's code: "messages.signature/<id>", or ".../<id>/<category>" for a further cause
    the same message proves."""
    from ..compat.signatures import signatures_from

    sig_id = code[len(SIGNATURE_PREFIX):].split("/", 1)[0]
    sig = next((s for s in signatures_from(compat() if callable(compat) else compat) if s.id == sig_id), None)
    if sig is None:
        raise UnknownCode(f"unknown error signature {sig_id!r} in {code!r} (compat_data/error_signatures.json)")
    cat = CATEGORIES.get(sig.category)
    action = action_for(code, sig.category, sig.severity)
    what = ("a message family (messages.signatures): the words a cause is said in, read only where no known "
            "message and no NVIDIA status reads the line" if sig.family else "a known error message (messages.signatures)")
    out = [f"{code}: {what}", "", ("Words (each lookahead, in any order): " if sig.family else "Message pattern: ")
           + sig.pattern,
           f"Category: {sig.category}" + (f" ({cat.title})" if cat else ""), f"Severity: {sig.severity}",
           f"Action (for a scheduler): {action}: {ACTIONS[action]}",
           "", f"What it means: {sig.explanation}", f"How to fix: {sig.fix}", f"Source: {sig.source}"]
    if sig.alternatives:
        out += ["", "Other possible causes, depending on the rest of the paste: "
                + ", ".join(sorted({a.category for a in sig.alternatives}))]
    if getattr(sig, "also", ()):
        out += ["", "The same message also proves, when the paste shows its context: "
                + ", ".join(f"{a.category} ({a.when})" for a in sig.also)]
    return out


def env_row_lines(code: str, compat: CompatSource) -> List[str]:
    """A host.environment finding's code: "host.environment/<row id>", explained from its row of
    compat_data/env_vars.json (the condition, what the variable does, why it hurts, the fix and the source)."""
    from ..compat.env_vars import FIX_TOKEN_WORDS, describe_condition, env_vars_table

    rid = code[len(ENV_ROW_PREFIX):]
    try:
        table = env_vars_table(compat() if callable(compat) else compat)
    except LookupError as e:
        raise UnknownCode(f"{code!r}: {e}") from None
    row = next((r for r in table.rows if r.id == rid), None)
    if row is None:
        raise UnknownCode(f"unknown finding code {code!r}: compat_data/env_vars.json has no row {rid!r} "
                          "(`envdoctor explain host.environment` explains the check)")
    cat = CATEGORIES.get(row.category or "ENV_VAR_HARMFUL")
    def words(value: str) -> str:
        for token, said in FIX_TOKEN_WORDS.items():
            value = value.replace(token, said)
        return value

    fixes = " or ".join("unset it" if a == "unset" else f"export {row.variable}={words(v or '')}" for a, v in row.fix)
    return [f"{code}: {row.variable} (host.environment, a row of compat_data/env_vars.json)", "",
            f"When: {describe_condition(row)}", f"What it does: {row.does}", f"Why it hurts: {row.why}",
            f"Harm: {row.harm}; severity {row.severity}" + (f"; category {cat.name} ({cat.title})" if cat else ""),
            f"Action (for a scheduler): {action_for(code, cat.name if cat else 'ENV_VAR_HARMFUL', row.severity)}",
            f"How to fix: {fixes}", f"Source: {row.source} (as of {row.as_of})"]


def _status_row(code: str, compat: CompatSource) -> Any:
    """The compat_data/status_codes.json row a finding code or an enum name names, None when none does."""
    from ..compat.status_codes import status_table

    table = status_table(compat() if callable(compat) else compat)
    if table is None:
        return None
    if code.startswith(STATUS_PREFIX):
        kind = code[len(STATUS_PREFIX):]
        return next((r for r in table if r.finding_kind == kind), None)
    return table.names.get(code)


def status_lines(code: str, compat: CompatSource) -> List[str]:
    """A status of NVIDIA's libraries, by its finding code (messages.status-codes/<kind>) or an enum name, explained
    from its row of compat_data/status_codes.json."""
    from ..compat.status_codes import LIBRARIES

    row = _status_row(code, compat)
    if row is None:
        raise UnknownCode(f"unknown status {code!r}: compat_data/status_codes.json has no such row "
                          "(`envdoctor explain messages.status-codes` explains the check)")
    cat = CATEGORIES.get(row.category or "")
    out = [f"{STATUS_PREFIX}{row.finding_kind}: {row.names[0]}, a status of {LIBRARIES[row.library]} "
           "(messages.status-codes, a row of compat_data/status_codes.json)", "",
           f"Names: {', '.join(row.names)}", f"Number: {row.number}",
           f"Standard message: {row.message if row.message else 'none defined'}",
           f"Kind: {row.kind}" + (f"; category {cat.name} ({cat.title}), confidence {row.confidence}" if cat else "")]
    if row.meaning:
        out.append(f"What it means: {row.meaning}")
    if row.ask:
        out.append(f"What would settle it: {row.ask}")
    return out + [f"Source: {row.source}"]
