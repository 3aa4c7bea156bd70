"""Strings from a snapshot, a target or a paste reach the console and Markdown inert; redaction's gaps closed."""

from __future__ import annotations

import dataclasses
import json

from envdoctor.model.facts import Facts, TorchInfo
from envdoctor.report.console import render_console
from envdoctor.report.inert import inert_text
from envdoctor.report.markdown import render_markdown
from envdoctor.report.redact import redact_text
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

OSC_TITLE = "\x1b]0;pwned title\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
HYPERLINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"


def hostile_facts() -> Facts:
    facts = Facts.from_json((FIXTURES / "snapshots" / "hostile-values.json").read_text())
    gpu = dataclasses.replace(facts.driver.gpus[0], name=f"NVIDIA H100{OSC_TITLE}{CLEAR}")
    py = facts.pythons[0]
    torch = dataclasses.replace(py.torch or TorchInfo(), import_error=f"ImportError: {C1_CSI}libcudnn\r\x00 \udc80"
                                                                      f"{HYPERLINK}")
    py = dataclasses.replace(py, executable=f"/opt/py{CLEAR}/bin/python", torch=torch)
    return dataclasses.replace(facts, driver=dataclasses.replace(facts.driver, gpus=[gpu] + facts.driver.gpus[1:]),
                               pythons=[py] + facts.pythons[1:])


def _controls(text: str) -> list:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
            or 0xd800 <= ord(c) <= 0xdfff]


def test_inert_text_removes_every_kind_of_sequence() -> None:
    assert inert_text(f"a{OSC_TITLE}b{CLEAR}c{C1_CSI}d") == "abcd"
    assert inert_text(HYPERLINK) == "click"
    assert inert_text("keep\ttabs\nand lines\r\x00\x07\x7f") == "keep\ttabs\nand lines"
    assert inert_text("lone \udc80 surrogate") == "lone \\x80 surrogate"  # the byte it stands for, written out
    assert inert_text("plain ✓ text") == "plain ✓ text"


def test_hostile_snapshot_reaches_console_and_markdown_inert() -> None:
    report = judge(hostile_facts())
    for verbose in (False, True):
        text = render_console(report, color=False, width=100, verbose=verbose)
        assert _controls(text) == [], verbose
        assert "NVIDIA H100" in text and "pwned title" not in text
    md = render_markdown(report)
    assert _controls(md) == [] and "pwned title" not in md
    # the JSON output keeps what was read (JSON escapes it): no content lost there
    assert "\\u001b]0;pwned" in json.dumps(report.facts.to_dict())


def test_colour_output_keeps_only_its_own_sequences() -> None:
    report = judge(hostile_facts())
    text = render_console(report, color=True, width=100)
    assert "\x1b]" not in text and "\x1b[2J" not in text and "\x9b" not in text  # rich's SGR codes only


def test_a_host_name_from_a_prompt_is_redacted_where_it_is_repeated() -> None:
    text = "alice@gpu-node-17:~$ python train.py\nRuntimeError: NCCL error on gpu-node-17: unhandled system error"
    out = redact_text(text)
    assert "gpu-node-17" not in out and "alice" not in out


def test_gpu_serials_in_a_query_gpu_csv_are_redacted() -> None:
    table = ("index, name, serial, uuid\n"
             "0, NVIDIA H200, 1654123456789, GPU-12345678-1234-1234-1234-123456789abc\n")
    assert "1654123456789" not in redact_text(table)
    # a row quoted alone (a reader's evidence), without the header
    assert "1654123456789" not in redact_text("0, NVIDIA H200, 1654123456789, GPU-12345678-1234-1234-1234-1234567")
    assert redact_text("0, NVIDIA H200, 81559, 12") == "0, NVIDIA H200, 81559, 12"  # no UUID: a number stays


def test_evidence_strings_keep_their_letters_and_escape_only_controls() -> None:
    from envdoctor.model.findings import Evidence, Finding, Severity
    from envdoctor.report.summary import evidence_lines

    finding = Finding(code="x.y", category="INTERCONNECT", severity=Severity.WARNING, summary="s",
                      evidence=[Evidence("paste.collective_hang", "spins indefinitely\u2014no error; caf\u00e9 \u202e\x9b")])
    line = evidence_lines(finding)[0].text
    assert "indefinitely\u2014no error; caf\u00e9" in line  # a paste's dash and accent, not "\\u2014"
    assert "\\u202e" in line and "\\u009b" in line and "\u202e" not in line and "\x9b" not in line
