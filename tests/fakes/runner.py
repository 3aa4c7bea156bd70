"""FakeRunner: answers commands from a table keyed by argv; an unexpected command fails the test loudly."""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from envdoctor.probes.runner import DEFAULT_TIMEOUT_S, Runner, RunResult


class UnexpectedCommand(AssertionError):
    pass


Answer = Union[str, RunResult, Tuple[int, str, str]]


class FakeRunner:
    """``FakeRunner({("nvcc", "--version"): "text", ...}, which={"nvcc": "/usr/bin/nvcc"})``.

    An answer is stdout text (exit 0), a ``(returncode, stdout, stderr)`` tuple, or a ``RunResult``
    (e.g. ``FakeRunner.TIMEOUT``/``FakeRunner.NOT_FOUND``). Commands not in the table raise
    ``UnexpectedCommand`` unless ``strict=False``, in which case they look "not found".
    """

    NOT_FOUND = "__not_found__"
    TIMEOUT = "__timeout__"

    def __init__(self, answers: Optional[Mapping[Sequence[str], Answer]] = None,
                 which: Optional[Dict[str, Optional[str]]] = None, strict: bool = True):
        self.answers = {tuple(k): v for k, v in (answers or {}).items()}
        self._which = dict(which or {})
        self.strict = strict
        self.calls: list = []

    def which(self, name: str) -> Optional[str]:
        return self._which.get(name)

    def run(self, argv, timeout=10.0, env=None, input_text=None) -> RunResult:
        key = tuple(str(a) for a in argv)
        self.calls.append(key)
        if key not in self.answers:
            if self.strict:
                raise UnexpectedCommand(f"unexpected command {key!r}; known: {sorted(self.answers)}")
            return RunResult(key, None, error="not found")
        ans = self.answers[key]
        if isinstance(ans, RunResult):
            return ans
        if ans == self.NOT_FOUND:
            return RunResult(key, None, error="not found")
        if ans == self.TIMEOUT:
            return RunResult(key, None, error=f"timed out after {timeout:g} s", duration_s=timeout)
        if isinstance(ans, tuple):
            rc, out, err = ans
            return RunResult(key, rc, stdout=out, stderr=err)
        return RunResult(key, 0, stdout=ans)


class RecordingRunner(Runner):
    """The real Runner, recording each command with the timeout it was given and how it ended: tests of the
    real probes assert on the work done (commands, their time limits) instead of on elapsed seconds."""

    def __init__(self, env: Optional[Mapping[str, str]] = None):
        super().__init__(env)
        self.calls: List[Tuple[Tuple[str, ...], float, RunResult]] = []

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S, env: Optional[Mapping[str, str]] = None,
            input_text: Optional[str] = None) -> RunResult:
        res = super().run(argv, timeout=timeout, env=env, input_text=input_text)
        self.calls.append((tuple(str(a) for a in argv), timeout, res))
        return res
