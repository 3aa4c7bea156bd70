"""The watch's stalls named by what the training process did in each gap (issue 41): the findings of
watch.stalls for checkpoint saves, evaluation passes, pauses and reads, and the note on gaps that were the box's
load (the process ready to run without a core)."""

from __future__ import annotations

from dataclasses import replace
from typing import List

from ..domain.recording import Analysis
from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch import confidence, unseen_text
from ._watch_main import main_of
from .base import Findings

STALLS = Findings("watch.stalls", "CHECKPOINT_STALL", kinds=("checkpoint", "stall", "evaluation", "pause", "reads"),
                  categories=("GPU_UNDERFED", "CHECKPOINT_STALL"),
                  kind_categories={"evaluation": "EVALUATION_STALL", "pause": "LOOP_PAUSED", "reads": "INPUT_BOUND"})
SAVE_FIX = Fix("Save asynchronously (torch.distributed.checkpoint.async_save, or a background thread after copying "
                "the state to CPU), less often, or to a faster local disk")


STALL_SHARE = 0.1  # the step loop stopped this share of its time or more: worth a verdict
NAMED_SHARE = 0.03  # one kind of gap named apart when it took this share of the run


_GAP_WORDS = {
    "checkpoint": ("checkpoint", "the training process wrote {wrote} meanwhile: checkpoint saves", SAVE_FIX),
    "evaluation": ("evaluation", "the training process kept computing without steps, with no writes or reads: an "
                   "evaluation pass (or another pass over data) inside the loop",
                   Fix("Evaluate less often or on a subset, or in another process or GPU; wrap its loader in "
                       "timed(val_loader, name='eval') to time it apart")),
    "pause": ("pause", "the training process neither computed, wrote nor read meanwhile (asleep, on a lock or "
              "waiting on another process): pauses",
              Fix("Find the wait (py-spy dump --pid <pid> during a pause) and take it off the training loop")),
    "input": ("reads", "the training process read {read} meanwhile: input loaded outside the loader",
              Fix("Move the reads into the DataLoader's workers, or cache them")),
}


def mb_text(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def named_findings(w: Watch, a: Analysis, named, run_s: float, ev: List[Evidence], what: str) -> List[Finding]:
    """One finding per kind of gap (checkpoint, evaluation, pause, reads) that took NAMED_SHARE of the run."""
    out: List[Finding] = []
    lone: List[str] = []
    waited = named.get("cpu-wait")
    for name, g in sorted(named.items(), key=lambda kv: -kv[1]["seconds"]):
        share = g["seconds"] / run_s
        if name in ("unknown", "cpu-wait") or share < NAMED_SHARE:
            continue
        if out and g["count"] < 2 and share < STALL_SHARE:
            # one gap of another kind beside a named pattern, under the bar a stall verdict needs on its own: a
            # collector's pause or a page-cache flush as often as a pass of that kind; said, not named apart
            lone.append(f"{g['count']} gap of {g['seconds']:g} s that looked like {name}")
            continue
        kind, words, fix = _GAP_WORDS[name]
        out.append(STALLS.warning(
            kind, f"{what} {g['count']} time{'s' if g['count'] != 1 else ''} for {g['seconds']:g} s "
            f"({100 * share:.0f}% of the run, the longest {g['longest_s']:g} s); "
            + words.format(wrote=mb_text(g["wrote"]), read=mb_text(g["read"])),
            evidence=ev + [Evidence("watch.summary.processes.main.share", main_of(a).get("share"))],
            confidence=confidence(a, direct=True), detail=unseen_text(w), fix=fix))
    if out and lone:
        first = out[0]
        out[0] = replace(first, detail=" ".join(x for x in (first.detail, "Not named apart (one each, under "
                         f"{100 * STALL_SHARE:.0f}% of the run): " + "; ".join(lone) + ".") if x))
    if out and waited and waited["seconds"] / run_s >= NAMED_SHARE:
        # ready to run but hardly on a CPU: another tenant's time (watch.cpu-share says whose), not the loop's
        first = out[0]
        out[0] = replace(first, detail=" ".join(x for x in (first.detail, f"Not counted: {waited['count']} gap"
                         f"{'s' if waited['count'] != 1 else ''} ({waited['seconds']:g} s) in which the training "
                         "process was ready to run but hardly got a core (other processes' time, not a pause "
                         "of its own).") if x))
    return out


def waited_most(named) -> bool:
    """Most of the named gaps' time the training process waited for a core: the gaps are the box's load."""
    total = sum(g["seconds"] for k, g in named.items() if k != "unknown")
    return bool(total) and named.get("cpu-wait", {}).get("seconds", 0.0) >= 0.5 * total
