"""The smoke tier: what a training run does, tried for real in bounded children while the inspect task runs.

Zygotes (smoke_steps.serve) run the steps, each step in its own forked child:
- a fresh interpreter started as the run starts (``python -c``: the working directory first on sys.path, the
  run's environment), at once, beside the payload's own work: where torch and its dependents would be imported
  from, the C++ toolchain torch.compile and cpp_extension use, built and loaded in the directories they use;
  with ``thorough``, the import of torch and of every installed distribution that depends on torch, each checked
  against the installed files;
- a fork of the payload taken right after its ``import torch`` (and after envdoctor's CUDA gate, before the
  payload initialises CUDA, so that each child may): the imports of torch's compiled extensions, a DataLoader with
  two workers, a checkpoint written and read back, a one-rank torch.distributed group, the GPU steps where CUDA
  is available; with ``thorough``, the pure-Python dependents and an end-to-end torch.compile.

Tiers: ``quick`` (the default: the cheap steps, beside the import), ``thorough`` (everything), ``off``.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import normalize_name
from .smoke_steps import FUNCS, _top_modules, serve

TIERS = ("quick", "thorough", "off")
# each step's own bound (seconds); a hang is recorded as timed-out and the next step goes on
QUICK_TIMEOUT_S = 20.0
THOROUGH_TIMEOUT_S = 45.0
COMPILE_TIMEOUT_S = 120.0  # inductor's first compile: 24 s of CPU here (2 cores, loaded: 84 s wall)
# torch's requirements that are imported on their own (the rest are pure helpers: sympy, jinja2, fsspec...)
TORCH_REQUIREMENTS_TRIED = ("triton", "pytorch-triton", "pytorch-triton-rocm")
# the quick tier's DataLoader: (tensors per sample, batches): one batch from each of the two workers, 4 tensors
# received (--smoke thorough: 8 x 8, 64 held at once, as step_dataloader does by default)
QUICK_LOADER = (2, 2)
# below this soft open-files limit the quick tier's DataLoader holds the 64 tensors too (8 x 8): 64 held descriptors
# plus the step's own ~16 fail a limit under about 80, and 4 only one under about 20 (measured with torch 2.13.0 on
# this machine: the 4-tensor step passed at 20 and failed at 16); common limits (1,024, 65,536) keep the cheap step
QUICK_LOADER_FULL_BELOW = 256

_BOOT = ("import importlib.util as u,sys\n"
         "s=u.spec_from_file_location('_envdoctor_smoke_steps',{path!r})\n"
         "m=u.module_from_spec(s);s.loader.exec_module(m);m.main(sys.argv[1:])")


def fresh_command(executable: str, units: List[Any], out_fd: int) -> List[str]:
    """The command line of the fresh interpreter that runs ``units`` (a list of (steps, {step: timeout_s})) the
    way the user's run starts (``python -c``: the working directory first on sys.path), answering on ``out_fd``."""
    boot = _BOOT.format(path=os.path.join(os.path.dirname(os.path.abspath(__file__)), "smoke_steps.py"))
    return [executable, "-c", boot, json.dumps(units), str(out_fd)]


def _requires_torch(requires: Optional[List[str]]) -> bool:
    import re

    pat = re.compile(r"^\s*torch\s*(?:$|[\s<>=!~;(\[])", re.I)
    return any(pat.match(r) and "extra ==" not in r and "extra==" not in r for r in requires or [])


def _compiled(record: str) -> bool:
    """Whether a RECORD lists a compiled module or library (an extension: its ABI against torch can break)."""
    import re

    return re.search(r"\.(?:so|pyd)(?:\.[0-9.]+)?,", record or "") is not None


