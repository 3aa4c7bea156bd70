"""What `check` and `bench` share when they judge this machine: the benchmark options and run (with the
results measured before a signal), the benchmark table, --expect-gpu, judging and printing what was read while a
signal waits (judge_and_print), and the partial report after a signal.

Like common, a shared module: the two commands import it, it imports no command module.
"""

from __future__ import annotations

import sys

from . import signals
from .common import (
    UsageError,
    data_target,
    print_report,
    report_exit_code,
    write,
    write_textfile,
)


def bench_options(args, names):
    from ..bench.run import BenchOptions
    from ..bench.suite import PlanError, expand_names

    try:
        expand_names(names)
    except PlanError as e:
        raise UsageError(str(e)) from None
    for opt in ("sustain", "budget"):
        v = getattr(args, opt)
        if v is not None and not (0 < v <= 24 * 3600):
            raise UsageError(f"--{opt} {v:g}: give a number of seconds above 0")
    from ..bench.run import STARTUP_TIMEOUT_S

    return BenchOptions(python="", names=list(names), device=args.device, data_paths=[
        data_target(p) for p in (args.data_paths or [])], sustain_s=args.sustain, budget_s=args.budget,
        force=args.force, allow_write=not args.no_write, thorough=getattr(args, "thorough", False),
        # --python-timeout bounds `import torch` + CUDA start-up in the bench payload too
        startup_timeout_s=args.python_timeout if args.python_timeout is not None else STARTUP_TIMEOUT_S)


def run_bench(facts, options, bench, args):
    from ..probes.runner import INTERRUPT
    from ..report.bench_view import LiveProgress
    from ..services.bench import bench_facts
    from ..services.collect import Interrupted

    live = args.format == "console" and sys.stderr.isatty()
    measured: list = []  # every result as it comes: what a Ctrl-C or SIGTERM still prints

    def record(event) -> None:
        if event.get("event") == "result" and isinstance(event.get("result"), dict):
            measured.append(event["result"])
        progress(event)

    with LiveProgress(live) as progress:
        try:
            measured_facts = bench_facts(facts, options, bench, record)
            INTERRUPT.check()  # the handler killed the payload: its runs ended "interrupted", not measured
            return measured_facts
        except (Interrupted, KeyboardInterrupt) as e:
            signum = e.signum if isinstance(e, Interrupted) else 2
            raise Interrupted(signum, facts=with_partial_bench(facts, measured, signum)) from None


def with_partial_bench(facts, measured, signum: int):
    """The facts with the benchmarks measured before a signal, the run marked partial (never "all well")."""
    import dataclasses
    import signal

    from ..model.facts import Bench, BenchResult, FactsError, ProbeRun, ProbeStatus, from_dict

    results = list(facts.bench.results)
    for data in measured:
        try:
            results.append(from_dict(BenchResult, data, "bench.result"))
        except FactsError:
            continue
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    ran = sum(1 for r in results if r.status == ProbeStatus.OK)
    bench = Bench(status=ProbeStatus.OK if ran else ProbeStatus.FAILED, results=results,
                  reason=f"interrupted by {name}: {ran} of the planned measurements ran (partial)")
    probes = list(facts.probes) + [ProbeRun("bench", ProbeStatus.FAILED, f"interrupted by {name} before it "
                                            "finished", None)]
    return dataclasses.replace(facts, bench=bench, probes=probes)


def write_bench_table(report, args) -> None:
    """The results table beside the findings: console and Markdown (JSON has them in facts.bench)."""
    from ..compat import load_compat
    from ..report.bench_view import render_markdown_table

    compat = load_compat()
    to_file = bool(args.output and args.output != "-")
    if args.format == "markdown":
        from ..report.inert import inert

        text = render_markdown_table(inert(report.facts), compat)
        if not args.no_redact:  # pasted into issues: home paths and host names go, as in the rest of the report
            from ..report.redact import redact_text

            host = report.facts.host.hostname
            text = redact_text(text, [host] if host else [])
    elif args.format == "console":
        return  # the console report holds the table, before its verdict
    else:
        return
    if to_file:
        _append(text, args.output)
    else:
        write(text, None)


def _append(text: str, output: str) -> None:
    try:
        with open(output, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {output}: {e.strerror}") from None


def expect_gpu(args) -> bool:
    """--expect-gpu, else `expect-gpu` under [tool.envdoctor] in the nearest project file (envdoctor.model.config)."""
    if getattr(args, "expect_gpu", False):
        return True
    if getattr(args, "no_config", False):
        return False
    from ..model.config import ConfigError, load_config

    try:
        return bool(load_config().expect_gpu)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def judge_and_print(facts, args, only, ignore, expect: bool, table: bool) -> int:
    """Everything is read: judge it and print the report (with the benchmark table when ``table``); a signal
    meanwhile waits for the report to be printed. Returns the exit code."""
    from ..services.collect import judge

    report = judge(facts, only=only, ignore=ignore, expect_gpu=expect)
    print_report(report, args)
    write_textfile(report, getattr(args, "textfile", None))
    if table:
        write_bench_table(report, args)
    return signals.exit_code(report_exit_code(report, args.fail_on))


def partial_report(e, args, only, ignore, expect_gpu: bool = False) -> None:
    """After SIGINT/SIGTERM: the report on what was read before the signal, marked partial (never "all well")."""
    from ..services.collect import judge

    if e.facts is None:
        return
    try:
        report = judge(e.facts, only=only, ignore=ignore, expect_gpu=expect_gpu)
        print_report(report, args)
    except (OSError, UsageError):
        pass  # a closed pipe or an unwritable file: the exit code still says what happened
