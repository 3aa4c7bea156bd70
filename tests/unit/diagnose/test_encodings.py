"""diagnose reads what shells write: UTF-16 redirects, colour codes; a UTF-16 facts snapshot loads."""

from __future__ import annotations

from tests.paths import FIXTURES


def _cli(*argv: str) -> int:
    from envdoctor.cli import main

    return main(list(argv))


PASTES = FIXTURES / "pastes"


def _categories(capsys) -> list:
    import json

    return [f["category"] for f in json.loads(capsys.readouterr().out)["findings"]]


def test_diagnose_reads_the_utf16_a_windows_shell_redirect_writes(tmp_path, capsys):
    # PowerShell 5: `python -m torch.utils.collect_env > env.txt` writes UTF-16LE with a BOM; it used to be
    # rejected as "binary (NUL bytes)"
    text = (PASTES / "gpu-arch.txt").read_text(encoding="utf-8")
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--format", "json") == 1
    expected = _categories(capsys)
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in expected
    for name, data in (("bom.txt", text.encode("utf-16")), ("le.txt", text.encode("utf-16-le")),
                       ("be.txt", b"\xfe\xff" + text.encode("utf-16-be")),
                       ("u8bom.txt", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())):
        (tmp_path / name).write_bytes(data)
        assert _cli("diagnose", str(tmp_path / name), "--format", "json") == 1, name
        assert _categories(capsys) == expected, name
    assert _cli("diagnose", "/bin/ls") == 2  # real binary is still "nothing recognisable"


def test_facts_snapshot_saved_as_utf16_loads(tmp_path, capsys):
    from envdoctor.model.facts import Facts

    snap = tmp_path / "snap.json"
    snap.write_text(Facts().to_json(), encoding="utf-16")
    assert _cli("check", "--facts", str(snap), "--format", "json") in (0, 1)
    assert "not valid JSON" not in capsys.readouterr().err


def test_diagnose_reads_through_terminal_colour_codes(tmp_path, capsys):
    import re

    text = (PASTES / "gpu-arch.txt").read_text(encoding="utf-8")
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--format", "json") == 1
    expected = _categories(capsys)
    coloured = re.sub(r"(torch|NVIDIA|Driver Version|sm_\d+|\d+\.\d+)", "\x1b[1;32m\\1\x1b[0m", text)
    coloured = "\x1b]0;title\x07\x1b[2K" + coloured  # a window title and a line erase, as a CI log has
    (tmp_path / "ansi.txt").write_text(coloured)
    assert _cli("diagnose", str(tmp_path / "ansi.txt"), "--format", "json") == 1  # was: nothing recognisable
    assert _categories(capsys) == expected
    (tmp_path / "no-esc.txt").write_text(coloured.replace("\x1b", ""))  # the ESC byte lost in a copy
    assert _cli("diagnose", str(tmp_path / "no-esc.txt"), "--format", "json") == 1
    assert _categories(capsys) == expected
