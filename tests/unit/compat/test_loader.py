"""The compat loader rejects a malformed row in every table at load, naming the file, the table and the row.

Table-driven: each case copies the bundled compat_data to a temporary directory, breaks one field of one row,
and loads it. Checks never see such data: it fails in load_compat, with a one-line CompatDataError.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from envdoctor.compat import CompatDataError, bundled_dir, load_compat
from tests.paths import FIXTURES

_DELETE = object()


def _set(table: str, i: int, field: str, value: Any) -> Callable[[Dict[str, Any]], None]:
    def mutate(doc: Dict[str, Any]) -> None:
        if value is _DELETE:
            del doc[table][i][field]
        else:
            doc[table][i][field] = value
    return mutate


# (file, table, row, field, bad value, what the message says)
CASES: List[tuple] = [
    ("cuda_driver.json", "rows", 3, "linux_min_driver", "four-fifty", "linux_min_driver"),
    ("cuda_driver.json", "rows", 0, "cuda", _DELETE, "cuda"),
    ("cuda_driver.json", "rows", 2, "release", 1, "release"),
    ("cuda_driver.json", "minor_version_compatibility", 0, "cuda_major", "eleven", "cuda_major"),
    ("cuda_driver.json", "minor_version_compatibility_limits", 1, "rule", 5, "rule"),
    ("cuda_driver.json", "forward_compatibility", 0, "gpus", "all of them", "gpus"),
    ("cuda_driver.json", "driver_branches", 4, "branch", "R550", "branch"),
    ("cuda_driver.json", "driver_branches", 0, "max_cuda", _DELETE, "max_cuda"),
    ("torch.json", "rows", 5, "cuda_variants", "cu118", "cuda_variants"),
    ("torch.json", "rows", 0, "arch_lists", ["sm_80"], "arch_lists"),
    ("torch.json", "rows", 1, "python_max", "three.twelve", "python_max"),
    ("torch.json", "companions", 2, "torchvision", "zero.one", "torchvision"),
    ("torch.json", "companions", 0, "torch", _DELETE, "torch"),
    ("arch_support.json", "rows", 7, "cc", "ten", "cc"),
    ("arch_support.json", "rows", 0, "still_supported", "no", "still_supported"),
    ("arch_support.json", "ptxas_targets", 0, "targets", "sm_80", "targets"),
    ("gpus.json", "rows", 10, "memory_gib", "80", "memory_gib"),
    ("gpus.json", "rows", 0, "name", _DELETE, "name"),
    ("gpus.json", "rows", 3, "nvlink_links", 1.5, "nvlink_links"),
    ("gpus.json", "rows", 4, "compute_capability", "Hopper", "compute_capability"),
    ("gpus.json", "rows", 5, "aliases", "H100", "aliases"),
    ("host_compilers.json", "rows", 0, "max_gcc_major", "13", "max_gcc_major"),
    ("health.json", "rows", 0, "cpu_cores_per_gpu_min", "four", "cpu_cores_per_gpu_min"),
    ("health.json", "rows", 1, "gpu_class", _DELETE, "gpu_class"),
    ("health.json", "thresholds", 0, "value", None, "value"),
    ("health.json", "driver_branches", 2, "designation", "LTS", "designation"),
    ("health.json", "driver_branches", 3, "end_of_life", "June 2026", "end_of_life"),
    ("health.json", "driver_defects", 0, "fixed_in", "soon", "fixed_in"),
    ("driver_gpu_support.json", "rows", 2, "first_branch", "470", "first_branch"),
    ("driver_gpu_support.json", "rows", 0, "cc_min", "x", "cc_min"),
    ("bench.json", "rows", 0, "kernel", "matmul_fp4", "kernel"),
    ("bench.json", "rows", 1, "confidence", "sure", "confidence"),
    ("bench.json", "bands", 0, "warning_below", "high", "warning_below"),
    ("bench.json", "links", 0, "expected", -1, "expected"),
    ("bench.json", "disk_kinds", 0, "kind", "tape", "kind"),
    ("bench.json", "fast_local_storage_mbs", 0, "seq_read_mbs", "fast", "seq_read_mbs"),
    ("error_signatures.json", "rows", 0, "pattern", "(unclosed", "pattern"),
    ("error_signatures.json", "rows", 3, "category", "NOT_A_CATEGORY", "category"),
    ("error_signatures.json", "rows", 5, "fix", _DELETE, "fix"),
    ("xid.json", "rows", 0, "code", "48", "code"),
    ("xid.json", "rows", 47, "severity", "fatal", "severity"),  # Xid 48, one envdoctor judges
    ("xid.json", "rows", 2, "meaning", _DELETE, "meaning"),
    ("xid.json", "rows", 78, "resolution", "REBOOT_IT", "resolution"),  # Xid 79: NVIDIA's buckets only
    ("xid.json", "rows", 8, "applies_to", ["V100"], "applies_to"),
    # status_codes.json (issue 42): rows 1-3 are cudaErrorInvalidValue, cudaErrorMemoryAllocation (program) and
    # cudaErrorInitializationError (ambiguous: it must say what to ask for)
    ("status_codes.json", "rows", 1, "category", "NOT_A_CATEGORY", "category"),
    ("status_codes.json", "rows", 2, "number", "two", "number"),
    ("status_codes.json", "rows", 2, "kind", "fatal", "kind"),
    ("status_codes.json", "rows", 3, "ask", _DELETE, "ask"),
    ("status_codes.json", "rows", 1, "names", [], "names"),
    # the generic rules every file follows (compat_data/README.md): a row without its source, a duplicate key
    ("gpus.json", "rows", 6, "source", _DELETE, "source"),
    ("xid.json", "rows", 4, "source", "", "source"),
]


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "compat_data"
    shutil.copytree(bundled_dir(), target)
    return target


@pytest.mark.parametrize("file, table, row, field, value, says", CASES,
                         ids=[f"{c[0]}:{c[1]}[{c[2]}].{c[3]}" for c in CASES])
def test_a_malformed_row_fails_at_load_naming_file_and_row(tmp_path, file, table, row, field, value, says):
    data = _copy(tmp_path)
    path = data / file
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert len(doc[table]) > row, (file, table)
    _set(table, row, field, value)(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CompatDataError) as info:
        load_compat(data)
    message = str(info.value)
    assert "\n" not in message
    assert re.match(rf"{re.escape(file)}: {re.escape(table)}\[{row}\]", message), message
    assert says in message, message


def test_a_threshold_the_checks_read_must_be_there(tmp_path):
    data = _copy(tmp_path)
    doc = json.loads((data / "health.json").read_text(encoding="utf-8"))
    doc["thresholds"] = [t for t in doc["thresholds"] if t["name"] != "shm_min_bytes"]
    (data / "health.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CompatDataError, match=r"^health\.json: thresholds: no row named 'shm_min_bytes'"):
        load_compat(data)


def test_the_bundled_matrix_loads_typed(tmp_path):
    compat = load_compat(_copy(tmp_path))  # a copy: the same data loads from any directory
    assert compat.health is not None and compat.health.rows
    assert compat.driver_gpu_support is not None and compat.driver_gpu_support.rows
    assert compat.bench is not None and compat.bench.gpu_rows
    assert compat.xid is not None and 48 in compat.xid.hardware()
    assert compat.signatures and all(s.regex is not None for s in compat.signatures)
    assert all(isinstance(r.linux_min_driver, (str, type(None))) for r in compat.cuda_releases())
    assert compat.torch_releases() and compat.companion_rows() and compat.gpus() and compat.arch_supports()


def test_an_absent_optional_table_is_a_skip_reason_not_a_crash(tmp_path):
    data = _copy(tmp_path)
    for name in ("health.json", "xid.json", "error_signatures.json", "bench.json", "driver_gpu_support.json"):
        (data / name).unlink()
    compat = load_compat(data)
    assert compat.health is None and compat.signatures is None
    with pytest.raises(LookupError, match=r"compat_data/health\.json unavailable"):
        compat.optional("health")
    from envdoctor.checks import all_checks, run_checks
    from envdoctor.model.facts import Facts, XidEvent
    from envdoctor.model.findings import CheckStatus

    facts = Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())
    events = [XidEvent(code=79, pci_bus_id="0000:18:00", message="GPU has fallen off the bus.")]
    facts = dataclasses.replace(facts, driver=dataclasses.replace(facts.driver, xid_events=events,
                                                                  kernel_log_readable=True))
    results = {r.id: r for r in run_checks(facts, compat, all_checks())}
    errored = [(r.id, r.reason) for r in results.values() if r.status == CheckStatus.ERRORED]
    assert not errored, errored
    from envdoctor.services.diagnose import diagnose_report

    pasted = {r.id: r for r in diagnose_report(["RuntimeError: CUDA error: no kernel image is available for "
                                                "execution on the device"], compat).checks}
    assert pasted["messages.signatures"].status == CheckStatus.SKIPPED
    assert "compat_data/error_signatures.json" in pasted["messages.signatures"].reason
    for cid, stem in (("host.shm", "health"), ("gpu.xid", "xid"), ("driver.lifecycle", "health")):
        assert results[cid].status == CheckStatus.SKIPPED and f"compat_data/{stem}.json" in results[cid].reason, \
            (cid, results[cid].status, results[cid].reason)


def test_the_bundled_signatures_parse_at_first_use_as_an_eager_load_parses_them(tmp_path):
    """The bundled matrix leaves its message signatures for their first use (load time); parsed then, they are
    the ones a full load of the same files gives, and an update with a bad pattern still fails at load."""
    from envdoctor.compat.loader import clear_cache

    clear_cache()
    bundled = load_compat(bundled_dir())
    assert bundled._lazy_signatures  # not parsed yet
    copy = tmp_path / "copy"
    shutil.copytree(bundled_dir(), copy)
    eager = load_compat(copy)
    assert not eager._lazy_signatures
    lazy_ids = [(s.id, s.pattern, s.category) for s in bundled.signatures]
    assert lazy_ids == [(s.id, s.pattern, s.category) for s in eager.signatures] and len(lazy_ids) > 50
    assert not bundled._lazy_signatures and bundled.optional("error_signatures") is bundled.signatures
    doc = json.loads((copy / "error_signatures.json").read_text())
    doc["rows"][0]["pattern"] = "(unclosed"
    bad = tmp_path / "bad"
    shutil.copytree(copy, bad)
    (bad / "error_signatures.json").write_text(json.dumps(doc))
    with pytest.raises(CompatDataError, match="bad pattern"):
        load_compat(bad)
