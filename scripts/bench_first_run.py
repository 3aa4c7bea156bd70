#!/usr/bin/env python3
"""envdoctor's first run against its floor: `import torch` in the same interpreter, in paired, interleaved runs.

Each pair runs `python -c "import torch"` and `envdoctor --python PY --format json` back to back, the order
alternating from pair to pair, so that load from other processes hits both sides alike; then the same against
`import torch` followed by `os._exit(0)` (the import without the interpreter's teardown of torch, which
envdoctor's payload skips: the stricter floor, printed beside the first); then
`envdoctor --no-torch` against `python -c pass` (the interpreter's own start) the same way. It prints the
medians, the median of the paired differences and the targets (issue 19: envdoctor <= import torch + 0.3 s;
--no-torch <= 0.5 s). Usage:

    python scripts/bench_first_run.py --python /path/to/venv/bin/python [--pairs 9] [--envdoctor envdoctor]
    python scripts/bench_first_run.py --python PY --smoke [--pairs 5] [--thorough-runs 2]

--smoke measures the smoke tier (issue 38) instead: the default run (the quick tier, beside the import) against a
bare `import torch` and against the same run with `--smoke off`, in pairs; with `--versus OTHER_ENVDOCTOR`, the
default run of another build (a baseline) against this one's, in pairs; then `--smoke thorough` alone (every
step, torch.compile end to end), whose target is a minute on a 2-core box.

Use an installed envdoctor (`pip install .`, whose files are byte-compiled) rather than an editable one run
with PYTHONDONTWRITEBYTECODE set, which compiles every module on every run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List

TARGET_OVER_IMPORT_S = 0.3
TARGET_NO_TORCH_S = 0.5
TARGET_SMOKE_OVER_IMPORT_S = 0.5  # issue 38: the default run, its quick smoke tier included
TARGET_THOROUGH_S = 60.0


CPU_S: List[float] = []  # the CPU seconds (user + system, every waited-for descendant) of each timed() run


def adopt_orphans() -> bool:
    """Linux: become the reaper of this script's orphaned descendants (PR_SET_CHILD_SUBREAPER), so that their CPU
    seconds are counted: envdoctor's payload answers from a forked worker and its launcher ends without waiting
    for it (the worker's teardown runs on after the answer), so the worker, which imports torch, is nobody's
    waited-for child otherwise, and RUSAGE_CHILDREN would miss the run's largest share."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1) == 0
    except (OSError, AttributeError):
        return False


def reap_adopted() -> None:
    """Wait for every adopted orphan still ending (after the wall time is taken)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def timed(argv: List[str], env: Dict[str, str], timeout: float = 600) -> float:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout)
    took = time.perf_counter() - start
    reap_adopted()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_S.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if proc.returncode not in (0, 1) or (argv[-1:] == ["json"] and not proc.stdout.strip()):
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.decode()[-500:]}")
    if "--format" in argv:
        json.loads(proc.stdout)  # a whole report, not an early exit
    return took


def paired(a: List[str], b: List[str], pairs: int, env: Dict[str, str]) -> Dict[str, List[float]]:
    out: Dict[str, List[float]] = {"a": [], "b": [], "diff": []}
    timed(a, env)  # warm the page cache once: the first cold-disk run is an outlier for whichever goes first
    timed(b, env)
    for i in range(pairs):
        if i % 2 == 0:
            ta, tb = timed(a, env), timed(b, env)
        else:
            tb, ta = timed(b, env), timed(a, env)
        out["a"].append(ta)
        out["b"].append(tb)
        out["diff"].append(tb - ta)
    return out


def report(title: str, name_a: str, name_b: str, res: Dict[str, List[float]]) -> float:
    ma, mb, md = (statistics.median(res[k]) for k in ("a", "b", "diff"))
    print(title)
    print(f"  {name_a:<44} median {ma:6.3f} s  (min {min(res['a']):.3f}, max {max(res['a']):.3f})")
    print(f"  {name_b:<44} median {mb:6.3f} s  (min {min(res['b']):.3f}, max {max(res['b']):.3f})")
    print(f"  {'paired difference (second - first)':<44} median {md:+6.3f} s  ratio of medians {mb / ma:.2f}")
    return md


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="target interpreter (with torch installed)")
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--envdoctor", default=shutil.which("envdoctor") or "envdoctor",
                    help="envdoctor command (default: envdoctor on PATH)")
    ap.add_argument("--skip-no-torch", action="store_true", help="only the import torch pairs")
    ap.add_argument("--smoke", action="store_true", help="measure the smoke tier (see the module docstring)")
    ap.add_argument("--thorough-runs", type=int, default=2, help="with --smoke: runs of --smoke thorough")
    ap.add_argument("--versus", metavar="ENVDOCTOR",
                    help="with --smoke: also pair the default run of this other envdoctor (a baseline build) "
                         "against --envdoctor's, the two interleaved, wall and CPU seconds")
    args = ap.parse_args()
    if not adopt_orphans():
        print("note: not a subreaper (not Linux?): CPU seconds miss the payload's worker, which its launcher "
              "does not wait for")
    if args.smoke:
        return smoke(args)
    envdoctor = args.envdoctor.split()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    print(f"target {args.python}; envdoctor {' '.join(envdoctor)}; {args.pairs} pairs; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    res = paired([args.python, "-c", "import torch"], envdoctor + ["--python", args.python, "--format", "json"],
                 args.pairs, env)
    diff = report("full run", "python -c 'import torch'", "envdoctor --format json", res)
    ok = diff <= TARGET_OVER_IMPORT_S
    print(f"  target: envdoctor <= import torch + {TARGET_OVER_IMPORT_S} s: {'met' if ok else 'NOT met'}")
    # the stricter floor: the import alone. `python -c "import torch"` also tears torch down at exit (0.7-1.5 s
    # here), which envdoctor's payload skips (os._exit once it has answered): against that floor the figure
    # above is flattered, so it is printed beside it
    res = paired([args.python, "-c", "import torch, os; os._exit(0)"],
                 envdoctor + ["--python", args.python, "--format", "json"], args.pairs, env)
    strict = report("full run, against the import without its teardown", "python -c 'import torch; os._exit(0)'",
                    "envdoctor --format json", res)
    print(f"  the same target against this floor: {'met' if strict <= TARGET_OVER_IMPORT_S else 'NOT met'}")
    if not args.skip_no_torch:
        res = paired([args.python, "-c", "pass"],
                     envdoctor + ["--python", args.python, "--format", "json", "--no-torch"], args.pairs, env)
        report("--no-torch", "python -c pass", "envdoctor --format json --no-torch", res)
        med = statistics.median(res["b"])
        ok_nt = med <= TARGET_NO_TORCH_S
        print(f"  target: --no-torch <= {TARGET_NO_TORCH_S} s: {'met' if ok_nt else 'NOT met'} ({med:.3f} s)")
        ok = ok and ok_nt
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0 if ok else 1


def smoke(args: argparse.Namespace) -> int:
    """The smoke tier's cost: quick (the default) against import torch and against --smoke off; thorough alone."""
    envdoctor = args.envdoctor.split()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = envdoctor + ["--python", args.python, "--format", "json"]
    print(f"target {args.python}; envdoctor {' '.join(envdoctor)}; {args.pairs} pairs; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    res = paired([args.python, "-c", "import torch, os; os._exit(0)"], run, args.pairs, env)
    over = report("default run (quick smoke tier) against the import", "python -c 'import torch; os._exit(0)'",
                  "envdoctor --format json", res)
    ok = over <= TARGET_SMOKE_OVER_IMPORT_S
    print(f"  target: envdoctor <= import torch + {TARGET_SMOKE_OVER_IMPORT_S} s: {'met' if ok else 'NOT met'}")
    del CPU_S[:]
    res = paired(run + ["--smoke", "off"], run, args.pairs, env)
    report("the quick tier's own cost", "envdoctor --smoke off", "envdoctor (--smoke quick)", res)
    # CPU seconds, which a loaded box does not inflate as it inflates wall time: paired() ran (off, quick) and
    # then each pair in alternating order after its two warm-up runs
    cpu = CPU_S[2:]
    off_cpu, quick_cpu = [], []
    for i in range(args.pairs):
        a, b = cpu[2 * i], cpu[2 * i + 1]
        if i % 2:
            a, b = b, a
        off_cpu.append(a)
        quick_cpu.append(b)
    diffs = [q - o for o, q in zip(off_cpu, quick_cpu)]
    print(f"  CPU seconds (user + system, all processes): --smoke off median {statistics.median(off_cpu):.2f}, "
          f"quick median {statistics.median(quick_cpu):.2f}, paired difference median "
          f"{statistics.median(diffs):+.2f}")
    if args.versus:
        ok = versus(args, run, env) and ok
    took = []
    for _ in range(max(0, args.thorough_runs)):
        took.append(timed(run + ["--smoke", "thorough"], env, timeout=900))
    if took:
        med = statistics.median(took)
        print(f"--smoke thorough: median {med:.1f} s over {len(took)} runs (min {min(took):.1f}, max {max(took):.1f});"
              f" target <= {TARGET_THOROUGH_S:g} s: {'met' if med <= TARGET_THOROUGH_S else 'NOT met'}")
        ok = ok and med <= TARGET_THOROUGH_S
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0 if ok else 1


def versus(args: argparse.Namespace, run: List[str], env: Dict[str, str]) -> bool:
    """The default run of a baseline envdoctor (--versus) against --envdoctor's, in interleaved pairs: the change
    between two builds measured under the same load, in wall and in CPU seconds."""
    base = args.versus.split() + run[len(args.envdoctor.split()):]
    del CPU_S[:]
    res = paired(base, run, args.pairs, env)
    report("default run, baseline against this build", f"{args.versus} (baseline)", f"{args.envdoctor}", res)
    cpu = CPU_S[2:]
    base_cpu, new_cpu = [], []
    for i in range(args.pairs):
        a, b = cpu[2 * i], cpu[2 * i + 1]
        if i % 2:
            a, b = b, a
        base_cpu.append(a)
        new_cpu.append(b)
    print(f"  CPU seconds (user + system, all processes): baseline median {statistics.median(base_cpu):.2f}, "
          f"this build median {statistics.median(new_cpu):.2f}, paired difference median "
          f"{statistics.median([n - b for b, n in zip(base_cpu, new_cpu)]):+.2f}")
    return True


if __name__ == "__main__":
    sys.exit(main())
