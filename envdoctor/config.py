"""Project configuration: the `[tool.envdoctor]` table of the nearest pyproject.toml above the working directory."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py

from __future__ import annotations

import os
import re
from typing import Any, Dict, Optional, Tuple


class ConfigError(ValueError):
    """A pyproject.toml that cannot be read or a `[tool.envdoctor]` value of the wrong type (exit 2)."""


def find_pyproject(start: Optional[str] = None) -> Optional[str]:
    """The nearest pyproject.toml in ``start`` (default: the working directory) or a directory above it."""
    d = os.path.abspath(start or os.getcwd())
    while True:
        path = os.path.join(d, "pyproject.toml")
        if os.path.isfile(path):
            return path
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _parse(text: str, path: str) -> Dict[str, Any]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # 3.9/3.10: tomli if it is there, else the few lines of [tool.envdoctor] read below
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return _minimal_table(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    table = data.get("tool", {}).get("envdoctor", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.envdoctor] must be a table")
    return table


_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=\s*(.+?)\s*(#.*)?$")


def _minimal_table(text: str) -> Dict[str, Any]:
    """`key = true|false|"text"|number` lines of [tool.envdoctor], for Pythons without tomllib or tomli."""
    table: Dict[str, Any] = {}
    inside = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("["):
            inside = s.split("#", 1)[0].strip() == "[tool.envdoctor]"
            continue
        m = _KEY.match(line) if inside else None
        if m:
            raw = m.group(2)
            table[m.group(1)] = {"true": True, "false": False}.get(raw, raw.strip('"').strip("'"))
    return table


def project_config(start: Optional[str] = None) -> Tuple[Dict[str, Any], Optional[str]]:
    """(the `[tool.envdoctor]` table, the pyproject.toml it came from); ({}, None) when there is none.

    One reader for every setting (`expect-gpu` today): callers read their keys from the table.
    """
    path = find_pyproject(start)
    if path is None:
        return {}, None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    return _parse(text, path), path


def expect_gpu(start: Optional[str] = None) -> Tuple[bool, Optional[str]]:
    """(`expect-gpu` from [tool.envdoctor], where it was set); (False, None) when not set."""
    table, path = project_config(start)
    if "expect-gpu" not in table:
        return False, None
    value = table["expect-gpu"]
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: [tool.envdoctor] expect-gpu must be true or false, not {value!r}")
    return value, path
