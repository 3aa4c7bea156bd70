"""The package's layers (docs/architecture.md "Layers"): no import runs upward, no private name crosses packages,
no import cycle between top-level packages, nor between the modules of one package. Imports are read with ``ast`` (lazy and TYPE_CHECKING imports count:
they are dependencies too), so nothing is imported to check it."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from tests.paths import REPO

PACKAGE = REPO / "envdoctor"
ROOT = "__init__"  # the unit of the package root, envdoctor/__init__.py

# Lowest first: a module may import its own layer and the layers below it, never one above. A unit is a top-level
# package (envdoctor/<name>/) or module (envdoctor/<name>.py). A new unit fails the test until it is placed here;
# a new layer is one more row (the "One judge" module goes between checks and report).
LAYERS: Sequence[Tuple[str, FrozenSet[str]]] = (
    ("domain", frozenset({"domain"})),  # pure rules, no envdoctor import at all (tests/unit/domain/test_layering.py)
    # the model: facts, findings and their vocabulary, targets, config, the fleet's data (envdoctor/model/)
    ("model", frozenset({"model"})),
    ("compat", frozenset({"compat"})),
    ("queries", frozenset({"queries"})),  # fact queries shared by checks, remedies and services (facts + compat)
    ("parsers", frozenset({"parsers"})),
    ("probes", frozenset({"probes"})),
    ("bench", frozenset({"bench"})),  # measures like a probe (subprocesses, samples) and says what to expect
    # the other sources of facts (issue 40): a watched run (watch/: sampling, the launched command, a recording read
    # back) and a fleet (fleet/: the ranks' rounds over torch.distributed); below the judge, like the probes
    ("sources", frozenset({"watch", "fleet"})),
    ("remedies", frozenset({"remedies"})),  # what to change: facts + compat in, commands out; never checks
    ("checks", frozenset({"checks"})),
    # pasted text (diagnose/), a source of facts like the probes, below the judge that weighs them; above the
    # checks (the paste readers use the catalogue's signatures) and the watch recordings it reads with watch/replay.py
    ("pastes", frozenset({"diagnose"})),
    ("judging", frozenset({"judging"})),  # the one judge: judge(facts, compat, selection, policy) -> Report
    ("report", frozenset({"report"})),
    # the services the commands call; the lead moves them into a services/ package
    ("services", frozenset({"services"})),  # what each command does, as a Python call (envdoctor/services/)
    # the entry points: the command line, `python -m envdoctor`, and the package facade (`envdoctor.preflight`)
    ("cli", frozenset({"cli", "__main__", ROOT})),
)
# run in the judged interpreter: they import nothing from envdoctor, and anyone may import them (to ship them)
PAYLOAD: FrozenSet[str] = frozenset({"_payload"})  # the payload folder, run in the target interpreter
# names that may be imported from the package root by any layer (a constant, no code)
ROOT_CONSTANTS = frozenset({"__version__"})

# Edges other helpers are removing right now; (importing module, imported unit) -> why it is tolerated. An entry
# that matches nothing any more fails the test, so the list only shrinks.
ALLOWED: Dict[Tuple[str, str], str] = {}


class Edge:
    def __init__(self, source: str, source_unit: str, target: str, target_unit: str, names: Tuple[str, ...],
                 where: str):
        self.source, self.source_unit, self.target, self.target_unit = source, source_unit, target, target_unit
        self.names, self.where = names, where


def _module_name(root: Path, path: Path) -> Tuple[str, bool]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _unit(root: Path, module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def _units(root: Path) -> Set[str]:
    return {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}


def _import_nodes(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """Every import statement, at any depth of statements (in functions, classes, if/try blocks): imports are
    statements, so expressions need no visit (ast.walk over every node is several times slower)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _import_nodes([n for n in inner if isinstance(n, (ast.stmt, ast.excepthandler))]
                                         if name != "cases" else [s for c in inner for s in c.body])


