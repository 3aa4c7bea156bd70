"""Loading the matrix: the bundled compat_data, or a newer validated update, once per directory."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import threading
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

from ._parse import CompatDataError
from .datadir import bundled_dir
from .queries import Compat
from .validate import validate_file

_CACHE: Dict[str, Compat] = {}
_LOCK = threading.Lock()


def load_compat(data_dir: Optional[Union[Path, str]] = None) -> Compat:
    """Load and validate every compat_data/*.json once per directory; raise CompatDataError on bad data.

    Without ``data_dir``: the bundled matrix, or the update `envdoctor update-data` installed when that is
    newer (its as_of later than the bundled one's) and still passes validation; else the bundled one.
    """
    if data_dir is None:
        return active_compat()
    return _load_dir(Path(data_dir))


_ACTIVE: Dict[str, Tuple[Compat, Optional[str]]] = {}


def active_compat() -> Compat:
    """The matrix in use (see load_compat), chosen once per cache directory."""
    return active_choice()[0]


def active_choice() -> Tuple[Compat, Optional[str]]:
    """(matrix in use, why an installed update is not used or None)."""
    from .datadir import cache_dir, installed_update, newer

    cache = cache_dir()
    key = str(cache)
    if key in _ACTIVE:
        return _ACTIVE[key]
    bundled = _load_dir(bundled_dir())
    choice: Tuple[Compat, Optional[str]] = (bundled, None)
    update = installed_update(cache)
    if update is not None:
        if not newer(update.as_of, bundled.as_of):
            choice = (bundled, f"the installed update {update.version} (as of {update.as_of}) is not newer than "
                               f"the bundled matrix (as of {bundled.as_of})")
        else:
            try:
                compat = _load_dir(update.directory)
            except CompatDataError as e:
                choice = (bundled, f"the installed update {update.version} fails validation: {e}")
            else:
                compat.label = f"update {update.version} in {update.directory.parent}"
                choice = (compat, None)
    _ACTIVE[key] = choice
    return choice


def _load_dir(directory: Path) -> Compat:
    cache_key = str(directory.resolve()) if directory.exists() else str(directory)
    with _LOCK:
        if cache_key in _CACHE:
            return _CACHE[cache_key]
        if not directory.is_dir():
            raise CompatDataError(f"compat data directory not found: {directory}")
        docs = {p.stem: validate_file(p) for p in sorted(directory.glob("*.json"))}
        for needed in ("cuda_driver", "torch", "gpus", "arch_support", "host_compilers"):
            if needed not in docs:
                raise CompatDataError(f"{needed}.json: missing from {directory}")
        # parses every table (bad data raises CompatDataError here), the bundled one's signatures at first use
        compat = Compat(directory, docs, lazy_signatures=_same_dir(directory, bundled_dir()))
        _CACHE[cache_key] = compat
        return compat


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def clear_cache() -> None:
    """Forget loaded matrices (tests that write data files)."""
    with _LOCK:
        _CACHE.clear()
        _ACTIVE.clear()
