"""Shared fixtures: real virtual environments with torch for the integration tests, built once per session."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional

import pytest

pytest_plugins = ["pytester"]  # tests/unit/test_markers.py runs these hooks in an inner session

PIP_TIMEOUT_S = 600

# No test may see (or write) a user's ~/.cache/envdoctor: an update installed there would change every
# verdict judged from the bundled matrix. Set before any test imports envdoctor; subprocesses inherit it.
os.environ["ENVDOCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="envdoctor-test-cache-")
# A finding whose kind or category its check's Findings builder does not declare fails the test that made it
# (checks/base.py STRICT_ENV; a live run emits it unchanged). Subprocesses inherit it.
os.environ["ENVDOCTOR_STRICT_FINDINGS"] = "1"
# The console renders at $COLUMNS, else the terminal's width, else 100 (report/console.py terminal_width): tests
# expect the 100 of a pipe. A developer's exported COLUMNS, or the 80 that pytest-xdist's workers are started with,
# would re-wrap every rendered line; a test about the width sets it itself (monkeypatch).
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


# --------------------------------------------------------------------------- markers

def gpu_unavailable_reason(dev: str = "/dev") -> Optional[str]:
    """Why tests marked `gpu` cannot run here (None: an NVIDIA GPU answers through NVML)."""
    if not os.path.exists(os.path.join(dev, "nvidiactl")):  # the control node the loaded driver creates
        return f"needs an NVIDIA GPU: {dev}/nvidiactl is absent (no NVIDIA driver loaded here)"
    try:
        import pynvml  # nvidia-ml-py, a dependency of envdoctor

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception as e:  # noqa: BLE001 - any NVML failure means: no usable GPU for these tests
        return f"needs an NVIDIA GPU: NVML is unusable here ({type(e).__name__}: {e})"
    return None if count else "needs an NVIDIA GPU: NVML sees none"


# fixtures that build a venv or install packages: a test using one must be marked `slow` (README "Tests")
VENV_FIXTURES = {"cpu_venv", "cuda_venv", "built_wheel", "installed_wheel"}


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items
                if VENV_FIXTURES & set(getattr(item, "fixturenames", ())) and not item.get_closest_marker("slow")]
    if unmarked:
        raise pytest.UsageError(f"tests that build venvs must be marked slow: {', '.join(unmarked)}")
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    reason = gpu_unavailable_reason() if gpu_items else None
    for item in gpu_items if reason else ():
        item.add_marker(pytest.mark.skip(reason=reason))


_SHELLS = ("sh", "bash", "dash", "zsh")


def _words_build(words: List[str]) -> bool:
    """A command's words that build a venv or install: python -m venv/virtualenv/ensurepip, -m pip install,
    pip install, uv venv, uv pip install."""
    for i, w in enumerate(words[:-1]):
        if w == "-m" and (words[i + 1] in ("venv", "virtualenv", "ensurepip")
                          or (words[i + 1] == "pip" and words[i + 2:i + 3] == ["install"])):
            return True
    prog = os.path.basename(words[0]) if words else ""
    if re.fullmatch(r"pip(?:3(?:\.\d+)?)?", prog):
        return words[1:2] == ["install"]
    return prog == "uv" and (words[1:2] == ["venv"] or words[1:3] == ["pip", "install"])


def _line_builds(line: str) -> bool:
    """A shell line runs such a command: one of its simple commands does, with a program that exists here (a
    fix pasted from a hostile snapshot names an interpreter that does not, and runs nothing)."""
    import shlex
    import shutil

    for part in re.split(r"&&|\|\||[;|\n]", line):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if words and _words_build(words) and (os.path.exists(words[0]) or
                                              (os.sep not in words[0] and shutil.which(words[0]))):
            return True
    return False


def builds_a_venv(argv: Any) -> bool:
    """Whether a command line builds a venv or installs packages (python -m venv, ensurepip, pip install):
    Popen's argv, or a shell line (`bash -c LINE`, a string with shell=True); `bash -n` only parses."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        return _line_builds(os.fsdecode(argv))
    words = [os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w) for w in argv]
    if words and os.path.basename(words[0]) in _SHELLS and "-c" in words:
        at = words.index("-c")
        return "-n" not in words[1:at] and at + 1 < len(words) and _line_builds(words[at + 1])
    return _words_build(words)


