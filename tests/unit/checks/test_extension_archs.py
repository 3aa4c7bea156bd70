"""The GPU architectures of torch's CUDA extensions (issue 11, target-gpus): read from their .nv_fatbin, judged
against the declared target GPUs (requirements.extensions-gpus) and a live machine's GPUs (packages.extensions)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from envdoctor._payload import tasks, torch_files
from envdoctor.compat import load_compat
from envdoctor.model.facts import ExtensionLibrary, ExtensionScan, Facts, Targets, from_dict
from envdoctor.model.findings import CheckStatus
from envdoctor.model.targets import resolve_gpus
from envdoctor.probes import python_env as pe
from envdoctor.services.assertions import declared_driver, judge_declared
from envdoctor.services.collect import judge
from tests import machines
from tests.unit.probes.test_torch_static import _fatbin, build_so, needs_gcc

PAYLOAD = Path(tasks.__file__).parent  # the payload folder, run as a script
NVCC = shutil.which("nvcc")


@pytest.fixture(scope="module")
def compat():
    return load_compat()


# --------------------------------------------------------------------------- reading one library


def _c_array(data: bytes) -> str:
    return ", ".join(str(b) for b in data)


def fatbin_so(tmp: Path, name: str, entries_per_file: List[List[Tuple[int, int]]]) -> Path:
    """A real ELF shared object whose .nv_fatbin section holds crafted fat binaries ((kind, arch) entries)."""
    section = b"".join(_fatbin(e) + b"\0" * 8 for e in entries_per_file)
    src = ('__attribute__((section(".nv_fatbin"), used, aligned(8))) '
           f"const unsigned char fatbin[{len(section)}] = {{{_c_array(section)}}};\n"
           "int f(void) { return fatbin[0]; }\n")
    return build_so(tmp, name, name, src)


@needs_gcc
def test_library_archs_keep_sass_and_ptx_apart(tmp_path: Path) -> None:
    # three .cu files: sm_80 + sm_90 SASS and compute_90 PTX; one adds sm_90a for a Hopper-only kernel
    so = fatbin_so(tmp_path, "libext.so", [[(2, 80), (2, 90), (1, 90)], [(2, 80), (2, 90), (1, 90)],
                                           [(2, 80), (2, 90), (1, 90), (2, 86)]])
    got = torch_files.extension_library_archs(str(so))
    assert got == {"fatbins": 3, "sass": ["sm_80", "sm_86", "sm_90"], "ptx": ["compute_90"], "partial": ["sm_86"]}
    plain = build_so(tmp_path, "libplain.so", "libplain.so", "int g(void) { return 2; }")
    assert torch_files.extension_library_archs(str(plain)) == {"fatbins": 0, "sass": [], "ptx": []}
    (tmp_path / "fake.so").write_bytes(b"not an ELF")
    assert torch_files.extension_library_archs(str(tmp_path / "fake.so")) == {"skipped": "not a readable ELF file"}


def test_requires_torch_ignores_extras_and_lookalikes() -> None:
    assert torch_files._requires_torch(["torch>=2.0", "numpy"])
    assert torch_files._requires_torch(["torch (>=1.13) ; platform_system == 'Linux'"])
    assert torch_files._requires_torch(["torch"])
    assert not torch_files._requires_torch(["torch>=2 ; extra == 'gpu'", "torchmetrics>=1"])
    assert not torch_files._requires_torch(None)
    files = ["pkg/_C.so", "pkg.libs/libgomp-a34b3233.so.1", "pkg/lib/libcudart.so.12", "pkg/__init__.py",
             "pkg/ops/x.cpython-311-x86_64-linux-gnu.so"]
    assert torch_files._extension_files(files) == ["pkg/_C.so", "pkg/ops/x.cpython-311-x86_64-linux-gnu.so"]


# --------------------------------------------------------------------------- the distributions, in the payload


def fake_dist(site: Path, name: str, libs: Dict[str, Path], requires: Optional[List[str]] = ("torch>=2.0",),
              version: str = "1.0") -> None:
    """A distribution as pip leaves it: the package's files plus a dist-info with METADATA and RECORD."""
    mod = name.replace("-", "_")
    info = site / f"{mod}-{version}.dist-info"
    (site / mod).mkdir(parents=True, exist_ok=True)
    info.mkdir(parents=True)
    record = []
    for rel, src in libs.items():
        dest = site / mod / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)
        record.append(f"{mod}/{rel},,")
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires or []]
    (info / "METADATA").write_text("\n".join(meta) + "\n\n")
    (info / "RECORD").write_text("\n".join(record + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]) + "\n")


