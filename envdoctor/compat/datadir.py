"""Where the matrix in use lives: the bundled compat_data, or a newer update installed by `envdoctor update-data`.

The cache is ``$ENVDOCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/envdoctor``, else ``~/.cache/envdoctor`` (the XDG
base-directory spec). An update is a directory ``data-<version>-<suffix>/`` holding the matrix files and their
manifest (as ``MANIFEST``); ``current.json`` names the one in use and is replaced atomically (os.replace), so a reader
sees the old update or the new one, never half of either. No network here: that is envdoctor/services/update_data.py.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

from envdoctor.domain.fastclass import dataclass

CACHE_ENV = "ENVDOCTOR_CACHE_DIR"
POINTER = "current.json"
MANIFEST = "MANIFEST"  # the installed copy: not *.json, so the matrix loader does not take it for a table


def cache_dir(env: Optional[Dict[str, str]] = None) -> Path:
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the spec: a relative XDG_CACHE_HOME is invalid and ignored
        return Path(xdg) / "envdoctor"
    return Path.home() / ".cache" / "envdoctor"


@dataclass(frozen=True)
class InstalledUpdate:
    directory: Path
    version: str
    as_of: str
    url: Optional[str]
    installed_at: Optional[str]


def read_manifest(path: Path) -> Dict[str, Any]:
    """A manifest: {"format": 1, "version", "as_of" (YYYY-MM-DD), "files": {name: {"sha256", "size"}}}."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    check_manifest(doc)
    return doc


def check_manifest(doc: Any) -> None:
    """ValueError with a one-line reason when ``doc`` is not a manifest this envdoctor understands."""
    if not isinstance(doc, dict):
        raise ValueError("the manifest is not a JSON object")
    if doc.get("format") != 1:
        raise ValueError(f"manifest format {doc.get('format')!r} is not 1")
    for key in ("version", "as_of"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise ValueError(f"the manifest has no {key!r}")
    try:
        datetime.date.fromisoformat(doc["as_of"])
    except ValueError:
        raise ValueError(f"manifest as_of {doc['as_of']!r} is not a YYYY-MM-DD date") from None
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        raise ValueError("the manifest lists no files")
    for name, meta in files.items():
        if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith(".") \
                or not name.endswith(".json"):
            raise ValueError(f"manifest file name {name!r} is not a plain *.json name")
        if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str) or len(meta["sha256"]) != 64:
            raise ValueError(f"manifest entry {name!r} has no sha256")


def installed_update(cache: Optional[Path] = None) -> Optional[InstalledUpdate]:
    """The update ``current.json`` names, if it is there and its manifest reads; None otherwise."""
    cache = cache or cache_dir()
    try:
        pointer = json.loads((cache / POINTER).read_text(encoding="utf-8"))
        directory = cache / str(pointer["dir"])
        if os.sep in str(pointer["dir"]) or not directory.is_dir():
            return None
        manifest = read_manifest(directory / MANIFEST)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return InstalledUpdate(directory, manifest["version"], manifest["as_of"], pointer.get("url"),
                           pointer.get("installed_at"))


def newer(as_of: str, than: str) -> bool:
    """Is the matrix dated ``as_of`` newer than the one dated ``than`` (both YYYY-MM-DD)?"""
    return as_of > than  # ISO dates order as strings


def bundled_dir() -> Path:
    """The installed package envdoctor.compat_data, else <repo>/compat_data in a source tree.

    Plain paths rather than importlib.resources: compat_data has no __init__.py, and for such a namespace
    package resources.files() returns a MultiplexedPath whose str() is not a directory.
    """
    package_dir = Path(__file__).resolve().parent.parent  # .../envdoctor
    for candidate in (package_dir / "compat_data", package_dir.parent / "compat_data"):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return package_dir.parent / "compat_data"
