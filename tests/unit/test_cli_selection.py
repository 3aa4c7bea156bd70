"""--only/--ignore globs matching no check are usage errors; a full disk under stdout is not exit 3."""

from __future__ import annotations

from tests.paths import FIXTURES

PASTES = FIXTURES / "pastes"


def _cli(*argv: str) -> int:
    from envdoctor.cli import main

    return main(list(argv))


def test_only_or_ignore_glob_matching_no_check_is_a_usage_error(capsys, monkeypatch):
    import envdoctor.services.collect as app

    def no_collect(*a, **k):  # the typo is reported before any probing
        raise AssertionError("collected facts for a command line that is a usage error")

    monkeypatch.setattr(app, "collect", no_collect)
    # `--only 'drvier.*'` used to run no check and print "No problems found" with exit code 0
    assert _cli("--only", "drvier.*") == 2
    assert "--only drvier.*: matches no check id" in capsys.readouterr().err
    assert _cli("--ignore", "driver.presnt") == 2
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--only", "nosuch") == 2
    capsys.readouterr()
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--only", "torch.*,driver.present", "--format",
                "json") == 1


def test_a_full_disk_under_stdout_is_not_an_internal_error(monkeypatch, capsys):
    import errno
    import io
    import sys

    class Full(io.StringIO):
        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    # `envdoctor list-checks > /dev/full` used to exit 3 with "internal error: OSError"
    assert _cli("list-checks") == 2
    assert capsys.readouterr().err == "envdoctor: cannot write the output: No space left on device\n"