def edges(root: Path) -> Iterator[Edge]:
    """Every import of the package by itself: (importing module, imported module, the names)."""
    top = root.name
    units = _units(root)
    for path in sorted(root.rglob("*.py")):
        module, is_pkg = _module_name(root, path)
        source_unit = _unit(root, module)
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")).body):
            where = f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == top:
                        yield Edge(module, source_unit, alias.name, _unit(root, alias.name), (), where)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != top:
                    continue
                names = tuple(a.name for a in node.names)
                if target == top:  # from envdoctor.services import collect as app, __version__
                    for name in names:
                        unit = name if name in units else ROOT
                        yield Edge(module, source_unit, f"{top}.{name}" if unit != ROOT else top, unit,
                                   () if unit != ROOT else (name,), where)
                else:
                    yield Edge(module, source_unit, target, _unit(root, target), names, where)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(root: Path, layers: Sequence[Tuple[str, FrozenSet[str]]] = LAYERS,
               payload: FrozenSet[str] = PAYLOAD,
               allowed: Optional[Dict[Tuple[str, str], str]] = None) -> List[str]:
    """What breaks the layering of the package at ``root``; empty when nothing does."""
    allowed = ALLOWED if allowed is None else allowed
    rank = {u: i for i, (_, members) in enumerate(layers) for u in members}
    layer_of = {u: name for name, members in layers for u in members}
    out: List[str] = []
    for unit in sorted(_units(root) - set(rank) - set(payload)):
        out.append(f"{unit}: in no layer (place it in LAYERS of tests/unit/test_layers.py and docs/architecture.md)")
    graph: Dict[str, Set[str]] = {}
    inside: Dict[str, Set[str]] = {}  # module -> modules of its own unit it imports
    modules = _modules(root)
    used_allowances: Set[Tuple[str, str]] = set()
    for e in edges(root):
        if e.source_unit == e.target_unit:
            for target in _imported_modules(e, modules):
                if target != e.source:
                    inside.setdefault(e.source, set()).add(target)
            continue
        key = (e.source, e.target_unit)
        if key in allowed:
            used_allowances.add(key)
            continue
        if e.target_unit == ROOT and set(e.names) <= ROOT_CONSTANTS:
            continue
        if e.source_unit in payload:
            out.append(f"{e.where}: the payload module {e.source_unit} imports {e.target} (it runs alone, "
                       "in the judged interpreter)")
            continue
        graph.setdefault(e.source_unit, set()).add(e.target_unit)
        if e.target_unit not in payload and e.source_unit in rank and e.target_unit in rank \
                and rank[e.target_unit] > rank[e.source_unit]:
            out.append(f"{e.where}: {e.source} ({layer_of[e.source_unit]}) imports {e.target} "
                       f"({layer_of[e.target_unit]}), a layer above it")
        inner = e.target.split(".")[2:]  # the path below the imported unit: checks._gpus -> ["_gpus"]
        private = [p for p in inner if _private(p)] + [n for n in e.names if _private(n)]
        if private:
            out.append(f"{e.where}: {e.source} imports the private {', '.join(private)} of {e.target} "
                       "(make it public where it is a shared API, or move it)")
    for key in sorted(set(allowed) - used_allowances):
        out.append(f"allowed edge {key[0]} -> {key[1]} no longer exists: delete it from ALLOWED")
    out += [f"import cycle among {', '.join(c)}" for c in _cycles(graph)]
    # lazy imports count here too: a module that needs another one's function at run time depends on it
    out += [f"import cycle inside {c[0].split('.')[1] if '.' in c[0] else ROOT}: {', '.join(c)}"
            for c in _cycles(inside)]
    return out


def _modules(root: Path) -> Set[str]:
    """Every module of the package by its dotted name (a package by its own name, not ``.__init__``)."""
    out = set()
    for path in root.rglob("*.py"):
        module, _ = _module_name(root, path)
        out.add(module)
    return out


def _imported_modules(e: Edge, modules: Set[str]) -> List[str]:
    """The modules an import statement loads: ``from . import a, b`` the submodules a and b (else the package
    itself, for a name defined there), ``from .x import f`` the module x."""
    subs = [f"{e.target}.{n}" for n in e.names if f"{e.target}.{n}" in modules]
    if len(subs) < len(e.names) or not e.names:
        subs.append(e.target)
    return [m for m in subs if m in modules]


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one unit (Tarjan), each as a sorted list."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# --------------------------------------------------------------------------- the shape of a command (issue 40)
# cli -> services -> judge -> report: a service is the command as a call (options in, a report out); it prints
# nothing, installs no signal handler and renders nothing, so the command line (or a script) decides what is shown.

