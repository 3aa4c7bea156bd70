"""The shape of envdoctor/cli/: one module per command, shared code in common/live/signals, no cycle, nothing below imports it."""

from __future__ import annotations

import ast
import importlib

from tests.paths import REPO

PACKAGE = REPO / "envdoctor"
CLI = PACKAGE / "cli"
SHARED = {"common", "live", "signals"}  # what several commands share; live is check's and bench's run on this machine;
# signals is the process's one signal runtime (cli/signals.py)


def _imported(path) -> set:
    """The absolute names every import in ``path`` may load, at any depth (the lazy ones inside functions too):
    `from ..cli import x` gives envdoctor.cli and envdoctor.cli.x (x may be a submodule)."""
    package = ["envdoctor", *path.relative_to(PACKAGE).parts[:-1]]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = (node.module or "") if node.level == 0 else ".".join(
                package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            if node.module:  # `from . import x` loads the package only to get x
                out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def _cli_modules_imported(path) -> set:
    """The modules of envdoctor/cli/ a file imports ("__init__": the package itself)."""
    names = {n for n in _imported(path) if n == "envdoctor.cli" or n.startswith("envdoctor.cli.")}
    return {n.split(".")[2] if n.count(".") >= 2 else "__init__" for n in names}


def test_command_modules_import_only_the_shared_modules():
    commands = sorted(p.stem for p in CLI.glob("*.py") if p.stem != "__init__" and p.stem not in SHARED)
    assert {"check", "diagnose", "bench", "explain", "watch", "fleet"} <= set(commands)
    for name in commands:
        bad = _cli_modules_imported(CLI / f"{name}.py") - SHARED
        assert not bad, f"envdoctor/cli/{name}.py imports {sorted(bad)}: a command imports common/live/signals only"
    assert _cli_modules_imported(CLI / "live.py") <= {"common", "signals"}
    assert _cli_modules_imported(CLI / "common.py") == set()
    assert _cli_modules_imported(CLI / "signals.py") == set()  # the runtime imports no other cli module


def test_every_command_module_is_registered_once():
    cli = importlib.import_module("envdoctor.cli")
    modules = [p.stem for p in CLI.glob("*.py") if p.stem != "__init__" and p.stem not in SHARED]
    registered = {m.__name__.rsplit(".", 1)[1] for m in cli._COMMAND_MODULES}
    assert registered == set(modules), "a module under envdoctor/cli/ that __init__ does not register"
    names = [n for m in cli._COMMAND_MODULES for n in m.COMMANDS]
    assert len(names) == len(set(names)) and set(names) == set(cli.COMMANDS)


def test_nothing_below_the_command_line_imports_it():
    """The command line is the top layer: only envdoctor/__main__.py (`python -m envdoctor`) may import it."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if CLI in path.parents or path == PACKAGE / "__main__.py":
            continue
        bad = sorted(n for n in _imported(path) if n == "envdoctor.cli" or n.startswith("envdoctor.cli."))
        assert not bad, f"{path.relative_to(REPO)} imports {bad[0]}: the command line is the top layer"
