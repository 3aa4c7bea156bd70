"""Prometheus/OpenMetrics exposition of a report: verdicts as numbers, for alerting and node_exporter.

Written with the Prometheus client library (``prometheus_client``), never formatted by hand: the registry below
holds one custom collector that turns the report into metric families; the library's own exposition writes them
(OpenMetrics 1.0 for ``--format openmetrics``, the text format 0.0.4 that node_exporter's textfile collector reads
for ``--textfile``). ``prometheus_client`` is imported only here, when one of those is asked for.

The metric contract (README "Metrics"; stable across versions, a new metric may be added):

- ``envdoctor_check_status{check, area, category, severity}``: one per registered check that ran. Value: 2 error,
  1 warning, 0 passed (or only notes), -1 skipped (the check did not apply, or its facts were unknown),
  -2 errored (the check crashed: envdoctor's bug, not the machine's). ``category`` is the category of the
  check's worst finding, else the first category the check can report (so a passing check carries the
  category an alert would name); ``severity`` is that finding's severity, else ``none``.
- ``envdoctor_check_action{check, area, action}``: the same series and values as ``envdoctor_check_status``, with
  ``action`` the worst finding's action for a scheduler (model/actions.py: none, reconfigure, restart-process,
  reset-gpu, reboot-node, drain-node), else ``none`` (a separate family, so check_status's labels stay as they were).
- ``envdoctor_findings{severity}``: how many findings at error, warning and info (all three always present).
- ``envdoctor_actions{action}``: how many warnings and errors ask for each action (every action always present):
  ``envdoctor_actions{action="drain-node"} > 0`` is the alert that takes a node out.
- ``envdoctor_verdict``: 2 error, 1 warning, 0 fine, -1 nothing could be judged.
- ``envdoctor_run_timestamp_seconds``: when the facts were collected (Unix time).
- info metrics: ``envdoctor_build`` (envdoctor and matrix versions), ``envdoctor_driver`` (driver version, its
  CUDA ceiling, status), ``envdoctor_gpu`` (one per GPU: index, name, compute capability, PCI bus, MIG),
  ``envdoctor_python`` (one per judged interpreter: index, Python, torch, torch's CUDA), ``envdoctor_host``
  (OS, kernel, container). Host names, paths and GPU UUIDs are never labels.
- ``envdoctor_bench_value{bench, device, unit}`` and ``envdoctor_bench_expected{bench, device, unit}``: each
  measured benchmark and what it should reach on this hardware (bench/expect.py; absent where there is no
  reference), ``envdoctor_bench_ratio`` the two's ratio.

Labels come in a fixed order and the series in check-registry order, so two runs on the same machine state give
the same text apart from the values that were measured.
"""

from __future__ import annotations

import calendar
import datetime as _dt
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

from ..domain.safe_text import escape_surrogates
from ..model.actions import ACTIONS, NONE
from ..model.findings import CheckResult, CheckStatus, Report, Severity

if TYPE_CHECKING:
    from ..compat.queries import Compat

PREFIX = "envdoctor"
STATUS_VALUE = {Severity.ERROR: 2, Severity.WARNING: 1}
SKIPPED, ERRORED = -1, -2
VERDICT_NOT_JUDGED = -1


class MetricsUnavailable(RuntimeError):
    """prometheus_client is not importable in envdoctor's environment."""


def _client():
    try:
        import prometheus_client  # noqa: F401
        from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
        from prometheus_client.registry import CollectorRegistry
    except ImportError as e:  # a broken install: envdoctor depends on it (pyproject.toml)
        raise MetricsUnavailable(
            f"metrics need the prometheus_client package ({e}); install it: python3 -m pip install prometheus-client"
        ) from None
    return GaugeMetricFamily, InfoMetricFamily, CollectorRegistry


def _worst(c: CheckResult):
    worst = None
    for f in c.findings:
        if f.severity in STATUS_VALUE and (worst is None or STATUS_VALUE[f.severity] > STATUS_VALUE[worst.severity]):
            worst = f
    return worst


