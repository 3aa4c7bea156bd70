"""No docstring names a module that does not exist: every ``envdoctor.x.y`` and every ``path/to/file.py`` written in
a module's, a class's or a function's docstring resolves (a module, or a name that module defines; a file of the
repository). Modules moved (``app`` into ``services/``, ``assertions`` and ``matrix`` with it) left docstrings that
sent a reader to files that were gone."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

from tests.paths import REPO

PACKAGE = REPO / "envdoctor"
DOTTED = re.compile(r"(?<![\w.])envdoctor(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
PATH = re.compile(r"(?<![\w/.-])((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_]+\.py)\b")
# names that are no module and mean what they say: the project file, the wheel's data package (pyproject.toml
# package-dir), the package facade's lazy attributes (envdoctor/__init__.py _LAZY)
NOT_MODULES = {"envdoctor.toml", "envdoctor.compat_data"}


def _modules() -> Dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _defined(path: Path) -> Set[str]:
    """The top-level names a module defines (functions, classes, assignments, imports, a facade's _LAZY)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
                names.update(k.value for k in getattr(node.value, "keys", []) if isinstance(k, ast.Constant))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def unresolved(docstrings: Dict[str, str], modules: Dict[str, Path]) -> List[str]:
    bad = []
    for where, doc in docstrings.items():
        for ref in DOTTED.findall(doc):
            ref = ref.rstrip(".")
            if ref in NOT_MODULES or ref in modules:
                continue
            head, _, name = ref.rpartition(".")
            if head in modules and name in _defined(modules[head]):
                continue  # envdoctor.cli.common.fit_text: a name the module defines
            if head.rpartition(".")[0] in modules and head.rpartition(".")[2] in _defined(modules[head.rpartition(".")[0]]):
                continue  # envdoctor.model.findings.Report.from_dict: an attribute of a name it defines
            bad.append(f"{where}: {ref}")
        for ref in PATH.findall(doc):
            bases = [b for b in (REPO, PACKAGE, REPO / "tests") if (b / ref.split("/")[0]).is_dir()]
            if bases and not any((base / ref).exists() for base in bases):
                # a path into the repository (its first folder is one of ours) that is not there; a path of
                # other software (torch/__init__.py in the judged interpreter) is not checked
                bad.append(f"{where}: {ref}")
    return bad


def _docstrings() -> Dict[str, str]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(REPO)
        for node in [tree] + [n for n in ast.walk(tree)
                              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]:
            doc = ast.get_docstring(node)
            if doc:
                out[f"{rel}:{getattr(node, 'lineno', 1)}"] = doc
    return out


def test_every_docstring_reference_resolves():
    bad = unresolved(_docstrings(), _modules())
    assert not bad, "\n".join(bad)


def test_a_moved_module_and_a_missing_file_are_caught():
    modules = _modules()
    docs = {"a.py:1": "The work is in envdoctor.assertions (moved to envdoctor.services.assertions).",
            "b.py:1": "See envdoctor.cli.common.fit_text, envdoctor.model.findings.Report.from_dict and envdoctor.toml.",
            "c.py:1": "Pinned by tests/unit/probes/test_payload_pins.py; read from checks/no_such_module.py."}
    assert unresolved(docs, modules) == ["a.py:1: envdoctor.assertions", "c.py:1: checks/no_such_module.py"]
