"""A pasted report's console and Markdown are a maintainer's reply (issue 42): what the paste shows, the cause (or
the line nothing recognised), and what to ask the reporter for, last; the checks that could not be judged are
counted, their list behind -v. Structure tests: sections, their order and what each holds, not the full text."""

from __future__ import annotations

import re

from envdoctor.compat import load_compat
from envdoctor.report import render_console, render_markdown
from envdoctor.report.reply import reply_view
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES

# an ambiguous status (compat_data/status_codes.json: cudaErrorUnknown): noted, its line still not recognised; an
# illegal memory access is the program's (explained as such since issue 42's status table)
THIN_UNKNOWN = "RuntimeError: CUDA error: unknown error\n"
THIN_KNOWN = ("Traceback (most recent call last):\n  File \"/app/run.py\", line 3, in <module>\n    import torchaudio\n"
              "OSError: /usr/local/lib/python3.10/dist-packages/torchaudio/lib/libtorchaudio.so: undefined symbol: "
              "_ZN3c104cuda9SetDeviceEi\n")
SURE = ("+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 550.54.14              Driver Version: 550.54.14      CUDA Version: 12.4     |\n"
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n")


def _report(text: str):
    return diagnose_report([text], load_compat())


def _sections(text: str) -> list:
    """The console's section headings, in order (a line with no indent that is not a mark line)."""
    return [line for line in text.splitlines()
            if line and not line.startswith((" ", "✓", "✗", "!", "i", "envdoctor"))]


def _section(text: str, name: str) -> list:
    lines = text.splitlines()
    start = lines.index(name)
    out = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" ") and line not in ("",):
            if not line.startswith(("✓", "✗", "!", "i ")):
                break
        out.append(line)
    return out


def test_thin_unrecognised_paste_fits_a_screen_and_ends_with_what_to_ask() -> None:
    text = render_console(_report(THIN_UNKNOWN), width=100, color=False)
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 100
    assert _sections(text) == ["What the paste shows", "Checks", "Cause", "Ask the reporter for"]
    # the line nothing recognised is quoted in the cause
    cause = "\n".join(_section(text, "Cause"))
    assert "unknown error" in cause and "does not recognise" in cause
    # the reply ends with numbered asks, each a command (or what to paste) with what it settles under it
    asks = lines[lines.index("Ask the reporter for") + 1:]
    numbered = [line for line in asks if re.match(r"  \d\. ", line)]
    assert numbered and asks[-1].startswith("     ") and lines[-1] == asks[-1]
    assert any("nvidia-smi" in line for line in numbered)
    assert any("traceback" in line for line in numbered)


def test_unjudged_checks_are_counted_and_listed_only_with_v() -> None:
    report = _report(THIN_UNKNOWN)
    plain = render_console(report, width=100, color=False)
    assert "could not be judged from this paste" in plain and "-v lists them" in plain
    assert "driver.present" not in plain and "gpu.xid" not in plain  # no list of check ids
    verbose = render_console(report, width=100, color=False, verbose=True)
    assert "driver.present" in verbose and "gpu.xid" in verbose


def test_what_the_paste_shows_holds_shown_facts_and_names_the_missing_once() -> None:
    text = render_console(_report(THIN_KNOWN), width=100, color=False)
    shows = _section(text, "What the paste shows")
    assert any(line.lstrip().startswith("Not in paste") for line in shows)
    assert not any("not checked" in line or "not in the pasted text" in line for line in shows)
    assert not any("torch" in line and "not installed" in line for line in shows)  # a paste cannot show that


def test_a_recognised_cause_is_the_cause_and_its_settling_command_is_asked_once() -> None:
    report = _report(THIN_KNOWN)
    reply = reply_view(report)
    assert [f.category for f in reply.causes] == ["COMPANION_VERSION_MISMATCH"]
    text = render_console(report, width=100, color=False)
    cause = "\n".join(_section(text, "Cause"))
    assert "COMPANION_VERSION_MISMATCH" in cause and "Fix:" in cause
    assert "To confirm, paste" not in cause  # said once, in the asks
    asks = text[text.index("Ask the reporter for"):]
    assert "pip list | grep -i torch" in asks and text.count("pip list | grep -i torch") == 1


def test_a_sure_cause_with_nothing_left_open_says_so_instead_of_asking() -> None:
    report = _report(SURE)
    reply = reply_view(report)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in {f.category for f in reply.causes}
    text = render_console(report, width=100, color=False)
    assert _sections(text)[-1] == "Ask the reporter for"
    import dataclasses

    empty = dataclasses.replace(reply, asks=[])
    from envdoctor.report.reply import closing

    assert closing(empty).startswith("Nothing more to ask")  # a cause and nothing left open
    assert closing(dataclasses.replace(empty, causes=[])).startswith("Nothing to ask")