# what a service may read of report/: redaction is a rule on the data (a node-health line, a saved recording), not
# a rendering
SERVICE_REPORT_MODULES = frozenset({"envdoctor.report.redact"})
# services that render still, each with why; an entry that matches nothing any more fails the test
SERVICE_RENDERS: Dict[str, str] = {
    "envdoctor.services.preflight": "PreflightError carries the console report as its message (preflight() raises "
                                    "it for a script to print)",
}
# what prints or handles signals: a call of print(), sys.stdout / sys.stderr, signal.signal / signal.pthread_sigmask
_PRINTS = {("sys", "stdout"), ("sys", "stderr"), ("signal", "signal"), ("signal", "pthread_sigmask"),
           ("signal", "setitimer"), ("signal", "alarm")}


def service_violations(root: Path, renders: Optional[Dict[str, str]] = None) -> List[str]:
    """What breaks the shape of the services at ``root``: an import of the command line or of a renderer, a print,
    stdout/stderr, or a signal handler."""
    renders = SERVICE_RENDERS if renders is None else renders
    out: List[str] = []
    used: Set[str] = set()
    for e in edges(root):
        if e.source_unit != "services":
            continue
        if e.target_unit == "cli":
            out.append(f"{e.where}: {e.source} imports {e.target}: a service never calls the command line")
        elif e.target_unit == "report" and e.target not in SERVICE_REPORT_MODULES:
            if e.source in renders:
                used.add(e.source)
                continue
            out.append(f"{e.where}: {e.source} imports the renderer {e.target}: a service returns a report, the "
                       "command line renders it")
    for path in sorted((root / "services").rglob("*.py")):
        where = path.relative_to(root.parent)
        found: List[Tuple[int, str]] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                found.append((node.lineno, "print(): a service prints nothing"))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and (node.value.id, node.attr) in _PRINTS:
                found.append((node.lineno, f"{node.value.id}.{node.attr}: a service neither writes to the terminal "
                                           "nor handles signals (the command line does)"))
        out += [f"{where}:{line}: {what}" for line, what in sorted(found)]
    out += [f"SERVICE_RENDERS names {m}, which renders nothing any more: delete it" for m in sorted(set(renders) - used)]
    return out


def test_services_print_nothing_render_nothing_and_leave_signals_to_the_command_line():
    bad = service_violations(PACKAGE)
    assert not bad, "\n".join(bad)


def test_the_sources_of_facts_sit_below_the_judge_and_the_renderers_above():
    # probes, a watched run and a fleet make facts; the judge judges them; report/ renders (watch and fleet too)
    rank = {u: i for i, (_, members) in enumerate(LAYERS) for u in members}
    assert max(rank["probes"], rank["watch"], rank["fleet"]) < rank["judging"] < rank["report"] < rank["services"]
    for unit in ("watch", "fleet"):
        defined = [f"{path.relative_to(PACKAGE)}: {node.name}" for path in sorted((PACKAGE / unit).rglob("*.py"))
                   for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, ast.FunctionDef) and node.name.startswith("render")]
        assert not defined, f"renderers live in report/: {defined}"


def test_a_service_that_prints_renders_or_calls_the_cli_fails(tmp_path):
    root = _tree(tmp_path, {
        "services/__init__.py": "",
        "services/ok.py": "from ..report.redact import redact_text\ndef f():\n    return 'print(x)'\n",
        "services/loud.py": "import sys\nimport signal\ndef f():\n    print('x')\n    sys.stderr.write('y')\n"
                            "    signal.signal(2, None)\n",
        "services/draws.py": "from ..report import render_console\nfrom ..cli.common import write\n",
        "report/__init__.py": "", "report/redact.py": "", "cli/__init__.py": "", "cli/common.py": "",
    })
    assert service_violations(root, {"envdoctor.services.gone": "removed"}) == [
        "envdoctor/services/draws.py:1: envdoctor.services.draws imports the renderer envdoctor.report: a service "
        "returns a report, the command line renders it",
        "envdoctor/services/draws.py:2: envdoctor.services.draws imports envdoctor.cli.common: a service never calls "
        "the command line",
        "envdoctor/services/loud.py:4: print(): a service prints nothing",
        "envdoctor/services/loud.py:5: sys.stderr: a service neither writes to the terminal nor handles signals "
        "(the command line does)",
        "envdoctor/services/loud.py:6: signal.signal: a service neither writes to the terminal nor handles signals "
        "(the command line does)",
        "SERVICE_RENDERS names envdoctor.services.gone, which renders nothing any more: delete it",
    ]


