"""`envdoctor watch` as a call: typed options in (``WatchOptions``), the facts and the judged report out
(``WatchResult``), nothing printed, no signal handler installed.

The run is recorded below the judge (``watch/command.py``: the launched command, --pid or the GPUs' processes
sampled until it ends; or recordings another tool made, read by ``watch/replay.py``); the watch checks judge the
recording through the one judge (``judging.judge``, the checks ``watch.*``); the renderers are report/watch.py.
Whoever shows the run as it goes passes a ``WatchView`` (the command line's live view, report/watch_live.py): it
gets the samples, the report on the recording so far, and notices. Whoever receives signals hands them to the
``Stop`` passed in (``Stop.signal(signum)``): the launched command is stopped as Ctrl-C would, harder on a
second signal or a hang-up, and leaves no process behind.

``WatchError``: options that cannot work or a recording that cannot be read (the command line's usage error).
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import Facts
from ..model.findings import Report
from ..watch.command import MIN_INTERVAL_S, RecordingError, Stop

if TYPE_CHECKING:
    from ..compat.queries import Compat

__all__ = ["Stop", "WatchError", "WatchOptions", "WatchResult", "WatchView", "judge_recording", "watch"]

WATCH_CHECKS = ["watch.*"]  # a watch is judged on its recording only: the machine's report is `check`'s


class WatchError(ValueError):
    """Options that cannot work, or a recording that cannot be read: a one-line reason."""


@dataclass
class WatchOptions:
    """What to watch: ``command`` (launched and watched), ``pid`` (a running process and its children, never
    signalled), ``replay`` (recordings another tool made, each (its path as given, its text)), or none of them
    (the GPUs and whichever processes use them)."""

    command: List[str] = field(default_factory=list)
    pid: Optional[int] = None
    replay: List[Tuple[str, str]] = field(default_factory=list)
    duration_s: Optional[float] = None  # stop after this long (a launched command is stopped as Ctrl-C would)
    interval_s: Optional[float] = None  # between samples (None: 0.5 s live; a replay's own spacing, else 1 s)
    data_paths: List[str] = field(default_factory=list)  # the training data: its disk is watched


@dataclass
class WatchResult:
    facts: Facts  # the recording (``facts.watch``): a snapshot `envdoctor check --facts` judges again
    report: Report  # the watch checks' verdict on it
    # the launched command's exit status as a shell reports it (killed by signal N: 128 + N); 0 when --duration
    # stopped it; None when nothing was launched
    exit_status: Optional[int] = None


class WatchView(Protocol):
    """Whoever shows a live watch as it goes."""

    @property
    def enabled(self) -> bool:
        """Whether the samples are seen as they come: only then is the recording so far judged."""
        ...

    def begin(self, launched: bool, interval_s: float) -> None: ...

    def sample(self, sample: Dict[str, Any]) -> None: ...

    def judged(self, report: Report) -> None:
        """The watch checks' report on the recording so far."""
        ...

    def notice(self, text: str) -> None: ...

    def close(self) -> None: ...


def judge_recording(facts: Facts, compat: Optional[Compat] = None) -> Report:
    """The watch checks' report on a recording (the one judge, the checks ``watch.*``)."""
    from ..judging import Selection, judge

    return judge(facts, compat, Selection(only=WATCH_CHECKS))


def validate(options: WatchOptions) -> WatchOptions:
    """WatchError for options that cannot work, before anything starts."""
    if options.replay and (options.command or options.pid):
        raise WatchError("--replay judges a recording: it takes no command and no --pid")
    if options.command and options.pid:
        raise WatchError("give either a command to launch or --pid, not both")
    if options.pid is not None and options.pid <= 0:
        raise WatchError(f"--pid must be a process id, got {options.pid}")
    if options.replay:
        return options
    if options.interval_s is not None and options.interval_s < MIN_INTERVAL_S:
        raise WatchError(f"--interval below {MIN_INTERVAL_S:g} s would cost more than it shows")
    for p in options.data_paths:
        if not os.path.exists(os.path.abspath(p)):
            raise WatchError(f"--data {os.path.abspath(p)}: no such file or directory")
    if options.pid is not None:
        import psutil

        if not psutil.pid_exists(options.pid):
            raise WatchError(f"--pid {options.pid}: no such process")
    return options


class _Judging:
    """The recording's observer (watch/command.py ``Observer``) over a ``WatchView``: the recording so far is
    judged here, above the source, and the view gets the report."""

    def __init__(self, view: WatchView) -> None:
        self.view = view

    @property
    def enabled(self) -> bool:
        return self.view.enabled

    def begin(self, launched: bool, interval_s: float) -> None:
        self.view.begin(launched, interval_s)

    def sample(self, sample: Dict[str, Any]) -> None:
        self.view.sample(sample)

    def so_far(self, watch: Any) -> None:
        try:
            report = judge_recording(Facts(watch=watch))
        except Exception:  # noqa: BLE001 - a live hint only: the final verdict is judged after the run
            return
        self.view.judged(report)

    def notice(self, text: str) -> None:
        self.view.notice(text)

    def close(self) -> None:
        self.view.close()


def watch(options: WatchOptions, stop: Optional[Stop] = None, view: Optional[WatchView] = None) -> WatchResult:
    """Record what ``options`` name and judge it. ``stop``: where the caller's signal handler hands signals
    (a live watch only; the command line installs the handler before calling, so that a Ctrl-C the moment the
    command starts is forwarded to it). ``view``: whoever shows the run as it goes."""
    from ..watch.command import exit_status, record_live, replay_recordings

    validate(options)
    try:
        if options.replay:
            facts = replay_recordings(options.replay, options.interval_s)
            status: Optional[int] = None
        else:
            facts, returncode = record_live(
                list(options.command), pid=options.pid, interval_s=options.interval_s,
                duration_s=options.duration_s, data=options.data_paths, stop=stop,
                observer=_Judging(view) if view is not None else None)
            status = exit_status(returncode)
    except RecordingError as e:
        raise WatchError(str(e)) from None
    return WatchResult(facts=facts, report=judge_recording(facts), exit_status=status)
