"""What every payload task shares: the JSON envelope written once on the original stdout (or a checkpoint before a
risky step), the deadline watchdog, and short error texts."""

import json
import os
import re
import threading
import time
import traceback
from typing import Any, Dict, List, Optional

PAYLOAD_VERSION = 1
MAX_TEXT = 2000
ANSWER_FDS: List[int] = []  # the descriptor the answer goes out on (tasks.main): __main__.exit_now closes it


def pci_key(props: Any) -> Optional[str]:
    """The PCI key 'domain:bus:device' of a torch device-properties object, in envdoctor.domain.pci.bus_key's normal
    form (a copy: this folder cannot import envdoctor; tests/unit/probes/test_payload_pins.py holds the two to the same
    answers); None when this torch does not report the address."""
    try:
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}"
    except (AttributeError, TypeError, ValueError):
        return None


def normalize_name(name: str) -> str:
    """PEP 503 normalisation (a copy of envdoctor.model.facts.normalize_name, pinned to it by test_payload_pins.py)."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _short(text: Any, limit: int = MAX_TEXT) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _exc_text(exc: BaseException) -> str:
    return _short("".join(traceback.format_exception_only(type(exc), exc)).strip())


class State:
    """Shared between the task (main thread) and the deadline watchdog."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.lock = threading.Lock()
        self.written = False
        self.stage: Optional[str] = None
        self.envelope: Dict[str, Any] = {
            "envdoctor_payload": PAYLOAD_VERSION,
            "task": None,
            "ok": False,
            "error": None,
            "stage": None,
            "timed_out": False,
            "result": {},
            "duration_s": None,
        }
        self.start = time.monotonic()
        self.timer: Optional[threading.Timer] = None
        self.deadline_at: Optional[float] = None  # time.monotonic() when the watchdog fires (--deadline-s)
        self.on_timeout: Any = None  # called by the watchdog before it answers (reader.Reader.on_timeout)

    def checkpoint(self) -> bool:
        """Write the envelope so far, marked ``checkpoint``, before a step that may kill the process
        (``import torch`` can segfault or hang in native code): what was read before it still comes back.
        A later envelope line (the final one) supersedes it."""
        with self.lock:
            if self.written:
                return True
            snapshot = dict(self.envelope, checkpoint=True, stage=self.stage,
                            duration_s=round(time.monotonic() - self.start, 3))
            try:
                text = json.dumps(snapshot, default=str, sort_keys=True)
            except Exception:  # a result we could not serialise yet: the final envelope still follows
                return False
            data = ("\n" + text + "\n").encode("ascii")
            while data:
                n = os.write(self.out_fd, data)
                data = data[n:]
            return True

    def emit(self) -> None:
        """Write the envelope once, whichever of the task or the watchdog finishes first."""
        with self.lock:
            if self.written:
                return
            self.written = True
            self.envelope["duration_s"] = round(time.monotonic() - self.start, 3)
            try:
                text = json.dumps(self.envelope, default=str, sort_keys=True)
            except Exception as e:  # a result we could not serialise: still one valid JSON object
                # (or the watchdog raced the task still filling the result): keep the verdict
                env = self.envelope
                text = json.dumps(
                    {"envdoctor_payload": PAYLOAD_VERSION, "task": env.get("task"), "ok": False,
                     "error": env.get("error") or "could not serialise the result: " + _exc_text(e),
                     "stage": env.get("stage"), "timed_out": env.get("timed_out"), "result": {}}
                )
            data = ("\n" + text + "\n").encode("ascii")
            while data:
                n = os.write(self.out_fd, data)
                data = data[n:]


def _start_watchdog(state: State, deadline_s: float) -> None:
    """Emit what was collected so far and exit when the task overruns (a hung import or CUDA init).

    This only helps when the hung code releases the GIL; envdoctor's subprocess timeout is the backstop.
    """

    def fire() -> None:
        stage = state.stage or "running"
        state.envelope["timed_out"] = True
        state.envelope["stage"] = stage
        state.envelope["error"] = f"timed out after {deadline_s:g} s while {stage}"
        try:
            if state.on_timeout is not None:
                try:
                    state.on_timeout()
                except Exception:
                    pass
            state.emit()
        finally:
            os._exit(3)

    state.deadline_at = state.start + deadline_s
    timer = threading.Timer(deadline_s, fire)
    timer.daemon = True
    timer.start()
    state.timer = timer


def _guard(errors: List[str], what: str, fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except Exception as e:
        errors.append(f"{what}: {_exc_text(e)}")
        return default


def _str_or_none(v: Any) -> Optional[str]:
    return None if v is None else str(v)
