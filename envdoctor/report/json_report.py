"""The JSON renderer: the report's documented, versioned contract (docs/json-schema.md)."""

from __future__ import annotations

import json

from ..domain.safe_text import escape_json_surrogates
from ..model.findings import Report
from .redact import redact_facts_dict


def render_json(report: Report, redact: bool = False) -> str:
    """``report.to_dict()`` as indented JSON with sorted keys; redacted when ``redact`` is true. A lone surrogate
    (a path's non-UTF-8 byte) is written out as ``\\xe9`` text (domain/safe_text.py)."""
    data = report.to_dict()
    if redact:
        data = redact_facts_dict(data)
    return escape_json_surrogates(json.dumps(data, sort_keys=True, indent=2))
