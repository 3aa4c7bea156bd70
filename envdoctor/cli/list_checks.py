"""`envdoctor list-checks`: every check id, its title and its categories (services/list_checks.py lists them)."""

from __future__ import annotations

from .common import EXIT_OK, fit_text, write


def add_parsers(sub) -> None:
    sub.add_parser("list-checks", help="every check id and its categories")


def cmd_list_checks(args) -> int:
    from ..services.list_checks import list_checks

    lines = []
    for c in list_checks():
        lines.append(f"{c['id']:<28} {c['title']}")
        if c["categories"]:
            lines.append(f"{'':<28}   categories: {', '.join(c['categories'])}")
    write(fit_text("\n".join(lines)), None)
    return EXIT_OK


COMMANDS = {"list-checks": cmd_list_checks}
