"""One audit hook (PEP 578) for the purity tests: while `forbidden()` is on, files, processes and sockets raise.

An audit hook sees every open() (builtins, io, os.open, pathlib, imports from source), directory listing,
process start and socket call, whatever wraps it, so a check cannot slip past it the way it slips past a
patched builtins.open. Hooks cannot be removed once added: this one is added once per process and acts only
while the flag that `forbidden()` sets is on. Metadata calls (os.stat, os.lstat, os.access: Path.exists,
os.path.isfile) raise no audit event, so `forbidden()` also swaps those three for the same refusal.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

from tests.paths import FIXTURES, SHARED

SHARED_EXAMPLES = SHARED / "examples"

# audit events (https://docs.python.org/3/library/audit_events.html) that touch the machine
_EVENTS = ("open", "os.listdir", "os.scandir", "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg",
           "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.link",
           "os.symlink", "os.utime", "os.chdir", "glob.glob", "shutil.copyfile", "shutil.rmtree", "ctypes.dlopen",
           "urllib.Request", "pty.spawn")
_PREFIXES = ("subprocess.", "socket.", "os.exec", "os.spawn", "os.posix_spawn", "http.client.")
_STATE: Dict[str, Any] = {"active": 0, "installed": False}
SEEN: List[str] = []  # what was refused, "event args", oldest first


def _importing() -> bool:
    """Whether the import system is on the stack: a module imported for the first time inside a check (the
    standard library's lazy ones too: datetime.strptime imports _strptime) opens its source, which is loading
    code, as preload() says, not the check's I/O. Without this the file's tests failed when run alone, where no
    earlier test had imported those modules."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _hook(event: str, args: tuple) -> None:
    if _STATE["active"] and (event in _EVENTS or event.startswith(_PREFIXES)) and not (
            event == "open" and _importing()):
        SEEN.append(f"{event} {args[:2]!r}")
        raise PermissionError(f"checks do no I/O: {event}")


def preload() -> None:
    """Import every envdoctor module now: a lazy import inside a check reads its source file, which is
    loading code rather than the check's own I/O (only envdoctor's process imports; payloads run elsewhere)."""
    import importlib
    import pkgutil

    import envdoctor

    for mod in pkgutil.walk_packages(envdoctor.__path__, "envdoctor."):
        if mod.name.split(".")[-1] in ("__main__", "_preflight") or mod.name.startswith("envdoctor._payload"):
            continue
        importlib.import_module(mod.name)


def install() -> None:
    if not _STATE["installed"]:
        preload()
        sys.addaudithook(_hook)
        _STATE["installed"] = True


def _refuse(name: str) -> Callable[..., Any]:
    def refused(*args: Any, **_kw: Any) -> Any:
        SEEN.append(f"{name} {args[:1]!r}")
        raise PermissionError(f"checks do no I/O: {name}")
    return refused


@contextlib.contextmanager
def forbidden() -> Iterator[None]:
    """Refuse file, directory, process and socket access (and stat) while the block runs."""
    install()
    saved = {name: getattr(os, name) for name in ("stat", "lstat", "access")}
    for name in saved:
        setattr(os, name, _refuse(f"os.{name}"))
    _STATE["active"] += 1
    try:
        yield
    finally:
        _STATE["active"] -= 1
        for name, fn in saved.items():
            setattr(os, name, fn)


def guarded(fn: Callable[..., Any], counter: Dict[str, int]) -> Callable[..., Any]:
    """``fn`` run under `forbidden()`, counting its calls in ``counter["runs"]``."""
    def run(*args: Any, **kwargs: Any) -> Any:
        counter["runs"] = counter.get("runs", 0) + 1
        with forbidden():
            return fn(*args, **kwargs)
    return run


def snapshots() -> List[Tuple[str, Any]]:
    """Every snapshot in the repository: tests/fixtures/snapshots/*.json, every zero-argument builder in
    tests/machines.py (what scripts/json_golden.py runs too), and an empty one (nothing probed)."""
    from envdoctor.model.facts import Facts
    from tests import machines

    out: List[Tuple[str, Any]] = [("empty", Facts())]
    for path in sorted((FIXTURES / "snapshots").glob("*.json")):
        out.append((f"snapshot:{path.stem}", Facts.from_json(path.read_text(encoding="utf-8"))))
    for name, fn in sorted(vars(machines).items()):
        if (inspect.isfunction(fn) and fn.__module__ == machines.__name__ and not name.startswith("_")
                and not inspect.signature(fn).parameters):
            facts = fn()
            if isinstance(facts, Facts):
                out.append((f"machine:{name}", facts))
    return out


def pastes() -> List[Path]:
    """Every paste in the repository: the fixtures' text captures and ../shared/examples/reports*/*.txt."""
    out = sorted(FIXTURES.rglob("*.txt"))
    out += sorted(SHARED_EXAMPLES.glob("reports*/*.txt"))
    return out
