"""`envdoctor bench` as calls: which benchmarks run, the list of them, and the measurements on top of a machine's
collected facts; nothing printed, no signal handled (cli/bench.py and cli/live.py show the live progress, print the
partial results a signal leaves and the report).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from ..model.facts import Facts


class BenchError(ValueError):
    """Benchmarks that cannot run as asked (a torch kernel with --no-torch): the CLI's exit 2."""


def benchmarks() -> List[Dict[str, Any]]:
    """Every benchmark with its budgets (`envdoctor bench --list --format json`)."""
    from ..bench.suite import KERNELS

    return [{"name": k.name, "kind": k.kind, "devices": list(k.devices), "quick": k.quick,
             "gpu_budget_s": k.gpu_budget_s, "cpu_budget_s": k.cpu_budget_s, "what": k.what,
             "multi_gpu": k.multi_gpu} for k in KERNELS.values()]


def bench_names(names: Sequence[str], inspect_torch: bool = True) -> List[str]:
    """The benchmarks to run for the names asked (none: the quick suite). Without torch (--no-torch) only what runs
    in envdoctor's own process, the disk reads: all of them when no name was given, else BenchError for a torch
    kernel asked by name."""
    if inspect_torch:
        return list(names)
    from ..bench.suite import KERNELS, PlanError, expand_names

    try:
        asked = expand_names(list(names)) if names else [k for k, v in KERNELS.items() if v.kind == "disk"]
    except PlanError as e:
        raise BenchError(str(e)) from None
    torch_ones = [n for n in asked if KERNELS[n].kind != "disk"]
    if torch_ones and names:
        raise BenchError(f"--no-torch: {', '.join(torch_ones)} run torch kernels in the target interpreter "
                         "(the disk benchmarks run without it)")
    return [n for n in asked if KERNELS[n].kind == "disk"]


def bench_facts(facts: Facts, collect_options: Any, bench_options: Any,
                progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Facts:
    """The measurements on top of ``facts`` (collected with ``collect_options``): the kernels run in the first
    --python, else the interpreter collect inspected. ``progress`` is told each event (start, result, info)."""
    import dataclasses

    from . import collect

    bench_options = dataclasses.replace(bench_options, python=collect.bench_python(facts, collect_options))
    return collect.run_benchmarks(facts, bench_options, progress)
