"""The README's category table is the catalogue's: every category, in order, with its meaning and fix."""

from __future__ import annotations

import importlib.util
import re

from envdoctor.model.catalogue import CATEGORIES
from tests.paths import REPO

REPO = REPO
spec = importlib.util.spec_from_file_location("readme_categories", REPO / "scripts" / "readme_categories.py")
assert spec is not None and spec.loader is not None
readme_categories = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_categories)


def test_readme_category_table_is_generated_from_the_catalogue():
    _, current, _ = readme_categories.split_readme((REPO / "README.md").read_text(encoding="utf-8"))
    assert current == readme_categories.table(), "run: python scripts/readme_categories.py"


def test_table_has_every_category_once_in_catalogue_order():
    names = re.findall(r"^\| `([A-Z_]+)` \|", readme_categories.table(), re.M)
    assert names == list(CATEGORIES)