def test_the_package_keeps_its_layers():
    bad = violations(PACKAGE)
    assert not bad, "\n".join(bad)


def test_every_layer_unit_exists():
    # a stale row (a module moved away) would hide nothing but mislead the reader
    placed = {u for _, members in LAYERS for u in members} | set(PAYLOAD)
    assert placed <= _units(PACKAGE), sorted(placed - _units(PACKAGE))


# --------------------------------------------------------------------------- the checker can fail


def _tree(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = tmp_path / "envdoctor"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


SYNTHETIC = (("low", frozenset({"low"})), ("mid", frozenset({"mid", "side"})), ("top", frozenset({"top"})),
             ("cli", frozenset({ROOT})))


def test_an_upward_import_fails_also_lazy_and_type_only(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "__version__ = '1'\n",
        "low/__init__.py": "",
        "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import T\n",
        "low/b.py": "def f():\n    import envdoctor.mid.x\n",
        "mid/__init__.py": "from .. import __version__\nfrom ..low import a\n",
        "mid/x.py": "",
        "side.py": "from .mid import x\n",
        "top.py": "from envdoctor import mid, side\nfrom .low.a import f\n",
    })
    assert violations(root, SYNTHETIC, frozenset(), {}) == [
        "envdoctor/low/a.py:3: envdoctor.low.a (low) imports envdoctor.top (top), a layer above it",
        "envdoctor/low/b.py:2: envdoctor.low.b (low) imports envdoctor.mid.x (mid), a layer above it",
        "import cycle among low, mid, side, top",
    ]


def test_imports_are_found_at_any_depth_of_statements(tmp_path):
    root = _tree(tmp_path, {"low.py": (
        "class C:\n    def m(self):\n        with open('x'):\n            for _ in ():\n                while True:\n"
        "                    try:\n                        pass\n                    except ImportError:\n"
        "                        from . import top\n                    finally:\n"
        "                        import envdoctor.mid\n"
        "if False:\n    pass\nelse:\n    async def f():\n        from .side import g\n"), "top.py": "", "mid.py": "",
        "side.py": ""})
    assert {(e.where, e.target) for e in edges(root)} == {
        ("envdoctor/low.py:9", "envdoctor.top"), ("envdoctor/low.py:11", "envdoctor.mid"),
        ("envdoctor/low.py:16", "envdoctor.side")}


def test_a_private_name_across_packages_fails_inside_one_it_does_not(tmp_path):
    root = _tree(tmp_path, {
        "low/__init__.py": "",
        "low/_util.py": "def helper(): pass\n",
        "low/a.py": "from ._util import helper\n_x = 1\n",
        "mid.py": "from .low._util import helper\nfrom .low.a import _x\nfrom .low import a\n",
    })
    assert violations(root, SYNTHETIC[:2], frozenset(), {}) == [
        "envdoctor/mid.py:1: envdoctor.mid imports the private _util of envdoctor.low._util "
        "(make it public where it is a shared API, or move it)",
        "envdoctor/mid.py:2: envdoctor.mid imports the private _x of envdoctor.low.a "
        "(make it public where it is a shared API, or move it)",
    ]


def test_a_sideways_cycle_an_unplaced_unit_and_a_payload_import_fail(tmp_path):
    root = _tree(tmp_path, {
        "mid.py": "from . import side\n",
        "side.py": "def f():\n    from .mid import g\n",
        "new.py": "",
        "_pay.py": "from .mid import g\n",
        "low.py": "from . import _pay\n",  # shipping the payload's file is no dependency on its layer
    })
    assert violations(root, SYNTHETIC, frozenset({"_pay"}), {}) == [
        "new: in no layer (place it in LAYERS of tests/unit/test_layers.py and docs/architecture.md)",
        "envdoctor/_pay.py:1: the payload module _pay imports envdoctor.mid (it runs alone, in the judged "
        "interpreter)",
        "import cycle among mid, side",
    ]


