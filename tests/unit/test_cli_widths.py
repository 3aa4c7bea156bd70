"""Plain console output of the query commands fits the terminal (80 columns included): prose wraps under
itself, a word (URL, path) is never cut and a command line is printed whole so that it can be copied."""

from __future__ import annotations

import pytest

from envdoctor.cli import main
from envdoctor.cli.common import _is_command, fit_text


def test_prose_wraps_under_itself_and_commands_and_urls_stay_whole():
    url = "https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md#a-long-anchor"
    cmd = "  python3.11 -m pip install torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/x"
    text = "\n".join(["  " + "word " * 30, "      " + url, cmd, "short line", ""])
    out = fit_text(text, width=40).split("\n")
    prose = [line for line in out if line.strip().startswith("word")]
    assert len(prose) > 3 and all(len(line) <= 40 for line in prose)
    assert prose[0].startswith("  word") and all(line.startswith("    word") for line in prose[1:])
    assert "      " + url in out and cmd in out and "short line" in out and out[-1] == ""
    assert " ".join(" ".join(prose).split()) == " ".join(["word"] * 30)


def test_width_comes_from_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    assert all(len(line) <= 50 for line in fit_text("x " * 100).split("\n"))


@pytest.mark.parametrize("argv", [["matrix", "bench", "--gpu", "H100"], ["matrix", "gpu", "H100"],
                                  ["matrix", "bench", "--gpu", "RTX 4090"], ["list-checks"], ["bench", "--list"],
                                  ["explain", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"],
                                  ["recommend", "--driver", "535.104.05", "--gpu", "A100", "--python", "3.11",
                                   "--os", "linux"]])
def test_query_commands_fit_80_columns(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines
    wide = [line for line in lines if len(line) > 80 and " " in line.strip() and not _is_command(line.strip())]
    assert not wide, wide


def _commands():
    from envdoctor.cli import _command_names, build_parser

    return [[]] + [[name] for name in _command_names(build_parser())]


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: a[0] if a else "envdoctor")
def test_every_help_fits_80_columns(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as e:
        main(argv + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes" in out or argv == ["list-checks"] or argv == ["explain"]
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert not wide, wide


def _too_wide(text: str, width: int = 80):
    return [line for line in text.splitlines() if len(line) > width and " " in line.strip()
            and not _is_command(line.strip())]


def test_watch_replay_fits_80_columns(capsys, monkeypatch):
    from tests.paths import FIXTURES

    monkeypatch.setenv("COLUMNS", "80")
    replay = FIXTURES / "timeseries" / "015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt"
    assert main(["watch", "--replay", str(replay)]) == 0
    out = capsys.readouterr().out
    assert "17 samples over 85.04 s" in out and not _too_wide(out), _too_wide(out)


def test_fleet_fits_80_columns_and_uses_checks_marks(tmp_path, capsys, monkeypatch):
    import json

    from envdoctor.judging.fleet import judge_fleet
    from envdoctor.report.fleet import to_dict
    from envdoctor.report.summary import SEVERITY_SYMBOLS
    from tests.unit.checks.test_fleet import _fleet, _node_facts

    rep = judge_fleet(_fleet([_node_facts(), _node_facts(torch="2.4.0+cu121")]))
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(to_dict(rep)))
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["fleet", "--report", str(path)]) == 1
    out = capsys.readouterr().out
    assert not _too_wide(out), _too_wide(out)
    error = SEVERITY_SYMBOLS["error"][0]
    assert any(line.startswith(f"  {error} [FLEET_INCONSISTENT] torch version differs") for line in out.splitlines())
    # each rank is one block with every cell, none cut
    flat = " ".join(out.split())  # a block wraps where its cells fall
    assert "  rank 1 · node 1 · host " in out and "node node" not in out and "matmul - · h2d - · reported yes" in flat
    monkeypatch.setenv("COLUMNS", "200")  # wide enough: the aligned table
    assert main(["fleet", "--report", str(path)]) == 1
    assert "  rank  node    host" in capsys.readouterr().out


def test_bench_list_wraps_under_its_column(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["bench", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines[0].index("what")
    i = next(i for i, line in enumerate(lines) if line.startswith("membw_host"))
    assert lines[i + 1].startswith(" " * at) and lines[i + 1].strip()  # the rest of its "what", under it
    assert not _too_wide("\n".join(lines))


def test_bench_notes_are_shortened_at_a_word():
    from envdoctor.report.bench_view import short_note

    note = "the GPU was shared with another process during the run, " * 6
    out = short_note(note, 160)
    assert len(out) <= 160 and out.endswith(" …") and note.startswith(out[:-2].rstrip())
    assert out[:-2].rstrip().split(" ")[-1] in note.split(" ")  # a whole word before the mark
    assert short_note("short", 160) == "short"
