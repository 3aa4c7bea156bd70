"""The interpreter's own plumbing: its site-packages, whether pip can run in it, and what the executable lines of
its .pth files do to sys.path (re-run as site.py runs them at start-up, in a child started with -S)."""

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

from .common import _exc_text

REPLAY_TIMEOUT_S = 10.0
MAX_LINES = 50

# Run in `python -S` (no site processing yet): site.py's own steps, in the order site.main() takes them (the venv's
# pyvenv.cfg, the user site, the site-packages), with its `exec` of each "import" line of a .pth file wrapped so
# that sys.path is compared before and after that line. The code each line runs is what this interpreter runs at
# every start anyway; sitecustomize is not run (it is not a .pth line).
_REPLAY = r'''
import builtins, json, os, site, sys
current = [None]
done = {}
lines = []
def addpackage(sitedir, name, known_paths):
    current[0] = os.path.join(sitedir, name)
    return _addpackage(sitedir, name, known_paths)
def _exec(line, *args):
    path = current[0]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(65536).splitlines()
    except (OSError, TypeError):
        text = []
    start = done.get(path, 0)
    # (a venv's site-packages is processed twice at start-up, by site.venv() and by site.main(): from the top again)
    no = next((k + 1 for k in list(range(start, len(text))) + list(range(start)) if text[k].rstrip() == line.rstrip()), 0)
    done[path] = no or start
    before = list(sys.path)
    error = None
    try:
        builtins.exec(line, *args)
    except BaseException as e:
        error = "%s: %s" % (type(e).__name__, e)
    if len(lines) < %(max)d:
        lines.append({"file": path, "line_no": no, "line": line.rstrip()[:500], "before": before,
                      "after": list(sys.path), "error": error,
                      "file_lines": sum(1 for t in text if t.strip() and not t.startswith("#"))})
    if error is not None:
        raise RuntimeError(error)  # as site.addpackage sees it: it reports the file and goes on
_addpackage = site.addpackage
site.addpackage = addpackage
site.exec = _exec
try:
    known = site.removeduppaths()
    known = site.venv(known)
    if site.ENABLE_USER_SITE is None:
        site.ENABLE_USER_SITE = site.check_enableusersite()
    known = site.addusersitepackages(known)
    site.addsitepackages(known)
    own = site.getsitepackages()
    err = None
except Exception as e:
    own, err = [], "%s: %s" % (type(e).__name__, e)
sys.__stdout__.write(json.dumps({"lines": lines, "sys_path": list(sys.path), "site_packages": own, "error": err}))
'''.replace("%(max)d", str(MAX_LINES))


def site_packages() -> Optional[List[str]]:
    import site

    try:
        return [str(p) for p in site.getsitepackages()]
    except Exception:  # virtualenv < 20 has no getsitepackages()
        return None


def has_module(name: str) -> Optional[bool]:
    """Whether ``name`` is importable here, found without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return None


def _has_exec_line(sitedirs: List[str]) -> bool:
    for d in sitedirs:
        try:
            names = [n for n in os.listdir(d) if n.endswith(".pth")]
        except OSError:
            continue
        for n in names:
            try:
                with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
                    if any(ln.startswith(("import ", "import\t")) for ln in f.read(65536).splitlines()):
                        return True
            except OSError:
                continue
    return False


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path or ".")))


def _is_site_dir(path: str) -> bool:
    base = os.path.basename(os.path.normpath(path))
    if base in ("site-packages", "dist-packages"):
        return True
    try:
        return any(n.endswith(".dist-info") for n in os.listdir(path)[:2000])
    except OSError:
        return False


class Replay:
    """The replay child, started early (start_pth_replay) and read late (finish_pth_replay): it runs while the
    payload reads files and imports torch, so that its interpreter start-up (a tenth of a second or more) is not
    waited for on its own."""

    def __init__(self, proc: Any, started: float) -> None:
        self.proc = proc
        self.started = started


def start_pth_replay(errors: List[str]) -> Any:
    """[] when no .pth file of this interpreter has an executable line (nothing to replay), a Replay when the
    child was started, None when it could not be (said in ``errors``)."""
    import site
    import time

    own = site_packages() or []
    user = None
    try:
        if getattr(site, "ENABLE_USER_SITE", False):
            user = site.getusersitepackages()
    except Exception:
        user = None
    if not _has_exec_line(own + ([user] if user else [])):
        return []
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-c", _REPLAY], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    except (OSError, ValueError) as e:
        errors.append(f".pth replay: {_exc_text(e)}")
        return None
    return Replay(proc, time.monotonic())


def finish_pth_replay(replay: Any, errors: List[str]) -> Optional[List[Dict[str, Any]]]:
    """Each executable .pth line of this interpreter's site directories with the sys.path entries it added and
    where they ended up: [] when there is none, None when the replay failed (said in ``errors``)."""
    import time

    if not isinstance(replay, Replay):
        return replay
    left = max(0.5, REPLAY_TIMEOUT_S - (time.monotonic() - replay.started))
    try:
        stdout, stderr = replay.proc.communicate(timeout=left)
    except subprocess.TimeoutExpired:
        replay.proc.kill()
        replay.proc.communicate()
        errors.append(f".pth replay: timed out after {REPLAY_TIMEOUT_S:g} s")
        return None
    try:
        data = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (stderr.strip().splitlines() or ["no output"])[-1][:200]
        errors.append(f".pth replay printed no JSON (exit {replay.proc.returncode}): {tail}")
        return None
    if data.get("error"):
        errors.append(f".pth replay: {data['error']}")
    final = [_norm(p) for p in sys.path]  # this process's: the replay runs the same steps
    own_n = [_norm(p) for p in (data.get("site_packages") or site_packages() or [])]
    own_index = min((final.index(p) for p in own_n if p in final), default=None)
    out: List[Dict[str, Any]] = []
    by_line: Dict[Any, Dict[str, Any]] = {}
    for ln in data.get("lines") or []:
        before = set(_norm(p) for p in ln.get("before") or [])
        key = (ln.get("file"), ln.get("line_no"))
        rec = by_line.get(key)
        added = rec["added"] if rec is not None else []
        before.update(_norm(a["path"]) for a in added)
        for p in ln.get("after") or []:
            n = _norm(p)
            if n in before or n in own_n:
                continue
            before.add(n)
            index = final.index(n) if n in final else None
            added.append({"path": p, "index": index,
                          "before_own_site": None if index is None or own_index is None else index < own_index,
                          "site_packages": _is_site_dir(p),
                          "holds_torch": os.path.isfile(os.path.join(p, "torch", "__init__.py"))})
        if rec is None:  # the same line run again (the second pass over a venv's site-packages): one record
            by_line[key] = {"file": ln.get("file"), "line_no": ln.get("line_no") or 0, "line": ln.get("line") or "",
                            "file_lines": ln.get("file_lines"), "added": added, "error": ln.get("error")}
            out.append(by_line[key])
    return out


def pth_exec(errors: List[str]) -> Optional[List[Dict[str, Any]]]:
    """start_pth_replay and finish_pth_replay at once."""
    return finish_pth_replay(start_pth_replay(errors), errors)