def test_a_cycle_between_modules_of_one_package_fails_also_lazy(tmp_path):
    root = _tree(tmp_path, {
        "low/__init__.py": "",
        "low/a.py": "from .b import f\n",
        "low/b.py": "def f():\n    from . import c\n",
        "low/c.py": "def g():\n    from .a import h\n",
        "low/d.py": "from .a import h\nfrom . import c\n",  # imports into the loop, is not part of it
        "mid.py": "from .low import a\n",
    })
    assert violations(root, SYNTHETIC[:2], frozenset(), {}) == [
        "import cycle inside low: envdoctor.low.a, envdoctor.low.b, envdoctor.low.c"]


def test_the_allow_list_tolerates_only_its_edges_and_goes_stale(tmp_path):
    root = _tree(tmp_path, {"low.py": "from . import top\n", "top.py": "", "mid.py": "from . import top\n"})
    allowed = {("envdoctor.low", "top"): "planted", ("envdoctor.gone", "top"): "removed"}
    assert violations(root, SYNTHETIC, frozenset(), allowed) == [
        "envdoctor/mid.py:1: envdoctor.mid (mid) imports envdoctor.top (top), a layer above it",
        "allowed edge envdoctor.gone -> top no longer exists: delete it from ALLOWED",
    ]


def test_a_planted_upward_import_in_a_copy_of_the_package_fails(tmp_path):
    copy = tmp_path / "envdoctor"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    gpus = copy / "domain" / "gpus.py"
    gpus.write_text(gpus.read_text(encoding="utf-8") + "\n\ndef planted():\n    from ..checks import base\n",
                    encoding="utf-8")
    (copy / "probes" / "planted.py").write_text("from ..checks._util import torch_envs\n", encoding="utf-8")
    bad = violations(copy)
    assert any(b.startswith("envdoctor/domain/gpus.py:") and "imports envdoctor.checks (checks)" in b
               for b in bad), bad
    assert any(b.startswith("envdoctor/probes/planted.py:1:") and "a layer above it" in b for b in bad), bad
    assert any(b.startswith("envdoctor/probes/planted.py:1:") and "the private _util" in b for b in bad), bad
    assert any(b.startswith("import cycle among") and "checks" in b and "domain" in b for b in bad), bad
    # and nothing else: the copy is the package, which keeps its layers (test_the_package_keeps_its_layers)
    assert all("planted.py" in b or "domain/gpus.py" in b or b.startswith("import cycle") for b in bad), bad


# --------------------------------------------------------------------------- the shape of a command (issue 40)
# cli/ owns the process (argv, signals, progress, rendering, exit codes); services/<command>.py is the command as a
# call (options in, a report or an answer out); the judge and the sources of facts sit below the services.

# what only the command line does: write to the terminal, handle signals, draw progress
_PROCESS_NAMES = ("print", "sys.stdout", "sys.stderr", "signal", "rich", "os._exit", "sys.exit")


def _process_uses(path: Path, root: Path = PACKAGE) -> List[str]:
    """Where ``path`` prints, writes to the terminal, handles signals or exits: calls to print(), sys.stdout/stderr,
    an import of signal or rich, os._exit/sys.exit."""
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            name = "print"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            dotted = f"{node.value.id}.{node.attr}"
            name = dotted if dotted in _PROCESS_NAMES else None
        elif isinstance(node, ast.Import):
            name = next((a.name for a in node.names if a.name.split(".")[0] in ("signal", "rich")), None)
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in (
                "signal", "rich"):
            name = node.module
        if name:
            out.append(f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}: {name}")
    return out


def test_services_print_nothing_and_handle_no_signal():
    bad = [u for path in sorted((PACKAGE / "services").rglob("*.py")) for u in _process_uses(path)]
    assert not bad, "services return what they found; the command line prints it and owns the process:\n" + \
        "\n".join(bad)


def test_the_shape_test_sees_a_print_in_a_service(tmp_path):
    planted = tmp_path / "envdoctor" / "services" / "x.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("import sys\nimport signal\n\ndef f():\n    print('x')\n    sys.stderr.write('y')\n"
                       "    sys.stdin.read()\n")
    assert sorted(u.split(": ")[1] for u in _process_uses(planted, tmp_path / "envdoctor")) == [
        "print", "signal", "sys.stderr"]  # reading input is not the terminal's output


