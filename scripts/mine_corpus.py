#!/usr/bin/env python3
"""Turn mined public issue threads into corpus rows (tests/fixtures/corpus/<tracker>/), refusing any thread
whose cause was not established in the thread; score the mined rows at first sight.

The mining method (issue 42). The threads come from the stored GitHub issues corpus (the session's ``search``
tool, corpus ``issues``: each answer names the thread's repository and URL and quotes part of the thread). The
search tool cannot be called from a script, so a person (or a helper) runs the searches and records each
candidate in a TOML file under ``scripts/corpus_mining/`` -- that file is the record of what was mined and why
each thread was accepted. One ``[[report]]`` table per thread:

    tracker    = "jax"                  # the corpus folder (the tool whose tracker, or whose users, reported it)
    url        = "https://github.com/jax-ml/jax/issues/12345"   # the thread; ``source`` is derived from it
    query      = "Could not create cudnn handle jax"            # the search that found it
    kind       = "traceback"            # what the paste is (input_kind)
    error      = "..."                  # the error line, as pasted (error_message)
    cause      = "..."                  # the cause the thread established (root_cause)
    labels     = ["SYSTEM_LIB_SHADOWING"]   # catalogue categories, or ["HEALTHY"] for a fine environment
    fix        = "..."
    confidence = "confirmed-by-maintainer"  # or "confirmed-by-user" (the reporter confirmed the fix worked)
    who        = "maintainer hawkinsp: ..."  # who established it and what they said (the acceptance reason)
    paste      = '''...'''              # the reporter's pasted text, verbatim as the stored thread shows it
    reject     = "..."                  # optional: a thread looked at and refused (why); nothing is written

Rules the script enforces (a row breaking one is refused with the reason, nothing is written for it):
- the URL is a GitHub issue or pull-request thread; the thread is not already in the corpus or in
  ../shared/examples (by URL or ``owner/repo#N``);
- the cause is established: ``confidence`` is one of the two values above and ``who`` names who established it;
  a thread without (``reject``, or no ``who``) is refused;
- every label is a catalogue category or HEALTHY; HEALTHY stands alone;
- the paste is non-empty and is the reporter's text only: it must not contain the recorded cause or fix.

Rows get the next free id of their folder (``<tracker>-NNN``); a folder new to the corpus gets a README in the
corpus format. Running it again writes nothing twice (a URL already in the folder is skipped). Usage:

    python scripts/mine_corpus.py scripts/corpus_mining/round3-*.toml            # check and write
    python scripts/mine_corpus.py --check scripts/corpus_mining/round3-*.toml    # check only
    python scripts/mine_corpus.py --score scripts/corpus_mining/round3-*.toml    # first-sight score of those rows
    python scripts/mine_corpus.py --round 4a scripts/corpus_mining/round4a-*.toml  # a later round's rows
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import tomllib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.model.catalogue import CATEGORIES  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "corpus"
SHARED_EXAMPLES = ROOT.parent.parent / "shared" / "examples"  # /work/shared beside /work/wt/<name>
CONFIDENCE = ("confirmed-by-maintainer", "confirmed-by-user")
URL_RE = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+)/(issues|pull|discussions)/(\d+)(#.*)?$")
FIELDS = ("tracker", "url", "kind", "error", "cause", "labels", "fix", "confidence", "who", "paste")


def source_of(url: str) -> Optional[str]:
    m = URL_RE.match(url.strip())
    return f"{m.group(1)}/{m.group(2)}#{m.group(4)}" if m else None


def known_sources() -> Dict[str, str]:
    """owner/repo#N (lower case) -> where it already is: the corpus rows and the shared examples."""
    seen: Dict[str, str] = {}
    shared = SHARED_EXAMPLES if SHARED_EXAMPLES.is_dir() else ROOT / ".." / "shared" / "examples"
    for labels in list(CORPUS.glob("*/labels.json")) + list(shared.glob("*/labels.json")):
        try:
            rows = json.loads(labels.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for row in rows:
            for key in (str(row.get("source", "")), source_of(str(row.get("url", ""))) or ""):
                src = key.split(" ", 1)[0].lower()
                if "#" in src:
                    seen[src] = f"{labels.parent.name}/{row.get('id')}"
    return seen


def refusal(rep: dict, seen: Dict[str, str]) -> Optional[str]:
    """Why this candidate cannot become a row, or None."""
    if rep.get("reject"):
        return f"refused when mined: {rep['reject']}"
    missing = [f for f in FIELDS if not rep.get(f)]
    if missing:
        return "no established cause recorded" if {"who", "cause", "confidence"} & set(missing) \
            else f"missing {', '.join(missing)}"
    src = source_of(rep["url"])
    if not src:
        return f"not a GitHub thread URL: {rep['url']}"
    if src.lower() in seen:
        return f"already in the corpus or the shared examples ({seen[src.lower()]})"
    if rep["confidence"] not in CONFIDENCE:
        return f"confidence must be one of {CONFIDENCE}"
    labels = rep["labels"]
    bad = [lab for lab in labels if lab not in CATEGORIES]
    if bad:
        return f"not catalogue categories: {bad}"
    if "HEALTHY" in labels and len(labels) > 1:
        return "HEALTHY stands alone"
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", rep["tracker"]):
        return f"tracker must be a folder name: {rep['tracker']!r}"
    paste = rep["paste"]
    for field in ("cause", "fix"):
        if rep[field].strip() and rep[field].strip() in paste:
            return f"the paste holds the recorded {field}: a paste is the reporter's text only"
    return None


def load(paths: List[str]) -> List[Tuple[str, dict]]:
    out: List[Tuple[str, dict]] = []
    for p in paths:
        with open(p, "rb") as fh:
            data = tomllib.load(fh)
        for rep in data.get("report", []):
            out.append((p, rep))
    return out


README_HEAD = """# Corpus: {tracker} GPU threads

Real reports, labelled with envdoctor catalogue categories (or `HEALTHY`), for scoring `diagnose` on text it was
never tuned on (`scripts/score_corpus.py`). `labels.json` holds one row per case (id, source, input kind, error,
the cause the thread established, labels, fix, confidence, tracker, url, established_by); each `<id>.txt` holds only
the diagnostic text the reporter pasted (error output, logs, versions, nvidia-smi), quoted verbatim from the public
issue thread named below, as the excerpt of the stored issues corpus showed it (a short excerpt gives a short
paste; nothing was completed or rewritten). Nothing in a `.txt` is the cause, the fix or a maintainer's answer.
Some threads are in downstream repositories that hit this tool's error; the `source` names the thread's own
repository. Mined with `scripts/mine_corpus.py` from `scripts/corpus_mining/` (round 3, issue 42).
<!-- round 3 rows -->

| id | source | labels | confidence | thread |
| --- | --- | --- | --- | --- |
"""


ROUND3_MARK = "<!-- round 3 rows -->"
ROUND3_SECTION = f"""
## Round 3 (issue 42)
{ROUND3_MARK}

Rows mined with `scripts/mine_corpus.py` from `scripts/corpus_mining/` (same rules as above; each row's
`established_by` says who established the cause). Their first-sight score is in `docs/measurements.md`.

| id | source | labels | confidence | thread |
| --- | --- | --- | --- | --- |
"""


def next_id(tracker: str, rows: List[dict]) -> str:
    nums = [int(m.group(1)) for r in rows if (m := re.fullmatch(rf"{re.escape(tracker)}-(\d+)", str(r["id"])))]
    return f"{tracker}-{(max(nums) + 1) if nums else 1:03d}"


def round_value(rnd: str):
    """The labels.json ``round`` of a run: 3 (an int, as round 3 wrote it) or a later round's name ("4a")."""
    return int(rnd) if rnd.isdigit() else rnd


def write(rep: dict, rnd: str = "3") -> str:
    folder = CORPUS / rep["tracker"]
    folder.mkdir(exist_ok=True)
    labels_path = folder / "labels.json"
    rows = json.loads(labels_path.read_text(encoding="utf-8")) if labels_path.exists() else []
    rid = next_id(rep["tracker"], rows)
    src = source_of(rep["url"])
    row = OrderedDict([
        ("id", rid), ("source", src), ("input_kind", rep["kind"]), ("error_message", rep["error"]),
        ("root_cause", rep["cause"]), ("labels", list(rep["labels"])), ("fix", rep["fix"]),
        ("confidence", rep["confidence"]), ("tracker", rep["tracker"]), ("url", rep["url"]),
        ("established_by", rep["who"]), ("round", round_value(rnd))])
    rows.append(row)
    paste = rep["paste"].strip("\n") + "\n"
    (folder / f"{rid}.txt").write_text(paste, encoding="utf-8")
    labels_path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    readme = folder / "README.md"
    if not readme.exists():
        head = README_HEAD.format(tracker=rep["tracker"])
        if rnd != "3":
            head = head.replace("(round 3, issue 42)", f"(round {rnd}, issue 42)").replace(
                ROUND3_MARK, f"<!-- round {rnd} rows -->")
        readme.write_text(head, encoding="utf-8")
    text = readme.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text += "\n"
    mark = ROUND3_MARK if rnd == "3" else f"<!-- round {rnd} rows -->"
    if mark not in text:  # a folder of an earlier round: its own table ends before its notes
        text += ROUND3_SECTION.replace("Round 3", f"Round {rnd}").replace(ROUND3_MARK, mark)
    line = f"| {rid} | {src} | {', '.join(rep['labels'])} | {rep['confidence']} | {rep['url']} |\n"
    readme.write_text(text + line, encoding="utf-8")
    return rid


def mined_rows(paths: List[str], rnd: str = "3") -> List[Tuple[Path, dict]]:
    """The corpus rows that the given candidate files produced (matched by URL)."""
    urls = {rep["url"].strip() for _, rep in load(paths) if not rep.get("reject")}
    out = []
    for labels in sorted(CORPUS.glob("*/labels.json")):
        for row in json.loads(labels.read_text(encoding="utf-8")):
            if row.get("round") == round_value(rnd) and row.get("url", "").strip() in urls:  # not an earlier round's row
                out.append((labels.parent, row))
    return out


def score(paths: List[str], misses: bool, rnd: str = "3") -> int:
    from envdoctor.compat import load_compat
    sys.path.insert(0, str(ROOT / "scripts"))
    from score_corpus import judge_row  # the scorer's own rule, so the figures mean the same

    compat = load_compat()
    per: Dict[str, List[int]] = OrderedDict()
    healthy = 0
    rows = mined_rows(paths, rnd)
    for folder, row in rows:
        text = (folder / f"{row['id']}.txt").read_text(encoding="utf-8", errors="replace")
        right, got = judge_row(row, text, compat)
        healthy += row["labels"] == ["HEALTHY"]
        tally = per.setdefault(folder.name, [0, 0])
        tally[0] += int(right)
        tally[1] += 1
        if misses and not right:
            serious = sorted({f"{c}({s[0]})" for c, s, _ in got if s in ("warning", "error")})
            print(f"MISS {row['id']} want {row['labels']} got {serious or 'nothing'}")
    for tracker, (ok, n) in sorted(per.items(), key=lambda kv: (-kv[1][1], kv[0])):
        print(f"{tracker:<28} {ok:>4} {n:>4}")
    ok, n = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
    print(f"{'all':<28} {ok:>4} {n:>4}  ({ok / n if n else 0:.0%}); {len(per)} trackers; {healthy} HEALTHY")
    return 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="candidate TOML files (scripts/corpus_mining/*.toml)")
    ap.add_argument("--check", action="store_true", help="check only, write nothing")
    ap.add_argument("--score", action="store_true", help="score the rows these files produced")
    ap.add_argument("--misses", action="store_true", help="with --score: print each wrong row")
    ap.add_argument("--round", default="3", help="the round the rows belong to (labels.json `round`; default 3)")
    opts = ap.parse_args(argv)
    try:
        cands = load(opts.files)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"cannot read candidates: {exc}", file=sys.stderr)
        return 2
    if opts.score:
        return score(opts.files, opts.misses, opts.round)
    seen = known_sources()
    written = refused = skipped = 0
    in_batch: Dict[str, str] = {}
    for path, rep in cands:
        src = (source_of(rep.get("url", "")) or "").lower()
        folder = CORPUS / str(rep.get("tracker", ""))
        if src and src in seen and (folder / "labels.json").exists() and any(
                r.get("url", "").strip() == rep["url"].strip()
                for r in json.loads((folder / "labels.json").read_text(encoding="utf-8"))):
            skipped += 1  # written by an earlier run (or the same thread is already a row of that folder)
            print(f"ALREADY {rep['url']} is a row of {rep['tracker']}/")
            continue
        why = refusal(rep, seen) or (f"twice in the candidates ({in_batch[src]})" if src in in_batch else None)
        if why:
            refused += 1
            print(f"REFUSED {rep.get('url', '?')} ({Path(path).name}): {why}")
            continue
        in_batch[src] = Path(path).name
        if not opts.check:
            rid = write(rep, opts.round)
            seen[src] = rid
            print(f"wrote {rep['tracker']}/{rid} <- {src}")
        written += 1
    print(f"{written} {'accepted' if opts.check else 'written'}, {refused} refused, {skipped} already in")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
