"""`envdoctor update-data`: fetch a newer matrix published as a manifest, verify, validate and install it atomically.

The only code in envdoctor that touches the network (through ``requests``, imported here only). A manifest is
``{"format": 1, "version", "as_of", "files": {"cuda_driver.json": {"sha256", "size"}, ...}}``; the files sit
beside it (their URLs are resolved relative to the manifest's). Nothing is installed unless every file
matches its sha256, the whole set passes the loader the bundled matrix passes (load_compat), it has every
file the bundled matrix has, and it is newer than the data in use. The install writes a new directory and
then replaces ``current.json`` with os.replace, so a failure at any step leaves the previous data in use.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple
from urllib.parse import urljoin

from ..compat.datadir import MANIFEST, POINTER, cache_dir, check_manifest, installed_update, newer

if TYPE_CHECKING:
    from ..compat.queries import Compat

PUBLISHED_MANIFEST = "manifest.json"  # the name beside the published files
MAX_FILE_BYTES = 32 * 2**20  # the bundled files are well under 1 MiB each; a bigger one is not a matrix


class UpdateError(Exception):
    """An update that was not installed; the message says why and which data stays in use."""

    def __init__(self, message: str, status: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.status = status or {}


def _in_use() -> Tuple[Any, str]:
    from ..compat import active_choice

    compat, _ = active_choice()
    return compat, describe(compat)


def describe(compat: Compat) -> str:
    """"bundled matrix (as of 2026-11-30)" or "matrix update 2026.12.05 in ~/.cache/envdoctor (as of ...)"."""
    what = "bundled matrix" if compat.label == "bundled" else f"matrix {compat.label}"
    return f"{what} (as of {compat.as_of})"


def build_manifest(source_dir: Path, out_dir: Path, version: str, as_of: Optional[str] = None) -> Dict[str, Any]:
    """Copy ``source_dir``/*.json into ``out_dir`` and write its manifest.json (scripts/build_manifest.py).

    The files are validated first with the same loader envdoctor uses, so a broken matrix is never published.
    ``as_of`` (the date the matrix was checked) must not be earlier than the newest ``as_of`` of the files; a
    later one is written into the copies whose ``as_of`` is older, because `update-data` dates a matrix by its
    files (the newest file's ``as_of``) and refuses files that are not newer than the matrix in use.
    """
    from ..compat import load_compat

    compat = load_compat(Path(source_dir))
    if as_of is not None:
        try:
            datetime.date.fromisoformat(as_of)
        except ValueError:
            raise ValueError(f"--as-of {as_of!r} is not a YYYY-MM-DD date") from None
        if as_of < compat.as_of:
            raise ValueError(f"--as-of {as_of} is earlier than the files' newest as_of ({compat.as_of})")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: Dict[str, Dict[str, Any]] = {}
    for p in sorted(q for q in Path(source_dir).glob("*.json") if q.name != PUBLISHED_MANIFEST):
        data = p.read_bytes()
        if as_of is not None:
            doc = json.loads(data.decode("utf-8"))
            if isinstance(doc, dict) and str(doc.get("as_of", "")) < as_of:
                doc["as_of"] = as_of
                data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        (out_dir / p.name).write_bytes(data)
        files[p.name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest = {"format": 1, "version": version, "as_of": as_of or compat.as_of,
                "built_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
                "files": files}
    check_manifest(manifest)
    (out_dir / PUBLISHED_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def _get(session: Any, url: str, timeout_s: float, what: str, keep: str, deadline: Optional[float] = None) -> bytes:
    """``url``'s body, within ``timeout_s`` for each wait and by ``deadline`` (time.monotonic()) in all: requests'
    timeout bounds each read, so a server trickling a byte a second would otherwise never time out."""
    import threading
    import time

    if deadline is None:
        deadline = time.monotonic() + timeout_s
    box: Dict[str, Any] = {}

    def work() -> None:
        try:
            box["data"] = _get_unbounded(session, url, timeout_s, what, keep, box)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=work, name="envdoctor-update-get", daemon=True)
    t.start()
    from ..probes.runner import INTERRUPT

    INTERRUPT.join(t, max(0.0, deadline - time.monotonic()))  # a signal ends the wait (Interrupted)
    if t.is_alive():
        # end the read: shut the socket down (closing the response would wait for the reading thread's lock);
        # the abandoned daemon thread then fails its read and ends
        sock = getattr(getattr(getattr(box.get("resp"), "raw", None), "_connection", None), "sock", None)
        if sock is not None:
            import socket

            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        raise UpdateError(f"{what}: the download from {url} did not finish within the --timeout of "
                          f"{timeout_s:g} s (the whole update is bounded by it); {keep}")
    if "error" in box:
        raise box["error"]
    return box["data"]


def _get_unbounded(session: Any, url: str, timeout_s: float, what: str, keep: str, box: Dict[str, Any]) -> bytes:
    import requests

    try:
        resp = session.get(url, timeout=timeout_s, stream=True)
    except requests.Timeout:
        raise UpdateError(f"{what}: no answer from {url} within {timeout_s:g} s; {keep}") from None
    except requests.RequestException as e:
        raise UpdateError(f"{what}: cannot fetch {url}: {type(e).__name__}: {str(e).splitlines()[0][:200]}; "
                          f"{keep}") from None
    box["resp"] = resp
    with resp:
        if resp.status_code != 200:
            raise UpdateError(f"{what}: HTTP {resp.status_code} from {url}; {keep}")
        chunks = []
        total = 0
        try:
            for chunk in resp.iter_content(65536):
                total += len(chunk)
                if total > MAX_FILE_BYTES:
                    raise UpdateError(f"{what}: {url} is larger than {MAX_FILE_BYTES // 2**20} MiB; {keep}")
                chunks.append(chunk)
        except requests.Timeout:
            raise UpdateError(f"{what}: {url} stalled for more than {timeout_s:g} s; {keep}") from None
        except requests.RequestException as e:
            raise UpdateError(f"{what}: reading {url} failed: {type(e).__name__}; {keep}") from None
    return b"".join(chunks)


def update_from_url(url: str, timeout_s: float = 30.0, cache: Optional[Path] = None
                    ) -> Tuple[Dict[str, Any], str]:
    """Install the matrix the manifest at ``url`` describes, if newer; UpdateError (nothing changed) otherwise."""
    try:
        import requests
    except ImportError:
        raise UpdateError("update-data needs the 'requests' package (pip install requests)") from None
    from ..compat import CompatDataError, bundled_dir, clear_cache, load_compat

    cache = cache or cache_dir()
    compat, label = _in_use()
    keep = f"still using the {label}"
    status = {"in_use": compat.label, "as_of": compat.as_of}
    import time

    deadline = time.monotonic() + timeout_s  # --timeout bounds the whole update, every file together
    with requests.Session() as session:
        raw = _get(session, url, timeout_s, "manifest", keep, deadline)
        try:
            manifest = json.loads(raw.decode("utf-8"))
            check_manifest(manifest)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise UpdateError(f"manifest at {url} is not JSON ({type(e).__name__}); {keep}", status) from None
        except ValueError as e:
            raise UpdateError(f"manifest at {url} is invalid: {e}; {keep}", status) from None
        if not newer(manifest["as_of"], compat.as_of):
            payload = {"updated": False, "reason": "not newer", "manifest_version": manifest["version"],
                       "manifest_as_of": manifest["as_of"], **status}
            return payload, (f"Nothing installed: the manifest's matrix {manifest['version']} (as of "
                             f"{manifest['as_of']}) is not newer than the {label}.")
        bundled = {p.name for p in bundled_dir().glob("*.json")}
        missing = sorted(bundled - set(manifest["files"]))
        if missing:
            raise UpdateError(f"the manifest lacks {', '.join(missing)}, which the bundled matrix has; {keep}",
                              status)
        try:
            cache.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".incoming-", dir=str(cache)))
        except OSError as e:
            raise UpdateError(f"cannot write the cache directory {cache}: {e.strerror or e} (set "
                              f"ENVDOCTOR_CACHE_DIR to a writable one); {keep}", status) from None
        try:
            for name, meta in sorted(manifest["files"].items()):
                data = _get(session, urljoin(url, name), timeout_s, name, keep, deadline)
                digest = hashlib.sha256(data).hexdigest()
                if digest != meta["sha256"].lower():
                    raise UpdateError(f"{name}: sha256 {digest[:16]}... does not match the manifest's "
                                      f"{meta['sha256'][:16]}... (corrupted or tampered download); {keep}", status)
                try:
                    (tmp / name).write_bytes(data)
                except OSError as e:
                    raise UpdateError(f"cannot write {tmp / name}: {e.strerror or e}; {keep}", status) from None
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            try:
                candidate = load_compat(tmp)  # the same validation the bundled matrix passes
            except CompatDataError as e:
                raise UpdateError(f"the downloaded matrix fails validation: {e}; {keep}", status) from None
            if not newer(candidate.as_of, compat.as_of):
                raise UpdateError(f"the downloaded files are dated {candidate.as_of}, not newer than the {label} "
                                  f"(the manifest claimed {manifest['as_of']}); {keep}", status)
            final = cache / f"data-{_safe(manifest['version'])}-{tmp.name.rsplit('-', 1)[-1]}"
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    try:
        _point_to(cache, final, url)
    except OSError as e:
        shutil.rmtree(final, ignore_errors=True)
        raise UpdateError(f"cannot write {cache / POINTER}: {e.strerror or e}; {keep}", status) from None
    clear_cache()
    payload = {"updated": True, "version": manifest["version"], "as_of": manifest["as_of"],
               "directory": str(final), "files": len(manifest["files"]), "previous": status}
    return payload, (f"Installed matrix {manifest['version']} (as of {manifest['as_of']}) into {final}; "
                     f"it replaces the {label}.")


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in text)[:64]


def _point_to(cache: Path, final: Path, url: str) -> None:
    """Switch current.json to ``final`` atomically, then remove the updates it no longer names."""
    pointer = {"dir": final.name, "url": url,
               "installed_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()}
    fd, tmp_name = tempfile.mkstemp(prefix=".current-", dir=str(cache))
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(pointer, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp_name, cache / POINTER)
    for old in cache.glob("data-*"):
        if old.is_dir() and old != final:
            shutil.rmtree(old, ignore_errors=True)


def offline_status(cache: Optional[Path] = None) -> Tuple[Dict[str, Any], str]:
    """Which matrix is in use and why (no network)."""
    from ..compat import active_choice

    cache = cache or cache_dir()
    compat, why_not = active_choice()
    upd = installed_update(cache)
    payload = {"in_use": compat.label, "as_of": compat.as_of, "cache": str(cache),
               "installed_update": ({"version": upd.version, "as_of": upd.as_of, "url": upd.url,
                                     "directory": str(upd.directory)} if upd else None),
               "update_not_used_because": why_not}
    text = f"In use: the {describe(compat)}."
    if upd is None:
        text += f" No update installed in {cache}."
    elif why_not:
        text += f" Not using the installed update: {why_not}."
    return payload, text