def _check_categories() -> Dict[str, List[str]]:
    from ..checks import all_checks

    return {c.id: list(getattr(c, "categories", ()) or ()) for c in all_checks()}


def check_status(c: CheckResult, declared: Dict[str, List[str]]) -> tuple[int, str, str]:
    """(value, category, severity) of one check result, by the contract in the module docstring."""
    first = (declared.get(c.id) or [""])[0]
    if c.status == CheckStatus.ERRORED:
        return ERRORED, first, "none"
    if c.status == CheckStatus.SKIPPED:
        return SKIPPED, first, "none"
    worst = _worst(c)
    if worst is None:
        return 0, first, "none"
    return STATUS_VALUE[worst.severity], worst.category, worst.severity


def verdict_value(report: Report) -> int:
    if not report.judged:
        return VERDICT_NOT_JUDGED
    worst = report.worst()
    return STATUS_VALUE.get(worst or "", 0)


def _timestamp(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return float(calendar.timegm(when.utctimetuple()))


def _s(value: Any) -> str:
    """A label value: a lone surrogate (a non-UTF-8 byte in a name the machine gave) written out as \\xe9, or
    the client's UTF-8 encoding of the exposition raises (domain/safe_text.py)."""
    return "" if value is None else escape_surrogates(str(value))


def _container(facts: Any) -> Optional[str]:
    c = facts.host.container
    return c.runtime if c is not None else None


class _ReportCollector:
    """A prometheus_client collector over one finished report (collect() is called by the exposition)."""

    def __init__(self, report: Report, compat: Optional[Compat] = None) -> None:
        self.report = report
        self.compat = compat

    def describe(self) -> List[Any]:
        return []  # no up-front description: the registry then never calls collect() at registration

    def collect(self) -> Iterator[Any]:
        Gauge, Info, _ = _client()
        report, facts = self.report, self.report.facts
        declared = _check_categories()
        status = Gauge(f"{PREFIX}_check_status",
                       "Check status: 2 error, 1 warning, 0 passed, -1 skipped, -2 the check crashed",
                       labels=["check", "area", "category", "severity"])
        acting = Gauge(f"{PREFIX}_check_action", "Check status (as check_status) with its worst finding's action",
                       labels=["check", "area", "action"])
        checks = list(report.checks) + [c for m in report.machines for c in m.checks]
        seen = set()
        for c in checks:
            if c.id in seen:  # a several-machine paste: one series per check, the worst machine's
                continue
            seen.add(c.id)
            same = [x for x in checks if x.id == c.id]
            (value, category, severity), best = max(((check_status(x, declared), x) for x in same),
                                                    key=lambda t: t[0][0])
            status.add_metric([c.id, c.area, category, severity], value)
            worst = _worst(best) if value > 0 else None
            acting.add_metric([c.id, c.area, worst.action if worst else NONE], value)
        yield status
        yield acting

        actions = Gauge(f"{PREFIX}_actions", "Warnings and errors by the action they ask of a scheduler",
                        labels=["action"])
        problems = [f for f in report.all_findings if f.severity in STATUS_VALUE]
        for name in ACTIONS:
            actions.add_metric([name], sum(1 for f in problems if f.action == name))
        yield actions

        counts = Gauge(f"{PREFIX}_findings", "Findings by severity", labels=["severity"])
        for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO):
            counts.add_metric([sev], sum(1 for f in report.all_findings if f.severity == sev))
        yield counts

        yield Gauge(f"{PREFIX}_verdict", "Verdict: 2 error, 1 warning, 0 fine, -1 nothing judged",
                    value=verdict_value(report))
        ts = _timestamp(facts.collected_at)
        if ts is not None:
            yield Gauge(f"{PREFIX}_run_timestamp_seconds", "When the facts were collected (Unix time)", value=ts)

        yield Info(f"{PREFIX}_build", "envdoctor and its compatibility matrix",
                   value={"version": _s(report.envdoctor_version), "compat_as_of": _s(report.compat_as_of),
                          "origin": _s(facts.origin)})
        d = facts.driver
        yield Info(f"{PREFIX}_driver", "The NVIDIA driver",
                   value={"status": _s(d.status), "version": _s(d.version), "cuda": _s(d.cuda_driver_version)})
        gpu = Info(f"{PREFIX}_gpu", "One per GPU the driver sees",
                   labels=["index"])
        for g in d.gpus:
            gpu.add_metric([str(g.index)], {
                "name": _s(g.name), "compute_capability": _s(g.compute_capability),
                "pci_bus_id": _s(g.pci_bus_id), "mig": "" if g.mig_mode_current is None else
                ("on" if g.mig_mode_current else "off")})
        yield gpu
        py = Info(f"{PREFIX}_python", "One per judged interpreter", labels=["index"])
        for i, p in enumerate(facts.pythons):
            t = p.torch
            py.add_metric([str(i)], {"python": _s(p.python_version),
                                     "torch": _s(t.version if t else None),
                                     "torch_cuda": _s(t.cuda if t else None)})
        yield py
        h = facts.host
        yield Info(f"{PREFIX}_host", "The host (never its name)",
                   value={"os": _s(h.distro_name or h.os), "kernel": _s(h.kernel),
                          "machine": _s(h.machine), "container": _s(_container(facts))})
        yield from self._bench(Gauge)

    def _bench(self, Gauge) -> Iterator[Any]:
        facts = self.report.facts
        results = [r for r in facts.bench.results if isinstance(r.value, (int, float))]
        labels = ["bench", "device", "unit"]
        value = Gauge(f"{PREFIX}_bench_value", "A benchmark's measured value", labels=labels)
        expected = Gauge(f"{PREFIX}_bench_expected", "What the benchmark should reach on this hardware",
                         labels=labels)
        ratio = Gauge(f"{PREFIX}_bench_ratio", "Measured over expected", labels=labels)
        if results:
            from ..bench.expect import expect
            from ..compat import load_compat

            compat = self.compat if self.compat is not None else load_compat()
            for r in results:
                key = [_s(r.name), _s(r.device), _s(r.unit)]
                value.add_metric(key, float(r.value))
                e = expect(facts, compat, r)
                if e.expected is not None:
                    expected.add_metric(key, float(e.expected))
                if e.ratio is not None:
                    ratio.add_metric(key, float(e.ratio))
        yield value
        yield expected
        yield ratio


