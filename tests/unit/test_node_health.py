"""`envdoctor node-health`: the verdict's contract (exit status, one line within the byte limit, the drain/taint
command printed and never run), the preset (no interpreter probed, no torch), and the documented scheduler
examples in docs/examples/ run the way node-problem-detector, NHC and node_exporter run them."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.judging import Selection, judge
from envdoctor.model.facts import Facts
from envdoctor.model.findings import CheckResult, CheckStatus
from envdoctor.services import node_health as nh
from tests import machines
from tests.paths import REPO

EXAMPLES = REPO / "docs" / "examples"
ENVDOCTOR = [sys.executable, "-m", "envdoctor"]


def _report(facts: Facts, with_torch: bool = False):
    return judge(facts, load_compat(), Selection(only=nh.preset(with_torch)["only"]))


def test_preset_excludes_the_interpreter_and_the_jobs_environment() -> None:
    from envdoctor.checks import all_checks, select

    ids = {c.id for c in select(all_checks(), nh.preset()["only"])}
    assert "gpu.xid" in ids and "driver.library-match" in ids and "pcie.link" in ids
    assert not {i for i in ids if i.split(".")[0] in ("torch", "packages", "libraries", "diagnose", "messages")}
    assert "pythons" not in nh.preset()["sections"]
    with_torch = {c.id for c in select(all_checks(), nh.preset(True)["only"])}
    assert "torch.gpu-arch" in with_torch and "driver.cuda-compat" in with_torch


def test_unhealthy_node_exits_1_with_one_line_and_the_drain_commands() -> None:
    report = _report(machines.h100_old_driver())
    health = nh.verdict(report, env={"SLURMD_NODENAME": "gpu-a01"}, scheduler="auto")
    # the old driver is the job's problem (its torch), not the node's: the preset does not drain for it
    assert health.exit_code == nh.EXIT_HEALTHY, health.line
    f = machines.healthy_a100()
    gpus = [dataclasses.replace(g, remapped_rows_failure=True, remapped_rows_uncorrectable=3) for g in f.driver.gpus]
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=gpus))
    health = nh.verdict(_report(f), env={"SLURMD_NODENAME": "gpu-a01"}, scheduler="auto")
    assert health.exit_code == nh.EXIT_UNHEALTHY and health.status == "unhealthy"
    assert health.line.startswith("envdoctor FAIL GPU_MEMORY_ERRORS")
    assert "\n" not in health.line and len(health.line.encode()) <= nh.NPD_MAX_OUTPUT
    assert health.remedies == [f"scontrol update NodeName=gpu-a01 State=DRAIN Reason='envdoctor: GPU_MEMORY_ERRORS "
                               f"({health.problems[0].code})'"]


def test_kubernetes_taint_names_the_node_from_the_downward_api_and_quotes_it() -> None:
    f = machines.healthy_a100()
    gpus = [dataclasses.replace(g, remapped_rows_failure=True) for g in f.driver.gpus]
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=gpus))
    health = nh.verdict(_report(f), scheduler="kubernetes", env={"NODE_NAME": "node $(rm -rf /)"})
    assert health.remedies == ["kubectl taint nodes 'node $(rm -rf /)' envdoctor/unhealthy=GPU_MEMORY_ERRORS:NoSchedule"]
    assert nh.verdict(_report(f), scheduler="none", env={}).remedies == []


def test_nothing_judged_is_unknown_and_a_crashed_check_is_unknown() -> None:
    empty = judge(Facts(envdoctor_version="t", origin="snapshot"), load_compat(), Selection(only=nh.preset()["only"]))
    health = nh.verdict(empty, env={})
    assert health.exit_code == nh.EXIT_UNKNOWN and health.line.startswith("envdoctor UNKNOWN")
    report = _report(machines.healthy_a100())
    crashed = CheckResult(id="gpu.xid", area="gpu", title="x", status=CheckStatus.ERRORED, reason="KeyError: 'x'")
    report = dataclasses.replace(report, checks=[crashed if c.id == "gpu.xid" else c for c in report.checks])
    health = nh.verdict(report, env={})
    assert health.exit_code == nh.EXIT_UNKNOWN and "gpu.xid" in health.line


def test_healthy_node_says_how_many_checks_passed() -> None:
    health = nh.verdict(_report(machines.healthy_a100()), env={})
    assert health.exit_code == nh.EXIT_HEALTHY
    assert re.fullmatch(r"envdoctor OK: \d+ checks passed(, \d+ warnings?)?", health.line), health.line


@pytest.mark.parametrize("text,limit", [("é" * 100, 80), ("x" * 79, 80), ("a  b\n c " * 30, 40)])
def test_line_fits_the_byte_limit_without_splitting_a_character(text: str, limit: int) -> None:
    out = nh.fit_bytes(text, limit)
    assert len(out.encode("utf-8")) <= limit and "\n" not in out
    out.encode("utf-8").decode("utf-8")  # whole characters only


def test_collect_skips_the_sections_the_preset_does_not_read(monkeypatch) -> None:
    """The preset never starts the target interpreter: the pythons probe does not run, its section is empty and
    the probe run says why."""
    from envdoctor.probes import python_env
    from envdoctor.services.collect import NOT_PROBED, CollectOptions, collect

    def boom(*a, **k):
        raise AssertionError("the interpreter was probed")

    monkeypatch.setattr(python_env, "probe_pythons", boom, raising=False)
    facts = collect(CollectOptions(sections=frozenset({"host"}), kernel_log=False))
    assert facts.pythons == []
    runs = {r.name: r for r in facts.probes}
    assert runs["pythons"].status == "skipped" and runs["pythons"].reason == NOT_PROBED
    assert facts.driver.status == "skipped" and facts.host.status != "skipped"


# --- the documented examples, run as their schedulers run them -------------------------------------------------

def _npd_run(rule_args, timeout_s: float, max_output: int):
    """What node-problem-detector's custom plugin does with a rule (pkg/custompluginmonitor/plugin/plugin.go):
    run it, trim stdout, cut it at max_output_length bytes, map 0 -> OK, 1 -> NonOK, anything else -> Unknown.
    The test's own timeout is generous (CI is loaded); the preset's speed is a benchmark (scripts/)."""
    proc = subprocess.run(ENVDOCTOR + rule_args, capture_output=True, timeout=max(timeout_s, 120))
    out = proc.stdout.decode("utf-8").strip()
    status = {0: "OK", 1: "NonOK"}.get(proc.returncode, "Unknown")
    return status, out, out.encode()[:max_output], proc


def test_npd_plugin_config_is_valid_and_its_rule_keeps_the_contract() -> None:
    cfg = json.loads((EXAMPLES / "node-problem-detector" / "envdoctor-monitor.json").read_text())
    # NPD's own validation (pkg/custompluginmonitor/types/config.go Validate)
    assert cfg["plugin"] == "custom"
    glob = cfg["pluginConfig"]
    seconds = lambda s: float(s.rstrip("s"))  # noqa: E731
    conditions = {c["type"] for c in cfg["conditions"]}
    for rule in cfg["rules"]:
        assert seconds(rule["timeout"]) <= seconds(glob["timeout"])
        assert rule["type"] != "permanent" or rule["condition"] in conditions
        assert rule["path"].endswith("/envdoctor") and rule["args"][0] == "node-health"
        status, out, cut, proc = _npd_run(rule["args"], seconds(rule["timeout"]), glob["max_output_length"])
        # this CPU box with --expect-gpu: NonOK, with a message NPD shows whole (already within its limit)
        assert status == "NonOK", (proc.returncode, out, proc.stderr)
        assert cut == out.encode() and "\n" not in out and out.startswith("envdoctor FAIL NO_GPU_VISIBLE")
        assert b"kubectl taint nodes" in proc.stderr  # for the operator, on stderr (NPD logs it)


def test_npd_sees_ok_on_a_healthy_node() -> None:
    status, out, cut, proc = _npd_run(["node-health", "--scheduler", "kubernetes"], 20, 80)
    assert status == "OK" and out.startswith("envdoctor OK"), (out, proc.stderr)
    assert proc.stderr == b""


def test_nhc_line_runs_a_command_whose_status_nhc_reads() -> None:
    line = next(ln for ln in (EXAMPLES / "slurm" / "nhc.conf").read_text().splitlines()
                if ln.strip() and not ln.startswith("#"))
    target, check = [p.strip() for p in line.split("||", 1)]
    assert target == "*"
    words = shlex.split(check)
    assert words[:2] == ["check_cmd_status", "-t"] and words[3:5] == ["-r", "0"]
    assert int(words[2]) <= 60  # Slurm kills a HealthCheckProgram after 60 s
    cmd = words[5:]
    assert cmd[0].endswith("/envdoctor")
    proc = subprocess.run(ENVDOCTOR + cmd[1:], capture_output=True, timeout=120)
    assert proc.returncode == 1  # no GPU here, and the line says GPUs belong: NHC fails the node
    assert b"scontrol update NodeName=" in proc.stderr


def test_slurm_conf_lines_are_well_formed() -> None:
    conf = dict(ln.split("=", 1) for ln in (EXAMPLES / "slurm" / "slurm.conf").read_text().splitlines()
                if ln.strip() and not ln.startswith("#"))
    assert Path(conf["HealthCheckProgram"]).is_absolute()
    assert int(conf["HealthCheckInterval"]) > 0 and conf["HealthCheckNodeState"] in ("ANY", "IDLE", "ALLOC", "MIXED")


def test_textfile_service_and_cron_write_what_node_exporter_reads(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    service = (EXAMPLES / "node-exporter" / "envdoctor-textfile.service").read_text()
    exec_start = next(ln.split("=", 1)[1] for ln in service.splitlines() if ln.startswith("ExecStart="))
    ok = {int(x) for ln in service.splitlines() if ln.startswith("SuccessExitStatus=") for x in ln.split("=")[1].split()}
    cron = next(ln for ln in (EXAMPLES / "node-exporter" / "envdoctor.cron").read_text().splitlines()
                if ln.strip() and not ln.startswith("#"))
    cron_cmd = " ".join(cron.split()[6:])  # five time fields and the user
    for cmd in (exec_start, cron_cmd):
        words = shlex.split(cmd)
        assert words[0].endswith("/envdoctor")
        i = words.index("--textfile")
        words[i + 1] = str(tmp_path)
        proc = subprocess.run(ENVDOCTOR + words[1:], capture_output=True, timeout=180)
        assert proc.returncode in {0} | ok, proc.stderr
        families = {f.name for f in text_string_to_metric_families((tmp_path / "envdoctor.prom").read_text())}
        assert "envdoctor_check_status" in families and "envdoctor_verdict" in families
        assert sorted(p.name for p in tmp_path.iterdir()) == ["envdoctor.prom"]


def test_cli_rejects_bad_options_in_one_line() -> None:
    proc = subprocess.run(ENVDOCTOR + ["node-health", "--textfile", "/nonexistent/dir"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "not a directory" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(ENVDOCTOR + ["node-health", "--python", sys.executable], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "--with-torch" in proc.stderr


# --- trust at the edges (issue 40) -------------------------------------------------------------------------------

def _latin1_torch_interpreter(tmp_path: Path) -> str:
    """A target whose torch import fails naming a path with a Latin-1 byte (a directory `caf\\xe9`, made from
    bytes): the interpreter runs this Python with that fake torch first on sys.path."""
    import os

    site = os.path.join(os.fsencode(tmp_path), b"caf\xe9", b"site")
    os.makedirs(os.path.join(site, b"torch"))
    with open(os.path.join(site, b"torch", b"__init__.py"), "w") as fh:
        fh.write("raise ImportError('libcudart.so.12: cannot open shared object file, loading ' + __file__)\n")
    with open(os.path.join(site, b"torch", b"version.py"), "w") as fh:
        fh.write("__version__ = '2.4.0+cu121'\ncuda = '12.1'\n")
    script = tmp_path / "python"
    script.write_bytes(b"#!/bin/sh\nPYTHONPATH='" + site + b"' exec " + os.fsencode(sys.executable) + b' "$@"\n')
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="a shell-script interpreter and a bytes path")
def test_a_latin1_path_in_torchs_import_error_fails_the_node_in_every_format(tmp_path: Path) -> None:
    # before: "internal error: UnicodeEncodeError ... surrogates not allowed", exit 3, which node-problem-detector
    # reads as unknown; the JSON and the metrics crashed the same way
    from prometheus_client.parser import text_string_to_metric_families

    python = _latin1_torch_interpreter(tmp_path)
    base = ENVDOCTOR + ["node-health", "--with-torch", "--python", python, "--no-redact"]
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    for fmt in ("line", "json", "openmetrics"):
        proc = subprocess.run(base + ["--format", fmt, "--textfile", str(metrics)], capture_output=True,
                              timeout=180)
        assert proc.returncode == nh.EXIT_UNHEALTHY, proc.stderr.decode("utf-8", "replace")
        assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr
        out = proc.stdout.decode("utf-8")  # every byte of it UTF-8
        if fmt == "json":
            verdict = json.loads(out)
            assert verdict["status"] == "unhealthy" and verdict["exit_code"] == 1
            assert any("caf\\xe9" in p["summary"] for p in verdict["problems"]), verdict  # the byte, written out
        elif fmt == "line":
            assert out.startswith("envdoctor FAIL TORCH_IMPORT_FAILED") and len(proc.stdout.rstrip(b"\n")) <= 80
        else:
            assert {f.name for f in text_string_to_metric_families(out)} >= {"envdoctor_check_status"}
        text = (metrics / "envdoctor.prom").read_bytes().decode("utf-8")
        assert {f.name for f in text_string_to_metric_families(text)} >= {"envdoctor_verdict"}


def test_an_error_that_follows_from_a_warning_still_fails_the_node() -> None:
    # the same facts give `check` exit 1 (Report.fails): node-health said OK when the error was a consequence
    f = machines.healthy_a100()
    gpus = [dataclasses.replace(g, remapped_rows_failure=True, remapped_rows_uncorrectable=3) for g in f.driver.gpus]
    report = _report(dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=gpus)))
    root = report.problems[0]
    demoted = dataclasses.replace(root, severity="warning", code=root.code + "-root")
    consequence = dataclasses.replace(root, caused_by=demoted.code)
    checks = [dataclasses.replace(c, findings=[demoted, consequence]) if root in c.findings else c
              for c in report.checks]
    report = dataclasses.replace(report, checks=checks)
    assert [f.severity for f in report.problems] == ["warning"] and report.fails("error")
    health = nh.verdict(report, env={}, scheduler="none")
    assert health.exit_code == nh.EXIT_UNHEALTHY and health.problems == [consequence]


def test_a_crashed_probe_is_unknown_never_ok() -> None:
    # one non-UTF-8 byte in /etc/os-release crashed the host probe: every host check skipped, and the node read OK
    from envdoctor.model.facts import ProbeRun

    facts = machines.healthy_a100()
    assert nh.verdict(_report(facts), env={}).exit_code == nh.EXIT_HEALTHY
    crash = ProbeRun("host", "failed", "probe crashed: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9")
    facts = dataclasses.replace(facts, probes=[*facts.probes, crash])
    health = nh.verdict(_report(facts), env={})
    assert health.exit_code == nh.EXIT_UNKNOWN and health.status == "unknown"
    assert health.line.startswith("envdoctor UNKNOWN: probe host crashed: UnicodeDecodeError"), health.line
