"""`envdoctor assert`: judge an environment (a Docker image being built) against declared requirements and a fleet.

Only the interpreters are probed (no driver, no GPU needed). The declared fleet becomes the driver section of
the facts (``source: "declared"``: the target driver and one GPU per target GPU) so that the ordinary checks
judge it: driver.cuda-compat (CUDA minor-version compatibility, forward compatibility), torch.gpu-arch,
torch.cuda-build, driver.lifecycle. The requirement checks (checks/requirements.py) judge ``facts.targets``.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import field
from typing import Any, List, Optional, Sequence, Tuple

from .. import __version__
from ..domain.fastclass import dataclass
from ..model.facts import Driver, Facts, Gpu, ProbeRun, ProbeStatus, PythonEnv, Targets
from ..model.findings import Report
from ..model.targets import (
    GpuTarget,
    TargetError,
    check_driver_version,
    parse_requirements,
    resolve_gpus,
    split_list,
)
from ..probes.payload_launch import DEFAULT_TIMEOUT_S


@dataclass
class AssertOptions:
    requirements: List[str] = field(default_factory=list)
    target_driver: Optional[str] = None
    target_gpus: List[str] = field(default_factory=list)
    source: str = "command line"
    pythons: List[str] = field(default_factory=list)
    python_timeout_s: float = DEFAULT_TIMEOUT_S
    env: Optional[dict] = None


class AssertError(ValueError):
    """A project file that cannot be read, or an --only/--ignore glob that matches no check `assert` runs: the
    CLI's exit 2."""


@dataclass(frozen=True)
class AssertRequest:
    """What `envdoctor assert` was told: its flags; a project file's [tool.envdoctor] adds to them (plan)."""

    require: List[str] = field(default_factory=list)
    target_driver: Optional[str] = None
    target_gpus: List[str] = field(default_factory=list)
    only: List[str] = field(default_factory=list)
    ignore: List[str] = field(default_factory=list)
    fail_on: Optional[str] = None
    config: Optional[str] = None  # the project file to read (None: the nearest upward)
    read_config: bool = True  # --no-config: False
    pythons: List[str] = field(default_factory=list)  # python_target's
    python_timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class AssertPlan:
    """The request with the project file's declarations: what assert_report runs and what fails it."""

    options: AssertOptions
    only: Optional[List[str]]
    ignore: Optional[List[str]]
    fail_on: str


def plan(request: AssertRequest) -> AssertPlan:
    """The flags and the project file together (the flags' requirements first, a flag's driver, GPUs and fail-on
    over the file's); AssertError for an unreadable file or a glob that matches no check `assert` runs."""
    from ..model.config import ConfigError, ProjectConfig, load_config

    cfg = ProjectConfig()
    if request.read_config:
        try:
            cfg = load_config(request.config)
        except ConfigError as e:
            raise AssertError(str(e)) from None
    sources = []
    if cfg.path:
        sources.append(cfg.label)
    if request.require or request.target_driver is not None or request.target_gpus:
        sources.insert(0, "command line")
    checks = static_checks()
    options = AssertOptions(
        requirements=list(cfg.require) + list(request.require),
        target_driver=request.target_driver if request.target_driver is not None else cfg.target_driver,
        target_gpus=list(request.target_gpus) or list(cfg.target_gpus),
        source=" + ".join(sources) or "nothing declared",
        pythons=list(request.pythons), python_timeout_s=request.python_timeout_s)
    return AssertPlan(options, _globs(list(request.only) + cfg.only, "--only", checks),
                      _globs(list(request.ignore) + cfg.ignore, "--ignore", checks),
                      request.fail_on or cfg.fail_on or "error")


def _globs(values: List[str], option: str, checks: list) -> Optional[List[str]]:
    import fnmatch

    out = [part.strip() for v in values for part in v.split(",") if part.strip()]
    for pat in out:
        if not any(fnmatch.fnmatchcase(c.id, pat) for c in checks):
            raise AssertError(f"{option} {pat}: matches no check `assert` runs "
                              f"({', '.join(c.id for c in checks)})")
    return out or None


