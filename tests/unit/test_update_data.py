"""envdoctor update-data against manifests served on loopback (127.0.0.1 only): a good update and the bad cases,
each of which leaves the previous matrix in use and says why."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, Union

import pytest

pytest.importorskip("requests")

from envdoctor.compat import active_choice, bundled_dir, clear_cache  # noqa: E402
from envdoctor.compat.datadir import installed_update  # noqa: E402
from envdoctor.services.update_data import UpdateError, build_manifest, update_from_url  # noqa: E402

NEWER = "2030-01-01"

Body = Union[bytes, Callable[[], bytes]]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        # a client that gave up (the timeout test) leaves the handler writing to a closed socket: expected,
        # and socketserver would print its traceback into the test log
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Trickle:
    """A body sent one byte every ``every_s`` seconds (a stalled mirror, a broken proxy), until ``stop``."""

    def __init__(self, data: bytes, every_s: float) -> None:
        self.data, self.every_s, self.stop = data, every_s, threading.Event()


class _Server:
    def __init__(self) -> None:
        self.files: Dict[str, Body] = {}
        handler = self._handler()
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                body = server.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                if isinstance(body, _Trickle):
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body.data)))
                    self.end_headers()
                    for i in range(len(body.data)):  # bounded: the body's length, and stops when told
                        if body.stop.wait(body.every_s):
                            return
                        self.wfile.write(body.data[i:i + 1])
                        self.wfile.flush()
                    return
                data = body() if callable(body) else body
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet
                pass

        return Handler

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def publish(self, directory: Path, prefix: str = "") -> None:
        for p in directory.iterdir():
            self.files[prefix + p.name] = p.read_bytes()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(d))
    clear_cache()
    yield d
    clear_cache()


def _matrix(tmp_path: Path, as_of: str = NEWER, name: str = "src", edit=None) -> Path:
    """A copy of the bundled matrix with cuda_driver.json dated ``as_of`` (and an optional edit)."""
    src = tmp_path / name
    shutil.copytree(bundled_dir(), src, ignore=shutil.ignore_patterns("*.md"))
    doc = json.loads((src / "cuda_driver.json").read_text(encoding="utf-8"))
    doc["as_of"] = as_of
    if edit:
        edit(doc)
    (src / "cuda_driver.json").write_text(json.dumps(doc), encoding="utf-8")
    return src


def _published(tmp_path: Path, version: str, as_of: str = NEWER, edit=None, name: str = "pub") -> Path:
    out = tmp_path / name
    src = _matrix(tmp_path, as_of, f"src-{name}", edit)
    if edit:  # the builder refuses a broken matrix, so write the manifest by hand over the broken files
        out.mkdir()
        files = {}
        for p in sorted(src.glob("*.json")):
            (out / p.name).write_bytes(p.read_bytes())
            files[p.name] = {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "size": p.stat().st_size}
        (out / "manifest.json").write_text(json.dumps({"format": 1, "version": version, "as_of": as_of,
                                                       "files": files}))
    else:
        build_manifest(src, out, version)
    return out


def _in_use():
    clear_cache()
    compat, why_not = active_choice()
    return compat, why_not


def test_good_update_is_installed_and_used(tmp_path, server, cache) -> None:
    server.publish(_published(tmp_path, "2030.01.01"))
    payload, text = update_from_url(server.url("manifest.json"), timeout_s=10)
    assert payload["updated"] is True and payload["as_of"] == NEWER
    assert "Installed matrix 2030.01.01" in text and "replaces the bundled matrix" in text
    compat, why_not = _in_use()
    assert compat.as_of == NEWER and compat.label.startswith("update 2030.01.01") and why_not is None
    upd = installed_update(cache)
    assert upd is not None and upd.version == "2030.01.01" and (upd.directory / "cuda_driver.json").is_file()
    assert [p.name for p in cache.iterdir() if not p.name.startswith("data-")] == ["current.json"]
    # --version and report headers say which data is in use
    env = dict(os.environ, ENVDOCTOR_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-m", "envdoctor", "--version"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert f"compat matrix as of {NEWER} (update 2030.01.01" in out.stdout
    out = subprocess.run([sys.executable, "-m", "envdoctor", "matrix", "min-driver", "12.4", "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(out.stdout)["compat_data"].startswith("update 2030.01.01")
    # a second run with the same manifest installs nothing and says so
    payload, text = update_from_url(server.url("manifest.json"), timeout_s=10)
    assert payload["updated"] is False and "not newer" in text


def _assert_unchanged(before_label: str, before_as_of: str) -> None:
    compat, _ = _in_use()
    assert (compat.label, compat.as_of) == (before_label, before_as_of)


@pytest.fixture()
def installed(tmp_path, server, cache):
    """A good update already in use, so each bad case shows that it stays in use."""
    server.publish(_published(tmp_path, "2030.01.01", name="first"), prefix="first/")
    update_from_url(server.url("first/manifest.json"), timeout_s=10)
    compat, _ = _in_use()
    return compat.label, compat.as_of


def test_corrupted_file_is_refused(tmp_path, server, installed) -> None:
    pub = _published(tmp_path, "2030.02.01", as_of="2030-02-01")
    server.publish(pub)
    server.files["gpus.json"] = server.files["gpus.json"][:-100]  # truncated in transit
    with pytest.raises(UpdateError, match=r"gpus.json: sha256 .* does not match .*still using the matrix update"):
        update_from_url(server.url("manifest.json"), timeout_s=10)
    _assert_unchanged(*installed)


def test_wrong_hash_is_refused(tmp_path, server, installed) -> None:
    pub = _published(tmp_path, "2030.02.01", as_of="2030-02-01")
    manifest = json.loads((pub / "manifest.json").read_text())
    manifest["files"]["torch.json"]["sha256"] = "0" * 64
    (pub / "manifest.json").write_text(json.dumps(manifest))
    server.publish(pub)
    with pytest.raises(UpdateError, match="torch.json: sha256"):
        update_from_url(server.url("manifest.json"), timeout_s=10)
    _assert_unchanged(*installed)


def test_timeout_is_refused(tmp_path, server, installed) -> None:
    pub = _published(tmp_path, "2030.02.01", as_of="2030-02-01")
    server.publish(pub)
    stall = threading.Event()

    def slow() -> bytes:
        stall.wait(5)  # longer than the client waits
        return b"{}"

    server.files["manifest.json"] = slow
    try:
        with pytest.raises(UpdateError, match=r"(no answer from .* within|did not finish within the --timeout of) 0.5 s"):
            update_from_url(server.url("manifest.json"), timeout_s=0.5)
    finally:
        stall.set()
    _assert_unchanged(*installed)


def test_timeout_bounds_the_whole_download_of_a_trickling_server(tmp_path, server, installed) -> None:
    pub = _published(tmp_path, "2030.02.01", as_of="2030-02-01")
    server.publish(pub)
    trickle = _Trickle((pub / "manifest.json").read_bytes(), every_s=0.25)  # each read within the timeout
    server.files["manifest.json"] = trickle
    try:  # without the whole-download bound the trickle completes (len(manifest) x 0.25 s) and nothing is raised
        with pytest.raises(UpdateError, match=r"did not finish within the --timeout of 1 s"):
            update_from_url(server.url("manifest.json"), timeout_s=1)
    finally:
        trickle.stop.set()
    _assert_unchanged(*installed)


def test_older_manifest_installs_nothing(tmp_path, server, installed) -> None:
    server.publish(_published(tmp_path, "2029.01.01", as_of="2029-01-01"))
    payload, text = update_from_url(server.url("manifest.json"), timeout_s=10)
    assert payload["updated"] is False and "not newer than the matrix update 2030.01.01" in text
    _assert_unchanged(*installed)


def _drop_source(doc):
    del doc["rows"][0]["source"]


def _bad_branch(doc):  # passes the generic rule; the typed rows refuse it
    doc["driver_branches"][0]["branch"] = "R450"


@pytest.mark.parametrize("edit, says", [
    (_drop_source, r"cuda_driver.json: rows\[0\] has no source"),
    (_bad_branch, r"cuda_driver.json: driver_branches\[0\] \(branch R450\): branch = 'R450' is not an integer"),
], ids=["generic-rule", "typed-row"])
def test_matrix_failing_validation_is_refused(tmp_path, server, installed, edit, says) -> None:
    server.publish(_published(tmp_path, "2030.02.01", as_of="2030-02-01", edit=edit))
    with pytest.raises(UpdateError, match=r"fails validation: " + says):
        update_from_url(server.url("manifest.json"), timeout_s=10)
    _assert_unchanged(*installed)
    assert not [p for p in installed_update().directory.parent.iterdir() if p.name.startswith(".incoming")]


def test_invalid_manifest_is_refused(tmp_path, server, cache) -> None:
    server.files["manifest.json"] = json.dumps({"format": 1, "version": "x", "files": {}}).encode()
    with pytest.raises(UpdateError, match="manifest .* is invalid: the manifest has no 'as_of'; still using the "
                                          "bundled matrix"):
        update_from_url(server.url("manifest.json"), timeout_s=10)
    server.files["manifest.json"] = b"<html>not json</html>"
    with pytest.raises(UpdateError, match="is not JSON"):
        update_from_url(server.url("manifest.json"), timeout_s=10)
    with pytest.raises(UpdateError, match="HTTP 404"):
        update_from_url(server.url("missing.json"), timeout_s=10)
    assert _in_use()[0].label == "bundled" and installed_update(cache) is None


def test_a_cached_update_not_newer_than_bundled_is_not_used(tmp_path, server, cache) -> None:
    server.publish(_published(tmp_path, "2030.01.01"))
    update_from_url(server.url("manifest.json"), timeout_s=10)
    upd = installed_update(cache)
    # the bundled matrix moved past it (envdoctor was upgraded): the bundled one is used again, with the reason
    manifest = json.loads((upd.directory / "MANIFEST").read_text())
    manifest["as_of"] = "2000-01-01"
    (upd.directory / "MANIFEST").write_text(json.dumps(manifest))
    compat, why_not = _in_use()
    assert compat.label == "bundled" and "not newer than the bundled matrix" in why_not


def test_cli_update_data_offline_and_failure_exit_codes(tmp_path, server, cache) -> None:
    env = dict(os.environ, ENVDOCTOR_CACHE_DIR=str(cache))
    env.pop("ENVDOCTOR_DATA_URL", None)
    run = lambda *a: subprocess.run([sys.executable, "-m", "envdoctor", "update-data", *a],  # noqa: E731
                                    capture_output=True, text=True, env=env, timeout=60)
    off = run("--offline")
    assert off.returncode == 0 and "In use: the bundled matrix" in off.stdout
    none = run()
    assert none.returncode == 2 and "needs a manifest URL" in none.stderr
    bad = run("--url", server.url("missing.json"))
    assert bad.returncode == 2 and "HTTP 404" in bad.stderr and "still using the bundled matrix" in bad.stderr
    server.publish(_published(tmp_path, "2030.01.01"))
    good = run("--url", server.url("manifest.json"), "--format", "json")
    assert good.returncode == 0 and json.loads(good.stdout)["updated"] is True


def test_tests_never_see_a_users_cache() -> None:
    # tests/conftest.py points the cache at a temporary directory before anything loads the matrix
    from envdoctor.compat.datadir import cache_dir

    assert "envdoctor-test-cache-" in os.environ["ENVDOCTOR_CACHE_DIR"]
    assert cache_dir() != Path.home() / ".cache" / "envdoctor"


def test_unwritable_cache_is_a_clear_refusal(tmp_path, server, monkeypatch) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(blocker / "cache"))
    clear_cache()
    server.publish(_published(tmp_path, "2030.01.01"))
    with pytest.raises(UpdateError, match="cannot write the cache directory .*ENVDOCTOR_CACHE_DIR"):
        update_from_url(server.url("manifest.json"), timeout_s=10)
    clear_cache()


def test_an_installed_update_with_a_bad_row_falls_back_to_the_bundled_matrix(installed, cache) -> None:
    # an update installed earlier (say by an envdoctor whose loader was looser) that the loader now refuses
    upd = installed_update(cache)
    path = upd.directory / "xid.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["rows"][1]["severity"] = "fatal"
    path.write_text(json.dumps(doc), encoding="utf-8")
    compat, why_not = _in_use()
    assert compat.label == "bundled"
    assert why_not and "fails validation: xid.json: rows[1]" in why_not and "severity" in why_not, why_not


def test_build_manifest_script_as_of_builds_a_manifest_update_data_installs(tmp_path, server, cache) -> None:
    """`scripts/build_manifest.py --as-of DATE` over the bundled files (all dated earlier): update-data dates a
    matrix by its files, so the copies carry DATE too, and the update installs as DATE."""
    out = tmp_path / "pub-as-of"
    script = Path(__file__).resolve().parents[2] / "scripts" / "build_manifest.py"
    proc = subprocess.run([sys.executable, str(script), str(out), "--version", "2030.02.01", "--source",
                           str(bundled_dir()), "--as-of", "2030-02-01"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["as_of"] == "2030-02-01"
    for name, meta in manifest["files"].items():
        data = (out / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == meta["sha256"] and json.loads(data)["as_of"] == "2030-02-01"
    server.publish(out)
    payload, text = update_from_url(server.url("manifest.json"), timeout_s=10)
    assert payload["updated"] is True and payload["as_of"] == "2030-02-01", text
    assert _in_use()[0].as_of == "2030-02-01"
    # an --as-of earlier than the files is refused with a message (exit 2), not a traceback
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "early"), "--version", "1", "--source",
                           str(bundled_dir()), "--as-of", "2001-01-01"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "earlier than the files' newest as_of" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_signal_ends_a_stalled_download_at_once(tmp_path, server, installed) -> None:
    # the command line's handler only records the signal (cli/signals.py): the download's wait reads the flag, or
    # a Ctrl-C would wait out the whole --timeout (PEP 475 resumes a join the handler interrupted)
    import signal

    from envdoctor.probes.runner import INTERRUPT, Interrupted

    pub = _published(tmp_path, "2030.02.01", as_of="2030-02-01")
    server.publish(pub)
    trickle = _Trickle((pub / "manifest.json").read_bytes(), every_s=0.25)
    server.files["manifest.json"] = trickle
    timer = threading.Timer(0.5, INTERRUPT.set, args=(signal.SIGINT,))
    timer.start()
    try:
        with pytest.raises(Interrupted) as e:
            update_from_url(server.url("manifest.json"), timeout_s=600)
    finally:
        timer.cancel()
        INTERRUPT.clear()
        trickle.stop.set()
    assert e.value.signum == signal.SIGINT  # without the flag read, the trickle completes and the update installs
    _assert_unchanged(*installed)
