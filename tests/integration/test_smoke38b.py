"""Issue 38's "Done when" on real interpreters, the parts test_smoke.py did not reach (no mock of the failure itself):

- each place torch builds code into (TMPDIR, TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR) on a tmpfs mounted noexec in
  a private mount namespace (``unshare -rm``: a user and mount namespace, so no root is needed where user
  namespaces are allowed; skipped with the reason where neither it nor ``unshare -m`` as root can mount): the
  compile step fails, the finding names the mount point read from /proc/self/mountinfo, and its fix, run in a shell
  in the same namespace, leaves an environment where the same step passes; a read-only cache on a mount that
  allows executing files is quoted as what it is, never called noexec;
- the whole ``envdoctor check`` under a soft open-files limit the smoke DataLoader runs out of, both ways it runs
  out (the main process: torch's "Too many open files"; the workers' queue feeders: OSError [Errno 24], after which
  the loader waited for a batch that never came): an error of the limit, never "No problems found", and the fix
  printed (``ulimit -n <hard>``) run in the shell that starts the check again clears it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.findings import Severity
from tests.integration.test_smoke import _env, fresh, smoke_findings

pytestmark = pytest.mark.slow
COMPILE = [[[["compile", {}]], {"compile": 60}]]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _namespace(scratch: Path, option: str = "noexec") -> List[str]:
    """The argv prefix that runs a command in a private mount namespace with a tmpfs mounted ``option`` over
    ``scratch``; skips the test, saying why, where no such namespace can be made here."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed: no private mount namespace to mount a noexec tmpfs in")
    tried = []
    for flags in (["-rm"], ["-m"]):
        if flags == ["-m"] and os.geteuid() != 0:
            continue
        wrap = ["unshare", *flags, "sh", "-c", f"mount -t tmpfs -o {option} tmpfs {scratch} && exec \"$@\"", "sh"]
        probe = subprocess.run(wrap + ["cat", "/proc/self/mountinfo"], capture_output=True, text=True, timeout=30)
        if probe.returncode == 0 and any(f[4] == str(scratch) and option in f[5].split(",") for f in (
                line.split() for line in probe.stdout.splitlines()) if len(f) > 5):
            return wrap
        tried.append(f"unshare {' '.join(flags)}: {(probe.stderr or probe.stdout).strip()[:200]}")
    pytest.skip(f"cannot mount a {option} tmpfs in a private mount namespace here (" + "; ".join(tried) + ")")


@pytest.mark.parametrize("variable,role", [("TMPDIR", "temp"), ("TORCHINDUCTOR_CACHE_DIR", "inductor-cache"),
                                           ("TRITON_CACHE_DIR", "triton-cache")])
def test_a_build_directory_on_a_noexec_mount_is_named_with_its_mount_and_the_fix_works(
        cpu_venv, compat, tmp_path, variable, role) -> None:
    scratch = tmp_path / "noexec"
    scratch.mkdir()
    wrap = _namespace(scratch)
    home = tmp_path / "home"
    home.mkdir()
    target = scratch if variable == "TMPDIR" else scratch / "cache"
    env = _env(HOME=str(home), **{variable: str(target)})
    smoke = fresh(cpu_venv.python, COMPILE, tmp_path, env, wrap=wrap)
    step = smoke.step("compile")
    assert step.status == "failed", step
    bad = [x for x in step.detail["loads"] if x["ok"] is False]
    assert {x["role"] for x in bad} >= {role}
    assert all(x["mount_point"] == str(scratch) and "noexec" in x["mount_options"].split(",") and x["noexec"]
               for x in bad), bad
    assert all("failed to map segment from shared object" in x["error"] for x in bad), bad
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.code, f.category, f.severity) == ("smoke.steps/noexec", "TORCH_COMPILE_UNUSABLE", Severity.ERROR)
    assert f"({scratch} mounted noexec)" in f.summary and f"({role})" in f.summary
    assert any(e.path.endswith(".mount_options") and "noexec" in str(e.value) for e in f.evidence)
    assert f.fix.commands[0] == f"findmnt -no TARGET,OPTIONS -T {bad[0]['path']}"
    assert f.fix.summary.endswith(f"(or, as root, remount without noexec: mount -o remount,exec {scratch})")
    assert any(c.startswith("mkdir -p ") and f"export {variable}=" in c for c in f.fix.commands), f.fix.commands
    # the fix works: its commands in a shell inside the namespace (the noexec mount there), then the same step
    # with the environment they leave passes
    ran = subprocess.run(wrap + ["sh", "-c", " && ".join(f.fix.commands[1:])
                                 + " && env"], env=env, capture_output=True, text=True, timeout=60, check=True)
    fixed = dict(line.split("=", 1) for line in ran.stdout.splitlines() if "=" in line)
    assert fixed[variable] != str(target)
    again = fresh(cpu_venv.python, COMPILE, tmp_path, _env(HOME=str(home), **{variable: fixed[variable]}), wrap=wrap)
    assert again.step("compile").status == "ok", again.step("compile")
    assert not smoke_findings(cpu_venv.python, again, compat)


