"""docs/json-schema.md's example is what envdoctor prints for the snapshot it names."""

from __future__ import annotations

import json
import re

from envdoctor.report.json_report import render_json
from envdoctor.services.collect import judge
from tests import machines as m
from tests.paths import REPO

DOC = REPO / "docs" / "json-schema.md"


def _example() -> dict:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## Example \(abridged\).*?```json\n(.*?)```", text, re.S)
    assert block, "no example block"
    return json.loads(block.group(1))


def test_json_doc_example_matches_real_output():
    doc = _example()
    real = json.loads(render_json(judge(m.h100_old_driver(), only=["driver.cuda-compat"])))
    assert sorted(doc) == sorted(real)
    assert sorted(doc["summary"].items()) == sorted(real["summary"].items())
    (dc,), (rc,) = doc["checks"], real["checks"]
    assert sorted(dc) == sorted(rc)
    for key in ("area", "id", "status", "title", "reason"):
        assert dc[key] == rc[key], key
    (df,), (rf,) = doc["findings"], real["findings"]
    assert sorted(df) == sorted(rf)
    for key in ("category", "code", "confidence", "severity", "summary"):
        assert df[key] == rf[key], key
    assert sorted(df["fix"]) == sorted(rf["fix"])
    assert df["fix"]["commands"][-1] == rf["fix"]["commands"][-1]
    assert [(e["path"], e["value"], e["expected"]) for e in df["evidence"]] == \
        [(e["path"], e["value"], e["expected"]) for e in rf["evidence"]]
    assert df["fix"]["summary"].rstrip("…").rstrip() in rf["fix"]["summary"]
