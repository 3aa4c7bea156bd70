"""What the health checks' tests share (test_health.py and the check modules' own files): the real captures read
into facts, a healthy 8x H100 SXM snapshot, and running one check on them."""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Set

from envdoctor.checks import (
    driver_support,
    gpu_clocks,
    gpu_errors,
    gpu_state,
    host,
    interconnect,
    interconnect_nccl,
    pcie,
    run_checks,
    storage,
)
from envdoctor.model.facts import Driver, Facts
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.parsers.nvidia_smi_q import parse_nvidia_smi_q
from envdoctor.parsers.nvidia_smi_table import parse_nvidia_smi_table
from tests.paths import FIXTURES

FIX = FIXTURES
MODULES = (gpu_clocks, gpu_errors, gpu_state, pcie, interconnect, interconnect_nccl, storage, host, driver_support)
HEALTH_CHECKS = [c for m in MODULES for c in m.CHECKS]
MIB, GIB = 2**20, 2**30


def text(rel: str) -> str:
    return (FIX / rel).read_text(encoding="utf-8")


def healthy() -> Facts:
    return Facts.from_json(text("snapshots/h100-sxm-x8-healthy.json"))


def run(facts: Facts, compat, check_id: Optional[str] = None):
    checks = [c for c in HEALTH_CHECKS if check_id is None or c.id == check_id]
    return run_checks(facts, compat, checks)


def one(facts: Facts, compat, check_id: str):
    (res,) = run(facts, compat, check_id)
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def bad_categories(results) -> Set[str]:
    return {f.category for r in results for f in r.findings if f.severity in (Severity.WARNING, Severity.ERROR)}


def codes(res, severity: Optional[str] = None) -> List[str]:
    return [f.code for f in res.findings if severity is None or f.severity == severity]


def finding(res, code: str):
    hits = [f for f in res.findings if f.code == code]
    assert len(hits) == 1, [f.code for f in res.findings]
    return hits[0]


def with_gpus(facts: Facts, gpus) -> Facts:
    return dataclasses.replace(facts, driver=dataclasses.replace(facts.driver, gpus=gpus))


def replace_gpu(facts: Facts, i: int, **kw) -> Facts:
    gpus = list(facts.driver.gpus)
    gpus[i] = dataclasses.replace(gpus[i], **kw)
    return with_gpus(facts, gpus)


def from_driver(driver: Driver, **kw) -> Facts:
    return Facts(driver=dataclasses.replace(driver, status="ok"), collected_at="2026-11-30T12:00:00Z", **kw)


def q(rel: str) -> Facts:
    return from_driver(parse_nvidia_smi_q(text(rel)))


def table_facts(rel: str) -> Facts:
    t = parse_nvidia_smi_table(text(rel))
    return from_driver(Driver(status="ok", version=t.driver_version, gpus=t.gpus))


def with_host(f: Facts, **kw) -> Facts:
    return dataclasses.replace(f, host=dataclasses.replace(f.host, **kw))
