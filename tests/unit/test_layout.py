"""The test tree shows the architecture: unit tests mirror the package, integration tests are `slow`, gpu are `gpu`."""

from __future__ import annotations

import ast

from tests.paths import REPO, TESTS

PACKAGE = REPO / "envdoctor"


def _marks(node: ast.AST) -> set:
    """The pytest.mark.<name> names in a decorator list or a pytestmark assignment."""
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"}


def _module_marks(tree: ast.Module) -> set:
    return set().union(*[_marks(n.value) for n in tree.body if isinstance(n, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)] or [set()])


def _tests(tree: ast.Module):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def test_every_test_file_sits_in_a_tier():
    loose = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert loose == [], "put it under tests/unit/<package>/, tests/integration/ (slow) or tests/gpu/ (gpu)"


def test_unit_folders_are_packages_of_envdoctor():
    for d in sorted(p for p in (TESTS / "unit").iterdir() if p.is_dir() and p.name != "__pycache__"):
        if d.name == "scripts":
            assert (REPO / "scripts").is_dir()
            continue
        assert (PACKAGE / d.name / "__init__.py").is_file(), f"tests/unit/{d.name} mirrors no envdoctor package"


def test_integration_tests_are_slow_and_gpu_tests_need_a_gpu():
    for tier, mark in (("integration", "slow"), ("gpu", "gpu")):
        for path in sorted((TESTS / tier).glob("test_*.py")):
            tree = ast.parse(path.read_text())
            module = _module_marks(tree)
            for fn in _tests(tree):
                assert mark in module | set().union(*[_marks(d) for d in fn.decorator_list] or [set()]), \
                    f"{path.name}::{fn.name} is not marked {mark}"
