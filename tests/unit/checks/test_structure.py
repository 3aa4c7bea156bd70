"""The shape of envdoctor/checks/: no private helper crosses modules, areas share only through shared modules."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

import pytest

from tests.paths import REPO

CHECKS_DIR = REPO / "envdoctor" / "checks"
MODULES = sorted(p for p in CHECKS_DIR.glob("*.py"))
MAX_LINES = 350


def _sibling_imports(path: Path) -> Iterator[Tuple[int, str, str]]:
    """(line, sibling module, imported name) for every ``from .x import y`` and ``from . import x`` in a module,
    lazy imports inside functions included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                if node.module:
                    yield node.lineno, node.module.split(".")[0], alias.name
                else:
                    yield node.lineno, alias.name, ""


def _is_area(path: Path) -> bool:
    """A check-area module registers checks: it has a module-level CHECKS list."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for n in tree.body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        if any(isinstance(x, ast.Name) and x.id == "CHECKS" for x in targets):
            return True
    return False


def test_the_rules_can_fail(tmp_path):
    # the import each rule forbids, top-level and lazy, is seen (so a clean run means something)
    mod = tmp_path / "area.py"
    mod.write_text("from .packages import _pair_pins\nCHECKS = []\n\ndef f():\n    from .driver import nvidia_hardware\n")
    assert list(_sibling_imports(mod)) == [(1, "packages", "_pair_pins"), (5, "driver", "nvidia_hardware")]
    assert _is_area(mod) and not _is_area(CHECKS_DIR / "registry.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_check_module_imports_a_private_helper_of_another(path):
    bad = [f"{path.name}:{line}: from .{mod} import {name}" for line, mod, name in _sibling_imports(path)
           if name.startswith("_") and not (path.name == "registry.py" and not name)]
    assert not bad, "private helpers crossing check modules (make them public in a shared _module): " + "; ".join(bad)


@pytest.mark.parametrize("path", [p for p in MODULES if _is_area(p)], ids=lambda p: p.name)
def test_check_areas_share_only_through_shared_modules(path):
    # an area module (one that registers checks) may use base.py and the shared _-modules, never another area
    bad = [f"{path.name}:{line}: from .{mod} import {name}" for line, mod, name in _sibling_imports(path)
           if mod != "base" and not mod.startswith("_")]
    assert not bad, "check areas importing each other: " + "; ".join(bad)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_check_module_is_over_the_size_limit(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.name} has {n} lines (at most {MAX_LINES}): split it by the checks it holds"


def test_every_area_module_is_in_the_registry():
    from envdoctor.checks import all_checks

    registered = {c.func.__module__.rsplit(".", 1)[-1] for c in all_checks()}
    areas = {p.stem for p in MODULES if _is_area(p)}
    assert areas <= registered, f"check modules whose checks never run: {sorted(areas - registered)}"
