"""Long fix commands wrap with the continuation of the shell they were quoted for (remedies.shell_wrap)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from dataclasses import replace
from typing import List

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts
from envdoctor.remedies import POSIX, POWERSHELL, quote
from envdoctor.remedies.platform import fix_shell
from envdoctor.remedies.shell_wrap import join_continued, split_comment, split_words, wrap_command
from envdoctor.report import render_console, render_markdown
from envdoctor.services.collect import judge
from tests import machines as m

BASH = shutil.which("bash")
WIN_PYTHON = r"C:\Users\Ana Lopez\AppData\Local\Programs\Python\Python311\python.exe"


def _windows(f: Facts, host_os: str = "Windows") -> Facts:
    """The machine as a Windows box: the host says so, the interpreter is a Windows one (a path with a space)."""
    host = replace(f.host, os=host_os, distro_id=None, distro_version=None, distro_name=None, kernel="10.0.22631")
    return replace(f, host=host, pythons=[replace(p, executable=WIN_PYTHON, platform="win-amd64") for p in f.pythons])


def _powershell_join(lines: List[str]) -> str:
    """How PowerShell reads the lines: a backtick last on a line escapes the newline, which leaves whitespace
    between the words (about_Escape_Characters, "Indicating Line Continuation")."""
    text = "\n".join(ln.strip() for ln in lines)
    return re.sub(r" `\n", " ", text)


def _bash_join(lines: List[str]) -> str:
    """How bash reads them: a backslash-newline pair is removed."""
    return re.sub(r"\\\n", "", "\n".join(ln.strip() for ln in lines))


def _words(text: str) -> List[str]:
    return text.split()


def _long_commands(report, width: int) -> List[str]:
    return [c for f in report.findings if f.fix for c in f.fix.commands if len(c) + 6 > width]


@pytest.mark.parametrize("builder", [m.rtx5090_cu124, m.gpus_with_cpu_torch, m.h100_old_driver])
def test_a_windows_machines_long_fix_wraps_with_powershell_backticks(builder) -> None:
    report = judge(_windows(builder()), load_compat())
    text = render_console(report, width=80, color=False)
    long_cmds = _long_commands(report, 80)
    assert long_cmds, "the machine has no fix long enough to wrap at 80 columns"
    out = text.splitlines()
    for cmd in long_cmds:
        lines = wrap_command(cmd, 80, shell=POWERSHELL)
        assert len(lines) > 1
        # printed as laid out, consecutively
        assert any(out[i:i + len(lines)] == lines for i in range(len(out))), cmd
        code_lines = [ln for ln in lines if not ln.strip().startswith("#")]
        assert all(ln.endswith(" `") for ln in code_lines[:-1]), lines
        assert not any(ln.rstrip().endswith("\\") for ln in lines), lines  # no bash continuation
        joined = _powershell_join(code_lines)
        assert joined == split_comment(cmd, POWERSHELL)[0]  # single spaces between words: exactly the command
        assert join_continued(code_lines, POWERSHELL) == [joined]
    # the Windows python's path (with its space) is never broken inside its quotes
    assert f"'{WIN_PYTHON}'" in text
    assert "```powershell" in render_markdown(report)


def test_a_windows_interpreter_in_a_paste_without_a_host_os_is_powershell_too() -> None:
    f = _windows(m.rtx5090_cu124(), host_os=None)
    report = judge(f, load_compat())
    subjects = {fd.subject for fd in report.findings if fd.fix and fd.subject == WIN_PYTHON}
    assert subjects  # the torch fix is about the Windows interpreter
    assert fix_shell(f, WIN_PYTHON) == POWERSHELL
    assert fix_shell(m.rtx5090_cu124(), "/opt/venv/bin/python") == POSIX
    assert fix_shell(_windows(m.rtx5090_cu124())) == POWERSHELL  # the host alone says so
    # Markdown fences each fix in the language it was quoted for (main fenced them all as bash here)
    md = render_markdown(report)
    torch_fix = md.index("pip install --force-reinstall")
    assert md.rfind("```powershell", 0, torch_fix) > md.rfind("```bash", 0, torch_fix)


@pytest.mark.parametrize("builder", [m.rtx5090_cu124, m.gpus_with_cpu_torch, m.h100_old_driver])
def test_a_linux_machines_long_fix_wraps_with_bash_backslashes(builder) -> None:
    report = judge(builder(), load_compat())
    text = render_console(report, width=60, color=False, verbose=True)  # (a note's fix shows under -v)
    long_cmds = _long_commands(report, 60)
    assert long_cmds
    for cmd in long_cmds:
        lines = wrap_command(cmd, 60)
        assert "\n".join(lines) in text
        code_lines = [ln for ln in lines if not ln.strip().startswith("#")]
        assert all(ln.endswith(" \\") for ln in code_lines[:-1]), lines
        assert not any(ln.endswith("`") for ln in lines)
        joined = _bash_join(code_lines)
        assert joined == split_comment(cmd)[0]
        assert shlex.split(joined) == shlex.split(cmd, comments=True)
        if BASH:
            r = subprocess.run([BASH, "-n", "-c", "\n".join(lines)], capture_output=True, timeout=120)
            assert r.returncode == 0, lines


PS_QUOTED = [
    "& 'C:\\Program Files\\Python 3.11\\python.exe' -m pip install 'torch==2.5.1' --index-url "
    "https://download.pytorch.org/whl/cu124",
    # a double-quoted path ending in a backslash: no escape to PowerShell (bash would read \" as one)
    '& "C:\\Program Files\\My Tools\\" -m pip install --upgrade torch torchvision torchaudio --no-cache-dir',
    # a doubled quote and a typographic one inside single quotes, a backtick-escaped quote in double quotes
    "$env:NOTE = " + quote("it's the \u2018other\u2019 one, with spaces in it", POWERSHELL)
    + ' ; Write-Output "say `"hi there`" to everyone"',
]


@pytest.mark.parametrize("cmd", PS_QUOTED)
def test_powershell_wrapping_never_breaks_inside_a_quoted_string(cmd: str) -> None:
    for width in (40, 50, 60):
        lines = wrap_command(cmd, width, shell=POWERSHELL)
        assert len(lines) > 1
        assert _powershell_join(lines) == cmd
        # every line break falls where a space outside quotes was: the words are PowerShell's words
        assert [w for ln in lines for w in split_words(ln.strip().removesuffix(" `"), POWERSHELL)] == \
            split_words(cmd, POWERSHELL)
    words = split_words(PS_QUOTED[1], POWERSHELL)
    assert words[0] == '& "C:\\Program Files\\My Tools\\"'
    words = split_words(PS_QUOTED[2], POWERSHELL)
    assert "'it''s the \u2018\u2018other\u2019\u2019 one, with spaces in it'" in words
    assert '"say `"hi there`" to everyone"' in words


def test_a_powershell_comment_moves_above_the_continued_command() -> None:
    cmd = ("& 'C:\\Program Files\\Python 3.11\\python.exe' -m pip install --force-reinstall torch==2.5.1 "
           "--index-url https://download.pytorch.org/whl/cu124   # reinstall the CUDA build; 'then' restart")
    lines = wrap_command(cmd, 60, shell=POWERSHELL)
    assert lines[0].strip().startswith("# reinstall the CUDA build")
    code = [ln for ln in lines if not ln.strip().startswith("#")]
    assert _powershell_join(code) == cmd.split("   #")[0]
    for ln in lines:
        # a continuation never ends a comment line: the next line would run on its own
        assert not (split_comment(ln, POWERSHELL)[1] is not None and ln.endswith("`")), ln
