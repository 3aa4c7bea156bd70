"""The generic rule every compat_data file follows (compat_data/README.md): citations, keys, versions."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Dict, Tuple

from ..domain.versions import parse_version
from ._parse import CompatDataError

_REQUIRED_TOP = ("title", "as_of", "sources", "rows")


def _is_source(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return bool(value) and all(isinstance(s, str) and s.strip() for s in value)
    return False


def _is_sources_list(value: Any) -> bool:
    """Top-level citations: strings, or objects with a non-empty "url" (rows may then cite them by "id")."""
    if not isinstance(value, list) or not value:
        return False
    for s in value:
        if isinstance(s, str) and s.strip():
            continue
        if isinstance(s, dict) and isinstance(s.get("url"), str) and s["url"].strip():
            continue
        return False
    return True


def validate_file(path: Path) -> Dict[str, Any]:
    """Load one compat_data file and check the generic rule (see compat_data/README.md); raise CompatDataError."""
    name = path.name
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompatDataError(f"{name}: file not found at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CompatDataError(f"{name}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CompatDataError(f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise CompatDataError(f"{name}: top level must be an object")
    for key in _REQUIRED_TOP:
        if key not in doc:
            raise CompatDataError(f"{name}: missing top-level {key!r}")
    if not isinstance(doc["title"], str) or not doc["title"].strip():
        raise CompatDataError(f"{name}: 'title' must be a non-empty string")
    try:
        datetime.date.fromisoformat(str(doc["as_of"]))
    except ValueError:
        raise CompatDataError(f"{name}: 'as_of' {doc['as_of']!r} is not a YYYY-MM-DD date") from None
    if not _is_sources_list(doc["sources"]):
        raise CompatDataError(f"{name}: 'sources' must be a non-empty list of strings or of objects with a 'url'")
    keys = doc.get("keys", {})
    version_fields = doc.get("version_fields", {})
    if not isinstance(keys, dict) or not isinstance(version_fields, dict):
        raise CompatDataError(f"{name}: 'keys' and 'version_fields' must be objects of table -> field list")
    tables = {k: v for k, v in doc.items() if isinstance(v, list) and k != "sources"}
    for tname in list(keys) + list(version_fields):
        if tname not in tables:
            raise CompatDataError(f"{name}: 'keys'/'version_fields' name a table {tname!r} that the file lacks")
    for tname, rows in tables.items():
        seen: Dict[Tuple[Any, ...], int] = {}
        for i, row in enumerate(rows):
            where = f"{name}: {tname}[{i}]"
            if not isinstance(row, dict):
                raise CompatDataError(f"{where} is not an object")
            if not _is_source(row.get("source")):
                raise CompatDataError(f"{where} has no source")
            for fname in version_fields.get(tname, []):
                val = row.get(fname)
                if val is not None and parse_version(str(val), strict=True) is None:
                    raise CompatDataError(f"{where}.{fname} = {val!r} is not a version")
            kfields = keys.get(tname)
            if kfields:
                row_key = tuple(json.dumps(row.get(f), sort_keys=True) for f in kfields)
                if row_key in seen:
                    raise CompatDataError(
                        f"{where} duplicates {tname}[{seen[row_key]}] on key {dict(zip(kfields, row_key))}"
                    )
                seen[row_key] = i
    return doc
