"""Reports that read well when many files break (issue 30): one finding per cause listing the files
(findings.group_by_cause), a finding whose fix another's fix runs folded under it, and a consequence's fix
pointing at its cause."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from envdoctor.compat import load_compat
from envdoctor.judging.settle import settle
from envdoctor.model.facts import (
    Driver,
    ExtensionLibrary,
    ExtensionScan,
    LibraryCopy,
    Package,
    ProbeStatus,
    TorchBuildFiles,
)
from envdoctor.model.findings import CheckResult, CheckStatus, Evidence, Finding, Fix, Report, Severity
from envdoctor.report.console import render_console
from envdoctor.report.json_report import render_json
from envdoctor.report.markdown import render_markdown
from envdoctor.services.collect import judge
from tests import machines

FAMILIES = [  # (family, file, SONAME, wheel, wheel version, the older copy in /usr/local/cuda-12.1)
    ("cudnn", "libcudnn.so.9.1.0", "libcudnn.so.9", "nvidia-cudnn-cu12", "9.1.0.70", "9.0.0"),
    ("cublas", "libcublas.so.12.1.3.1", "libcublas.so.12", "nvidia-cublas-cu12", "12.4.5.8", "12.1.3.1"),
    ("nccl", "libnccl.so.2.18.1", "libnccl.so.2", "nvidia-nccl-cu12", "2.21.5", "2.18.1"),
    ("nvjitlink", "libnvJitLink.so.12.1.105", "libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.4.127", "12.1.105"),
    ("cudart", "libcudart.so.12.1.105", "libcudart.so.12", "nvidia-cuda-runtime-cu12", "12.4.127", "12.1.105"),
    ("cufft", "libcufft.so.11.0.2.54", "libcufft.so.11", "nvidia-cufft-cu12", "11.2.1.3", "11.0.2.54"),
    ("curand", "libcurand.so.10.3.2.106", "libcurand.so.10", "nvidia-curand-cu12", "10.3.5.147", "10.3.2.106"),
    ("cusparse", "libcusparse.so.12.1.0.106", "libcusparse.so.12", "nvidia-cusparse-cu12", "12.3.1.170",
     "12.1.0.106"),
    ("cusolver", "libcusolver.so.11.4.5.107", "libcusolver.so.11", "nvidia-cusolver-cu12", "11.6.1.9", "11.4.5.107"),
    ("nvrtc", "libnvrtc.so.12.1.105", "libnvrtc.so.12", "nvidia-cuda-nvrtc-cu12", "12.4.127", "12.1.105"),
]
CUDA_DIR = "/usr/local/cuda-12.1/lib64"
UNDEFINED = ("ImportError: /opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
             "cudnnGetLibConfig, version libcudnn.so.9")


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def ten_shadowed():
    """torch 2.5.1+cu124 whose import fails: LD_LIBRARY_PATH names a CUDA 12.1 toolkit's lib64 and torch's
    libraries (DT_RUNPATH, no DT_RPATH) find its ten older CUDA libraries before their own wheels'."""
    cands = [LibraryCopy(fam, f"{CUDA_DIR}/{file}", old, "system", "full file name of " + file, soname,
                         "LD_LIBRARY_PATH") for fam, file, soname, _w, _v, old in FAMILIES]
    wheels = [Package(w, v) for _f, _file, _s, w, v, _o in FAMILIES]
    env = machines.torch_env("2.5.1+cu124", "12.4", None, packages=wheels, available=None, import_error=UNDEFINED,
                             imported=False,
                             build_files=TorchBuildFiles(location="/opt/venv/lib/python3.10/site-packages/torch",
                                                         version="2.5.1+cu124", cuda="12.4", rpath=None,
                                                         runpath="$ORIGIN/../../nvidia/cudnn/lib",
                                                         needed=[s for _f, _file, s, _w, _v, _o in FAMILIES]))
    env = replace(env, library_candidates=cands, env={"LD_LIBRARY_PATH": CUDA_DIR})
    return machines.facts(machines.driver("550.54.15", "12.4", [machines.gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]),
                          [env])