def static_checks() -> list:
    """The registered checks `assert` runs (in registry order): those that declare they apply to a build
    (``@check(..., applies=EVERYWHERE)``: the interpreter's packages and the declared driver/GPUs). Everything
    else (gpu.*, pcie.*, host.*, storage.*, driver.present ...) describes the build machine, not the fleet."""
    from ..checks.base import STATIC
    from ..judging import checks_for

    return checks_for(STATIC)


def validate_targets(compat: Any, requirements: Sequence[str], target_driver: Optional[str],
                     target_gpus: Sequence[str]) -> Tuple[List[str], Optional[str], List[GpuTarget]]:
    """Parse everything declared; TargetError (a usage error) on the first bad item. Targets given but empty
    (``--target-gpus ''``) are an error too: judging "no GPUs" in their place would pass every GPU check."""
    gpus = split_list(list(target_gpus))
    if list(target_gpus) and not gpus:
        raise TargetError(f"target GPUs {', '.join(repr(t) for t in target_gpus)} name no GPU: give model names "
                          "or sm_XX (H100,A100 or sm_90), or leave --target-gpus out")
    return (parse_requirements(list(requirements)), check_driver_version(target_driver, compat),
            resolve_gpus(compat, gpus))


def declared_driver(target_driver: Optional[str], gpus: List[GpuTarget]) -> Driver:
    """The fleet as a driver section: what the checks judge in place of a probed one."""
    if target_driver is None and not gpus:
        return Driver(status=ProbeStatus.SKIPPED,
                      reason="no target driver or GPUs declared (--target-driver, --target-gpus)")
    return Driver(
        status=ProbeStatus.OK,
        source="declared",
        reason=None if target_driver else "declared targets: no target driver given (--target-driver)",
        version=target_driver,
        gpus=[Gpu(index=i, name=g.model or g.given, compute_capability=g.cc) for i, g in enumerate(gpus)],
    )


def collect_static(pythons: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S, env: Optional[dict] = None,
                   runner: Any = None) -> Tuple[List[PythonEnv], List[ProbeRun]]:
    """Probe only the target interpreters (torch imported there, in a subprocess, as for `check`)."""
    from ..probes.python_env import inspect_targets, probe_pythons
    from ..probes.runner import Runner

    runner = runner or Runner()
    env = dict(os.environ if env is None else env)
    targets = inspect_targets(list(pythons), env, runner)
    start = time.monotonic()
    envs = probe_pythons(targets, runner, timeout_s, True)
    statuses = [e.status for e in envs]
    status = ProbeStatus.OK if all(s == ProbeStatus.OK for s in statuses) else statuses[0]
    reason = "; ".join(e.reason for e in envs if e.reason) or None
    return envs, [ProbeRun("pythons", status, reason, time.monotonic() - start)]


def assert_report(options: AssertOptions, compat: Any = None, only: Optional[List[str]] = None,
                  ignore: Optional[List[str]] = None, runner: Any = None) -> Report:
    """Collect the interpreters, add the declared targets, judge with the static checks."""
    from ..compat import load_compat

    compat = compat or load_compat()
    reqs, driver, gpus = validate_targets(compat, options.requirements, options.target_driver, options.target_gpus)
    envs, runs = collect_static(options.pythons, options.python_timeout_s, options.env, runner)
    facts = Facts(
        envdoctor_version=__version__,
        collected_at=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        origin="live",
        driver=declared_driver(driver, gpus),
        pythons=envs,
        probes=runs,
        targets=Targets(requirements=reqs, target_driver=driver, target_gpus=[g.given for g in gpus],
                        source=options.source),
    )
    return judge_declared(facts, compat, only, ignore)


def judge_declared(facts: Facts, compat: Any, only: Optional[List[str]] = None,
                   ignore: Optional[List[str]] = None) -> Report:
    """The one judge in the STATIC setting: only the checks that apply to a build run."""
    from ..checks.base import STATIC
    from ..judging import Selection, judge

    return judge(facts, compat, Selection(only=only, ignore=ignore, setting=STATIC))
