"""`envdoctor list-checks` as a call: every registered check, in the registry's order, as data (its id, title and
categories); the command line lays them out for the terminal."""

from __future__ import annotations

from typing import Dict, List, Union


def list_checks() -> List[Dict[str, Union[str, List[str]]]]:
    from ..checks import all_checks

    return [{"id": c.id, "title": c.title, "categories": list(c.categories)} for c in all_checks()]
