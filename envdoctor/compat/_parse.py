"""Typed rows from compat_data JSON: field readers and one loop that names the file, table and row of bad data."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, TypeVar

from ..domain.versions import parse_version

T = TypeVar("T")

# the fields that name a row in an error message, first present wins: "rows[12] (cuda 12.4)"
_NAMING = ("id", "name", "torch", "cuda", "cc", "code", "branch", "gpu_class", "architecture", "table", "kind",
           "gpu", "cuda_major")


class CompatDataError(Exception):
    """A compat_data file is missing or malformed; the message is one line naming the file and the problem."""


def source_text(value: Any) -> str:
    """A row's "source": one string, or a list of them joined with "; "."""
    if isinstance(value, list):
        return "; ".join(str(s) for s in value)
    return str(value)


def _where(file: str, table: str, i: int, row: Any) -> str:
    where = f"{file}: {table}[{i}]"
    if isinstance(row, dict):
        for key in _NAMING:
            if isinstance(row.get(key), (str, int, float)) and not isinstance(row.get(key), bool):
                return f"{where} ({key} {row[key]})"
    return where


def rows(file: str, table: str, items: Any, build: Callable[[Dict[str, Any]], T]) -> List[T]:
    """``build`` over every row of ``items``; a bad row raises CompatDataError "file: table[i] (key v): why"."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise CompatDataError(f"{file}: {table!r} must be a list of rows")
    out: List[T] = []
    for i, row in enumerate(items):
        try:
            if not isinstance(row, dict):
                raise TypeError("is not an object")
            out.append(build(row))
        except CompatDataError as e:
            raise CompatDataError(f"{_where(file, table, i, row)}: {e}") from None
        except KeyError as e:
            raise CompatDataError(f"{_where(file, table, i, row)}: missing field {e.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError, re.error) as e:
            raise CompatDataError(f"{_where(file, table, i, row)}: {e}") from None
    return out


# --------------------------------------------------------------------------- field readers (raise ValueError/KeyError)


def _checked(row: Dict[str, Any], key: str, ok: Callable[[Any], bool], what: str) -> Any:
    val = row[key]
    if not ok(val):
        raise ValueError(f"{key} = {val!r} is not {what}")
    return val


def _is_number(val: Any) -> bool:
    return isinstance(val, (int, float)) and not isinstance(val, bool)  # JSON true is not 1


def text(row: Dict[str, Any], key: str) -> str:
    """A required non-empty string."""
    return _checked(row, key, lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string")


def opt_text(row: Dict[str, Any], key: str) -> Optional[str]:
    return None if row.get(key) is None else _checked(row, key, lambda v: isinstance(v, str), "a string")


def version(row: Dict[str, Any], key: str) -> str:
    """A required version string ("12.4", "550.54.14")."""
    text(row, key)
    return _checked(row, key, lambda v: parse_version(v, strict=True) is not None, "a version")


def opt_version(row: Dict[str, Any], key: str) -> Optional[str]:
    return None if row.get(key) is None else version(row, key)


def number(row: Dict[str, Any], key: str) -> float:
    return _checked(row, key, _is_number, "a number")


def opt_number(row: Dict[str, Any], key: str) -> Optional[float]:
    return None if row.get(key) is None else number(row, key)


def integer(row: Dict[str, Any], key: str) -> int:
    return _checked(row, key, lambda v: _is_number(v) and isinstance(v, int), "an integer")


def opt_integer(row: Dict[str, Any], key: str) -> Optional[int]:
    return None if row.get(key) is None else integer(row, key)


def opt_bool(row: Dict[str, Any], key: str) -> Optional[bool]:
    val = row.get(key)
    if val is not None and not isinstance(val, bool):
        raise ValueError(f"{key} = {val!r} is not true/false")
    return val


def strings(row: Dict[str, Any], key: str) -> List[str]:
    """An optional list of strings ([] when absent)."""
    val = row.get(key)
    if val is None:
        return []
    if not isinstance(val, list) or not all(isinstance(s, str) for s in val):
        raise ValueError(f"{key} = {val!r} is not a list of strings")
    return list(val)


def string_map(row: Dict[str, Any], key: str) -> Dict[str, str]:
    val = row.get(key)
    if val is None:
        return {}
    if not isinstance(val, dict) or not all(isinstance(v, str) for v in val.values()):
        raise ValueError(f"{key} = {val!r} is not an object of strings")
    return dict(val)


def source_ids(doc: Dict[str, Any]) -> Dict[str, str]:
    """The file's cited sources by id ({"mamf": "https://..."}): rows may cite a source by its id."""
    return {s["id"]: s["url"] for s in doc.get("sources", []) if isinstance(s, dict) and s.get("id")}


def loaded(compat: Any, stem: str) -> Any:
    """The typed table of compat_data/<stem>.json from a loaded Compat; LookupError when it has none."""
    optional = getattr(compat, "optional", None)
    if optional is None:
        raise LookupError("compat data not loaded")
    return optional(stem)
