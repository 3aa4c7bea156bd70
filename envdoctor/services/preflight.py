"""`envdoctor.preflight()`: a pre-training checklist in one call, raising PreflightError with the readable report.

Imported lazily by ``envdoctor.__getattr__``; torch is inspected in a subprocess of the interpreter, never
imported here, so a caller that has not imported torch still has not afterwards.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, List, Optional, Union

from ..model.findings import Report, Severity
from ..probes.payload_launch import DEFAULT_TIMEOUT_S


class PreflightError(RuntimeError):
    """The environment does not meet the checklist. ``str(err)`` is the readable report; ``err.report`` the object."""

    def __init__(self, message: str, report: Optional[Report]):
        super().__init__(message)
        self.report = report


def _list(value: Union[None, str, Iterable[str]]) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def preflight(
    require: Union[None, str, Iterable[str]] = None,
    target_gpus: Union[None, str, Iterable[str]] = None,
    target_driver: Optional[str] = None,
    *,
    python: Optional[str] = None,
    config: Union[None, bool, str, Path] = None,
    static: bool = False,
    fail_on: Optional[str] = None,
    only: Optional[List[str]] = None,
    ignore: Optional[List[str]] = None,
    python_timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Report:
    """Judge this machine (or, with ``static=True``, only the interpreter, as `envdoctor assert` does).

    ``require``: PEP 508 requirements ("torch>=2.4", "cuda>=12.4", "flash-attn"); ``target_gpus``: GPUs that
    must be here (live) or served (static), model names or sm_XX; ``target_driver``: the fleet's driver,
    judged with ``static=True`` (live, the machine's own driver is judged). ``config``: None reads
    [tool.envdoctor] from the nearest pyproject.toml / envdoctor.toml upward from the working directory, a
    path reads that file, False reads none; keyword arguments add to (requirements) or override it.
    ``python``: the interpreter to judge (default: this one, ``sys.executable``).

    Returns the report when nothing at or above ``fail_on`` (default "error") was found; raises
    PreflightError otherwise, and ValueError for bad arguments (an invalid requirement, an unknown GPU).
    """
    from ..compat import load_compat
    from ..model.config import ConfigError, ProjectConfig, load_config
    from ..model.facts import Targets
    from ..model.targets import TargetError
    from .assertions import AssertOptions, assert_report, validate_targets
    from .collect import CollectOptions, collect

    if config is False:
        cfg = ProjectConfig()
    else:
        try:
            cfg = load_config(None if config is None or config is True else config)
        except ConfigError as e:  # a broken project file: the checklist cannot be read, so it is not met
            raise PreflightError(f"envdoctor preflight: {e}", None) from None
    reqs = cfg.require + _list(require)
    gpus = _list(target_gpus) or cfg.target_gpus
    driver = target_driver or cfg.target_driver
    fail_on = fail_on or cfg.fail_on or Severity.ERROR
    if fail_on not in (Severity.ERROR, Severity.WARNING):
        raise ValueError(f"fail_on must be 'error' or 'warning', not {fail_on!r}")
    source = " + ".join(s for s in ("preflight() arguments" if (require or target_gpus or target_driver) else "",
                                    cfg.label if cfg.path else "") if s) or "nothing declared"
    exe = python or sys.executable
    compat = load_compat()
    try:
        reqs, driver, resolved = validate_targets(compat, reqs, driver, gpus)
    except TargetError as e:
        raise ValueError(str(e)) from None
    only = (only or []) + cfg.only or None
    ignore = (ignore or []) + cfg.ignore or None
    if static:
        report = assert_report(AssertOptions(requirements=reqs, target_driver=driver, target_gpus=gpus,
                                             source=source, pythons=[exe], python_timeout_s=python_timeout_s),
                               compat, only=only, ignore=ignore)
    else:
        import dataclasses

        from ..judging import Selection, judge, machine_setting

        facts = collect(CollectOptions(pythons=[exe], python_timeout_s=python_timeout_s))
        facts = dataclasses.replace(facts, targets=Targets(requirements=reqs, target_driver=driver,
                                                           target_gpus=[g.given for g in resolved],
                                                           source=source))
        # a CPU box (no sign of an NVIDIA GPU) is judged as a build: only the checks that apply there run
        report = judge(facts, compat, Selection(only=only, ignore=ignore, setting=machine_setting(facts)))
    if report.fails(fail_on):  # a finding at or above fail_on, or nothing judged at all
        from ..report import render_console

        raise PreflightError(render_console(report, color=False), report)
    return report
