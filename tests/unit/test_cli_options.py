"""--python and --data: typos are usage errors; a venv prefix and duplicates are inspected once."""

from __future__ import annotations

from envdoctor.model.facts import ProbeStatus


def _cli(*argv: str) -> int:
    from envdoctor.cli import main

    return main(list(argv))


def test_python_typo_is_a_usage_error_not_a_clean_report(tmp_path, capsys):
    # `--python /opt/venv/bin/pyhton --only 'torch.*'` used to print "No problems found" and exit 0
    (tmp_path / "notexec").write_text("")
    for bad, why in ((str(tmp_path / "missing"), "no such file"), (str(tmp_path), "is a directory"),
                     (str(tmp_path / "notexec"), "not executable"),
                     ("no-such-python-on-path", "no such command on PATH")):
        assert _cli("--python", bad, "--only", "torch.*", "--format", "json") == 2, bad
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err and err.count("\n") == 1


def test_python_venv_prefix_and_duplicates_are_inspected_once(tmp_path, monkeypatch):
    import sys

    from envdoctor.cli.common import python_target  # the CLI wraps app.python_target
    from envdoctor.services import collect as app

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python").symlink_to(sys.executable)
    assert python_target(str(venv)) == str(venv / "bin/python")
    seen = []

    def fake_probe(exe, runner, timeout, inspect_torch, how):
        from envdoctor.model.facts import PythonEnv

        seen.append(exe)
        return PythonEnv(status=ProbeStatus.OK, executable=exe)

    import envdoctor.probes.python_env as pe

    monkeypatch.setattr(pe, "probe_python", fake_probe)
    monkeypatch.chdir(tmp_path)
    facts = app.collect(app.CollectOptions(pythons=[str(venv / "bin/python"), "venv/bin/python",
                                                    "./venv/bin/../bin/python"], kernel_log=False))
    assert seen == [str(venv / "bin/python")] and len(facts.pythons) == 1


def test_missing_data_path_is_a_usage_error(tmp_path, capsys):
    # used to skip storage.data-path and exit 0: a volume that is not mounted looked like a clean bill
    assert _cli("--data", str(tmp_path / "not-mounted"), "--no-torch", "--only", "storage.*") == 2
    err = capsys.readouterr().err
    assert "not-mounted: no such file or directory" in err and err.count("\n") == 1
    odd = tmp_path / "dir with spaces" / "データ"
    odd.mkdir(parents=True)
    assert _cli("--data", str(odd), "--no-torch", "--only", "storage.*", "--format", "json") in (0, 1)
