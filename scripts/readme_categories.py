"""The README's category table, generated from the catalogue (envdoctor/model/catalogue.py).

    python scripts/readme_categories.py          # rewrite the table in README.md
    python scripts/readme_categories.py --check  # exit 1 if README.md's table is not the generated one

tests/unit/test_readme_categories.py runs the check, so a category, meaning, fix or check added without the table
following fails the suite. Which checks report a category is not in the table: `envdoctor list-checks` prints
it, so a new check of an existing category costs no README edit (the check and its test: two files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Tuple

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
HEADER = "| category | what it means | usual fix |"


def table() -> str:
    """The Markdown table, one row per catalogue category in catalogue order."""
    sys.path.insert(0, str(REPO))
    from envdoctor.model.catalogue import CATEGORIES

    lines = [HEADER, "|---|---|---|"]
    for name, cat in CATEGORIES.items():
        cells = [f"`{name}`", cat.meaning, cat.fix]
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
