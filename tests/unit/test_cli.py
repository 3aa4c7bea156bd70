"""The command line end to end: exit codes, --facts snapshots, bad input, list-checks, explain, live run here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from envdoctor.cli import main
from tests import machines as m


def run_cli(*args, stdin=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True,
                          input=stdin, timeout=timeout)


@pytest.mark.parametrize("name", sorted(m.SCENARIOS))
def test_check_facts_snapshot_json(tmp_path, name, capsys):
    build, category = m.SCENARIOS[name]
    snap = tmp_path / f"{name}.json"
    snap.write_text(build().to_json())
    code = main(["check", "--facts", str(snap), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    bad = {f["category"] for f in report["findings"] if f["severity"] in ("error", "warning")}
    assert bad == ({category} if category else set())
    assert code == (1 if category else 0)
    assert report["facts"]["origin"] == "snapshot"
    assert list(report) == sorted(report)  # sorted keys


def test_fail_on_warning_changes_exit_code(tmp_path, capsys):
    f = m.with_nvcc(m.healthy_a100(), "11.8", "11.8.89")  # nvcc major mismatch: a warning only
    snap = tmp_path / "warn.json"
    snap.write_text(f.to_json())
    assert main(["check", "--facts", str(snap), "--format", "json"]) == 0
    assert main(["check", "--facts", str(snap), "--format", "json", "--fail-on", "warning"]) == 1
    assert main(["check", "--facts", str(snap), "--format", "json", "--fail-on", "warning",
                 "--ignore", "toolchain.*"]) == 0
    capsys.readouterr()


def test_only_runs_selected_checks(tmp_path, capsys):
    snap = tmp_path / "s.json"
    snap.write_text(m.gpus_with_cpu_torch().to_json())
    main(["check", "--facts", str(snap), "--format", "json", "--only", "driver.*,packages.companions"])
    report = json.loads(capsys.readouterr().out)
    ids = {c["id"] for c in report["checks"]}
    assert ids and all(i.startswith("driver.") or i == "packages.companions" for i in ids)


@pytest.mark.parametrize("content,needle", [
    ("{not json", "not valid JSON"),
    ('{"schema_version": 99}', "newer than this envdoctor"),
    ('[1, 2]', "JSON object"),
    ('{"schema_version": 1, "driver": {"gpus": "many"}}', "facts.driver.gpus: expected a list"),
    ("\x00\x01\x02binary", "not valid JSON"),
])
def test_bad_facts_file_is_one_line_exit_2(tmp_path, content, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = run_cli("check", "--facts", str(bad))
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_facts_file_exit_2():
    proc = run_cli("check", "--facts", "/nonexistent/snap.json")
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_usage_error_exit_2():
    assert run_cli("--format", "yaml").returncode == 2


def test_list_checks_and_explain(capsys):
    assert main(["list-checks"]) == 0
    out = capsys.readouterr().out
    assert "driver.cuda-compat" in out and "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in out
    assert main(["explain", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"]) == 0
    out = capsys.readouterr().out
    assert "Why it matters" in out and "driver.cuda-compat" in out
    assert main(["explain", "driver.cuda-compat/too-old"]) == 0
    assert "finding code: driver.cuda-compat/too-old" in capsys.readouterr().out
    assert main(["explain", "NOPE"]) == 2


def test_markdown_snapshot_is_redacted(tmp_path, capsys):
    f = m.healthy_a100()
    from dataclasses import replace

    f = replace(f, host=replace(f.host, hostname="gpu-node-17"),
                driver=replace(f.driver, gpus=[replace(f.driver.gpus[0], uuid="GPU-1234abcd-0000-1111-2222-333344445555")]))
    snap = tmp_path / "s.json"
    snap.write_text(f.to_json())
    assert main(["check", "--facts", str(snap), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "<details>" in out and "gpu-node-17" not in out and "1234abcd" not in out


def test_live_run_on_this_machine_says_no_driver(tmp_path):
    """The real probes, here: no NVIDIA driver; nvcc found when the machine has one. (run_cli's timeout
    is the hang guard; speed is measured by scripts/bench_vs_collect_env.py, not asserted here.)"""
    proc = run_cli("--format", "json", "--python", sys.executable)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    facts = report["facts"]
    assert facts["origin"] == "live"
    assert {p["name"] for p in facts["probes"]} >= {"driver", "host", "toolkits", "pythons", "storage"}
    if facts["driver"]["status"] == "absent":
        # no driver, or (no vendor 0x10de device on the bus) no NVIDIA hardware at all: CPU work is fine
        assert {"NO_NVIDIA_DRIVER", "HEALTHY"} & {f["category"] for f in report["findings"]}
    import shutil

    if shutil.which("nvcc"):
        assert facts["toolkits"]["on_path"]["version"]
    if facts["topology"].get("nvidia_pci_devices") == []:
        # no NVIDIA hardware at all: nvcc or not, no driver or container error (CPU work is fine)
        assert not {f["category"] for f in report["findings"] if f["severity"] == "error"} & {
            "NO_NVIDIA_DRIVER", "CONTAINER_NO_GPU_RUNTIME", "NO_GPU_VISIBLE"}
    elif shutil.which("nvcc") and facts["driver"]["status"] == "absent":
        assert proc.returncode == 1  # NVIDIA hardware (or unknown) and nvcc, no driver: an error


def test_collect_then_check_elsewhere(tmp_path):
    out = tmp_path / "snap.json"
    proc = run_cli("collect", "-o", str(out), "--python", sys.executable, "--no-torch")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["schema_version"] == 1 and data["host"]["hostname"] in (None, "<redacted>")
    proc = run_cli("check", "--facts", str(out), "--format", "json")
    assert proc.returncode in (0, 1)
    assert json.loads(proc.stdout)["facts"]["origin"] == "snapshot"


@pytest.mark.parametrize("argv", [["nosuch"], ["nosuch", "--help"], ["report.txt"], ["-"]])
def test_unknown_command_is_a_usage_error_naming_the_commands(argv):
    from envdoctor.cli import _command_names, build_parser

    proc = run_cli(*argv, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and f"unknown command {argv[0]!r}" in lines[0], proc.stderr
    assert all(name in lines[0] for name in _command_names(build_parser()))


def test_options_alone_mean_check(tmp_path, capsys):
    snap = tmp_path / "s.json"
    snap.write_text(m.healthy_a100().to_json())
    assert main(["--facts", str(snap), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["facts"]["origin"] == "snapshot"


def test_every_command_in_the_parser_has_a_handler():
    from envdoctor.cli import COMMANDS, _command_names, build_parser

    names = _command_names(build_parser())
    assert {"check", "collect", "diagnose", "list-checks", "explain"} <= set(names)
    assert set(names) == set(COMMANDS)
