"""`envdoctor node-health`: the fast node check a scheduler calls (Slurm's HealthCheckProgram or LBNL NHC,
Kubernetes node-problem-detector's custom plugin), as a Python call that returns the verdict and prints nothing.

The contract is the schedulers', not ours:

- node-problem-detector runs a custom plugin with a timeout (5 s by default), reads its exit status (0 OK,
  1 NonOK, anything else Unknown) and the first ``max_output_length`` bytes (80 by default) of its trimmed
  stdout as the condition's message, and logs stderr (kubernetes/node-problem-detector
  pkg/custompluginmonitor/plugin/plugin.go and types/config.go, read at commit 01a6793).
- Slurm runs HealthCheckProgram as root every HealthCheckInterval and kills it after 60 s; it does not drain on
  the exit status: the program (NHC's node-mark-offline) does that itself (slurm.conf(5), HealthCheckProgram).
  NHC's ``check_cmd_status -t SECONDS -r 0 COMMAND`` fails the node when COMMAND exits non-zero (mej/nhc
  scripts/lbnl_cmd.nhc; its default timeout is 5 s).

So: exit 0 healthy, 1 unhealthy (a finding at or above ``fail_on``), 2 unknown (nothing could be judged, or a
check or a probe crashed with nothing else wrong: never OK on facts a crash left unread); one line of at most
``max_length`` bytes on stdout; the command that drains or taints the node is printed for the operator on stderr,
and never run.

The preset reads only what its checks judge (driver and GPUs through NVML, the kernel log's Xid events, the
host), never imports torch and never starts the target interpreter unless ``with_torch``: a health check runs
every few seconds on every node, beside the jobs.
"""

from __future__ import annotations

import os
import shlex
import socket
from dataclasses import field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..domain.fastclass import dataclass
from ..domain.safe_text import escape_surrogates
from ..model.actions import strongest
from ..model.findings import Finding, Report, Severity
from ..probes.registry import CRASHED

# The checks of the preset: the node's own state, what an operator drains for. Environment-shaped checks
# (the interpreter, packages, NCCL variables, CPUs per GPU, the data path) are the job's, not the node's.
FAST_CHECKS = (
    "driver.hardware", "driver.present", "driver.library-match", "driver.gpus-visible",
    "gpu.*", "pcie.link", "interconnect.nvlink", "interconnect.fabric-manager", "interconnect.peermem",
    "platform.container-gpu", "host.shm", "host.memory", "host.cgroup-memory",
)
TORCH_CHECKS = ("driver.cuda-compat", "torch.*", "packages.*", "libraries.*")
FAST_SECTIONS = frozenset({"driver", "host", "topology"})  # topology: the PCI bus says whether NVIDIA hardware is here
TORCH_SECTIONS = frozenset({"pythons", "system_libraries", "toolkits"})

EXIT_HEALTHY, EXIT_UNHEALTHY, EXIT_UNKNOWN = 0, 1, 2
NPD_MAX_OUTPUT = 80  # node-problem-detector's default max_output_length
SCHEDULERS = ("auto", "slurm", "kubernetes", "none")
TAINT_KEY = "envdoctor/unhealthy"


@dataclass(frozen=True)
class NodeHealth:
    status: str  # "healthy", "unhealthy", "unknown"
    exit_code: int
    line: str  # what stdout carries: at most max_length bytes
    problems: List[Finding] = field(default_factory=list)
    remedies: List[str] = field(default_factory=list)  # drain/taint commands for the operator (never run)
    report: Optional[Report] = None
    # the strongest action of the problems (model/actions.py: none ... drain-node): what the scheduler does first
    action: str = "none"

    def to_dict(self) -> Dict[str, Any]:
        return {"status": self.status, "exit_code": self.exit_code, "line": self.line, "action": self.action,
                "problems": [{"code": f.code, "category": f.category, "severity": f.severity,
                              "summary": f.summary, "action": f.action} for f in self.problems],
                "remedies": list(self.remedies)}


def preset(with_torch: bool = False) -> Dict[str, Any]:
    """The checks and facts sections the preset judges."""
    return {"only": list(FAST_CHECKS + (TORCH_CHECKS if with_torch else ())),
            "sections": FAST_SECTIONS | (TORCH_SECTIONS if with_torch else frozenset())}


def fit_bytes(text: str, max_length: int) -> str:
    """One line of at most ``max_length`` UTF-8 bytes, cut at a character (node-problem-detector cuts bytes and
    could split a character), with "..." where something was cut. A lone surrogate (a non-UTF-8 byte of a path
    in an error message) is written out as ``\\xe9`` first, so the line is measured as it is printed."""
    line = escape_surrogates(" ".join(text.split()))
    if len(line.encode("utf-8")) <= max_length:
        return line
    room = max(0, max_length - 3)
    out = line.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip()
    return out + "..."


def node_name(env: Mapping[str, str], scheduler: str) -> str:
    """The node's name as the scheduler knows it: Slurm's SLURMD_NODENAME, Kubernetes' NODE_NAME (the Downward
    API variable node-problem-detector's manifests set), else the short host name."""
    if scheduler == "slurm" and env.get("SLURMD_NODENAME"):
        return env["SLURMD_NODENAME"]
    if scheduler == "kubernetes" and env.get("NODE_NAME"):
        return env["NODE_NAME"]
    return socket.gethostname().split(".")[0] or "NODE"


