#!/usr/bin/env python3
"""Precision of each message row `diagnose` used on labelled real pastes: how often it was right, how often wrong.

Issue 42 ("a wrong diagnosis is worse than none"): a row of compat_data/error_signatures.json (findings
``messages.signature/<id>`` and ``messages.signature/<id>/<category>`` for a further cause its message proves) or of
compat_data/status_codes.json (``messages.status-codes/<library>.<status>``) turns a matched message into a finding
of a category at a severity. One pass of `diagnose` over every labelled paste (the same loading and judging as
scripts/score_corpus.py) and, per finding code that fired:

- ``fired``: the pastes on which it was given; ``right``: those where its category is among the row's labels;
- ``wrongE``: those where it was an error of a category not among the labels (score_corpus.py ``--wrong-errors``
  counts the same); ``wrongW``: a warning of a problem category not among the labels;
- ``healthy``: the pastes labelled HEALTHY it was given on (any severity);
- ``sev/conf``: the severities and confidences it was given at, with their counts.

Sorted by wrong errors, then wrong warnings, then fired. ``--why`` lists the pastes where each row was wrong;
``--json FILE`` writes the whole table (with those pastes) as JSON. Usage:

    python scripts/signature_precision.py                  # the corpus and the shared examples' reports*
    python scripts/signature_precision.py --why --min-wrong 1
    python scripts/signature_precision.py tests/fixtures/corpus/wsl --json /tmp/precision.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.model.catalogue import NEUTRAL_CATEGORIES, UNRECOGNISED  # noqa: E402

_spec = importlib.util.spec_from_file_location("score_corpus", Path(__file__).with_name("score_corpus.py"))
assert _spec is not None and _spec.loader is not None
score_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(score_corpus)

DEFAULT_GLOBS = ("tests/fixtures/corpus/*/labels.json", "../shared/examples/reports*/labels.json")
TABLES = {"messages.signature/": "signature", "messages.status-codes/": "status"}

# one finding as the tally reads it: (category, severity, code, confidence)
Found = Tuple[str, str, str, str]


def table_of(code: str) -> Optional[str]:
    """``signature`` or ``status`` for a finding code a message row gives, None for any other check's."""
    for prefix, table in TABLES.items():
        if code.startswith(prefix):
            return table
    return None


@dataclass
class RowTally:
    code: str
    table: str
    fired: int = 0
    right: int = 0
    wrong_errors: int = 0
    wrong_warnings: int = 0
    healthy: int = 0
    categories: Counter = field(default_factory=Counter)
    given: Counter = field(default_factory=Counter)  # "severity/confidence" -> pastes
    wrong_on: List[str] = field(default_factory=list)  # "folder/id: labels; root_cause"

    @property
    def wrong(self) -> int:
        return self.wrong_errors + self.wrong_warnings

    def as_dict(self) -> Dict:
        return {"code": self.code, "table": self.table, "fired": self.fired, "right": self.right,
                "wrong_errors": self.wrong_errors, "wrong_warnings": self.wrong_warnings, "healthy": self.healthy,
                "categories": dict(self.categories), "given": dict(self.given), "wrong_on": self.wrong_on}


def tally(rows: Iterable[Tuple[dict, str, Sequence[Found]]]) -> Dict[str, RowTally]:
    """Per finding code of a message row: the counts above, from (labelled row, its name, the paste's findings).

    A code given twice on one paste (two machines of a paste) counts once, with its most serious finding."""
    out: Dict[str, RowTally] = {}
    rank = {"error": 3, "warning": 2, "info": 1}
    for row, name, found in rows:
        labels = set(row["labels"])
        best: Dict[str, Found] = {}
        for f in found:
            table = table_of(f[2])
            if table is None:
                continue
            if f[2] not in best or rank.get(f[1], 0) > rank.get(best[f[2]][1], 0):
                best[f[2]] = f
        for code, (category, severity, _code, confidence) in best.items():
            t = out.setdefault(code, RowTally(code, table_of(code) or ""))
            t.fired += 1
            t.categories[category] += 1
            t.given[f"{severity}/{confidence or '-'}"] += 1
            if "HEALTHY" in labels:
                t.healthy += 1
            if category in labels:
                t.right += 1
                continue
            if severity == "error":
                t.wrong_errors += 1
            elif severity == "warning" and category not in NEUTRAL_CATEGORIES and category != UNRECOGNISED:
                t.wrong_warnings += 1
            else:
                continue
            t.wrong_on.append(f"{name}: {sorted(labels)} got {category} ({severity}); "
                              f"root cause: {str(row.get('root_cause', ''))[:160]}")
    return out


