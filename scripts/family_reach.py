#!/usr/bin/env python3
"""What the message families of compat_data/error_signatures.json reach on words no other row knows (issue 42).

A family row (``"family": {"all": [...], "none": [...]}``) is read only where no other row and no NVIDIA status
explains a message, so on the labelled corpus, where a known row reads almost every line, it rarely fires. What
it is for is the paste from a program no row has read. This script measures that: `diagnose` over every labelled
paste twice, once with **no** row of the catalogue and once with **only** the family rows (the status table and
every facts-based check stay as they are), and prints

- the rows right in each run (score_corpus.py's rule: every label at warning or error; HEALTHY without an error);
- per family: the pastes it fired on, those whose labels hold a category it gave (right; a row with an ``also``
  gives two), those where it named only other categories (wrong), and the HEALTHY pastes it fired on;
- the pastes a family turned right, and every paste a family named a wrong category on (``--why``).

It reads no network and changes no file. Usage:

    python scripts/family_reach.py                 # the corpus, the shared examples, tests/fixtures/pastes
    python scripts/family_reach.py --why           # also each paste a family was wrong on
    python scripts/family_reach.py tests/fixtures/corpus/jax
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.compat.signatures import SignatureList, signatures_from  # noqa: E402

_spec = importlib.util.spec_from_file_location("score_corpus", Path(__file__).with_name("score_corpus.py"))
assert _spec is not None and _spec.loader is not None
score_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(score_corpus)

FAMILY = "messages.signature/family-"


def with_rows(compat, every: list, families_only: bool):
    """``compat`` whose catalogue holds only the family rows of ``every`` (``families_only``) or no row at all."""
    kept = SignatureList([s for s in every if s.family] if families_only else [])
    kept.context = dict(getattr(every, "context", {}))
    compat._lazy_signatures = False  # the catalogue is replaced (load_compat returns one cached matrix)
    compat._signatures = kept
    return compat


def run(folders: List[Path], compat) -> Dict[str, Tuple[dict, bool, list]]:
    out: Dict[str, Tuple[dict, bool, list]] = {}
    for folder in folders:
        for row in json.loads((folder / "labels.json").read_text(encoding="utf-8")):
            path = folder / f"{row['id']}.txt"
            if not path.exists():
                continue
            found = [(f.category, f.severity, f.code) for f in
                     score_corpus.paste_findings(path.read_text(encoding="utf-8", errors="replace"), compat)]
            out[f"{folder.name}/{row['id']}"] = (row, score_corpus.judge_found(row, found), found)
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", help="labelled folders (default: those score_corpus.py scores)")
    ap.add_argument("--why", action="store_true", help="list each paste a family named a wrong category on")
    opts = ap.parse_args(argv)
    folders = score_corpus.label_folders(opts.folders)
    compat = load_compat()
    every = signatures_from(compat)
    try:
        bare = run(folders, with_rows(compat, every, False))
        fams = run(folders, with_rows(compat, every, True))
    finally:
        compat._signatures = every
    tally: Dict[str, Counter] = defaultdict(Counter)
    wrong: List[str] = []
    for name, (row, _right, found) in fams.items():
        labels = set(row["labels"])
        named: Dict[str, set] = defaultdict(set)  # family row -> the categories it gave (its own, and an "also")
        for cat, _sev, code in found:
            if code.startswith(FAMILY):
                named[code[len("messages.signature/"):].split("/")[0]].add(cat)
        for family, cats in sorted(named.items()):
            tally[family]["fired"] += 1
            if "HEALTHY" in labels:
                tally[family]["healthy"] += 1
            elif cats & labels:
                tally[family]["right"] += 1
            else:
                tally[family]["wrong"] += 1
                wrong.append(f"{name}: {sorted(labels)} got {sorted(cats)} from {family}")
    n = len(fams)
    print(f"pastes: {n}")
    print(f"right with no catalogue row:        {sum(r for _, r, _ in bare.values())}")
    print(f"right with the family rows only:     {sum(r for _, r, _ in fams.values())}")
    turned = sorted(k for k in fams if fams[k][1] and not bare[k][1])
    lost = sorted(k for k in fams if bare[k][1] and not fams[k][1])
    print(f"turned right by a family: {len(turned)}; turned wrong: {len(lost)}" + (f" ({', '.join(lost)})" if lost else ""))
    errors = sum(1 for _, _, found in fams.values() for cat, sev, c in found if c.startswith(FAMILY) and sev == "error")
    print(f"family findings at error severity: {errors}")
    width = max([len(f) for f in tally] + [6])
    print(f"{'family':<{width}}  fired  right  wrong  healthy")
    for family, t in sorted(tally.items(), key=lambda kv: -kv[1]["fired"]):
        print(f"{family:<{width}}  {t['fired']:>5}  {t['right']:>5}  {t['wrong']:>5}  {t['healthy']:>7}")
    total = Counter()
    for t in tally.values():
        total.update(t)
    print(f"{'all':<{width}}  {total['fired']:>5}  {total['right']:>5}  {total['wrong']:>5}  {total['healthy']:>7}")
    if opts.why:
        for line in wrong:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
