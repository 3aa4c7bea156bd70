"""The GPU architectures of torch's CUDA extensions (issue 11, target-gpus): read from their .nv_fatbin, and judged
end to end with nvcc-built ones; the checks' own tests are in test_requirements.py (requirements.extensions-gpus) and
test_packages.py (packages.extensions)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from envdoctor._payload import tasks, torch_files
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, from_dict
from envdoctor.probes import python_env as pe
from tests import machines
from tests.unit.checks.extension_facts import lib, with_extensions
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
