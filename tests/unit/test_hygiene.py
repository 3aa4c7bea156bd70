"""Input and output hygiene: facts validated, usage errors before probing, redaction, Markdown, width, explain."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor import cli
from envdoctor.model.facts import Facts, FactsError, PythonEnv, TorchInfo
from envdoctor.model.findings import CheckResult, CheckStatus, Finding, Fix, Report, Severity
from envdoctor.probes import runner as runner_mod
from envdoctor.report import redact_text, render_console, render_markdown
from envdoctor.services.collect import CollectOptions, OptionsError, doctor, validate_options
from tests import machines as m
from tests.paths import REPO

ROOT = REPO
SNAP = ROOT / "tests" / "fixtures" / "snapshots" / "h100-sxm-x8-healthy.json"


def _main(*argv: str) -> int:
    return cli.main(list(argv))


# --------------------------------------------------------------------------- --facts validated


def _snapshot(tmp_path: Path, text: str) -> str:
    p = tmp_path / "snap.json"
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("body,field", [
    ({"host": {"status": "ok", "memory_total_bytes": -5}}, "facts.host.memory_total_bytes"),
    ({"driver": {"status": "ok", "version": "abc"}}, "facts.driver.version"),
    ({"host": {"status": "ok", "cgroup_cpu_quota": -2.0}}, "facts.host.cgroup_cpu_quota"),
    ({"host": {"status": "ok", "memory_total_bytes": 10**40}}, "facts.host.memory_total_bytes"),
    ({"pythons": [{"status": "ok", "torch": {"version": "<installed>"}}]}, "facts.pythons[0].torch.version"),
])
def test_impossible_values_are_exit_2_naming_the_field(tmp_path, capsys, body, field):
    path = _snapshot(tmp_path, json.dumps({"schema_version": 1, **body}))
    assert _main("--facts", path) == 2
    err = capsys.readouterr().err
    assert field in err and err.count("\n") == 1, err


def test_real_snapshots_and_every_scenario_pass_validation():
    Facts.from_json(SNAP.read_text(encoding="utf-8"))
    for build, _ in m.SCENARIOS.values():
        Facts.from_json(build().to_json())


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"schema_version": 1, "host": {"memory_total_bytes": ' + "9" * 5000 + "}}",
    '{"schema_version": 1, "host": {"cgroup_cpu_quota": 1e999}}',
])
def test_deep_nesting_and_huge_numbers_are_exit_2_not_3(tmp_path, capsys, text):
    assert _main("--facts", _snapshot(tmp_path, text)) == 2
    assert "internal error" not in capsys.readouterr().err


# --------------------------------------------------------------------------- usage errors, before probing


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "ten"])
@pytest.mark.parametrize("command", ["check", "collect", "assert"])
def test_python_timeout_must_be_positive_and_finite(command, value, capsys):
    with pytest.raises(SystemExit) as e:
        _main(command, "--python-timeout", value)
    assert e.value.code == 2
    assert "--python-timeout" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--python", sys.executable], ["--no-torch"], ["--data", "."],
                                   ["--python-timeout", "5"], ["--load-pcie"], ["--smoke", "thorough"]])
def test_collect_options_with_facts_are_a_usage_error(extra, capsys):
    assert _main("--facts", str(SNAP), *extra) == 2
    assert "cannot apply with --facts" in capsys.readouterr().err


def test_ignore_everything_is_a_usage_error_not_no_problems(capsys):
    assert _main("--facts", str(SNAP), "--ignore", "*") == 2
    assert "leave no check to run" in capsys.readouterr().err


def test_unwritable_output_is_refused_before_probing(tmp_path, capsys):
    ran = tmp_path / "ran"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\ntouch {ran}\n")
    fake.chmod(0o755)
    for out in (str(tmp_path / "no" / "such" / "dir" / "r.json"), str(tmp_path)):
        assert _main("--python", str(fake), "--format", "json", "-o", out) == 2
        assert "cannot write" in capsys.readouterr().err
    assert not ran.exists()  # refused before the interpreter was ever run


def test_diagnose_of_a_large_paste_reads_head_and_tail_and_says_so(tmp_path, monkeypatch, capsys):
    from envdoctor.diagnose import bounded_read

    monkeypatch.setattr(bounded_read, "WHOLE_MAX", 4096)
    monkeypatch.setattr(bounded_read, "HEAD", 4096)
    monkeypatch.setattr(bounded_read, "TAIL", 1024)
    paste = (ROOT / "tests" / "fixtures" / "pastes" / "no-driver.txt").read_text(encoding="utf-8")
    big = tmp_path / "big.txt"
    big.write_text(paste + "\n" + "x\n" * 10_000, encoding="utf-8")
    _main("diagnose", str(big), "--format", "json")
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"]  # the head still holds the paste
    assert any(n.startswith("the middle of big.txt") for n in doc["facts"]["paste"]["not_found"])


def test_runner_output_is_capped(monkeypatch):
    monkeypatch.setattr(runner_mod, "OUTPUT_CAP_BYTES", 1000)
    res = runner_mod.Runner().run([sys.executable, "-c", "import sys; sys.stdout.write('x' * 200000)"], timeout=30)
    assert len(res.stdout) == 1000 and res.returncode == 0 and res.truncated and res.ok


def test_a_payload_that_floods_its_output_is_a_clear_failure(tmp_path, monkeypatch):
    from envdoctor.probes import python_env

    monkeypatch.setattr(runner_mod, "OUTPUT_CAP_BYTES", 1000)
    monkeypatch.setattr(python_env, "OUTPUT_CAP_BYTES", 1000)
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; sys.stdout.write(\"{{\" * 100000)'\n")
    fake.chmod(0o755)
    env = python_env.probe_python(str(fake), runner_mod.Runner(), 30.0)
    assert env.status == "failed" and "printed more than" in env.reason, env.reason


def test_runner_tracks_no_child_after_it_returns():
    runner_mod.Runner().run([sys.executable, "-c", "pass"], timeout=30)
    assert runner_mod.live_children() == 0


# --------------------------------------------------------------------------- doctor() validates like the CLI


@pytest.mark.parametrize("kwargs,words", [
    ({"options": CollectOptions(pythons=sys.executable)}, "list of strings"),  # type: ignore[arg-type]
    ({"options": CollectOptions(pythons=["/no/such/python"])}, "no such file"),
    ({"options": CollectOptions(data_paths=["/no/such/data"])}, "no such file or directory"),
    ({"options": CollectOptions(python_timeout_s=math.nan)}, "positive number"),
    ({"only": "driver.*"}, "list of strings"),
    ({"only": ["drvier.*"]}, "matches no check"),
    ({"ignore": ["*"]}, "no check to run"),
])
def test_doctor_rejects_what_the_cli_rejects(kwargs, words):
    with pytest.raises(OptionsError, match=words):
        doctor(**kwargs)


def test_validate_options_resolves_a_venv_prefix_like_the_cli(tmp_path):
    (tmp_path / "bin").mkdir()
    py = tmp_path / "bin" / "python"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    assert validate_options(CollectOptions(pythons=[str(tmp_path)])).pythons == [str(py)]


# --------------------------------------------------------------------------- permission is not "not found"


def test_permission_denied_is_said_as_such(monkeypatch, tmp_path):
    from envdoctor.probes.storage import _Disks, _probe_path

    real_stat = os.stat
    locked = str(tmp_path / "locked")

    def stat(path, *a, **k):
        if str(path).startswith(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(cli.UsageError, match="permission denied"):
        cli.common.data_target(locked + "/data")
    with pytest.raises(cli.UsageError, match="permission denied"):
        cli.common.python_target(locked + "/bin/python")
    dp = _probe_path(locked + "/data", None, "/", [], _Disks("/", None))
    assert dp.status == "failed" and "permission denied" in dp.reason and dp.exists is None


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize("text,gone,kept", [
    ("/gpfs/home/alice/data", "alice", "~/data"),
    ("/private/home/bob/venv/bin/python", "bob", "~/venv"),
    ("/Users/carol/miniconda3", "carol", "~/miniconda3"),
    ("pip install --index-url https://__token__:pypi-AgEIcHlw@pypi.example.com/simple x", "pypi-AgEIcHlw",
     "https://<redacted>@pypi.example.com"),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456", "hf_abc", "HF_TOKEN=<redacted>"),
    ("WANDB_API_KEY: 0123456789abcdef", "0123456789abcdef", "WANDB_API_KEY: <redacted>"),
    ("PASSWORD='s3 cret'", "s3 cret", "PASSWORD=<redacted>"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked", "ghp_", "token <redacted> leaked"),
    ("    Serial Number                         : 1650321012345", "1650321012345", "Serial Number"),
    ("TOKENIZERS_PARALLELISM=false", "<redacted>", "TOKENIZERS_PARALLELISM=false"),
])
def test_redaction_covers_homes_secrets_and_serials(text, gone, kept):
    out = redact_text(text)
    assert gone not in out and kept in out, out


def test_the_real_home_and_scratch_are_redacted_whatever_their_prefix(monkeypatch):
    monkeypatch.setenv("HOME", "/people/zed")
    monkeypatch.setenv("USER", "zed")
    out = redact_text("/people/zed/venv/bin/python, /scratch/zed/imagenet, /people/zedd")
    assert out == "~/venv/bin/python, /scratch/<redacted>/imagenet, /people/zedd"


def test_markdown_redacts_secrets_in_the_environment_and_paste_excerpts(tmp_path, capsys):
    f = m.healthy_a100()
    py = f.pythons[0]
    f = dataclasses.replace(f, pythons=[dataclasses.replace(py, env={"HF_TOKEN": "hf_secretsecretsecretsecret1",
                                                                     "LD_LIBRARY_PATH": "/gpfs/home/alice/lib"})])
    snap = tmp_path / "s.json"
    snap.write_text(f.to_json())
    assert _main("--facts", str(snap), "--format", "markdown") in (0, 1)
    md = capsys.readouterr().out
    assert "hf_secret" not in md and "alice" not in md
    paste = "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456\n" + \
        (ROOT / "tests" / "fixtures" / "pastes" / "torch-import-failed.txt").read_text(encoding="utf-8") + \
        "\nFile \"/gpfs/home/alice/train.py\", line 3\n"
    p = tmp_path / "paste.txt"
    p.write_text(paste)
    _main("diagnose", str(p), "--format", "markdown")
    md = capsys.readouterr().out
    assert "hf_abc" not in md and "alice" not in md


# --------------------------------------------------------------------------- Markdown


def _report_with(summary: str, detail: str) -> Report:
    f = Finding("torch.import/failed", "TORCH_IMPORT_FAILED", Severity.ERROR, summary, detail=detail,
                fix=Fix("Reinstall torch", ["python -m pip install torch"], "https://example.org/a_b_c"))
    return Report(m.healthy_a100(), [CheckResult("torch.import", "torch", "torch imports", CheckStatus.FAILED, [f])],
                  "0")


def test_markdown_escapes_what_github_would_render():
    md = render_markdown(_report_with("torch.__version__ is <installed> [x](y)", "see `torch.__version__` *now*"),
                         redact=False)
    assert "torch.\\_\\_version\\_\\_ is \\<installed\\> \\[x\\](y)" in md
    assert "see `torch.__version__` \\*now\\*" in md  # code spans stay as written
    assert "<https://example.org/a_b_c>" in md
    assert "<installed>" not in md.replace("\\<installed\\>", "")


def test_markdown_is_utf8_whatever_the_terminal_encoding():
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "envdoctor", "--facts", str(SNAP), "--format", "markdown"],
                         capture_output=True, env=env, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    assert "✓".encode() in out.stdout
    out.stdout.decode("utf-8")


# --------------------------------------------------------------------------- console width


def test_console_uses_the_terminal_width_but_never_below_60(monkeypatch):
    report = _report_with("x " * 80, "y " * 80)
    for columns, expect in (("72", 72), ("30", 60), ("140", 140)):
        monkeypatch.setenv("COLUMNS", columns)
        text = render_console(report, color=False)
        widths = [len(line) for line in text.splitlines()]
        assert max(widths) <= expect and max(widths) > expect - 15, (columns, max(widths))


# --------------------------------------------------------------------------- explain


@pytest.mark.parametrize("code", ["driver.present/bogus", "NOPE_CATEGORY", "no.such-check"])
def test_explain_rejects_codes_that_do_not_exist(code, capsys):
    assert _main("explain", code) == 2


@pytest.mark.parametrize("code", ["driver.present/absent",
                                  "gpu.xid/79",
                                  "toolchain.nvcc-torch/major", "NOTE",
                                  "driver.cuda-compat"])
def test_explain_accepts_real_codes(code, capsys):
    assert _main("explain", code) == 0


def test_torch_info_in_a_snapshot_round_trips_its_validation():
    py = PythonEnv(status="ok", python_version="3.11.7", torch=TorchInfo(version="2.5.1+cu124", cuda="12.4"))
    Facts.from_json(Facts(pythons=[py]).to_json())
    with pytest.raises(FactsError, match="facts.pythons\\[0\\].torch.cuda"):
        Facts.from_json(Facts(pythons=[PythonEnv(torch=TorchInfo(cuda="twelve"))]).to_json())