# the commands that are a service call: cli/<module>.py -> services/<module>.py (issue 40)
# (watch and fleet: issue 40's other half, route40b)
SERVICE_COMMANDS = {"check": "check", "diagnose": "diagnose", "bench": "bench", "explain": "explain",
                    "assert_": "assertions", "matrix": "matrix", "recommend": "recommend",
                    "update_data": "update_data", "node_health": "node_health", "list_checks": "list_checks"}


def test_the_command_line_reaches_the_judge_through_the_services():
    """No cli module imports the judge or a paste reader itself, and each command listed in SERVICE_COMMANDS
    imports its service."""
    bad = []
    for e in edges(PACKAGE):
        if e.source_unit == "cli" and e.target_unit in ("judging",):
            bad.append(f"{e.where}: {e.source} imports {e.target}: call the command's service instead")
    for cli_module, service in SERVICE_COMMANDS.items():
        targets = {e.target for e in edges(PACKAGE) if e.source == f"envdoctor.cli.{cli_module}"}
        if f"envdoctor.services.{service}" not in targets:
            bad.append(f"envdoctor.cli.{cli_module} does not call envdoctor.services.{service}")
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------- one runtime for signals (issue 40)
# The command line's process has one signal runtime, cli/signals.py: its handler records the signal and stops the
# children, and the waits check the flag. Nowhere else may install a handler or mask signals, except where the code
# runs as another process: envdoctor/__main__.py holds the signals while the command line is imported (before the
# runtime exists), _payload/ runs in the judged interpreter, and fleet/arrival.py blocks them while a rank imports
# torch and sets the handlers of a rank's supervisor, the forked parent that only waits for its child.
SIGNAL_HANDLERS_ALLOWED = frozenset({"envdoctor/cli/signals.py", "envdoctor/__main__.py", "envdoctor/fleet/arrival.py"})
_SIGNAL_CALLS = frozenset({"signal", "pthread_sigmask", "sigwait", "siginterrupt", "set_wakeup_fd", "setitimer",
                           "alarm"})


def _signal_handlers(path: Path, root: Path = PACKAGE) -> List[str]:
    """Where ``path`` installs a handler or changes the signal mask: ``signal.signal(...)`` and its kin, also
    through ``import signal as s`` or ``from signal import signal``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {"signal"}
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "signal"}
        elif isinstance(node, ast.ImportFrom) and node.module == "signal" and not node.level:
            names |= {a.asname or a.name for a in node.names if a.name in _SIGNAL_CALLS}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules
                and f.attr in _SIGNAL_CALLS) or (isinstance(f, ast.Name) and f.id in names):
            out.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno}")
    return out


def signal_handlers_outside_the_runtime(root: Path = PACKAGE) -> List[str]:
    return [where for path in sorted(root.rglob("*.py"))
            if path.relative_to(root.parent).as_posix() not in SIGNAL_HANDLERS_ALLOWED
            and "_payload" not in path.relative_to(root).parts
            for where in _signal_handlers(path, root)]


def test_only_the_signal_runtime_installs_handlers():
    bad = signal_handlers_outside_the_runtime()
    assert not bad, ("a signal handler outside cli/signals.py (the process's one signal runtime: record the stop in "
                     "probes.runner.INTERRUPT and check it where you wait, or use signals.forwarded):\n"
                     + "\n".join(bad))


def test_the_signal_rule_sees_a_handler_however_it_is_spelled(tmp_path):
    root = tmp_path / "envdoctor"
    for rel, text in {
        "cli/signals.py": "import signal\nsignal.signal(2, None)\n",  # the runtime: allowed
        "_payload/run.py": "import signal\nsignal.signal(2, None)\n",  # the target interpreter's: allowed
        "cli/watch.py": "import signal\ndef f():\n    signal.signal(2, lambda *a: None)\n",
        "fleet/rank.py": "import signal as s\ns.pthread_sigmask(s.SIG_BLOCK, {2})\n",
        "bench/x.py": "from signal import signal as install\ninstall(15, None)\n",
        "probes/ok.py": "import signal\nsignal.getsignal(2)\nname = signal.Signals(2).name\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert sorted(signal_handlers_outside_the_runtime(root)) == [
        "envdoctor/bench/x.py:2", "envdoctor/cli/watch.py:3", "envdoctor/fleet/rank.py:2"]
