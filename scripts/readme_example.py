#!/usr/bin/env python3
"""The README's "Example output": a real run, saved as a snapshot, rendered by the current console renderer.

    python scripts/readme_example.py --python /path/to/venv/bin/python   # probe this machine, rewrite both
    python scripts/readme_example.py --check                              # the README matches the snapshot

The run's facts are redacted (host names, home paths) and saved in docs/readme-example-facts.json; the README
block between the markers is the console report of that snapshot at 100 columns. tests/unit/test_readme_example.py
re-renders it, so a change to the renderer, the checks or the compat data that changes the output fails until
this script is rerun: the example cannot go stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

README = ROOT / "README.md"
SNAPSHOT = ROOT / "docs" / "readme-example-facts.json"
BEGIN = "<!-- readme-example: begin (scripts/readme_example.py writes this block) -->"
END = "<!-- readme-example: end -->"
WIDTH = 100


def render(facts_json: str) -> str:
    from envdoctor.model.facts import Facts
    from envdoctor.report.console import render_console
    from envdoctor.services.collect import judge

    return render_console(judge(Facts.from_json(facts_json)), color=False, width=WIDTH)


def block(text: str) -> str:
    return f"{BEGIN}\n```text\n{text.rstrip()}\n```\n{END}"


def current_block(readme: str) -> str:
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < 0:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    return readme[start:end + len(END)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", help="the interpreter to judge for a fresh snapshot")
    ap.add_argument("--check", action="store_true", help="exit 1 when the README block is not the rendering")
    args = ap.parse_args()
    readme = README.read_text(encoding="utf-8")
    if args.python:
        from envdoctor.report.redact import redact_facts_dict
        from envdoctor.services.collect import CollectOptions, collect

        facts = collect(CollectOptions(pythons=[args.python]))
        SNAPSHOT.write_text(json.dumps(redact_facts_dict(facts.to_dict()), indent=2, sort_keys=True) + "\n",
                            encoding="utf-8")
    expected = block(render(SNAPSHOT.read_text(encoding="utf-8")))
    if args.check:
        if current_block(readme) != expected:
            print("README.md's example output is stale: run scripts/readme_example.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(readme.replace(current_block(readme), expected), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