def torch_family(dists: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """torch, the distributions that require it (not behind an extra) and triton, each once (the first on
    sys.path, the one imported), with its top-level module and whether it ships compiled files."""
    out: List[Dict[str, Any]] = []
    seen = set()
    for d in dists:
        key = normalize_name(d.get("name") or "")
        if not key or key in seen:
            continue
        seen.add(key)
        if key != "torch" and key not in TORCH_REQUIREMENTS_TRIED and not _requires_torch(d.get("requires")):
            continue
        dist = d.get("dist")
        record = ""
        try:
            record = dist.read_text("RECORD") or "" if dist is not None else ""
        except Exception:
            record = ""
        mods = _top_modules(d.get("location"), record, key)
        out.append({"name": key, "version": d.get("version") or "", "location": d.get("location") or "",
                    "module": mods[0] if mods else "", "compiled": _compiled(record)})
    out.sort(key=lambda r: (r["name"] != "torch", r["name"]))
    return out


def _distributions() -> List[Dict[str, Any]]:
    from .dists import _distribution_records

    return list(_distribution_records() or [])


class Smoke:
    """The smoke tier of one inspect run: start(), then after_torch_import(), then finish() into the result."""

    def __init__(self, tier: str, data_dirs: List[str], result: Dict[str, Any], deadline_at: Optional[float],
                 private_fds: Tuple[int, ...] = ()):
        self.tier = tier if tier in TIERS else "quick"
        self.private_fds = private_fds  # the payload's answer pipe: never held open by a step's process
        self.planned: Dict[str, List[str]] = {}  # reader -> the steps it runs
        self.data_dirs = [d for d in data_dirs if d]
        self.result = result
        self.deadline_at = deadline_at
        self.started = time.monotonic()
        self.readers: List[Tuple[int, Any, str]] = []  # (fd, process handle, which)
        self.records: List[Dict[str, Any]] = []
        self.family: List[Dict[str, Any]] = []
        self.timeout_s = THOROUGH_TIMEOUT_S if self.tier == "thorough" else QUICK_TIMEOUT_S
        self.section: Dict[str, Any] = {"tier": self.tier, "steps": self.records, "not_tried": [],
                                        "open_files_limit": _nofile(), "errors": []}
        self.fork_ok = hasattr(os, "fork") and sys.platform != "win32"
        self.forked = False  # after_torch_import ran: torch imported
        self.fresh: Any = None  # the fresh interpreter's process (start())
        self.wfd_used = False

    # ------------------------------------------------------------------ the fresh interpreter

    def start(self, wfd: Optional[int] = None) -> None:
        """Read torch's dependents and start the fresh interpreter. With ``wfd`` (the forked reader: reader.py),
        the fresh interpreter answers on that pipe, whose read end the payload's process holds (adopt())."""
        try:
            self._start(wfd)
        finally:
            if wfd is not None and self.fresh is None and not self.wfd_used:  # (Popen's attempt closes it)
                os.close(wfd)

    def _start(self, wfd: Optional[int]) -> None:
        if self.tier == "off":
            self.section["not_tried"].append("every smoke step (--smoke off)")
            self.result["smoke"] = self.section
            return
        self.result["smoke"] = self.section
        if not self.fork_ok:
            self.section["not_tried"].append("every smoke step: this platform has no fork()")
            return
        try:
            self.family = torch_family(_distributions())
        except Exception as e:
            self.section["errors"].append(f"reading torch's dependents: {type(e).__name__}: {e}")
        if not any(f["name"] == "torch" for f in self.family):
            self.section["not_tried"].append("every smoke step: torch is not installed in this interpreter")
            self.fork_ok = False  # nothing of a run's to try: no fork after an import either
            return
        targets = [[f["name"], f["version"], f["location"], f["module"]] for f in self.family if f["module"]]
        units: List[Any] = [([["resolve", {"targets": targets}]], {"resolve": self.timeout_s}),
                            ([["compile", {"python_h": self.tier == "thorough"}]],
                             {"compile": max(self.timeout_s, 30.0)})]
        if self.tier == "thorough" and targets:
            # the run's own process: torch, each dependent, then torch.compile end to end (inductor imports
            # setuptools' distutils: in a fork of the payload, whose find_spec('pip') made setuptools' shim
            # step aside for the process, it fails where the run would not)
            chain = [["import:" + t[0], {"dist": t[0], "version": t[1], "location": t[2], "module": t[3]}]
                     for t in targets]
            timeouts = {c[0]: self.timeout_s for c in chain}
            if targets[0][0] == "torch":
                chain.append(["torch-compile", {}])
                timeouts["torch-compile"] = COMPILE_TIMEOUT_S
            units.append((chain, timeouts))
        else:
            self.section["not_tried"].append("torch.compile (--smoke thorough)")
        rfd, wfd = os.pipe() if wfd is None else (-1, wfd)
        self.wfd_used = True
        try:
            proc = subprocess.Popen(fresh_command(sys.executable, units, wfd),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    pass_fds=(wfd,), close_fds=True)
        except Exception as e:
            if rfd >= 0:
                os.close(rfd)
            self.section["errors"].append(f"starting the fresh interpreter: {type(e).__name__}: {e}")
            return
        finally:
            os.close(wfd)
        self.fresh = proc
        if rfd >= 0:
            self.readers.append((rfd, proc, "fresh"))
        self.planned["fresh"] = [n for u, _t in units for n, _kw in u]

    def started_state(self) -> Dict[str, Any]:
        """What start() found, for the payload's process (the reader ran it): adopt() takes it."""
        return {"section": {k: v for k, v in self.section.items() if k != "steps"}, "family": self.family,
                "fork_ok": self.fork_ok, "planned": self.planned.get("fresh"),
                "fresh_pid": getattr(self.fresh, "pid", None), "in_result": "smoke" in self.result}

    def adopt(self, state: Dict[str, Any], rfd: int, handle: Callable[[int], Any]) -> None:
        """Take what the reader's start() found: the section so far, torch's dependents, and the fresh interpreter
        answering on ``rfd`` (``handle(pid)`` kills and reaps it); ``rfd`` is closed when it started none."""
        self.section.update(state.get("section") or {})
        self.section["steps"] = self.records
        self.family = list(state.get("family") or [])
        self.fork_ok = bool(state.get("fork_ok"))
        if state.get("in_result"):
            self.result["smoke"] = self.section
        pid = state.get("fresh_pid")
        if isinstance(pid, int) and state.get("planned") is not None:
            self.readers.append((rfd, handle(pid), "fresh"))
            self.planned["fresh"] = list(state["planned"])
        elif rfd >= 0:
            os.close(rfd)

    # ------------------------------------------------------------------ the fork after import torch

    def after_torch_import(self, cuda_expected: bool) -> None:
        """Fork the torch zygote (call from the main thread, after `import torch`, before CUDA is initialised)."""
        if self.tier == "off" or not self.fork_ok:
            return
        self.forked = True
        units: List[Any] = []
        t = self.timeout_s
        # quick: torch's compiled dependents (their ABI against this torch is what breaks), here where torch is
        # imported already; thorough imports every dependent in the fresh interpreter instead
        tried = [f for f in self.family if f["name"] != "torch" and f["module"] and self.tier == "quick"
                 and f["compiled"]]
        left = [f["name"] for f in self.family if f["name"] != "torch" and f not in tried]
        if left and self.tier == "quick":
            self.section["not_tried"].append("importing {} (pure Python: --smoke thorough)".format(", ".join(left)))
        if tried:
            chain = [["import:" + f["name"], {"dist": f["name"], "version": f["version"], "location": f["location"],
                                              "module": f["module"]}] for f in tried]
            units.append((chain, {c[0]: t for c in chain}))
        cwd = _cwd()
        dirs = list(dict.fromkeys(self.data_dirs + ([cwd] if cwd else [])))
        loader: Dict[str, Any] = {}
        limit = self.section.get("open_files_limit") or [None, None]
        if self.tier == "quick" and not (limit[0] is not None and limit[0] < QUICK_LOADER_FULL_BELOW):
            # each received descriptor is a connection to a worker and back: 64 were most of the quick tier's
            # time after the import; the open-files limit itself is read and judged in every tier. Under an
            # unusually low limit the 64 are held anyway: there the step can fail before the run does
            loader = {"columns": QUICK_LOADER[0], "batches": QUICK_LOADER[1]}
            self.section["not_tried"].append("a DataLoader holding 64 tensors (--smoke thorough)")
        for name, kw in (("dataloader", loader), ("checkpoint", {"dirs": dirs}), ("distributed", {})):
            units.append(([[name, kw]], {name: t}))
        gpu = ["cuda-kernel", "cublas", "cudnn", "autocast", "nccl"]
        if cuda_expected:  # first: CUDA's initialisation makes it the longest chain
            units.insert(0, ([[n, {}] for n in gpu], {n: t for n in gpu}))
        else:
            self.section["not_tried"].append("GPU steps (no CUDA build)")
        # one zygote per unit, all at once, the longest first (the GPU steps, the imports, the DataLoader): after
        # the import the payload has little left to do, so the steps' wall time is the longest one's, not their sum
        for unit in units:
            self._fork_zygote([unit], unit[0][0][0])

    def _fork_zygote(self, units: List[Any], which: str) -> None:
        rfd, wfd = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            os.close(rfd)
            os.close(wfd)
            self.section["errors"].append(f"fork after import torch: {e}")
            return
        if pid == 0:  # the zygote: the steps, then out, without the payload's teardown
            try:
                os.close(rfd)
                for fd, _h, _w in self.readers:  # the other zygotes' pipes are not this one's to hold open
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                for fd in self.private_fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                try:  # what the steps print goes nowhere: envdoctor's stdout and stderr are not theirs to hold open
                    null = os.open(os.devnull, os.O_RDWR)
                    os.dup2(null, 1)
                    os.dup2(null, 2)
                except OSError:
                    pass
                if _cwd() and (not sys.path or sys.path[0] != ""):
                    sys.path.insert(0, "")  # the run's sys.path: `python train.py` in the working directory
                serve([([(n, kw) for n, kw in u], tm) for u, tm in units], FUNCS, wfd)
            finally:
                os._exit(0)
        os.close(wfd)
        self.readers.append((rfd, pid, which))
        self.planned[which] = [n for u, _t in units for n, _kw in u]

    # ------------------------------------------------------------------ collecting

    def finish(self, limit_s: Optional[float] = None) -> Dict[str, Any]:
        """Read every record until the zygotes end or the time left runs out; a zygote still running then is
        killed and its unfinished steps recorded as timed-out."""
        if self.tier != "off" and self.fork_ok and not self.forked and self.family:
            self.section["not_tried"].append("the steps that need torch (torch did not import)")
        if not self.readers:
            return self.section
        end = time.monotonic() + (limit_s if limit_s is not None else 120.0)
        if self.deadline_at is not None:
            end = min(end, self.deadline_at - 2.0)
        bufs = {fd: b"" for fd, _h, _w in self.readers}
        open_fds = [fd for fd, _h, _w in self.readers]
        while open_fds:
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(open_fds, [], [], min(left, 1.0))
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.remove(fd)
                    continue
                bufs[fd] += chunk
                while b"\n" in bufs[fd]:
                    line, bufs[fd] = bufs[fd].split(b"\n", 1)
                    try:
                        rec = json.loads(line.decode("utf-8", "replace"))
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and "name" in rec:
                        self.records.append(rec)
                    elif isinstance(rec, dict) and rec.get("end") and fd in open_fds:
                        # the zygote is done: a process a step left behind may still hold this pipe open
                        open_fds.remove(fd)
        for fd, handle, which in self.readers:
            if fd in open_fds:
                # cut by the payload's own limit (--python-timeout), not by a step's: said, not judged
                done = {r.get("name") for r in self.records}
                cut = [n for n in self.planned.get(which, []) if n not in done]
                self.section["not_tried"].append("{} (cut short by the interpreter's time limit, "
                                                 "--python-timeout)".format(", ".join(cut) or which))
                _kill(handle)
            else:
                _reap(handle)
            try:
                os.close(fd)
            except OSError:
                pass
        self.readers = []
        self.section["duration_s"] = round(time.monotonic() - self.started, 3)
        return self.section


def _kill(handle: Any) -> None:
    try:
        if isinstance(handle, int):
            os.kill(handle, signal.SIGKILL)
            os.waitpid(handle, 0)
        else:
            handle.kill()
            handle.wait(timeout=5)
    except Exception:
        pass


def _reap(handle: Any) -> None:
    try:
        if isinstance(handle, int):
            os.waitpid(handle, 0)
        else:
            handle.wait(timeout=5)
    except Exception:
        _kill(handle)


def _cwd() -> Optional[str]:
    try:
        return os.getcwd()
    except OSError:
        return None


def _nofile() -> Optional[List[Any]]:
    """The open-files limit (soft, hard) this process has, as the run inherits it; None off POSIX."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return [None if soft == resource.RLIM_INFINITY else soft, None if hard == resource.RLIM_INFINITY else hard]
    except Exception:
        return None


def run_standalone(tier: str, data_dirs: List[str], on_import: Callable[[], Any]) -> Dict[str, Any]:
    """The smoke tier alone (``--task smoke``): for scripts and benchmarks."""
    result: Dict[str, Any] = {}
    smoke = Smoke(tier, data_dirs, result, None)
    smoke.start()
    torch = on_import()
    if torch is not None:
        smoke.after_torch_import(bool(getattr(getattr(torch, "version", None), "cuda", None)))
    return smoke.finish()
