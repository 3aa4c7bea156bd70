"""--format openmetrics and --textfile: every test machine's report parses with prometheus_client's own parsers,
labels are stable across runs, and the numbers follow the contract in envdoctor/report/openmetrics.py."""

from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families as parse_text  # noqa: E402

from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.judging import judge  # noqa: E402
from envdoctor.model.facts import BenchResult, Facts, ProbeStatus  # noqa: E402
from envdoctor.model.findings import CheckResult, CheckStatus  # noqa: E402
from envdoctor.report.openmetrics import render_openmetrics, write_textfile  # noqa: E402
from tests import machines  # noqa: E402
from tests.paths import FIXTURES  # noqa: E402

SNAPSHOTS = sorted((FIXTURES / "snapshots").glob("*.json"))


def _machines():
    out = []
    for name, fn in inspect.getmembers(machines, inspect.isfunction):
        if fn.__module__ == machines.__name__ and not inspect.signature(fn).parameters:
            out.append((name, fn))
    for path in SNAPSHOTS:
        out.append((path.stem, lambda path=path: Facts.from_json(path.read_text(encoding="utf-8"))))
    return out


MACHINES = _machines()


def _samples(text: str, parser=parse_openmetrics):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in parser(text) for s in fam.samples}


def test_there_are_machines_to_render() -> None:
    assert len(MACHINES) >= 8, [n for n, _ in MACHINES]


@pytest.mark.parametrize("name,build", MACHINES, ids=[n for n, _ in MACHINES])
def test_every_test_machine_parses_with_the_official_parser(name, build) -> None:
    report = judge(build(), load_compat())
    text = render_openmetrics(report)
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in parse_openmetrics(text)}
    assert {"envdoctor_check_status", "envdoctor_findings", "envdoctor_verdict", "envdoctor_build",
            "envdoctor_driver"} <= set(families)
    status = families["envdoctor_check_status"].samples
    assert len(status) == len({c.id for c in report.checks})
    for s in status:
        assert set(s.labels) == {"check", "area", "category", "severity"}
        assert s.value in (-2, -1, 0, 1, 2)
    # the count of findings by severity is the report's
    counts = {s.labels["severity"]: s.value for s in families["envdoctor_findings"].samples}
    assert counts == {sev: sum(1 for f in report.all_findings if f.severity == sev)
                      for sev in ("error", "warning", "info")}
    # labels and their order are the same on a second run over the same facts
    again = render_openmetrics(judge(build(), load_compat()))
    assert [line.split(" ")[0] for line in again.splitlines()] == [line.split(" ")[0] for line in text.splitlines()]


def test_a_failed_check_carries_its_findings_category_and_severity() -> None:
    report = judge(machines.h100_old_driver(), load_compat())
    failed = [c for c in report.checks if c.status == CheckStatus.FAILED]
    assert failed
    samples = _samples(render_openmetrics(report))
    for c in failed:
        worst = max((f for f in c.findings if f.severity in ("error", "warning")),
                    key=lambda f: f.severity == "error")
        key = ("envdoctor_check_status", tuple(sorted({"check": c.id, "area": c.area, "category": worst.category,
                                                        "severity": worst.severity}.items())))
        assert samples[key] == (2 if worst.severity == "error" else 1), key
    verdict = samples[("envdoctor_verdict", ())]
    assert verdict == 2


def test_skipped_and_crashed_checks_are_negative() -> None:
    report = judge(machines.healthy_a100(), load_compat())
    crashed = CheckResult(id="driver.present", area="driver", title="x", status=CheckStatus.ERRORED, reason="boom")
    checks = [crashed if c.id == "driver.present" else c for c in report.checks]
    report = dataclasses.replace(report, checks=checks)
    fams = {f.name: f for f in parse_openmetrics(render_openmetrics(report))}
    by_check = {s.labels["check"]: s for s in fams["envdoctor_check_status"].samples}
    assert by_check["driver.present"].value == -2 and by_check["driver.present"].labels["severity"] == "none"
    skipped = [c.id for c in report.checks if c.status == CheckStatus.SKIPPED]
    assert skipped and all(by_check[i].value == -1 for i in skipped)


def test_nothing_judged_is_minus_one_not_fine() -> None:
    report = judge(Facts(envdoctor_version="t", origin="snapshot"), load_compat())
    assert not report.judged
    assert _samples(render_openmetrics(report))[("envdoctor_verdict", ())] == -1


def test_bench_results_come_with_their_expectation() -> None:
    f = machines.healthy_a100()
    g = f.driver.gpus[0]
    r = BenchResult("matmul_bf16", ProbeStatus.OK, "t", device="cuda:0", value=250.0, unit="TFLOP/s",
                    params={"pci_bus_id": g.pci_bus_id, "gpu_name": g.name, "dtype": "bf16"})
    f = dataclasses.replace(f, bench=dataclasses.replace(f.bench, status=ProbeStatus.OK, results=[r]))
    samples = _samples(render_openmetrics(judge(f, load_compat())))
    key = tuple(sorted({"bench": "matmul_bf16", "device": "cuda:0", "unit": "TFLOP/s"}.items()))
    assert samples[("envdoctor_bench_value", key)] == 250.0
    expected = samples.get(("envdoctor_bench_expected", key))
    assert expected and expected > 100, samples
    assert samples[("envdoctor_bench_ratio", key)] == pytest.approx(250.0 / expected, abs=1e-3)


def test_no_label_carries_a_uuid_host_name_or_home() -> None:
    f = machines.healthy_a100()
    gpus = [dataclasses.replace(g, uuid="GPU-12345678-1234-1234-1234-123456789abc") for g in f.driver.gpus]
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=gpus),
                            host=dataclasses.replace(f.host, hostname="secret-node-17"))
    text = render_openmetrics(judge(f, load_compat()))
    assert "GPU-1234" not in text and "secret-node-17" not in text


def test_textfile_is_written_atomically_in_the_text_format(tmp_path: Path) -> None:
    report = judge(machines.h100_old_driver(), load_compat())
    path = write_textfile(report, str(tmp_path))
    assert path == str(tmp_path / "envdoctor.prom")
    assert os.listdir(tmp_path) == ["envdoctor.prom"]  # the temporary file was renamed, none left behind
    text = (tmp_path / "envdoctor.prom").read_text()
    assert "# EOF" not in text  # node_exporter reads the Prometheus text format, not OpenMetrics
    samples = _samples(text, parse_text)
    assert samples[("envdoctor_verdict", ())] == 2
    # a second run replaces the file whole
    write_textfile(judge(machines.healthy_a100(), load_compat()), str(tmp_path))
    assert os.listdir(tmp_path) == ["envdoctor.prom"]
    assert _samples((tmp_path / "envdoctor.prom").read_text(), parse_text)[("envdoctor_verdict", ())] < 2


def test_textfile_into_a_missing_directory_says_so(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        write_textfile(judge(machines.healthy_a100(), load_compat()), str(tmp_path / "nope"))
