"""envdoctor.domain imports nothing from the rest of envdoctor (facts, probes, checks, report, compat)."""

from __future__ import annotations

import ast
from pathlib import Path

import envdoctor.domain

DOMAIN = Path(envdoctor.domain.__file__).parent


def test_domain_imports_only_itself_and_the_standard_library_and_packaging():
    for path in sorted(DOMAIN.glob("*.py")):
        tree = ast.parse(path.read_text())
        assert ast.get_docstring(tree), f"{path.name} has no module docstring"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    assert node.level == 1, f"{path.name} imports {'.' * node.level}{node.module}"
                else:
                    assert not (node.module or "").startswith("envdoctor"), f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("envdoctor") for a in node.names), path.name
