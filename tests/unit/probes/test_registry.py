"""The probe registry: every probe names its section, runs with a context, and only the one guard catches its bugs."""

from __future__ import annotations

import ast
import dataclasses
import os

import pytest

from envdoctor.model.facts import Facts, ProbeStatus
from envdoctor.probes import registry
from envdoctor.probes.registry import ProbeContext, all_probes, guard
from envdoctor.probes.sysroot import SysRoot
from envdoctor.services import collect as app
from tests.fakes import FakeRunner
from tests.paths import REPO

PROBES_DIR = REPO / "envdoctor" / "probes"


def test_every_probe_fills_a_facts_section_and_says_what_it_is_when_it_fails():
    probes = all_probes()
    names = [p.name for p in probes]
    assert names == ["driver", "topology", "toolkits", "system_libraries", "host", "storage", "pythons",
                     "kernel_log"]
    sections = {f.name for f in dataclasses.fields(Facts)}
    for p in probes:
        assert p.section in sections, p
        failed = p.failed("why")
        assert getattr(failed, "status", None) == ProbeStatus.FAILED or (
            isinstance(failed, list) and failed[0].status == ProbeStatus.FAILED), p
    # a part of another section merges into it; the section itself has exactly one owner
    owners = [p.section for p in probes if p.merge is None]
    assert len(owners) == len(set(owners))
    assert {p.section for p in probes if p.merge is not None} <= set(owners)


def test_a_probe_registered_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        registry.probe("driver", failed=lambda r: r)(lambda ctx: None)


def test_guard_turns_a_bug_into_a_failed_section():
    def boom():
        raise KeyError("x")

    value, run = guard("host", boom, lambda reason: {"status": "failed", "reason": reason})
    assert value == {"status": "failed", "reason": "probe crashed: KeyError: 'x'"}
    assert (run.name, run.status, run.reason) == ("host", ProbeStatus.FAILED, "probe crashed: KeyError: 'x'")


def _catch_alls(tree: ast.AST):
    """(innermost function, line) of every `except Exception` handler."""
    out = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.ExceptHandler) and isinstance(child.type, ast.Name) \
                    and child.type.id == "Exception":
                out.append(func)
            visit(child, name)

    visit(tree, "<module>")
    return out


def test_no_probe_module_writes_its_own_catch_all():
    """One guard (registry.guard): the others (call and successor: one NVML field each) lose one NVML field or one GPU (the point of reading them one by
    one), or keep the PCIe samples read so far."""
    allowed = {"registry.py": {"guard"},
               "nvml.py": {"call", "successor", "_nvlinks", "_inforom_valid", "_fabric", "_vgpu_license", "_mig_devices", "work", "_probe",
                           "sample_pcie_links"}}
    for path in sorted(PROBES_DIR.glob("*.py")):
        found = set(_catch_alls(ast.parse(path.read_text())))
        assert found <= allowed.get(path.name, set()), (path.name, sorted(found))


def test_collect_runs_every_probe_under_the_guard(monkeypatch, tmp_path):
    probes = all_probes()
    broken = [dataclasses.replace(p, run=_raise) if p.name == "host" else p for p in probes]
    monkeypatch.setattr(app, "PROBE_DEADLINE_MARGIN_S", 20.0)
    monkeypatch.setattr(registry, "all_probes", lambda: broken)
    facts = app.collect(app.CollectOptions(root=str(tmp_path), env={}, inspect_torch=False, pythons=[],
                                           data_paths=[str(tmp_path)]), runner=FakeRunner(strict=False))
    assert facts.host.status == ProbeStatus.FAILED and facts.host.reason == "probe crashed: RuntimeError: bug"
    runs = {r.name: r for r in facts.probes}
    assert runs["host"].status == ProbeStatus.FAILED
    # the other sections were probed all the same (under a test root: no kernel log of this machine)
    assert facts.driver.status != ProbeStatus.FAILED and "kernel_log" not in runs
    assert set(runs) == {"driver", "topology", "toolkits", "system_libraries", "host", "storage", "pythons"}


def _raise(ctx: ProbeContext):
    raise RuntimeError("bug")


def test_sysroot_reads_machine_paths_under_its_root(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text("processor : 0\n")
    (tmp_path / "sys" / "devices" / "d0").mkdir(parents=True)
    (tmp_path / "sys" / "devices" / "d0" / "vendor").write_text("0x10de\n")
    (tmp_path / "sys" / "bus").mkdir(parents=True)
    # an absolute target names the machine's /sys, which is the tree under the root
    os.symlink("/sys/devices/d0", tmp_path / "sys" / "bus" / "abs")
    os.symlink("../devices/d0", tmp_path / "sys" / "bus" / "rel")
    fs = SysRoot(str(tmp_path))
    assert not fs.live and SysRoot("/").live and SysRoot.of(fs) is fs
    assert fs.read_text("/proc/cpuinfo") == "processor : 0\n"
    assert fs.read_attr("/sys/devices/d0/vendor") == "0x10de"
    assert fs.read_int("/proc/cpuinfo") is None and fs.read_text("/proc/nothing") is None
    assert fs.realpath("/sys/bus/abs") == "/sys/devices/d0" == fs.realpath("/sys/bus/rel")
    assert fs.read_attr(fs.realpath("/sys/bus/abs") + "/vendor") == "0x10de"
    assert fs.glob("/sys/devices/*") == ["/sys/devices/d0"]
    assert fs.host("/proc/cpuinfo") == str(tmp_path / "proc" / "cpuinfo")
    assert fs.unroot(str(tmp_path / "proc")) == "/proc" and fs.unroot(str(tmp_path)) == "/"
    with pytest.raises(OSError):
        fs.listdir("/no/such/dir")


def test_sysroot_symlink_loop_ends(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    assert SysRoot(str(tmp_path)).realpath("/a") in ("/a", "/b")