def test_ten_shadowed_libraries_are_one_finding_listing_the_files(compat) -> None:
    report = judge(ten_shadowed(), compat)
    shadow = [f for f in report.findings if f.code.startswith("libraries.shadowing/")]
    assert len(shadow) == 1  # one cause: the LD_LIBRARY_PATH entry
    (f,) = shadow
    assert f.category == "SYSTEM_LIB_SHADOWING" and f.severity == Severity.ERROR and f.caused_by is None
    assert f.summary == (f"torch would load CUDA libraries from LD_LIBRARY_PATH entry {CUDA_DIR} instead of its "
                         "own wheels' copies (10)")
    assert f.items[:2] == ["libcudnn.so.9.1.0 (9.0.0)", "libcublas.so.12.1.3.1"]  # a version the name lacks
    assert len(f.items) == 10 and all(file in " ".join(f.items) for _, file, *_ in FAMILIES)
    (cmd,) = f.fix.commands  # one fix for all ten
    assert f.fix.summary == f"Remove {CUDA_DIR} from LD_LIBRARY_PATH so torch loads the CUDA libraries its wheels ship"
    assert "LD_LIBRARY_PATH" in cmd
    # the import error follows from it, and its fix points there
    (imp,) = [x for x in report.findings if x.category == "TORCH_IMPORT_FAILED"]
    assert imp.caused_by == f.code and imp.fix is None or imp.fix.summary.startswith(f"Follows from {f.code}: ")
    # the JSON still names every file, in the grouped finding's items and evidence
    data = json.loads(render_json(report))
    (jf,) = [x for x in data["findings"] if x["code"] == f.code]
    paths = {e["value"] for e in jf["evidence"]}
    assert {f"{CUDA_DIR}/{file}" for _, file, *_ in FAMILIES} <= paths and len(jf["items"]) == 10
    assert Report.from_json(report.to_json()).findings == report.findings  # grouping is idempotent


def test_the_console_of_ten_broken_files_stays_under_60_lines(compat) -> None:
    text = render_console(judge(ten_shadowed(), compat), color=False, width=80)
    lines = text.splitlines()
    assert len(lines) < 60, text
    assert max(len(line) for line in lines) <= 80
    listed = text[text.index("Affects (10): "):text.index("A library directory")]
    assert all(listed.count(file) == 1 for _, file, *_ in FAMILIES)  # every file listed, once
    assert text.count("libraries.shadowing/") == 1
    md = render_markdown(judge(ten_shadowed(), compat))
    assert all(f"- {file}" in md for _, file, *_ in FAMILIES)  # Markdown: one list item per file


def _check(cid: str, *findings: Finding) -> CheckResult:
    return CheckResult(cid, cid.split(".")[0], cid, CheckStatus.FAILED, list(findings))


def _finding(code: str, category: str, severity: str, commands, summary: str = "s") -> Finding:
    return Finding(code, category, severity, summary, evidence=[Evidence("pythons[0].packages.x", "1")],
                   fix=Fix(f"fix {code}", list(commands)))


def test_a_warning_whose_fix_another_fix_runs_is_its_consequence() -> None:
    a = _finding("packages.extension-build/does-not-load", "THIRD_PARTY_EXTENSION_MISMATCH", Severity.ERROR,
                 ["pip install --force-reinstall --no-deps --no-build-isolation --no-binary x x==1", "export A=1"])
    b = _finding("torch.build/x", "TORCH_BUILD_DEBUG", Severity.WARNING, ["export A=1"])
    other = _finding("host.y/z", "HOST_MEMORY_LOW", Severity.WARNING, ["export B=2"])
    report = Report(machines.healthy_a100(), settle([_check("packages.extension-build", a), _check("torch.build", b),
                                                     _check("host.y", other)]), "test")
    got = {f.code: f for f in report.findings}
    assert got[b.code].caused_by == a.code and got[other.code].caused_by is None
    assert got[b.code].fix.summary.startswith(f"Follows from {a.code}: fix that first (fix {a.code})")
    assert [p.code for p in report.problems] == [a.code, other.code]
    # equal fixes: the first in check order is the root; an error is never folded under a warning
    c = replace(a, code="x.y/c")
    r2 = Report(machines.healthy_a100(), settle([_check("x.y", replace(c, severity=Severity.WARNING)),
                                                 _check("packages.extension-build", a)]), "test")
    assert {f.code: f.caused_by for f in r2.findings} == {"x.y/c": None, a.code: None}


