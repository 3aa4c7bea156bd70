"""The one progress line (issue 29, 31): diagnose's, nothing for the first 2 s, then one line on stderr rewritten
in place and cleared before the report; check's while it waits on its probes, whole lines every 5 s. Never on stdout,
so --format json stays a document. An injected clock: no seconds."""

from __future__ import annotations

import io
import json

from envdoctor.cli.common import Progress
from envdoctor.diagnose.bounded_read import WHOLE_MAX, MiB, read_bounded


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_silent_before_the_threshold_then_one_rewritten_line() -> None:
    clock, out = Clock(), io.StringIO()
    p = Progress(out, clock=clock, after_s=2.0, every_s=0.5, enabled=True, label="envdoctor diagnose")
    p.phase("reading big.log: 10 of 60 MiB")
    clock.t += 1.9
    p.update("reading big.log: 20 of 60 MiB")
    assert p.line() is None and "MiB" not in out.getvalue()  # a short job shows nothing
    clock.t += 0.2
    p.update("reading big.log: 30 of 60 MiB")
    assert p.line() == "envdoctor diagnose: reading big.log: 30 of 60 MiB (2 s)"
    p._live.refresh()  # what rich's refresh thread does every every_s
    assert out.getvalue().endswith("envdoctor diagnose: reading big.log: 30 of 60 MiB (2 s)") and p.shown == 1
    clock.t += 0.5
    p.phase("judging what was read (5.0 MiB of text)")
    p._live.refresh()
    assert "\r\x1b[2Kenvdoctor diagnose: judging what was read (5.0 MiB of text) (3 s)" in out.getvalue()  # rewritten
    assert out.getvalue().count("\n") == 0  # one line, redrawn in place
    p.done()
    assert out.getvalue().endswith("\x1b[2K") and p.shown == 0  # cleared: the report follows on a clean line
    assert p._live is None


def test_not_a_terminal_gets_nothing() -> None:
    clock, out = Clock(), io.StringIO()  # StringIO.isatty() is False
    p = Progress(out, clock=clock, after_s=0.0)
    clock.t += 10
    p.update("reading")
    p.done()
    assert not p.enabled and out.getvalue() == ""


def test_bounded_read_reports_the_bytes_read() -> None:
    data = (b"x" * 99 + b"\n") * ((WHOLE_MAX + 6 * MiB) // 100)
    seen = []
    read_bounded(io.BytesIO(data), "big.log", [b"error"], seen.append)
    assert seen[0] == WHOLE_MAX + 1 and seen[-1] == len(data) and seen == sorted(seen) and len(seen) >= 3


def test_the_cli_writes_progress_to_stderr_only(tmp_path, monkeypatch, capsys) -> None:
    """With a tiny threshold (the default is 2 s) the line shows on a terminal's stderr; stdout is the JSON."""
    import envdoctor.cli.common as common
    from envdoctor.cli import main

    made = []

    class TinyProgress(Progress):
        def __init__(self, *a, **kw) -> None:
            kw.update(after_s=0.0, every_s=0.0, enabled=True)
            super().__init__(*a, **kw)
            made.append(self)

    import envdoctor.cli.diagnose as cli_diagnose

    monkeypatch.setattr(cli_diagnose, "Progress", TinyProgress)
    assert common.Progress is Progress
    paste = tmp_path / "p.txt"
    paste.write_text("NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has the "
                     "version 530.30.02\n", encoding="utf-8")
    assert main(["diagnose", "--format", "json", str(paste)]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["findings"][0]["category"] == "DRIVER_LIBRARY_MISMATCH"
    assert "envdoctor diagnose: reading p.txt" in err and "judging what was read" in err
    assert made and made[0].shown == 0  # done(): cleared


def test_check_waiting_speaks_after_two_seconds_then_every_five_on_lines_of_its_own() -> None:
    """The same Progress, for check waiting on its probes (collect's callback): whole lines, nothing to clear."""
    from argparse import Namespace

    from envdoctor.cli.common import PROGRESS_EVERY_S, wait_progress

    clock, out = Clock(), io.StringIO()
    start = clock.t
    tell = wait_progress(Namespace(python_timeout=8.0),
                         Progress(out, clock=clock, every_s=PROGRESS_EVERY_S, enabled=True, rewrite=False))
    assert tell is not None
    for t in (0.2, 1.9, 2.0, 3.0, 6.9, 7.0, 7.1):
        clock.t = start + t
        tell(t, ["pythons", "storage"])
    clock.t = start + 20.0
    tell(20.0, [])  # nothing left to wait for: silent
    assert out.getvalue().splitlines() == [
        "envdoctor: still waiting for the target interpreter (its `import torch`; --python-timeout 8 s), "
        "storage (2 s)",
        "envdoctor: still waiting for the target interpreter (its `import torch`; --python-timeout 8 s), "
        "storage (7 s)"]


def test_check_waiting_is_silent_where_no_line_is_wanted(monkeypatch) -> None:
    from argparse import Namespace

    from envdoctor.cli.common import wait_progress

    monkeypatch.delenv("ENVDOCTOR_PROGRESS", raising=False)
    assert wait_progress(Namespace(python_timeout=None), Progress(io.StringIO(), rewrite=False)) is None  # no tty
    monkeypatch.setenv("ENVDOCTOR_PROGRESS", "1")
    assert wait_progress(Namespace(python_timeout=None), Progress(io.StringIO(), rewrite=False)) is not None
    monkeypatch.setenv("ENVDOCTOR_PROGRESS", "0")
    assert wait_progress(Namespace(python_timeout=None), Progress(io.StringIO(), rewrite=False)) is None
