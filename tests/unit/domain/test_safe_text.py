"""domain/safe_text.py: lone surrogates written out where text leaves the process (issue 40)."""

from __future__ import annotations

import json
import os

import pytest

from envdoctor.domain.safe_text import escape_json_surrogates, escape_surrogates

LATIN1 = os.fsdecode(b"/opt/caf\xe9/lib") if os.name != "nt" else "/opt/caf\udce9/lib"


def test_an_undecodable_byte_is_written_as_itself_and_encodes() -> None:
    assert LATIN1 == "/opt/caf\udce9/lib"
    out = escape_surrogates(LATIN1)
    assert out == "/opt/caf\\xe9/lib" and out.encode("utf-8")
    assert escape_surrogates("lone \ud800 high") == "lone \\ud800 high"


def test_text_without_surrogates_is_the_same_object() -> None:
    text = "é ✓ 😀 \\udce9 as typed"
    assert escape_surrogates(text) is text


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_json_keeps_parsing_to_the_escaped_text(ensure_ascii: bool) -> None:
    data = {"path": LATIN1, "emoji": "😀", "typed": "a \\udce9 b", LATIN1: ["x\udc80"], "high": "\ud83d"}
    text = escape_json_surrogates(json.dumps(data, ensure_ascii=ensure_ascii))
    text.encode("utf-8")
    back = json.loads(text)
    json.dumps(back, ensure_ascii=False).encode("utf-8")  # no lone surrogate is left for a reader
    assert back == {"path": "/opt/caf\\xe9/lib", "emoji": "😀", "typed": "a \\udce9 b",
                    "/opt/caf\\xe9/lib": ["x\\x80"], "high": "\\ud83d"}


def test_json_pairs_stay_one_character() -> None:
    text = json.dumps("😀")
    assert escape_json_surrogates(text) == text == '"\\ud83d\\ude00"'
