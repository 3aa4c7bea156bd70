"""The one judge: ``judge(facts, compat, selection, policy) -> Report``, whoever asks.

`check` (live facts), `check --facts` (a snapshot, or the facts of a paste), `assert` and ``preflight()`` (a build
against declared targets, or a CPU box), `diagnose` (pasted text), and later `watch` and fleets all reach a report
through this function, so the same facts give the same findings whichever command read them:

- ``selection`` says which registered checks run: ``--only``/``--ignore`` globs (or an explicit list of checks),
  ``--expect-gpu``, and the *setting* the facts are judged in (``checks.base``: LIVE, SNAPSHOT, PASTE, STATIC).
  The setting comes from the facts unless the caller names it (``setting_of``); a check runs only where it
  declares it applies (``@check(..., applies=...)``). In a setting about a machine (live, snapshot, paste) a check
  that does not apply is listed as skipped with the reason its declaration gives, as the checklist has always shown
  it; in STATIC (`assert`) it is left out: a build report lists only what a build can be judged on.
- ``policy`` says what is done with the check results before they are a report. ``PLAIN`` keeps them as the
  checks gave them; ``PastePolicy`` (``judging.policy``) is what pasted text needs: confidence from provenance,
  low confidence capping severity, message findings folded into the fact findings that explain them, thin
  guesses dropped when a surer finding explains the paste, the outputs that would settle the rest, and one
  ``Report.machines`` entry per machine when the paste held several. The default is chosen from the facts
  (``policy_for``: origin "paste" -> ``PastePolicy``), so `check --facts` on a paste's facts and `diagnose` on
  the paste agree.

Why a package of its own, named for the act: it sits above ``checks`` (it runs them) and below every command that
judges (``services.collect``, ``services.assertions``, ``services.preflight``, ``diagnose``, ``watch``, ``fleet``), which
may all import it without importing each other; ``services.collect.judge`` is kept as the CLI's thin wrapper. It is not ``judge.py`` because a
module and the function it exports by the same name shadow each other on import.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, List, Optional, Sequence

from ..checks.base import LIVE, STATIC, Check, setting_of
from ..domain.fastclass import dataclass
from ..model.facts import Facts
from ..model.findings import CheckResult, Report
from .policy import PLAIN, PastePolicy, PlainPolicy, Policy, settle_lines
from .settle import settle

if TYPE_CHECKING:
    from ..compat.queries import Compat

__all__ = ["PLAIN", "PastePolicy", "PlainPolicy", "Policy", "Selection", "checks_for", "judge", "machine_setting", "policy_for",
           "setting_of", "settle_lines"]


@dataclass(frozen=True)
class Selection:
    """Which checks run. ``checks``: an explicit list (registry order when None); ``only``/``ignore``: check-id
    globs over it; ``setting``: where the facts are judged (None: from the facts, ``setting_of``);
    ``expect_gpu``: the user says NVIDIA GPUs belong here (--expect-gpu)."""

    only: Optional[Sequence[str]] = None
    ignore: Optional[Sequence[str]] = None
    checks: Optional[Sequence[Check]] = None
    setting: Optional[str] = None
    expect_gpu: bool = False


ALL = Selection()


def machine_setting(facts: Facts) -> str:
    """The setting of ``preflight()`` on this machine: LIVE where there is any sign of an NVIDIA GPU (GPUs, a driver
    installed even if broken, a PCI device of vendor 0x10de without a driver, decided by the same function as
    `check`'s driver.hardware); STATIC on a CPU box, where the GPU and driver checks describe nothing the caller
    asked for and only what applies to a build is judged."""
    from ..queries import nvidia_hardware

    d = facts.driver
    if d.gpus or d.status != "absent" or nvidia_hardware(facts) is True:
        return LIVE
    return STATIC


def policy_for(facts: Facts) -> Policy:
    """The default policy for ``facts``: the paste policy for a paste's facts (read back from JSON or not)."""
    return PastePolicy() if facts.origin == "paste" else PLAIN


def checks_for(setting: str) -> List[Check]:
    """The registered checks that apply in ``setting``, in registry order (`assert`'s list: STATIC)."""
    from ..checks import all_checks

    return [c for c in all_checks() if c.applies_to(setting)]


def _selected(selection: Selection, setting: str) -> List[Check]:
    """The selected checks in registry order; STATIC leaves out those that do not apply there."""
    from ..checks import all_checks, select

    base = list(selection.checks) if selection.checks is not None else all_checks()
    chosen = select(base, list(selection.only) if selection.only else None,
                    list(selection.ignore) if selection.ignore else None)
    return [c for c in chosen if c.applies_to(setting) or setting != STATIC]


def run_selected(facts: Facts, compat: Compat, selection: Selection = ALL) -> List[CheckResult]:
    """The selected checks over ``facts`` (``checks.run_checks``: the per-check guard, and a check that does not
    apply in the setting skipped saying so)."""
    from ..checks import run_checks

    setting = selection.setting or setting_of(facts)
    return run_checks(facts, compat, _selected(selection, setting), expect_gpu=selection.expect_gpu,
                      setting=setting)


def judge(facts: Facts, compat: Optional[Compat] = None, selection: Optional[Selection] = None,
          policy: Optional[Policy] = None) -> Report:
    """Judge ``facts``: the selected checks that apply, then ``policy`` (default ``policy_for(facts)``), as a
    Report. Pure but for loading the bundled compat data when ``compat`` is None."""
    from .. import __version__

    if compat is None:
        from ..compat import load_compat

        compat = load_compat()
    selection = selection or ALL
    policy = policy if policy is not None else policy_for(facts)
    facts, checks, machines = policy.judge(facts, compat, selection, run_selected)
    # the last step of every judgement: consequences under their cause, statuses settled; each machine of a
    # several-machine paste among its own checks only (judging/settle.py)
    checks = settle(checks)
    machines = [dataclasses.replace(m, checks=settle(m.checks)) for m in machines]
    return Report(facts=facts, checks=checks, envdoctor_version=__version__,
                  compat_as_of=getattr(compat, "as_of", None), compat_source=getattr(compat, "label", None),
                  machines=machines)