def ordered(tallies: Dict[str, RowTally]) -> List[RowTally]:
    return sorted(tallies.values(), key=lambda t: (-t.wrong_errors, -t.wrong_warnings, -t.fired, t.code))


def labelled(folders: List[Path]) -> Iterable[Tuple[dict, str, str]]:
    """(labelled row, "folder/id", pasted text) for every row of the folders."""
    for folder in folders:
        for row in json.loads((folder / "labels.json").read_text(encoding="utf-8")):
            text = (folder / f"{row['id']}.txt").read_text(encoding="utf-8", errors="replace")
            yield row, f"{folder.name}/{row['id']}", text


def run(folders: List[Path], compat,
        findings_of: Optional[Callable[[str, object], list]] = None) -> Dict[str, RowTally]:
    """One `diagnose` per paste (score_corpus.paste_findings unless ``findings_of`` is given), tallied."""
    findings_of = findings_of or score_corpus.paste_findings

    def each() -> Iterable[Tuple[dict, str, List[Found]]]:
        for row, name, text in labelled(folders):
            yield row, name, [(f.category, f.severity, f.code, f.confidence or "") for f in findings_of(text, compat)]

    return tally(each())


def render(tallies: List[RowTally], why: bool) -> str:
    width = max([len(t.code) for t in tallies] + [4])
    lines = [f"{'code':<{width}}  fired  right  wrongE  wrongW  healthy  sev/conf"]
    for t in tallies:
        given = " ".join(f"{k}:{n}" for k, n in sorted(t.given.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"{t.code:<{width}}  {t.fired:>5}  {t.right:>5}  {t.wrong_errors:>6}  {t.wrong_warnings:>6}  "
                     f"{t.healthy:>7}  {given}")
        if why:
            lines.extend(f"    {w}" for w in t.wrong_on)
    fired = sum(t.fired for t in tallies)
    lines.append(f"rows fired: {len(tallies)}; findings: {fired}; right: {sum(t.right for t in tallies)}; "
                 f"wrong errors: {sum(t.wrong_errors for t in tallies)}; wrong warnings: "
                 f"{sum(t.wrong_warnings for t in tallies)}; on HEALTHY rows: {sum(t.healthy for t in tallies)}")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", help="labelled folders (default: the corpus and ../shared/examples/reports*)")
    ap.add_argument("--json", metavar="FILE", help="write the table to FILE (a new .json file)")
    ap.add_argument("--why", action="store_true", help="list the pastes where each row was wrong")
    ap.add_argument("--min-wrong", type=int, default=0, help="print only rows wrong at least this often")
    opts = ap.parse_args(argv)
    if opts.json and (Path(opts.json).name == "labels.json" or not opts.json.endswith(".json")):
        print(f"signature_precision: --json takes a new NAME.json, not {opts.json!r}", file=sys.stderr)
        return 2
    if opts.folders:
        folders = score_corpus.label_folders(opts.folders)
    else:
        folders = [p.parent for pattern in DEFAULT_GLOBS for p in sorted(ROOT.glob(pattern))]
    from envdoctor.compat import load_compat

    tallies = ordered(run(folders, load_compat()))
    print(render([t for t in tallies if t.wrong >= opts.min_wrong], opts.why))
    if opts.json:
        Path(opts.json).write_text(json.dumps([t.as_dict() for t in tallies], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
