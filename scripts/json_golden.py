"""Refactoring guard: the JSON reports of every repository snapshot, test machine and paste, written or compared.

    python scripts/json_golden.py write DIR     # before a refactor
    python scripts/json_golden.py compare DIR   # after: lists every input whose report changed, with the paths

Inputs: tests/fixtures/snapshots/*.json and every zero-argument builder in tests/machines.py (through
`envdoctor check --facts`), tests/fixtures/pastes/*.txt and ../shared/examples/reports*/*.txt (through
`envdoctor diagnose`). Fields that differ run to run (durations, timestamps) are dropped before comparing.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

REPO = Path(__file__).resolve().parent.parent
VOLATILE = {"duration_s", "generated_at", "collected_at_local", "elapsed_s"}


def _inputs(tmp: Path) -> Iterator[Tuple[str, List[str]]]:
    for snap in sorted((REPO / "tests/fixtures/snapshots").glob("*.json")):
        yield f"snapshot-{snap.stem}", ["check", "--facts", str(snap)]
    sys.path.insert(0, str(REPO))
    import tests.machines as machines

    for name, fn in sorted(vars(machines).items()):
        if (inspect.isfunction(fn) and fn.__module__ == machines.__name__ and not name.startswith("_")
                and not inspect.signature(fn).parameters):
            try:
                facts = fn()
            except Exception:  # a helper that is not a machine builder
                continue
            if not hasattr(facts, "to_json"):
                continue
            path = tmp / f"{name}.json"
            path.write_text(facts.to_json())
            yield f"machine-{name}", ["check", "--facts", str(path)]
    pastes = sorted((REPO / "tests/fixtures/pastes").rglob("*.txt"))
    pastes += sorted((REPO.parent / "shared/examples").glob("reports*/*.txt"))
    for p in pastes:
        yield f"paste-{p.parent.name}-{p.stem}", ["diagnose", str(p)]


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _report(argv: List[str]) -> Dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "envdoctor", *argv, "--format", "json"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    try:
        body = _strip(json.loads(proc.stdout))
    except json.JSONDecodeError:
        body = {"unparsed_stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]}
    return {"exit": proc.returncode, "report": body}


def _diff(a: Any, b: Any, path: str = "") -> List[str]:
    if type(a) is not type(b):
        return [path or "/"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k} ({'added' if k in b else 'removed'})")
            else:
                out += _diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path} (length {len(a)} -> {len(b)})"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "/"]


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "compare"):
        print(__doc__)
        return 2
    mode, out = argv[0], Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    changed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in _inputs(Path(tmp)):
            got = _report(args)
            target = out / f"{name}.json"
            if mode == "write":
                target.write_text(json.dumps(got, indent=1, sort_keys=True))
                continue
            if not target.exists():
                print(f"NEW     {name}")
                continue
            paths = _diff(json.loads(target.read_text()), got)
            if paths:
                changed += 1
                print(f"CHANGED {name}: " + ", ".join(paths[:12]) + (" ..." if len(paths) > 12 else ""))
    print(f"{mode}: done" + (f", {changed} changed" if mode == "compare" else ""))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
