"""`envdoctor explain` as a call: a category, check id, finding code or action in, the lines that explain it out.

Everything it knows comes from the check registry's declarations (``checks.catalog``); the compat data is loaded
only for a signature's code. The command line fits the lines to the terminal and prints them.
"""

from __future__ import annotations

from typing import List


class ExplainError(ValueError):
    """A code envdoctor does not know: the CLI's exit 2, with what it does know."""


def explain(code: str) -> List[str]:
    from ..checks.catalog import UnknownCode, explain_lines
    from ..compat import active_compat

    try:
        return explain_lines(code, active_compat)  # compat is loaded only for a signature code
    except UnknownCode as e:
        raise ExplainError(str(e)) from None