def scan_in_subprocess(site: Path, **kw) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(site)!r}); sys.path.insert(0, {str(PAYLOAD.parent)!r}); "
            f"import _payload.torch_files as t; print(json.dumps(t.extension_archs(**{kw!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@needs_gcc
def test_payload_reads_torch_extensions_within_budget(tmp_path: Path) -> None:
    lib = fatbin_so(tmp_path, "libk.so", [[(2, 80), (1, 80)]])
    site = tmp_path / "site"
    fake_dist(site, "ext-a", {"_C.so": lib, "_D.so": lib})
    fake_dist(site, "xformers", {"_C.so": lib}, requires=None)  # a known extension without the torch requirement
    fake_dist(site, "unrelated", {"_u.so": lib}, requires=["numpy"])
    fake_dist(site, "optional-torch", {"_o.so": lib}, requires=["torch ; extra == 'torch'"])
    got = scan_in_subprocess(site)
    libs = {(r["distribution"], Path(r["path"]).name): r for r in got["libraries"]}
    assert set(libs) == {("ext-a", "_C.so"), ("ext-a", "_D.so"), ("xformers", "_C.so")}
    assert libs[("ext-a", "_C.so")]["sass"] == ["sm_80"] and libs[("ext-a", "_C.so")]["ptx"] == ["compute_80"]
    assert libs[("ext-a", "_C.so")]["version"] == "1.0" and got["truncated"] is None and got["read_libraries"] == 3
    capped = scan_in_subprocess(site, max_libraries=1)
    assert capped["read_libraries"] == 1 and "library budget" in capped["truncated"]
    skipped = [r for r in capped["libraries"] if r.get("skipped")]
    assert len(skipped) == 2 and all(r["skipped"].startswith("not read: library budget") for r in skipped)
    sized = scan_in_subprocess(site, max_mb=0)
    assert sized["read_libraries"] == 0 and "size budget" in sized["truncated"]


@needs_gcc
def test_inspect_payload_reports_extensions_into_the_facts(tmp_path: Path) -> None:
    lib = fatbin_so(tmp_path, "libk.so", [[(2, 90)]])
    site = tmp_path / "site"
    fake_dist(site, "ext-a", {"_C.so": lib})
    out = subprocess.run([sys.executable, str(PAYLOAD), "--task", "inspect", "--no-torch"], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(site)))
    envelope = pe.parse_envelope(out.stdout)
    env = pe.env_from_result(envelope["result"], [])
    assert env.extensions is not None and env.extensions.read_libraries == 1
    (only,) = [x for x in env.extensions.libraries if x.distribution == "ext-a"]
    assert only.sass == ["sm_90"] and only.ptx == [] and only.fatbins == 1


def test_old_snapshots_load_and_new_fields_round_trip() -> None:
    old = machines.healthy_a100().to_dict()
    assert "extensions" in old["pythons"][0]  # written as null
    del old["pythons"][0]["extensions"]
    assert from_dict(Facts, old).pythons[0].extensions is None
    f = with_extensions(machines.healthy_a100(), [lib("flash-attn", ["sm_80"], ["compute_80"])])
    back = Facts.from_json(f.to_json())
    assert back.pythons[0].extensions == f.pythons[0].extensions


# --------------------------------------------------------------------------- judging


def lib(dist: str, sass: List[str], ptx: List[str] = (), name: str = "_C.so", **kw) -> ExtensionLibrary:
    base = dict(distribution=dist, version="2.7.0", path=f"/venv/lib/{dist}/{name}", sass=list(sass), ptx=list(ptx),
                fatbins=4)
    base.update(kw)
    return ExtensionLibrary(**base)


def with_extensions(f: Facts, libs: List[ExtensionLibrary], truncated: Optional[str] = None) -> Facts:
    py = replace(f.pythons[0], extensions=ExtensionScan(libraries=libs, truncated=truncated, read_libraries=len(libs)))
    return replace(f, pythons=[py] + list(f.pythons[1:]))


def assert_facts(compat, libs: List[ExtensionLibrary], gpus: List[str]) -> Facts:
    targets = resolve_gpus(compat, gpus)
    base = machines.torch_env("2.5.1+cu124", "12.4", ["sm_80", "sm_86", "sm_90"])
    f = Facts(driver=declared_driver(None, targets), pythons=[base],
              targets=Targets(target_gpus=[g.given for g in targets], source="test"))
    return with_extensions(f, libs)


def of(report, check_id: str):
    return [x for x in report.findings if x.code.startswith(check_id + "/")]