def registry_for(report: Report, compat: Optional[Compat] = None) -> Any:
    _, _, CollectorRegistry = _client()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ReportCollector(report, compat))
    return registry


def render_openmetrics(report: Report, redact: bool = True, compat: Optional[Compat] = None) -> str:
    """The report in the OpenMetrics text format (ends with ``# EOF``). ``redact``: the report's strings are
    redacted as for JSON first (no label holds a host name or path anyway)."""
    from prometheus_client.openmetrics.exposition import generate_latest

    if redact:
        from .redact import redact_report

        report = redact_report(report)
    return generate_latest(registry_for(report, compat)).decode("utf-8")


def write_textfile(report: Report, directory: str, name: str = "envdoctor.prom", compat: Optional[Compat] = None) -> str:
    """Write the metrics for node_exporter's textfile collector: the file ``name`` in DIR, in the Prometheus text
    format, atomically (the client library writes a temporary file beside it and renames it, so the collector
    never reads half a file; the temporary name does not end in .prom, so it is never collected).
    Returns the path written. OSError when DIR is not a writable directory."""
    import os

    from prometheus_client import write_to_textfile

    from .redact import redact_report

    if not os.path.isdir(directory):
        raise NotADirectoryError(f"{directory}: not a directory")
    path = os.path.join(directory, name)
    write_to_textfile(path, registry_for(redact_report(report), compat))
    return path
