"""The README's category table, generated from the catalogue, the registered checks and the error signatures.

    python scripts/readme_categories.py          # rewrite the table in README.md
    python scripts/readme_categories.py --check  # exit 1 if README.md's table is not the generated one

tests/unit/test_readme_categories.py runs the check, so a category, meaning, fix or check added without the table
following fails the suite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
HEADER = "| category | what it means | usual fix | reported by |"
SIGNATURES_CHECK = "messages.signatures"  # declares every category; it reports those its signature rows name


def _reported_by() -> Dict[str, List[str]]:
    sys.path.insert(0, str(REPO))
    from envdoctor.checks import all_checks

    by: Dict[str, List[str]] = {}
    for c in all_checks():
        if c.id == SIGNATURES_CHECK:
            continue
        for cat in c.categories:
            by.setdefault(cat, []).append(c.id)
    rows = json.loads((REPO / "compat_data" / "error_signatures.json").read_text())["rows"]
    signed = {r["category"] for r in rows}
    # sorted: the table does not change when checks move between modules; the paste matcher last
    return {cat: sorted(by.get(cat, [])) + ([SIGNATURES_CHECK] if cat in signed else [])
            for cat in set(by) | signed}


def table() -> str:
    """The Markdown table, one row per catalogue category in catalogue order."""
    sys.path.insert(0, str(REPO))
    from envdoctor.catalogue import CATEGORIES

    by = _reported_by()
    lines = [HEADER, "|---|---|---|---|"]
    for name, cat in CATEGORIES.items():
        # NOTE is the category of every info finding: no check declares it
        reporters = ", ".join(by.get(name, [])) or "any check (its info findings)"
        cells = [f"`{name}`", cat.meaning, cat.fix, reporters]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def split_readme(text: str) -> Tuple[str, str, str]:
    """(before the table, the table, after it)."""
    start = text.index(HEADER)
    end = text.find("\n\n", start)
    end = len(text) if end < 0 else end
    return text[:start], text[start:end], text[end:]


def main(argv: List[str]) -> int:
    text = README.read_text(encoding="utf-8")
    before, current, after = split_readme(text)
    wanted = table()
    if "--check" in argv:
        if current != wanted:
            print("README.md's category table is not the generated one: run python scripts/readme_categories.py")
            return 1
        return 0
    if current != wanted:
        README.write_text(before + wanted + after, encoding="utf-8")
        print("README.md: category table regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