def which_schedulers(scheduler: str, env: Mapping[str, str]) -> List[str]:
    if scheduler == "none":
        return []
    if scheduler != "auto":
        return [scheduler]
    found = (["slurm"] if any(k in env for k in ("SLURMD_NODENAME", "SLURM_CONF", "SLURM_JOB_ID")) else []) + \
        (["kubernetes"] if "KUBERNETES_SERVICE_HOST" in env or "NODE_NAME" in env else [])
    return found or ["slurm", "kubernetes"]


def remedies(problems: Sequence[Finding], scheduler: str, env: Mapping[str, str]) -> List[str]:
    """The commands that take the node out of service, shell-quoted, for the operator to run (never run here)."""
    if not problems:
        return []
    first = problems[0]
    reason = f"envdoctor: {first.category} ({first.code})"
    out = []
    for s in which_schedulers(scheduler, env):
        node = node_name(env, s)
        if s == "slurm":
            out.append(f"scontrol update NodeName={shlex.quote(node)} State=DRAIN Reason={shlex.quote(reason)}")
        elif s == "kubernetes":
            # a taint value: at most 63 characters of [A-Za-z0-9_.-]; catalogue categories are UPPER_SNAKE
            out.append(f"kubectl taint nodes {shlex.quote(node)} {TAINT_KEY}={first.category[:63]}:NoSchedule")
    return out


def crashed_probes(report: Report) -> List[Any]:
    """The probes of the run that crashed (registry.guard turned the exception into a failed section): their
    checks skip, so a run without them could otherwise read as healthy."""
    return [p for p in report.facts.probes if CRASHED in (p.reason or "")]


def verdict(report: Report, fail_on: str = Severity.ERROR, max_length: int = NPD_MAX_OUTPUT,
            scheduler: str = "auto", env: Optional[Mapping[str, str]] = None) -> NodeHealth:
    """The node-health verdict of a judged report (pure: the report in, the line and exit code out)."""
    env = os.environ if env is None else env
    problems = [f for f in report.problems if Severity.at_least(f.severity, fail_on)]
    if not problems:  # an error that follows from a lesser root cause (torch's import failing under a PYTHONPATH
        # warning) still fails the node, as it fails `check`'s exit code (Report.fails)
        problems = [f for f in report.all_findings if Severity.at_least(f.severity, fail_on)]
    problems.sort(key=lambda f: -Severity.ORDER[f.severity])
    errored = [c for c in report.checks if c.status == "errored"]
    crashed = crashed_probes(report)
    judged = sum(1 for c in report.checks if c.status in ("passed", "noted", "failed"))
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        action = strongest(f.action or "none" for f in problems)
        # the action before the summary: node-problem-detector keeps the first 80 bytes of the line
        text = f"envdoctor FAIL {problems[0].category} action={action}{more}: {problems[0].summary}"
        return NodeHealth("unhealthy", EXIT_UNHEALTHY, fit_bytes(text, max_length), problems,
                          remedies(problems, scheduler, env), report, action)
    if crashed:  # the checks that read its facts skipped: what passed says nothing of what it would have read
        return NodeHealth("unknown", EXIT_UNKNOWN,
                          fit_bytes(f"envdoctor UNKNOWN: probe {crashed[0].name} crashed: "
                                    f"{crashed[0].reason.split(CRASHED + ': ', 1)[-1]}", max_length), report=report)
    if not report.judged:
        return NodeHealth("unknown", EXIT_UNKNOWN,
                          fit_bytes("envdoctor UNKNOWN: nothing could be judged (every check skipped)", max_length),
                          report=report)
    if errored:
        return NodeHealth("unknown", EXIT_UNKNOWN,
                          fit_bytes(f"envdoctor UNKNOWN: check {errored[0].id} crashed: {errored[0].reason}",
                                    max_length), report=report)
    warnings = [f for f in report.problems if f.severity == Severity.WARNING]
    tail = f", {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else ""
    return NodeHealth("healthy", EXIT_HEALTHY,
                      fit_bytes(f"envdoctor OK: {judged} checks passed{tail}", max_length), report=report)


@dataclass(frozen=True)
class NodeHealthOptions:
    """`envdoctor node-health`'s options."""

    with_torch: bool = False  # also judge the interpreter's torch build (imports torch there)
    expect_gpu: bool = False  # no NVIDIA hardware is then unhealthy
    fail_on: str = Severity.ERROR  # the lowest severity that makes the node unhealthy
    max_length: int = NPD_MAX_OUTPUT  # the longest line, in bytes
    scheduler: str = "auto"  # whose drain/taint commands to give: auto, slurm, kubernetes, none
    pythons: List[str] = field(default_factory=list)  # with with_torch: the interpreters (python_target's)


def node_health(options: Optional[NodeHealthOptions] = None, compat: Any = None,
                collect_options: Any = None) -> NodeHealth:
    """Probe the preset's sections, judge the preset's checks, and return the verdict. ``collect_options``: the
    CollectOptions to start from (tests; default: this machine's, with ``options.pythons``)."""
    import dataclasses

    from ..judging import Selection, judge
    from .collect import CollectOptions, collect

    options = options if options is not None else NodeHealthOptions()
    with_torch, expect_gpu = options.with_torch, options.expect_gpu
    chosen = preset(with_torch)
    base = collect_options if collect_options is not None else CollectOptions(pythons=list(options.pythons))
    collecting = dataclasses.replace(base, sections=chosen["sections"],
                                     inspect_torch=with_torch and base.inspect_torch)
    facts = collect(collecting)
    report = judge(facts, compat, Selection(only=chosen["only"], expect_gpu=expect_gpu))
    from ..report.redact import redact_report

    # the line is shown to everyone who can read the node's conditions: no host name, home path or UUID
    return verdict(redact_report(report), options.fail_on, options.max_length, options.scheduler, collecting.env)