def status(report, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


def test_target_gpus_error_warning_and_pass(compat) -> None:
    libs = [lib("flash-attn", ["sm_80"]),  # A100 only: nothing for an H100
            lib("xformers", ["sm_80"], ["compute_80"]),  # PTX that JITs to sm_90
            lib("apex", ["sm_80", "sm_90"]),  # SASS for both
            lib("torchvision", [], [], fatbins=0)]  # no CUDA kernels at all: nothing to judge
    r = judge_declared(assert_facts(compat, libs, ["H100", "A100"]), compat)
    got = sorted((x.code, x.severity, x.summary.split(" ")[0]) for x in of(r, "requirements.extensions-gpus"))
    assert got == [("requirements.extensions-gpus/missing", "error", "flash-attn"),
                   ("requirements.extensions-gpus/ptx-only", "warning", "xformers")]
    err = next(x for x in r.findings if x.code == "requirements.extensions-gpus/missing")
    assert "target GPU H100" in err.summary and "sm_90" in err.summary and err.category == "REQUIREMENT_UNMET"
    assert err.evidence[0].path == "targets.target_gpus[0]" and err.evidence[0].value == "H100"
    assert err.evidence[1].path == "pythons[0].extensions.libraries[0]" and err.evidence[1].source.endswith("_C.so")
    assert any("TORCH_CUDA_ARCH_LIST=9.0" in c for c in err.fix.commands)
    warn = next(x for x in r.findings if x.code == "requirements.extensions-gpus/ptx-only")
    assert "ComputeCache" in warn.detail and "CUDA_CACHE_MAXSIZE" in warn.detail
    assert r.has_at_least("error")
    # sm_XX targets are judged the same way; a newer minor of the same major runs older SASS (8.6 runs sm_80)
    ok = judge_declared(assert_facts(compat, libs[1:], ["sm_86"]), compat)
    assert of(ok, "requirements.extensions-gpus") == []
    assert status(ok, "requirements.extensions-gpus").status == CheckStatus.PASSED


def test_libraries_for_another_generation_are_an_info_and_unread_ones_soften(compat) -> None:
    # vllm ships Hopper-only kernels in their own library: an A100 is still served by _C.so
    libs = [lib("vllm", ["sm_80", "sm_90"]), lib("vllm", ["sm_90a"], name="_flashmla_C.so")]
    r = judge_declared(assert_facts(compat, libs, ["A100"]), compat)
    (note,) = of(r, "requirements.extensions-gpus")
    assert note.code.endswith("/partial") and note.severity == "info" and "_flashmla_C.so" in note.summary
    # what was read lacks the GPU, but a library was left unread: not certain, so a warning
    libs = [lib("big", ["sm_80"]), ExtensionLibrary(
        "big", "1.0", "/venv/lib/big/_D.so", skipped="not read: library budget spent (64 libraries read)")]
    r = judge_declared(assert_facts(compat, libs, ["H100"]), compat)
    (warn,) = of(r, "requirements.extensions-gpus")
    assert warn.severity == "warning" and "not read" in warn.summary
    # nothing read at all: skipped with the reason
    only_unread = [libs[1]]
    r = judge_declared(assert_facts(compat, only_unread, ["H100"]), compat)
    st = status(r, "requirements.extensions-gpus")
    assert st.status == CheckStatus.SKIPPED and "library budget" in st.reason


def test_skips_without_targets_or_without_extension_facts(compat) -> None:
    r = judge(with_extensions(machines.healthy_a100(), [lib("flash-attn", ["sm_90"])]), compat)
    assert status(r, "requirements.extensions-gpus").status == CheckStatus.SKIPPED
    old = replace(assert_facts(compat, [], ["H100"]), pythons=[machines.torch_env("2.5.1+cu124", "12.4", ["sm_90"])])
    st = status(judge_declared(old, compat), "requirements.extensions-gpus")
    assert st.status == CheckStatus.SKIPPED and "not read" in st.reason


def test_live_machine_judges_extensions_against_its_gpus(compat) -> None:
    # healthy_a100: a live A100 (driver probe). flash-attn built for sm_90 only has nothing for it
    f = with_extensions(machines.healthy_a100(), [lib("flash-attn", ["sm_90"]), lib("xformers", ["sm_80"])])
    r = judge(f, compat)
    (err,) = of(r, "packages.extensions")
    assert err.code == "packages.extensions/missing" and err.severity == "error"
    assert err.category == "THIRD_PARTY_EXTENSION_MISMATCH" and "GPU 0 (NVIDIA A100-SXM4-80GB)" in err.summary
    assert err.evidence[0].path == "driver.gpus[0].compute_capability"
    # served: the check passes instead of skipping for want of a known extension
    ok = judge(with_extensions(machines.healthy_a100(), [lib("xformers", ["sm_80"])]), compat)
    assert of(ok, "packages.extensions") == [] and status(ok, "packages.extensions").status == CheckStatus.PASSED
    # without extension facts the check behaves as before (skipped: nothing to judge)
    st = status(judge(machines.healthy_a100(), compat), "packages.extensions")
    assert st.status == CheckStatus.SKIPPED and "no compiled extension" in st.reason
    # extensions with kernels but no GPU to judge them against: the skip says so, not "none installed"
    gpuless = replace(f, driver=replace(f.driver, gpus=[]), pythons=[replace(f.pythons[0], torch=replace(
        f.pythons[0].torch, devices=[]))])
    st = status(judge(gpuless, compat), "packages.extensions")
    assert st.status == CheckStatus.SKIPPED and "no GPU is seen" in st.reason
    # under assert the declared GPUs are judged by requirements.extensions-gpus, not twice here
    st = status(judge_declared(assert_facts(compat, [lib("flash-attn", ["sm_80"])], ["H100"]), compat),
                "packages.extensions")
    assert st.status == CheckStatus.SKIPPED and "requirements.extensions-gpus" in st.reason


def test_explain_names_the_new_check() -> None:
    out = subprocess.run([sys.executable, "-m", "envdoctor", "explain", "requirements.extensions-gpus/ptx-only"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "requirements.extensions-gpus" in out.stdout and "REQUIREMENT_UNMET" in out.stdout


# --------------------------------------------------------------------------- a real nvcc-built extension


def nvcc_lib(tmp: Path, name: str, gencode: str) -> Path:
    cu = tmp / "k.cu"
    cu.write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
                  "extern \"C\" void launch(float *x) { k<<<1, 32>>>(x); }\n")
    so = tmp / name
    proc = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", gencode, "-o", str(so), str(cu)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"nvcc could not build the test library: {proc.stderr.strip()[-300:]}")
    return so


def _assert(python: str, site: Path, cwd: Path) -> Tuple[int, dict]:
    out = subprocess.run([sys.executable, "-m", "envdoctor", "assert", "--python", python, "--target-gpus", "H100",
                          "--format", "json", "--no-config"], capture_output=True, text=True, timeout=300, cwd=cwd,
                         env=dict(os.environ, PYTHONPATH=str(site)))
    return out.returncode, json.loads(out.stdout)


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc is needed to build a real CUDA extension")
def test_assert_with_real_nvcc_extensions(cuda_venv, tmp_path: Path) -> None:
    sm80 = nvcc_lib(tmp_path, "libsm80.so", "arch=compute_80,code=sm_80")
    sm90 = nvcc_lib(tmp_path, "libsm90.so", "arch=compute_90,code=sm_90")
    ptx80 = nvcc_lib(tmp_path, "libptx80.so", "arch=compute_80,code=compute_80")
    # lacks sm_90 and PTX: an error naming it
    bad = tmp_path / "bad"
    fake_dist(bad, "ext-sm80", {"libsm80.so": sm80})
    rc, doc = _assert(cuda_venv.python, bad, tmp_path)
    ext = [f for f in doc["findings"] if f["code"].startswith("requirements.extensions-gpus/")]
    assert rc == 1 and [(f["code"], f["severity"]) for f in ext] == [("requirements.extensions-gpus/missing", "error")]
    assert "ext-sm80" in ext[0]["summary"] and "libsm80.so" in ext[0]["summary"]
    scan = doc["facts"]["pythons"][0]["extensions"]
    (rec,) = [r for r in scan["libraries"] if r["distribution"] == "ext-sm80"]
    assert (rec["sass"], rec["ptx"]) == (["sm_80"], [])
    # SASS for sm_90: the check passes
    good = tmp_path / "good"
    fake_dist(good, "ext-sm90", {"libsm90.so": sm90})
    rc, doc = _assert(cuda_venv.python, good, tmp_path)
    st = next(c for c in doc["checks"] if c["id"] == "requirements.extensions-gpus")
    assert st["status"] == "passed" and not [f for f in doc["findings"] if f["severity"] == "error"], doc["findings"]
    # compute_80 PTX only: runs through JIT, a warning
    jit = tmp_path / "jit"
    fake_dist(jit, "ext-ptx80", {"libptx80.so": ptx80})
    rc, doc = _assert(cuda_venv.python, jit, tmp_path)
    ext = [(f["code"], f["severity"]) for f in doc["findings"] if f["code"].startswith("requirements.extensions-gpus")]
    assert ext == [("requirements.extensions-gpus/ptx-only", "warning")]