def test_one_check_findings_with_one_fix_are_one_finding_and_different_fixes_stay_apart() -> None:
    same = [_finding(f"libraries.shadowing/f{i}", "SYSTEM_LIB_SHADOWING", Severity.WARNING, ["unset LD_PRELOAD"],
                     summary=f"file {i}") for i in range(3)]
    apart = _finding("libraries.shadowing/g", "SYSTEM_LIB_SHADOWING", Severity.WARNING, ["export X=1"])
    report = Report(machines.healthy_a100(), settle([_check("libraries.shadowing", *same, apart)]), "test")
    grouped = [f for f in report.findings if f.items]
    (g,) = grouped
    assert g.items == ["file 0", "file 1", "file 2"] and g.summary == "file 0 (and 2 more with the same fix, listed)"
    assert len(report.findings) == 2


def test_ten_extension_libraries_built_for_another_torch_are_one_finding_under_60_lines(compat) -> None:
    old_abi = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
    site = "/opt/venv/lib/python3.11/site-packages"
    libs = [ExtensionLibrary("fused-ops", "1.2.0", f"{site}/fused_ops/_op{k}.so", fatbins=0, sass=[], ptx=[],
                             needed=["libc10.so", "libstdc++.so.6"], torch_symbols=1, unresolved_count=1,
                             unresolved_symbols=[old_abi], symbols_checked_against=["libc10.so", "libtorch_cpu.so"],
                             loaded=False, load_error=f"{site}/fused_ops/_op{k}.so: undefined symbol: {old_abi}")
            for k in range(10)]
    env = machines.torch_env("2.13.0+cpu", None, [], packages=[Package("fused-ops", "1.2.0", requires=["torch"])],
                             available=False, cxx11_abi=True, imported=True)
    cpu_box = Driver(status=ProbeStatus.ABSENT, reason="NVML library (libnvidia-ml.so.1) not found")
    f = machines.facts(cpu_box, [replace(env, extensions=ExtensionScan(libraries=libs))])
    report = judge(f, compat)
    (one,) = [x for x in report.findings if x.category == "THIRD_PARTY_EXTENSION_MISMATCH"]
    assert one.items == [f"_op{k}.so" for k in range(10)]
    text = render_console(report, color=False, width=80)
    assert len(text.splitlines()) < 60, text
    assert text.count("packages.extension-build/") == 1 and all(f"_op{k}.so" in text for k in range(10))
    data = json.loads(render_json(report))
    (jf,) = [x for x in data["findings"] if x["code"] == one.code]
    assert {e["source"] for e in jf["evidence"] if e["path"].endswith(".load_error")} == {lib.path for lib in libs}


def test_merge_findings_keeps_list_and_dict_evidence_once_each() -> None:
    """Evidence values are what was seen: lists (throttle reasons, a topology matrix) and dicts (a result's params)
    too. Merging findings of one cause de-duplicates them whatever the value (issue 39: it hashed them and a list
    ended the run with exit 3)."""
    from envdoctor.judging.settle import merge_findings

    matrix = Evidence("topology.gpu_matrix", [["X", "SYS"], ["SYS", "X"]])
    reasons = Evidence("driver.gpus[0].throttle_reasons", ["hw_thermal_slowdown"], expected="none")
    params = Evidence("bench.results[0].params", {"shape": [8192, 8192, 8192], "env": {"A": "1"}})
    same_params = Evidence("bench.results[0].params", {"env": {"A": "1"}, "shape": [8192, 8192, 8192]})
    other = Evidence("driver.gpus[1].throttle_reasons", ["hw_thermal_slowdown", "sw_thermal_slowdown"])
    fix = Fix("cool it", ["nvidia-smi -q -d PERFORMANCE"])
    a = Finding("bench.membw/below-expected", "PERF_BELOW_EXPECTED", Severity.ERROR, "GPU 0 slow",
                evidence=[matrix, reasons, params], fix=fix)
    b = Finding("bench.membw/below-expected", "PERF_BELOW_EXPECTED", Severity.ERROR, "GPU 1 slow",
                evidence=[matrix, same_params, other], fix=fix)
    merged = merge_findings([a, b])
    assert merged.evidence == [matrix, reasons, params, other]
    assert merged.items == ["GPU 0 slow", "GPU 1 slow"]
    # equal evidence hashes equal (a dict's order does not count), so a set keeps one of each
    assert len({matrix, reasons, params, same_params, other}) == 4
    # through the whole settling: two findings of one cause whose evidence holds lists are one finding
    settled = settle([_check("bench.membw", a, b)])
    (one,) = settled[0].findings
    assert one.evidence == merged.evidence
