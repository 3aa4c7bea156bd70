"""`envdoctor explain`: what a category, a check id or a finding code means, and how to fix it."""

from __future__ import annotations

import functools

from .common import EXIT_OK, UsageError, write


def add_parsers(sub) -> None:
    p = sub.add_parser("explain", help="explain a category, check id or finding code")
    p.add_argument("code", help="e.g. DRIVER_TOO_OLD_FOR_TORCH_CUDA, driver.cuda-compat or driver.cuda-compat/too-old")


def cmd_explain(args) -> int:
    from ..catalogue import CATEGORIES
    from ..checks import all_checks

    code = args.code.strip()
    from ..fleet.checks import FLEET_CHECKS

    checks = all_checks() + list(FLEET_CHECKS)  # the fleet checks judge nodes, not one machine: not registered
    category = CATEGORIES.get(code.upper())
    check = None
    if category is None and code.startswith(_SIGNATURE_PREFIX):
        return _explain_signature(code)
    if category is None:
        check_id = code.split("/", 1)[0]
        check = next((c for c in checks if c.id == check_id), None)
        if check is None:
            raise UsageError(f"unknown code {code!r}: give a category (e.g. DRIVER_TOO_OLD_FOR_TORCH_CUDA), a check "
                             "id or a finding code; `envdoctor list-checks` lists them")
    if check is not None and "/" in code and not _known_finding_code(code):
        raise UsageError(f"unknown finding code {code!r}: {check.id} reports no such kind "
                         f"(`envdoctor explain {check.id}` explains the check)")
    out = []
    cats = [category] if category else [CATEGORIES[c] for c in check.categories if c in CATEGORIES]
    if check:
        out += [f"{check.id}: {check.title}"]
        if "/" in code:
            out += [f"finding code: {code}"]
        out += [""]
    for cat in cats:
        emitted_by = [c.id for c in checks if cat.name in c.categories]
        out += [f"{cat.name}: {cat.title}", "", f"What it means: {cat.meaning}", f"Why it matters: {cat.why}",
                f"How to fix: {cat.fix}"]
        if emitted_by:
            out += [f"Reported by: {', '.join(emitted_by)}"]
        out += [""]
    write("\n".join(out).rstrip(), None)
    return EXIT_OK


# `diagnose` names a matched error message by its signature (compat_data/error_signatures.json), not by
# the check id (messages.signatures) that the other finding codes start with
_SIGNATURE_PREFIX = "messages.signature/"


def _explain_signature(code: str) -> int:
    from ..catalogue import CATEGORIES
    from ..compat import active_compat
    from ..compat.signatures import signatures_from

    sig_id = code[len(_SIGNATURE_PREFIX):].split("/", 1)[0]  # ".../<id>/<category>": a cause the row also proves
    sig = next((s for s in signatures_from(active_compat()) if s.id == sig_id), None)
    if sig is None:
        raise UsageError(f"unknown error signature {sig_id!r} in {code!r} (compat_data/error_signatures.json)")
    cat = CATEGORIES.get(sig.category)
    out = [f"{code}: a known error message (messages.signatures)", "", f"Message pattern: {sig.pattern}",
           f"Category: {sig.category}" + (f" ({cat.title})" if cat else ""), f"Severity: {sig.severity}",
           "", f"What it means: {sig.explanation}", f"How to fix: {sig.fix}", f"Source: {sig.source}"]
    if sig.alternatives:
        out += ["", "Other possible causes, depending on the rest of the paste: "
                + ", ".join(sorted({a.category for a in sig.alternatives}))]
    if getattr(sig, "also", ()):
        out += ["", "The same message also proves, when the paste shows its context: "
                + ", ".join(f"{a.category} ({a.when})" for a in sig.also)]
    write("\n".join(out), None)
    return EXIT_OK


# --------------------------------------------------------------------------- what is this finding code?
# The seam: cmd_explain asks only _known_finding_code(code). Today the answer comes from the checks' source,
# scanned with `ast` (_finding_codes and _builder_param_kinds, moved here unchanged from cli.py); a registry
# of the kinds the checks declare replaces this section, and nothing above it changes.


