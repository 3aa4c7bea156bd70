#!/usr/bin/env python3
"""Score `diagnose` on labelled real pastes, per tracker: how many get their established cause right.

A labelled folder holds ``labels.json`` (a list of rows: ``id``, ``source`` such as ``vllm-project/vllm#1710``,
``labels`` (catalogue categories, or ``HEALTHY``), ``root_cause``, ``fix``, ``confidence``, optionally
``tracker``) and one ``<id>.txt`` per row with the pasted text. A row is right when every label is found at
warning or error severity; a ``HEALTHY`` row is right when no finding is an error. The same rule as
tests/unit/diagnose/test_reports.py, so that the figure printed here and the test's floor mean the same. A paste
in which `diagnose` recognises nothing (exit 2 on the command line) has no findings: wrong for a labelled
cause, right for ``HEALTHY`` (nothing false was said).

Run it on the commit before a change to record the *first-sight* score (the honest measure of how the engine
generalises to reports nobody described), and after it for the final score. Usage:

    python scripts/score_corpus.py                       # every labelled folder found (see DEFAULT_GLOBS)
    python scripts/score_corpus.py tests/fixtures/corpus/vllm --misses
    python scripts/score_corpus.py --json scores.json    # per-row results, for comparing two commits
    python scripts/score_corpus.py --wrong-errors        # also: errors of a category the row is not labelled with
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.diagnose import NothingRecognised  # noqa: E402
from envdoctor.model.catalogue import NEUTRAL_CATEGORIES, UNRECOGNISED  # noqa: E402
from envdoctor.services.diagnose import diagnose_report  # noqa: E402

DEFAULT_GLOBS = ("../shared/examples/*/labels.json", "tests/fixtures/pastes/labels.json",
                 "tests/fixtures/corpus/*/labels.json")


def label_folders(args: List[str]) -> List[Path]:
    if args:
        out: List[Path] = []
        for a in map(Path, args):
            if a.is_dir() and not (a / "labels.json").exists():
                out.extend(sorted(p.parent for p in a.glob("*/labels.json")))  # a folder of labelled folders
            elif a.is_dir() or a.name == "labels.json":
                out.append(a if a.is_dir() else a.parent)
        return out
    found: List[Path] = []
    for pattern in DEFAULT_GLOBS:
        found.extend(sorted(p.parent for p in ROOT.glob(pattern)))
    return found


def tracker_of(row: dict) -> str:
    """The tracker a row came from: its ``tracker`` field, else the repository in ``source`` (owner/name#N)."""
    if row.get("tracker"):
        return str(row["tracker"])
    source = str(row.get("source", ""))
    repo = source.split("#", 1)[0].strip()
    return repo if "/" in repo and " " not in repo else "other"


def paste_findings(text: str, compat) -> list:
    """Every finding `diagnose` gives the paste (every machine's, as the verdict counts); none when it recognises
    nothing (scripts/signature_precision.py reads their confidence too)."""
    try:
        report = diagnose_report([text], compat)
    except NothingRecognised:
        return []
    return list(report.all_findings)


def judge_found(row: dict, got: List[Tuple[str, str, str]]) -> bool:
    """Whether the findings ``got`` ((category, severity, code)) are right for the labelled ``row``."""
    serious = {c for c, s, _ in got if s in ("warning", "error")}
    errors = [c for c, s, _ in got if s == "error"]
    return all((not errors) if label == "HEALTHY" else label in serious for label in row["labels"])


def judge_row(row: dict, text: str, compat) -> Tuple[bool, List[Tuple[str, str, str]]]:
    got = [(f.category, f.severity, f.code) for f in paste_findings(text, compat)]
    return judge_found(row, got), got


def wrong_errors(rows: List[Dict]) -> Tuple[List[Tuple[str, str, str]], List[str]]:
    """Precision (issue 42, round 15): every error finding whose category is not among its row's labels (an extra
    wrong error, on right rows too: (row, category, code)), and the HEALTHY rows given a warning or error of a
    problem category (not NOTE, HEALTHY, GPU_VIRTUALIZED or UNRECOGNISED_ERROR)."""
    extra = [(f"{Path(r['folder']).name}/{r['id']}", c, code) for r in rows for c, s, code in r["found"]
             if s == "error" and c not in r["labels"]]
    healthy = [f"{Path(r['folder']).name}/{r['id']}" for r in rows if "HEALTHY" in r["labels"] and any(
        s in ("warning", "error") and c not in NEUTRAL_CATEGORIES and c != UNRECOGNISED for c, s, _ in r["found"])]
    return extra, healthy


def json_target_refusal(name: Optional[str]) -> Optional[str]:
    """Why ``--json NAME`` must not be written, or None. ``--json`` takes a file name, so a shell glob after it
    (``--json tests/fixtures/corpus/*/labels.json``) once made the first input file the output and wrote over it:
    the target must end in ``.json``, must not be a ``labels.json``, and, if it exists, must be an earlier output of
    this script (a list of rows with ``right``), checked before anything is scored."""
    if not name:
        return None
    target = Path(name)
    if target.name == "labels.json" or target.suffix != ".json":
        return f"--json takes the output file (a new NAME.json), not {name!r}: put --json FILE after the folders"
    if target.exists():
        try:
            old = json.loads(target.read_text(encoding="utf-8"))
            ours = isinstance(old, list) and all(isinstance(r, dict) and "right" in r and "found" in r for r in old)
        except (OSError, ValueError):
            ours = False
        if not ours:
            return f"{name} exists and is not an earlier score_corpus output: refusing to write over it"
    return None


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", help="labelled folders (default: every one found)")
    ap.add_argument("--misses", action="store_true", help="print each wrong row with what was found")
    ap.add_argument("--json", metavar="FILE", help="write per-row results to FILE")
    ap.add_argument("--wrong-errors", action="store_true",
                    help="also count errors of a category the row is not labelled with, and HEALTHY rows warned")
    opts = ap.parse_args(argv)
    refusal = json_target_refusal(opts.json)
    if refusal:
        print(f"score_corpus: {refusal}", file=sys.stderr)
        return 2
    compat = load_compat()
    per: OrderedDict[str, List[int]] = OrderedDict()
    rows_out: List[Dict] = []
    for folder in label_folders(opts.folders):
        try:
            rows = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{folder}: cannot read labels.json ({exc})", file=sys.stderr)
            return 2
        for row in rows:
            text_path = folder / f"{row['id']}.txt"
            try:
                text = text_path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                print(f"{text_path}: {exc}", file=sys.stderr)
                return 2
            right, got = judge_row(row, text, compat)
            tracker = tracker_of(row)
            tally = per.setdefault(tracker, [0, 0])
            tally[0] += int(right)
            tally[1] += 1
            rows_out.append({"folder": str(folder), "id": row["id"], "tracker": tracker, "labels": row["labels"],
                             "right": right, "found": [list(g) for g in got]})
            if opts.misses and not right:
                serious = sorted({f"{c}({s[0]})" for c, s, _ in got if s in ("warning", "error")})
                print(f"MISS {folder.name}/{row['id']} [{tracker}] want {row['labels']} got {serious or 'nothing'}")
    width = max([len(t) for t in per] + [7])
    print(f"{'tracker':<{width}}  right  total   share")
    for tracker, (ok, n) in sorted(per.items(), key=lambda kv: (-kv[1][1], kv[0])):
        print(f"{tracker:<{width}}  {ok:>5}  {n:>5}  {ok / n:>6.0%}")
    ok = sum(v[0] for v in per.values())
    n = sum(v[1] for v in per.values())
    print(f"{'all':<{width}}  {ok:>5}  {n:>5}  {(ok / n if n else 0):>6.0%}")
    if opts.wrong_errors:
        extra, healthy = wrong_errors(rows_out)
        for row, category, code in extra:
            print(f"WRONG-ERROR {row} {category} ({code})")
        print(f"errors of a category not among the row's labels: {len(extra)} on {len({r for r, _c, _k in extra})} "
              f"rows; HEALTHY rows with a problem warning or error: {len(healthy)}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows_out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
