"""Test hooks: make one rank look different, or leave early. A testing aid only, never for real jobs.

They are read only when ENVDOCTOR_FLEET_TESTING=1 (the tests set it for the ranks they launch):

- ENVDOCTOR_FLEET_TEST_OVERRIDE="RANK:PATH=VALUE[;RANK:PATH=VALUE...]": before rank RANK sends its message, the
  fact at PATH is set to VALUE (JSON if it parses, else the string). PATH is dotted with [i] for list items,
  into the node's facts snapshot ("pythons[0].torch.version", "host.shm_total_bytes") or, prefixed "rank.", into
  the rank's own record ("rank.torch_version"). Example: "1:pythons[0].torch.version=2.12.0+cpu".
- ENVDOCTOR_FLEET_TEST_EXIT="RANK:STAGE:CODE": rank RANK exits with CODE (os._exit, no clean-up, as a crash)
  at STAGE: "at-launch" (first thing, before envdoctor tracks the rank: a rank whose interpreter fails),
  "before-start" (before it announces itself on the board: dead before start-up), "during-start" (announced,
  before init_process_group), "after-init" (before saying hello), "before-gather" (after its own part, before
  sending it) or "after-report" (its report sent, before the rest of the run: mid-run);
  CODE "kill" makes it SIGKILL itself there (the OOM killer, `kill -9`); CODE "kill-parent" SIGKILLs the
  process the launcher started (the rank's supervisor, fleet/arrival.py) and carries on;
  CODE "hang" makes it hang there instead (a rank stuck in a driver call), until the launcher ends it;
  CODE "late=SECONDS" makes it wait that long there and then carry on (a rank that comes after the deadline).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

ENABLE = "ENVDOCTOR_FLEET_TESTING"
OVERRIDE = "ENVDOCTOR_FLEET_TEST_OVERRIDE"
EXIT = "ENVDOCTOR_FLEET_TEST_EXIT"
STAGES = ("at-launch", "before-start", "during-start", "after-init", "before-gather", "after-report")
HANG = -1  # exit_at's answer for CODE "hang"
KILL = -9  # exit_at's answer for CODE "kill"
KILL_PARENT = -10  # exit_at's answer for CODE "kill-parent"


class HookError(ValueError):
    """A malformed hook variable: a usage error (exit 2), never silently ignored."""


def enabled(env: Mapping[str, str]) -> bool:
    return env.get(ENABLE) == "1"


def overrides(env: Mapping[str, str], rank: int) -> List[Tuple[str, Any]]:
    """(path, value) pairs for ``rank``."""
    if not enabled(env) or not env.get(OVERRIDE):
        return []
    out = []
    for item in filter(None, (s.strip() for s in env[OVERRIDE].split(";"))):
        m = re.fullmatch(r"(\d+):([A-Za-z_][\w.\[\]]*)=(.*)", item)
        if not m:
            raise HookError(f"{OVERRIDE}: {item!r} is not RANK:PATH=VALUE")
        if int(m.group(1)) != rank:
            continue
        try:
            value = json.loads(m.group(3))
        except ValueError:
            value = m.group(3)
        out.append((m.group(2), value))
    return out


def exit_at(env: Mapping[str, str], rank: int, stage: str) -> Optional[int]:
    """The exit code rank ``rank`` must leave with at ``stage``, or None."""
    if not enabled(env) or not env.get(EXIT):
        return None
    for item in filter(None, (s.strip() for s in env[EXIT].split(";"))):
        m = _item(item)
        if int(m.group(1)) == rank and m.group(2) == stage and not m.group(3).startswith("late="):
            return {"hang": HANG, "kill": KILL, "kill-parent": KILL_PARENT}.get(m.group(3)) or int(m.group(3))
    return None


def late_at(env: Mapping[str, str], rank: int, stage: str) -> Optional[float]:
    """The seconds rank ``rank`` must wait at ``stage`` before it carries on ("late=SECONDS"), or None."""
    if not enabled(env) or not env.get(EXIT):
        return None
    for item in filter(None, (s.strip() for s in env[EXIT].split(";"))):
        m = _item(item)
        if int(m.group(1)) == rank and m.group(2) == stage and m.group(3).startswith("late="):
            return float(m.group(3)[len("late="):])
    return None


def at(env: Mapping[str, str], rank: int, stage: str) -> None:
    """Apply this rank's hook for ``stage``: wait, then leave (exit, kill, hang), as the variable says (both for
    one stage, "1:at-launch:late=3;1:at-launch:1": a rank that fails three seconds after its launch)."""
    late = late_at(env, rank, stage)
    if late:
        _sleep(late)
    code = exit_at(env, rank, stage)
    if code == KILL_PARENT:
        import signal

        from .arrival import PARENT

        if PARENT[0] is None:
            raise HookError(f"{EXIT}: rank {rank} has no supervisor to kill (ENVDOCTOR_FLEET_SUPERVISE=0, or no fork)")
        os.kill(PARENT[0], signal.SIGKILL)
    elif code is not None:
        leave(code)


def _item(item: str) -> re.Match[str]:
    m = re.fullmatch(r"(\d+):([a-z-]+):(\d+|hang|kill-parent|kill|late=\d+(?:\.\d+)?)", item)
    if not m or m.group(2) not in STAGES:
        raise HookError(f"{EXIT}: {item!r} is not RANK:STAGE:CODE (STAGE: {', '.join(STAGES)})")
    return m


def set_path(data: Dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at the dotted ``path`` of ``data`` (dicts and lists); HookError when the path is absent."""
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part.startswith("["):
            idx = int(part[1:-1])
            if not isinstance(node, list) or idx >= len(node):
                raise HookError(f"{OVERRIDE}: {path}: no item {idx}")
            if last:
                node[idx] = value
            else:
                node = node[idx]
        else:
            if not isinstance(node, dict) or (not last and node.get(part) is None):
                raise HookError(f"{OVERRIDE}: {path}: no {part!r} here")
            if last:
                node[part] = value
            else:
                node = node[part]


def apply(env: Mapping[str, str], rank: int, record: Dict[str, Any]) -> None:
    """Apply this rank's overrides to its record (``record["facts"]`` for facts paths)."""
    for path, value in overrides(env, rank):
        if path.startswith("rank."):
            set_path(record, path[len("rank."):], value)
        elif record.get("facts") is None:
            raise HookError(f"{OVERRIDE}: rank {rank} collects no node facts (only a node's local rank 0 does)")
        else:
            set_path(record["facts"], path, value)


def leave(code: int) -> None:
    import sys

    if code == HANG:
        while True:
            _sleep(3600)
    sys.stdout.flush()
    sys.stderr.flush()
    if code == KILL:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    sys.stderr.flush()
    os._exit(code)


def _sleep(seconds: float) -> None:
    """A hook's wait, which a stop ends as it ends a real wait: the command line's handler only records the signal
    (cli/signals.py), so a plain time.sleep would outlive the launcher's SIGTERM."""
    import time

    from ..probes.runner import INTERRUPT

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        INTERRUPT.check()
        time.sleep(min(0.1, max(0.0, end - time.monotonic())))