@pytest.fixture(autouse=True)
def _fast_tier_builds_no_venv(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast tier (`-m "not slow"`) builds no venv and installs nothing (README "Test tiers"): a test that is
    not marked `slow` fails the moment it creates a venv (venv.EnvBuilder, `python -m venv`) or runs ensurepip or
    pip install, in its own process or as a command it starts (argv, or a `bash -c` line). (Three such tests once made the fast tier 603 s.)"""
    if request.node.get_closest_marker("slow"):
        return
    import venv

    def refuse(what: str) -> None:
        pytest.fail(f"{request.node.nodeid} builds a venv or installs packages ({what}) but is not marked slow "
                    "(README \"Test tiers\": the fast tier builds no venv)", pytrace=False)

    real_init = subprocess.Popen.__init__

    def guarded_init(self: Any, args: Any, *a: Any, **kw: Any) -> None:
        if builds_a_venv(args):
            refuse(" ".join(map(str, args)) if not isinstance(args, (str, bytes)) else str(args))
        real_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_init)
    monkeypatch.setattr(venv.EnvBuilder, "create", lambda self, env_dir: refuse(f"venv.EnvBuilder.create({env_dir})"))


# --------------------------------------------------------------------------- one build per run, with pytest-xdist

@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """An advisory lock on a file (POSIX); elsewhere nothing to share (xdist workers there build their own)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]) -> Any:
    """What `build(folder)` returns (JSON-able), built once per test run. Under pytest-xdist every worker is a
    session of its own, so a session fixture would build a venv per worker (each torch install is a minute of
    both cores): the first worker builds under a lock in the run's shared base folder, the others wait and reuse
    it, a skip included (the reason is recorded). A build that fails otherwise records nothing: the next worker
    tries again and fails on its own."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # pytest-of-USER/pytest-N: one per run, the workers' parent
    record = shared / f"{name}.json"
    with _exclusive(shared / f"{name}.lock"):
        if record.is_file():
            data = json.loads(record.read_text())
            if "skip" in data:
                pytest.skip(data["skip"])
            return data["value"]
        folder = shared / name
        folder.mkdir(exist_ok=True)
        try:
            value = build(folder)
        except pytest.skip.Exception as e:
            record.write_text(json.dumps({"skip": str(e.msg)}))
            raise
        record.write_text(json.dumps({"value": value}))
        return value


@dataclass(frozen=True)
class Venv:
    python: str  # the interpreter to diagnose
    torchvision_error: Optional[str] = None  # why `pip install torchvision` failed (None: installed or not asked)


def _python_of(path: str) -> str:
    """ENVDOCTOR_TEST_*_VENV may name the venv directory or its python."""
    p = Path(path)
    if p.is_dir():
        p = p / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    return str(p)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("WARNING: Location")]
    return lines[-1] if lines else "(no output)"


def _run(argv: List[str]) -> Optional[str]:
    """Run a build step; None on success, else pip's (or venv's) last line."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{' '.join(argv[:4])}: {e}"
    if proc.returncode != 0:
        return _last_line(proc.stderr or proc.stdout)
    return None


# The cpu_venv's one real problem, torchvision 0.28.0+cu130 beside the +cpu torch, as two checks see it: its
# variant (packages.cuda-variant, the cause) and its binary that does not load (packages.extension-build, which
# follows from it and carries the same fix). A test about something else leaves both out.
MIXED_VARIANT_CHECKS = ("packages.cuda-variant", "packages.extension-build")


@pytest.fixture(scope="session")
def cpu_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """torch 2.13.0 (the +cpu wheel here) plus torchvision 0.28.0 from PyPI, a CUDA 13.0 build,
    installed --no-deps: the classic "mixed variants" environment."""
    given = os.environ.get("ENVDOCTOR_TEST_CPU_VENV")
    if given:
        python = _python_of(given)
        if not Path(python).is_file():
            pytest.skip(f"ENVDOCTOR_TEST_CPU_VENV={given}: no interpreter at {python}")
        # a ready-made venv may hold torch alone: then the mixed-variant assertions are skipped, not failed
        has_tv = _run([python, "-c", "import importlib.metadata as m; m.version('torchvision')"]) is None
        return Venv(python, torchvision_error=None if has_tv else f"torchvision is not installed in {given}")

    def build(base: Path) -> dict:
        root = base / "cpu"
        err = _run([sys.executable, "-m", "venv", str(root)])
        if err:
            pytest.skip(f"cannot create a venv: {err}")
        python = _python_of(str(root))
        err = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "torch==2.13.0"])
        if err:
            pytest.skip(f"cannot install torch==2.13.0 into a test venv: {err}")
        tv_err = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
                       "torchvision==0.28.0"])
        return {"python": python, "torchvision_error": tv_err}

    return Venv(**built_once(tmp_path_factory, "cpu-venv", build))


