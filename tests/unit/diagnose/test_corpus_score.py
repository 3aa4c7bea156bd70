"""The corpus of real reports (tests/fixtures/corpus/, issue 29) as a ratchet: every row judged right stays
right, and the rows still wrong are listed here, so that one that starts passing must leave the list (the score
can only go up; docs/measurements.md has the per-tracker figures, scripts/score_corpus.py prints them).

Right, as the scorer counts it: every labelled category found at warning or error; HEALTHY, no error."""

from __future__ import annotations

import json

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import NothingRecognised
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES

CORPUS = FIXTURES / "corpus"
ROWS = [(d.name, r["id"], r["labels"]) for d in sorted(CORPUS.glob("*/")) if (d / "labels.json").exists()
        for r in json.loads((d / "labels.json").read_text(encoding="utf-8"))]

# still wrong on 2026-12-04 (the kinds are in tests/fixtures/corpus/FIRST_SIGHT_*.md); the second set is round 3
# (issue 42, scripts/mine_corpus.py) at first sight, before any diagnose fix (FIRST_SIGHT_G.md; docs/measurements.md, "Corpus
# round 3"); remove a row once it passes
STILL_WRONG = set("""
comfyui-009 container-toolkit-005 flash-attention-003 jax-002
nccl-011 ollama-002
slurm-001 tensorrt-003 tensorrt-004
ultralytics-003 vllm-007 vllm-017 wsl-003 wsl-004
""".split()) | set("""
comfyui-017
cuda-build-010
hami-001 invokeai-003
mig-001
ollama-007
wsl-005
""".split())
# later rounds keep their first-sight misses in a file each (tests/fixtures/corpus/still_wrong_*.txt: ids separated
# by white space, '#' starts a comment), so that rounds gathered side by side do not edit the same list
for _extra in sorted(CORPUS.glob("still_wrong_*.txt")):
    STILL_WRONG |= {w for line in _extra.read_text(encoding="utf-8").splitlines()
                    for w in line.split("#", 1)[0].split()}


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _right(text: str, labels, compat) -> bool:
    try:
        findings = diagnose_report([text], compat).all_findings
    except NothingRecognised:
        findings = []
    serious = {f.category for f in findings if f.severity in ("warning", "error")}
    errors = [f for f in findings if f.severity == "error"]
    return all((not errors) if label == "HEALTHY" else label in serious for label in labels)


def test_the_corpus_is_large_and_the_list_names_real_rows() -> None:
    ids = {rid for _, rid, _ in ROWS}
    assert len(ROWS) >= 300 and STILL_WRONG <= ids, sorted(STILL_WRONG - ids)


@pytest.mark.parametrize("folder,rid,labels", ROWS, ids=[f"{f}/{r}" for f, r, _ in ROWS])
def test_corpus_row(folder, rid, labels, compat) -> None:
    text = (CORPUS / folder / f"{rid}.txt").read_text(encoding="utf-8", errors="replace")
    right = _right(text, labels, compat)
    if rid in STILL_WRONG:
        assert not right, f"{rid} is right now: take it off STILL_WRONG"
    else:
        assert right, f"{rid} ({labels}) was right and is not any more"