def test_a_read_only_cache_is_not_called_noexec_and_its_move_works(cpu_venv, compat, tmp_path) -> None:
    # the other way a cache directory fails, on a mount that allows executing files: quoted, never "noexec"
    scratch = tmp_path / "ro"
    scratch.mkdir()
    wrap = _namespace(scratch, "ro")
    home = tmp_path / "home"
    home.mkdir()
    env = _env(HOME=str(home), TRITON_CACHE_DIR=str(scratch / "cache"))
    smoke = fresh(cpu_venv.python, COMPILE, tmp_path, env, wrap=wrap)
    (bad,) = [x for x in smoke.step("compile").detail["loads"] if x["ok"] is False]
    assert bad["role"] == "triton-cache" and "Read-only file system" in bad["error"] and not bad.get("noexec")
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.code, f.category, f.severity) == ("smoke.steps/compile-failed", "TORCH_COMPILE_UNUSABLE",
                                                Severity.ERROR)
    assert "noexec" not in f.summary and "Read-only file system" in f.summary
    ran = subprocess.run(wrap + ["sh", "-c", " && ".join(f.fix.commands[1:]) + " && env"], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    fixed = dict(line.split("=", 1) for line in ran.stdout.splitlines() if "=" in line)
    again = fresh(cpu_venv.python, COMPILE, tmp_path, _env(HOME=str(home), TRITON_CACHE_DIR=fixed["TRITON_CACHE_DIR"]),
                  wrap=wrap)
    assert again.step("compile").status == "ok", again.step("compile")


def _soft_limit(soft: int):
    def preexec() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return preexec


def _check(python: str, cwd: Path, argv_prefix: List[str], soft: int, fmt: str = "json") -> subprocess.CompletedProcess:
    argv = argv_prefix + [sys.executable, "-m", "envdoctor", "check", "--python", python, "--format", fmt,
                          "--python-timeout", "240", "--no-redact"]
    return subprocess.run(argv, cwd=str(cwd), env=dict(os.environ, ENVDOCTOR_EARLY_PAYLOAD="0", COLUMNS="100"),
                          capture_output=True, text=True, timeout=400, preexec_fn=_soft_limit(soft))


@pytest.mark.parametrize("soft,says", [
    (64, "Too many open files. Communication with the workers is no longer possible"),  # the main process
    (40, "the workers said: OSError: [Errno 24] Too many open files"),  # the workers' feeders
])
def test_an_open_files_limit_the_dataloader_runs_out_of_fails_the_check_and_ulimit_clears_it(
        cpu_venv, tmp_path, soft, says) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"the hard open-files limit here is {hard}: raising the soft limit past 1,024 cannot be shown")
    proc = _check(cpu_venv.python, tmp_path, [], soft)
    report: Dict[str, Any] = json.loads(proc.stdout)
    smoke = report["facts"]["pythons"][0]["smoke"]
    assert smoke["open_files_limit"][0] == soft
    loader = next(s for s in smoke["steps"] if s["name"] == "dataloader")
    assert loader["status"] == "failed" and says in loader["error"], loader
    mine = [f for f in report["findings"] if f["code"].startswith("smoke.")]
    (f,) = [f for f in mine if f["severity"] != "info"]
    assert (f["code"], f["category"], f["severity"]) == ("smoke.open-files/dataloader-failed",
                                                         "OPEN_FILES_LIMIT_LOW", "error")
    assert f["summary"].endswith(f"too many open files (soft limit {soft})")
    assert proc.returncode != 0
    if soft != 40:
        return  # the console and the fix once (the same fix for both): each `check` is 20-60 s on a loaded box
    # the console's last word is the error count, never "No problems found"
    console = _check(cpu_venv.python, tmp_path, [], soft, fmt="console")
    assert "No problems found" not in console.stdout and "smoke.open-files" in console.stdout
    # the fix as printed, run in the shell that starts the run: the same check passes the DataLoader, no finding
    fix = f["fix"]["commands"][0]
    assert fix == f"ulimit -n {hard if hard != resource.RLIM_INFINITY and hard < 65536 else 65536}"
    again = json.loads(_check(cpu_venv.python, tmp_path, ["sh", "-c", fix + ' && exec "$@"', "sh"], soft).stdout)
    smoke = again["facts"]["pythons"][0]["smoke"]
    assert smoke["open_files_limit"][0] > 1024
    assert next(s for s in smoke["steps"] if s["name"] == "dataloader")["status"] == "ok"
    assert not [x for x in again["findings"] if x["code"].startswith("smoke.open-files")]
