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
import threading
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.domain.fastclass import dataclass

CACHE_ENV = "ENVDOCTOR_CACHE_DIR"
POINTER = "current.json"
MANIFEST = "MANIFEST"  # the installed copy: not *.json, so the matrix loader does not take it for a table


def cache_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    environ: Mapping[str, str] = os.environ if env is None else env
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV]).expanduser()
    xdg = environ.get("XDG_CACHE_HOME")
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


class ZipPath:
    """A file or folder inside a zip archive, with the few Path methods the matrix loader uses (``/``, ``name``,
    ``stem``, ``exists``, ``is_dir``, ``glob`` of one folder, ``read_text``, ``resolve``): the bundled matrix of
    the one-file zip (scripts/build_pyz.py), read in place, never extracted. zipfile.Path has no ``stem`` or
    ``glob`` before Python 3.11/3.12."""

    def __init__(self, archive: str, inner: str):
        self.archive = archive
        self.inner = inner.strip("/")

    def _names(self) -> List[str]:
        with _ZIP_LOCK:
            if self.archive not in _ZIP_NAMES:
                with zipfile.ZipFile(self.archive) as zf:
                    _ZIP_NAMES[self.archive] = zf.namelist()
            return _ZIP_NAMES[self.archive]

    def __truediv__(self, name: str) -> ZipPath:
        return ZipPath(self.archive, f"{self.inner}/{name}")

    def __str__(self) -> str:
        return f"{self.archive}/{self.inner}"

    def __repr__(self) -> str:
        return f"ZipPath({self.archive!r}, {self.inner!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZipPath) and (other.archive, other.inner) == (self.archive, self.inner)

    def __hash__(self) -> int:
        return hash((self.archive, self.inner))

    def __lt__(self, other: ZipPath) -> bool:  # sorted(directory.glob(...))
        return (self.archive, self.inner) < (other.archive, other.inner)

    @property
    def name(self) -> str:
        return self.inner.rsplit("/", 1)[-1]

    @property
    def stem(self) -> str:
        return self.name.rsplit(".", 1)[0] if "." in self.name.lstrip(".") else self.name

    @property
    def parent(self) -> ZipPath:
        return ZipPath(self.archive, self.inner.rsplit("/", 1)[0] if "/" in self.inner else "")

    def resolve(self) -> ZipPath:
        return self

    def is_dir(self) -> bool:
        return any(n.startswith(self.inner + "/") for n in self._names())

    def is_file(self) -> bool:
        return self.inner in self._names()

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def glob(self, pattern: str) -> List[ZipPath]:
        """The files directly in this folder whose names match ``pattern`` (fnmatch, one level)."""
        import fnmatch

        prefix = self.inner + "/"
        return [ZipPath(self.archive, n) for n in sorted(self._names()) if n.startswith(prefix)
                and "/" not in n[len(prefix):] and fnmatch.fnmatchcase(n[len(prefix):], pattern)]

    def read_bytes(self) -> bytes:
        try:
            with zipfile.ZipFile(self.archive) as zf:
                return zf.read(self.inner)
        except KeyError:
            raise FileNotFoundError(2, "No such file in the archive", str(self)) from None

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)


_ZIP_NAMES: Dict[str, List[str]] = {}
_ZIP_LOCK = threading.Lock()


def _zipped_package_dir() -> Optional[ZipPath]:
    """envdoctor's folder inside the zip it is imported from (zipimport: this module's loader names the archive
    and the module's folder in it), else None."""
    loader = globals().get("__loader__")
    archive, prefix = getattr(loader, "archive", None), getattr(loader, "prefix", None)
    if not isinstance(archive, str) or not isinstance(prefix, str):
        return None
    return ZipPath(archive, prefix.replace("\\", "/").rstrip("/").rsplit("/", 1)[0])  # envdoctor/compat -> envdoctor


def bundled_dir() -> Path:
    """The installed package envdoctor.compat_data, else <repo>/compat_data in a source tree, else (envdoctor
    imported from a zip: scripts/build_pyz.py) the folder envdoctor/compat_data inside the zip, as a ZipPath.

    Plain paths rather than importlib.resources: compat_data has no __init__.py, and for such a namespace
    package resources.files() returns a MultiplexedPath whose str() is not a directory.
    """
    zipped = _zipped_package_dir()
    if zipped is not None:
        return zipped / "compat_data"  # type: ignore[return-value]  # the Path methods the loader uses
    package_dir = Path(__file__).resolve().parent.parent  # .../envdoctor
    for candidate in (package_dir / "compat_data", package_dir.parent / "compat_data"):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return package_dir.parent / "compat_data"
