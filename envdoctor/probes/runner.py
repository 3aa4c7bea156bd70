"""Subprocess runner for probes: argv lists only, always a timeout, LC_ALL=C, never raises."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence

DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RunResult:
    argv: tuple
    returncode: Optional[int]  # None when the command did not run or timed out
    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None  # "not found", "timed out after 10.0 s", "permission denied: ..."
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    @property
    def not_found(self) -> bool:
        return self.error == "not found"

    @property
    def timed_out(self) -> bool:
        return bool(self.error and self.error.startswith("timed out"))

    def describe(self) -> str:
        """One line for a probe's reason: what ran and how it ended."""
        cmd = " ".join(self.argv)
        if self.error:
            return f"`{cmd}`: {self.error}"
        if self.returncode != 0:
            tail = (self.stderr.strip() or self.stdout.strip()).splitlines()
            msg = tail[-1] if tail else ""
            return f"`{cmd}` exited {self.returncode}" + (f": {msg[:200]}" if msg else "")
        return f"`{cmd}` ok"


class Runner:
    """Runs commands for probes. Tests substitute ``tests.fakes.FakeRunner`` (same interface)."""

    def __init__(self, env: Optional[Mapping[str, str]] = None):
        self._env = env

    def which(self, name: str) -> Optional[str]:
        path = self._env.get("PATH") if self._env is not None else None
        return shutil.which(name, path=path)

    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Optional[Mapping[str, str]] = None,
        input_text: Optional[str] = None,
    ) -> RunResult:
        argv = tuple(str(a) for a in argv)
        full_env: Dict[str, str] = dict(self._env if self._env is not None else os.environ)
        if env:
            full_env.update(env)
        full_env["LC_ALL"] = "C"
        full_env.setdefault("LANG", "C")
        start = time.monotonic()
        try:
            # Its own session, so that a timeout kills the whole tree: a wrapper script (conda's
            # python shim, a vendor's nvidia-smi wrapper) would otherwise leave its hung child behind.
            proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                env=full_env,
                start_new_session=os.name == "posix",
            )
        except FileNotFoundError:
            return RunResult(argv, None, error="not found", duration_s=time.monotonic() - start)
        except PermissionError as e:
            return RunResult(argv, None, error=f"permission denied: {e}", duration_s=time.monotonic() - start)
        except OSError as e:
            return RunResult(argv, None, error=f"could not start: {e}", duration_s=time.monotonic() - start)
        try:
            out_b, err_b = proc.communicate(input_text.encode() if input_text is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            try:  # what it printed before it hung (the payload's partial JSON); never wait long for it
                out_b, _ = proc.communicate(timeout=2.0)
            except (subprocess.TimeoutExpired, OSError, ValueError):
                out_b = b""
            return RunResult(
                argv, None, stdout=(out_b or b"").decode("utf-8", "replace"),
                error=f"timed out after {timeout:g} s", duration_s=time.monotonic() - start,
            )
        except BaseException:  # Ctrl-C: its own session does not get the terminal's SIGINT, so end it here
            _kill_tree(proc)
            raise
        return RunResult(
            argv,
            proc.returncode,
            stdout=out_b.decode("utf-8", "replace"),
            stderr=err_b.decode("utf-8", "replace"),
            duration_s=time.monotonic() - start,
        )


def _kill_tree(proc: subprocess.Popen) -> None:
    """Kill a timed-out command and everything it started (its session's process group)."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.kill()
    except OSError:
        pass