def _known_finding_code(code: str) -> bool:
    codes, prefixes = _finding_codes()
    if codes is None:
        return True
    return code in codes or any(code.startswith(p) and len(code) > len(p) for p in prefixes)


@functools.lru_cache(maxsize=1)
def _finding_codes() -> tuple:
    """(codes, dynamic prefixes) the checks can emit, read from their source: a code is a string literal
    "area.check/kind"; an f-string "area.check/{...}" makes every kind under that prefix possible. Read once per
    process (the package's own source does not change under it; every `explain` used to parse ~40 files)."""
    import ast
    import pathlib
    import re

    code_re = re.compile(r"[a-z_]+\.[a-z0-9-]+/[a-z0-9-]+")
    codes, prefixes, dynamic = set(), set(), set()
    here = pathlib.Path(__file__).resolve().parent.parent
    for path in sorted((here / "checks").glob("*.py")) + [here / "diagnose" / "__init__.py",
                                                          here / "fleet" / "checks.py"]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return None, None  # cannot tell: accept every code rather than reject a real one
        # a finding builder: NAME = Findings("area.check", ...), then NAME.warning("kind", ...) or NAME("kind", ...)
        builders = {n.targets[0].id: n.value.args[0].value for n in tree.body
                    if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)
                    and isinstance(n.value.func, ast.Name) and n.value.func.id == "Findings" and n.value.args
                    and isinstance(n.value.args[0], ast.Constant)}
        # a helper that takes the builder as a parameter (def _per_gpu(rule, ...): rule.warning("per-gpu", ...))
        # emits its kinds for each builder a call in this file passes it
        helpers = {fn.name: _builder_param_kinds(fn) for fn in tree.body if isinstance(fn, ast.FunctionDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and helpers.get(node.func.id):
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    if isinstance(arg, ast.Name) and arg.id in builders:
                        codes.update(f"{builders[arg.id]}/{kind}" for kind in helpers[node.func.id])
            # cases.report(NVLINK.error, "inactive", ...): a builder (or its severity method) handed over with the kind
            if isinstance(node, ast.Call) and len(node.args) >= 2 and builders:
                b = node.args[0].value if isinstance(node.args[0], ast.Attribute) else node.args[0]
                kind = node.args[1]
                if isinstance(b, ast.Name) and b.id in builders and isinstance(kind, ast.Constant) \
                        and isinstance(kind.value, str):
                    codes.add(f"{builders[b.id]}/{kind.value}")
            if isinstance(node, ast.Call) and node.args and builders:
                f = node.func.value if isinstance(node.func, ast.Attribute) else node.func
                if isinstance(f, ast.Name) and f.id in builders:
                    kind = node.args[0]
                    if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
                        codes.add(f"{builders[f.id]}/{kind.value}")
                    else:  # a kind computed at run time: known when the file spells the full codes out
                        dynamic.add(builders[f.id])
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and code_re.fullmatch(node.value):
                codes.add(node.value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"[a-z_]+\.[a-z0-9-]+/", node.value):  # "area.check/" + kind
                prefixes.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                head = str(node.values[0].value)
                if re.fullmatch(r"[a-z_]+\.[a-z0-9-]+/", head):
                    prefixes.add(head)
    prefixes |= {f"{c}/" for c in dynamic if not any(code.startswith(f"{c}/") for code in codes)}
    return frozenset(codes), frozenset(prefixes)


def _builder_param_kinds(fn) -> set:
    """The kinds a function emits through a builder it receives as a parameter: param.warning("kind", ...)."""
    import ast

    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    kinds = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        f = node.func.value if isinstance(node.func, ast.Attribute) else node.func
        if isinstance(f, ast.Name) and f.id in params:
            kinds.add(node.args[0].value)
    return kinds


COMMANDS = {"explain": cmd_explain}