def test_markdown_is_the_same_reply_with_the_checks_folded() -> None:
    md = render_markdown(_report(THIN_UNKNOWN))
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads == ["## What the paste shows", "## Cause", "## Ask the reporter for"]
    asks = md[md.index("## Ask the reporter for"):md.index("<details>")]
    assert re.search(r"^1\. .+: .+$", asks, re.M) and "`nvidia-smi`" in asks
    checks = md[md.index("<details><summary>Checks"):]
    assert "could not be judged from this paste" in checks.splitlines()[0]
    assert "driver.present" in checks  # the list, folded
    assert "driver.present" not in md[:md.index("<details><summary>Checks")]


def test_a_live_report_is_not_a_reply() -> None:
    from envdoctor.model.facts import Facts

    report = diagnose_report([THIN_UNKNOWN], load_compat())
    live = type(report)(facts=Facts(), checks=report.checks, envdoctor_version=report.envdoctor_version)
    text = render_console(live, width=100, color=False)
    assert "Key facts" in text and "Ask the reporter for" not in text


def test_every_thin_corpus_paste_with_one_cause_fits_a_screen() -> None:
    """The real reports of tests/fixtures/corpus whose paste shows at most two facts and at most one cause: each
    reply fits one screen (40 lines at 100 columns) and ends with the asks."""
    import json

    from envdoctor.diagnose import NothingRecognised
    from tests.paths import FIXTURES

    compat = load_compat()
    checked, long = 0, []
    for labels in sorted((FIXTURES / "corpus").glob("*/labels.json")):
        for row in json.loads(labels.read_text(encoding="utf-8")):
            paste = (labels.parent / f"{row['id']}.txt").read_text(encoding="utf-8", errors="replace")
            try:
                report = diagnose_report([paste], compat)
            except NothingRecognised:
                continue
            if report.machines:
                continue
            reply = reply_view(report)
            if len([r for r in reply.shows if r[0] != "Not in paste"]) > 2 or len(reply.causes) > 1:
                continue
            checked += 1
            text = render_console(report, width=100, color=False)
            lines = text.rstrip("\n").splitlines()
            tail = lines[lines.index("Ask the reporter for") + 1:]
            assert tail and all(line.startswith("  ") for line in tail), row["id"]  # the reply ends with them
            if len(lines) > 40:
                long.append((row["id"], len(lines)))
    assert checked >= 100 and not long, long


def test_the_checks_line_of_a_reply_keeps_its_indent_when_it_wraps() -> None:
    """The judged areas share one line; on a narrow terminal it wraps, and every piece stays under "Checks" (a
    wrapped piece at column 0 read as a section heading of its own)."""
    text = render_console(_report(SURE), width=50, color=False)
    lines = text.splitlines()
    start = lines.index("Checks") + 1
    block = lines[start:lines.index("", start)]
    assert len(block) >= 3, block  # the areas wrapped onto two lines at least, then the count of the rest
    assert all(line.startswith("  ") for line in block), block


STALLS = ("I use 8 GPUs on 2 servers to train the model, at first the training speed can reach near 200 images/sec, "
          "then after several steps, the training process get stunned for a long time(during which the GPU capacity "
          "drop to 0%)\n"
          "1000    images/sec: 195.8 +/- 0.5 (jitter = 14.9)       7.049\n"
          "1000    images/sec: 195.8 +/- 0.5 (jitter = 15.3)       7.211\n"
          "1010    images/sec: 186.6 +/- 0.5 (jitter = 14.8)       7.268\n"
          "GPU: nvidia Tesla V100, CPU: Intel(R) Xeon(R) Gold 6152 CPU @ 2.10GHz\n")


def test_one_open_question_is_said_once_over_its_several_asks() -> None:
    """A cause the paste leaves open names several outputs that settle it: the question is said with the first,
    the others say they go with it (three times the same sentence read as three questions)."""
    asks = reply_view(_report(STALLS)).asks
    assert len(asks) >= 2
    open_q = [a for a in asks if "leaves it open" in a.why]
    assert len(open_q) == 1 and asks.index(open_q[0]) == 0
    assert all("same question" in a.why for a in asks[1:])


# corpus qanet-001 (NLPLearn/QANet#24): TensorFlow's cuDNN handle failure beside driver 384.69, on Ubuntu
XLA_CUDNN = (FIXTURES / "corpus" / "qanet" / "qanet-001.txt").read_text(encoding="utf-8")


def test_an_ask_already_run_by_an_earlier_one_is_not_repeated_and_blank_rows_fold() -> None:
    """`nvidia-smi` alone after an ask that ends "...; nvidia-smi" asks for the same output twice; a facts row
    whose every part is unknown ("Host  unknown · unknown CPUs · ...") says nothing and joins "Not in paste"."""
    reply = reply_view(_report(XLA_CUDNN))
    commands = [a.what for a in reply.asks if a.command]
    assert any(c.endswith("nvidia-smi") and ";" in c for c in commands)
    assert "nvidia-smi" not in commands
    labels = dict(reply.shows)
    assert "Host" not in labels and "host" in labels["Not in paste"]