@pytest.fixture(scope="session")
def cuda_venv() -> Venv:
    """A venv with a CUDA build of torch; only where ENVDOCTOR_TEST_CUDA_VENV names one (multi-GB wheels)."""
    given = os.environ.get("ENVDOCTOR_TEST_CUDA_VENV")
    if not given:
        pytest.skip("set ENVDOCTOR_TEST_CUDA_VENV to a venv with a CUDA build of torch to run this test")
    python = _python_of(given)
    if not Path(python).is_file():
        pytest.skip(f"ENVDOCTOR_TEST_CUDA_VENV={given}: no interpreter at {python}")
    return Venv(python)


# --------------------------------------------------------------------------- the installed wheel (contract tests)

REPO = Path(__file__).resolve().parent.parent
# what a build in a checkout leaves behind, and local environments: never part of the source a wheel is built from
_NOT_SOURCE = {"build", "dist", ".venv", ".git", ".pytest_cache", ".ruff_cache", "__pycache__"}


def source_files(repo: Path = REPO) -> List[str]:
    """The checkout's source files (relative paths): what git tracks plus new files it does not ignore, so
    ignored build/, dist/ and *.egg-info/ are left out; a copy of the tree without them where git is absent."""
    try:
        proc = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        proc = None
    if proc is not None and proc.returncode == 0 and proc.stdout:
        names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
        return sorted(n for n in names if (repo / n).is_file())  # a tracked file deleted in the work tree: gone
    out = []
    for path in repo.rglob("*"):
        rel = path.relative_to(repo)
        if path.is_file() and not (set(rel.parts) & _NOT_SOURCE or any(p.endswith(".egg-info") for p in rel.parts)
                                   or path.suffix == ".pyc"):
            out.append(rel.as_posix())
    return sorted(out)


def export_source(dest: Path, repo: Path = REPO) -> Path:
    """A clean copy of the source tree at dest (no build/, no *.egg-info/): what a fresh clone holds."""
    import shutil

    for rel in source_files(repo):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, target)
    return dest


@dataclass(frozen=True)
class InstalledWheel:
    wheel: Path  # the wheel built from a clean copy of this checkout
    python: str  # a fresh venv's interpreter, envdoctor installed there from that wheel (not editable)
    exe: Path  # that venv's `envdoctor` console script


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel --no-deps` of a clean copy of this checkout, so a stale build/ here cannot hide a defect."""

    def build(root: Path) -> str:
        src = export_source(root / "src")
        err = _run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps",
                    "-w", str(root / "dist"), str(src)])
        if err:
            pytest.skip(f"cannot build the envdoctor wheel (no package index for setuptools>=77?): {err}")
        wheels = sorted((root / "dist").glob("envdoctor-*.whl"))
        assert len(wheels) == 1, wheels
        return str(wheels[0])

    return Path(built_once(tmp_path_factory, "wheel", build))


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory, built_wheel: Path) -> InstalledWheel:
    """envdoctor installed from built_wheel into its own fresh venv: what a user gets from `pip install .`."""

    def build(base: Path) -> str:
        root = base / "envdoctor"
        err = _run([sys.executable, "-m", "venv", str(root)])
        if err:
            pytest.skip(f"cannot create a venv: {err}")
        python = _python_of(str(root))
        err = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", str(built_wheel)])
        if err:
            pytest.skip(f"cannot pip install the envdoctor wheel into a fresh venv (no package index?): {err}")
        return python

    python = built_once(tmp_path_factory, "installed-wheel", build)
    exe = Path(python).parent / ("envdoctor.exe" if os.name == "nt" else "envdoctor")
    assert exe.is_file(), "the console script was not installed"
    return InstalledWheel(built_wheel, python, exe)
