"""torch's build read from its files, interpreters that cannot be inspected, and library shadowing (issue 8)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List

import pytest

from envdoctor._payload import elf, libraries
from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    Driver,
    Facts,
    Gpu,
    LibraryCopy,
    Package,
    ProbeStatus,
    PythonEnv,
    TorchBuildFiles,
    TorchInfo,
)
from envdoctor.probes import python_env as pe
from envdoctor.probes.runner import Runner, RunResult
from envdoctor.services.collect import judge
from tests.fakes.runner import FakeRunner

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is needed to build test shared objects")


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def build_so(tmp: Path, name: str, soname: str, source: str, extra: List[str] = ()) -> Path:
    src = tmp / (name + ".c")
    src.write_text(source)
    out = tmp / name
    subprocess.run([GCC, "-shared", "-fPIC", f"-Wl,-soname,{soname}", *extra, "-o", str(out), str(src)],
                   check=True, capture_output=True, timeout=60)
    return out


FOREIGN_NCCL = """
const char banner[] = "NCCL version 2.18.1+cuda12.1";
int ncclGetVersion(int *v) { *v = 21801; return 0; }
int ncclCommInitRank(void) { return 0; }
"""


# --------------------------------------------------------------------------- ELF and fat binaries


@needs_gcc
def test_elf_read_soname_rpath_needed_sections(tmp_path: Path) -> None:
    so = build_so(tmp_path, "libx.so.1", "libx.so.1", "int x(void) { return 1; }",
                  ["-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../lib", "-Wl,--no-as-needed", "-lm"])
    info = elf.elf_read(str(so), sections=True)
    assert info is not None
    assert info["soname"] == "libx.so.1" and info["rpath"] == "$ORIGIN/../lib" and info["runpath"] is None
    assert "libm.so.6" in info["needed"] and "libc.so.6" in info["needed"]
    assert ".dynamic" in info["sections"] and ".text" in info["sections"]
    # the new-dtags form is DT_RUNPATH, which LD_LIBRARY_PATH overrides (ld.so(8))
    so2 = build_so(tmp_path, "liby.so", "liby.so", "int y(void) { return 1; }",
                   ["-Wl,--enable-new-dtags", "-Wl,-rpath,/opt/y"])
    info2 = elf.elf_read(str(so2))
    assert (info2["rpath"], info2["runpath"]) == (None, "/opt/y")
    assert elf.elf_needed(str(so2)) == info2["needed"]


def test_elf_read_rejects_non_elf(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"not an elf at all")
    (tmp_path / "b").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\0" * 10)
    assert elf.elf_read(str(tmp_path / "a")) is None
    assert elf.elf_read(str(tmp_path / "b")) is None
    assert elf.elf_read(str(tmp_path / "missing")) is None


def _fatbin(entries: List[tuple]) -> bytes:
    """One fat binary: 16-byte header, then 64-byte entry headers (kind, arch) each with a small payload."""
    body = b""
    for kind, arch in entries:
        data = bytes([arch % 256]) * 24
        head = struct.pack("<HHIQII", kind, 0x101, 64, len(data), len(data), 0) + struct.pack("<HHI", 8, 1, arch)
        head += b"\0" * (64 - len(head))
        body += head + data
    return struct.pack("<IHHQ", elf.FATBIN_MAGIC, 1, 16, len(body)) + body


def test_fatbin_archs_walks_headers_and_padding(tmp_path: Path) -> None:
    blob = b"\0" * 40  # what precedes the section in the file
    start = len(blob)
    section = b""
    for i in range(4):  # four .cu files built for sm_75, sm_80, sm_90 (+ PTX for 90); one adds sm_89
        entries = [(2, 75), (2, 80), (2, 90), (1, 90)] + ([(2, 89)] if i == 0 else [])
        section += _fatbin(entries)
        section += b"\0" * 8  # alignment padding between fat binaries
    blob += section + b"trailing bytes outside the section"
    path = tmp_path / "lib.so"
    path.write_bytes(blob)
    scan = elf.fatbin_archs(str(path), start, len(section))
    assert scan["fatbins"] == 4 and scan["entries"] == 17
    assert scan["sass"] == {75: 4, 80: 4, 90: 4, 89: 1} and scan["ptx"] == {90: 4}
    assert elf.arch_list_from_fatbin(scan) == (["sm_75", "sm_80", "sm_90", "compute_90"], ["sm_89"])
    assert elf.arch_list_from_fatbin({"fatbins": 0}) == (None, [])
    assert "error" in elf.fatbin_archs(str(tmp_path / "missing.so"), 0, 100)


NVCC = shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc is needed to build a real fat binary")
def test_fatbin_of_a_real_nvcc_library(tmp_path: Path) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
                  "extern \"C\" void launch(float *x) { k<<<1, 32>>>(x); }\n")
    so = tmp_path / "libk.so"
    proc = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_75,code=sm_75",
                           "-gencode", "arch=compute_80,code=[sm_80,compute_80]", "-o", str(so), str(cu)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"nvcc could not build the test library: {proc.stderr.strip()[-300:]}")
    info = elf.elf_read(str(so), sections=True)
    off, size = info["sections"][".nv_fatbin"]
    arch, partial = elf.arch_list_from_fatbin(elf.fatbin_archs(str(so), off, size))
    assert (arch, partial) == (["sm_75", "sm_80", "compute_80"], [])


# --------------------------------------------------------------------------- library versions and candidates


@needs_gcc
def test_library_version_from_contents_not_file_name(tmp_path: Path) -> None:
    so = build_so(tmp_path, "libnccl.so.2", "libnccl.so.2", FOREIGN_NCCL)
    assert libraries.library_version(str(so), "nccl") == ("2.18.1", "text inside the file")
    owners = {os.path.realpath(str(so)): ("nvidia-nccl-cu13", "2.30.7")}
    assert libraries.library_version(str(so), "nccl", owners) == ("2.30.7", "metadata of the nvidia-nccl-cu13 wheel")
    real = build_so(tmp_path, "libcublas.so.12.4.5.8", "libcublas.so.12", "int cublasCreate_v2(void){return 0;}")
    link = tmp_path / "libcublas.so.12"
    link.symlink_to(real.name)
    assert libraries.library_version(str(link), "cublas") == ("12.4.5.8", "full file name of libcublas.so.12.4.5.8")
    plain = build_so(tmp_path, "libcudnn.so.9", "libcudnn.so.9", "int cudnnCreate(void){return 0;}")
    assert libraries.library_version(str(plain), "cudnn") == (None, None)  # "9" alone is not a version


@needs_gcc
def test_library_candidates_preload_file_and_search_path(tmp_path: Path) -> None:
    nccl = build_so(tmp_path, "libnccl.so.2", "libnccl.so.2", FOREIGN_NCCL)
    other = tmp_path / "libjemalloc.so.2"
    other.write_bytes(b"x")
    libdir = tmp_path / "cudnn8" / "lib"
    libdir.mkdir(parents=True)
    build_so(libdir, "libcudnn.so.8.9.7", "libcudnn.so.8", "int cudnnCreate(void){return 0;}")
    (libdir / "libcudnn.so.8").symlink_to("libcudnn.so.8.9.7")
    (libdir / "README").write_text("not a library")
    preload = tmp_path / "ld.so.preload"
    preload.write_text(f"# site policy\n{nccl}\n")
    env = {"LD_PRELOAD": f"{other} {nccl}:/gone/libnccl.so.2", "LD_LIBRARY_PATH": f"{libdir}:/nonexistent"}
    got = libraries.library_candidates(env, [], preload_file=str(preload))
    rows = [(c["via"], c["name"], c["path"], c["version"], c["soname"]) for c in got]
    assert rows == [
        ("LD_PRELOAD", "libjemalloc.so.2", str(other), None, None),
        ("LD_PRELOAD", "nccl", str(nccl), "2.18.1", "libnccl.so.2"),
        ("LD_PRELOAD", "nccl", None, None, None),  # a missing file: ld.so ignores it, so no path
        (str(preload), "nccl", str(nccl), "2.18.1", "libnccl.so.2"),
        ("LD_LIBRARY_PATH", "cudnn", str(libdir / "libcudnn.so.8"), "8.9.7", "libcudnn.so.8"),
    ]
    assert libraries.library_candidates({}, [], preload_file=str(tmp_path / "none")) == []


def test_lib_family_names() -> None:
    assert libraries.lib_family("libcudnn_ops.so.9") == "cudnn"
    assert libraries.lib_family("libcublasLt.so.13") == "cublas"
    assert libraries.lib_family("libcusparseLt.so.0") == "cusparselt"
    assert libraries.lib_family("libcusparse.so.12") == "cusparse"
    assert libraries.lib_family("libnccl.so.2") == "nccl"
    assert libraries.lib_family("libfoo.so") is None


# --------------------------------------------------------------------------- the payload's checkpoint, for real


def fake_torch(root: Path, init: str, version_py: str) -> Path:
    pkg = root / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init)
    (pkg / "version.py").write_text(version_py)
    return root


def probe_with_pythonpath(root: Path, timeout_s: float = 60.0) -> PythonEnv:
    class EnvRunner(Runner):
        def run(self, argv, timeout=10.0, env=None, input_text=None):  # type: ignore[override]
            return super().run(argv, timeout=timeout, env=dict(env or {}, PYTHONPATH=str(root)),
                               input_text=input_text)

    return pe.probe_python(sys.executable, EnvRunner(), timeout_s=timeout_s)


VERSION_PY = "__version__ = '2.14.1+cu130'\ncuda = '13.0'\nhip = None\ngit_version = 'abc123'\n"


def test_segfault_at_the_start_of_import_torch_keeps_version_py(tmp_path: Path) -> None:
    # the files are read while torch imports: a crash in its first moments still has version.py (read before)
    root = fake_torch(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", VERSION_PY)
    env = probe_with_pythonpath(root)
    assert env.failure == "crashed" and env.failure_stage == "importing torch"
    assert (env.torch.version, env.torch.cuda, env.torch.git_version) == ("2.14.1+cu130", "13.0", "abc123")
    assert env.python_version and env.executable


def test_segfault_inside_import_torch_keeps_the_build(tmp_path: Path, compat) -> None:
    # (a real libtorch crashes after seconds of mapping libraries: the files read meanwhile come back)
    root = fake_torch(tmp_path, "import os, signal, time\ntime.sleep(2)\nos.kill(os.getpid(), signal.SIGSEGV)\n",
                      VERSION_PY)
    env = probe_with_pythonpath(root)
    assert env.status == ProbeStatus.FAILED and env.failure == "crashed"
    assert env.failure_stage == "importing torch"
    t = env.torch
    assert t is not None and t.imported is False
    assert (t.version, t.cuda, t.git_version) == ("2.14.1+cu130", "13.0", "abc123")
    assert "SIGSEGV" in (t.import_error or "") and env.packages  # what was read before the import is kept
    report = judge(Facts(pythons=[env]), compat)
    f = next(f for f in report.findings if f.category == "TORCH_IMPORT_FAILED")
    assert (f.code, f.severity) == ("torch.import/crashed", "error")
    assert "faulthandler" in f.fix.commands[0]
    assert report.findings and not any(f.category == "TARGET_PYTHON_UNUSABLE" for f in report.findings)


def test_segfault_in_a_torch_of_unknown_version_is_still_an_error(tmp_path: Path, compat) -> None:
    # no version.py, no metadata: nothing tells the version, but the crash is the finding (never "No problems")
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    env = probe_with_pythonpath(tmp_path)
    assert env.failure == "crashed" and env.torch is not None and env.torch.version is None
    report = judge(Facts(pythons=[env]), compat)
    f = next(f for f in report.findings if f.category == "TORCH_IMPORT_FAILED")
    assert (f.code, f.severity) == ("torch.import/crashed", "error")
    assert "unknown version" in f.summary and "SIGSEGV" in f.summary


def test_import_that_exits_is_reported(tmp_path: Path) -> None:
    root = fake_torch(tmp_path, "import os\nos._exit(7)\n", VERSION_PY)
    env = probe_with_pythonpath(root)
    assert env.failure == "exited" and "exited with code 7 while importing torch" in (env.reason or "")
    assert env.torch.version == "2.14.1+cu130" and "code 7" in env.torch.import_error


def test_hang_past_our_timeout_with_the_gil_held_keeps_the_checkpoint() -> None:
    # the payload's own watchdog cannot fire when native code holds the GIL: envdoctor's timeout kills it,
    # and the checkpoint written before `import torch` is all that came back
    checkpoint = {"envdoctor_payload": pe.PAYLOAD_VERSION, "checkpoint": True, "ok": False, "stage": "importing torch",
                  "result": {"python_version": "3.11.7", "executable": "/envs/x/bin/python", "torch_inspected": True,
                             "packages": [{"name": "torch", "version": "2.14.1"}],
                             "torch_build": {"version": "2.14.1+cu130", "cuda": "13.0", "arch_list": ["sm_90"]},
                             "library_candidates": []}}
    argv = tuple(pe.payload_argv("/envs/x/bin/python", "inspect", [], 20.0))
    rr = RunResult(argv, None, stdout="\n" + json.dumps(checkpoint) + "\n", error="timed out after 20 s",
                   duration_s=20.0)
    env = pe.probe_python("/envs/x/bin/python", FakeRunner({argv: rr}), timeout_s=20.0)
    assert (env.status, env.failure, env.failure_stage) == ("failed", "timeout", "importing torch")
    assert env.torch.version == "2.14.1+cu130" and env.torch.arch_list == ["sm_90"]
    assert env.torch.arch_list_source == "fatbin" and "timed out after 20 s" in env.torch.import_error


def test_not_python_and_not_found() -> None:
    argv = tuple(pe.payload_argv("/bin/true", "inspect", [], 60.0))
    env = pe.probe_python("/bin/true", FakeRunner({argv: (0, "", "")}))
    assert (env.status, env.failure) == ("failed", "not_python") and "not behave like a Python" in env.reason
    gone = pe.probe_python("/nope/python", FakeRunner({tuple(pe.payload_argv("/nope/python", "inspect", [], 60.0)):
                                                        FakeRunner.NOT_FOUND}))
    assert (gone.status, gone.failure) == ("absent", "not_found")


# --------------------------------------------------------------------------- checks on the new facts

WHEEL_NCCL = "/envs/x/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"
BUILD = TorchBuildFiles(location="/envs/x/lib/python3.11/site-packages/torch", version="2.14.1+cu130", cuda="13.0",
                        dist_version="2.14.1", requires_pins=["nvidia-nccl-cu13==2.30.7"],
                        native_library="/envs/x/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
                        needed=["libnccl.so.2", "libcudart.so.13", "libcudnn.so.9"],
                        rpath="$ORIGIN/../../nvidia/nccl/lib",
                        arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"])
PRELOADED = LibraryCopy("nccl", "/opt/old-nccl/libnccl.so.2", "2.18.1", "system", version_source="text inside the file",
                        soname="libnccl.so.2", via="LD_PRELOAD")
UNDEFINED = ("ImportError: /envs/x/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
             "ncclRecv")


def failed_import_env(**over: Any) -> PythonEnv:
    t = TorchInfo(version="2.14.1+cu130", cuda="13.0", arch_list=list(BUILD.arch_list), arch_list_source="fatbin",
                  import_error=UNDEFINED, import_seconds=0.2, imported=False, build_files=BUILD)
    env = PythonEnv(status=ProbeStatus.OK, executable="/envs/x/bin/python", requested_as="--python",
                    python_version="3.11.7", torch_inspected=True,
                    packages=[Package("torch", "2.14.1"), Package("nvidia-nccl-cu13", "2.30.7")],
                    torch=t, library_candidates=[PRELOADED],
                    env={"LD_PRELOAD": "/opt/old-nccl/libnccl.so.2"})
    return replace(env, **over)


def findings_of(report, category: str):
    return [f for f in report.findings if f.category == category]


def test_preloaded_nccl_is_the_root_cause_with_unset_ld_preload(compat) -> None:
    report = judge(Facts(pythons=[failed_import_env()]), compat)
    (shadow,) = findings_of(report, "SYSTEM_LIB_SHADOWING")
    assert (shadow.code, shadow.severity) == ("libraries.shadowing/nccl", "error")
    assert "/opt/old-nccl/libnccl.so.2" in shadow.summary and "NCCL 2.18.1" in shadow.summary
    assert "nvidia-nccl-cu13 wheel (2.30.7)" in shadow.summary and "fails on it" in shadow.summary
    assert shadow.fix.commands == ["unset LD_PRELOAD"]
    assert {e.source for e in shadow.evidence} >= {"text inside the file"}
    (imp,) = findings_of(report, "TORCH_IMPORT_FAILED")
    assert imp.fix.commands == ["unset LD_PRELOAD"] and "libraries.shadowing/nccl" in imp.fix.summary
    assert "reinstall" not in " ".join(imp.fix.commands)
    assert report.findings.index(shadow) < report.findings.index(imp)  # the cause comes first


def test_preload_with_other_entries_keeps_them_quoted(compat) -> None:
    env = failed_import_env(env={"LD_PRELOAD": "/opt/jemalloc/libjemalloc.so:/opt/old-nccl/libnccl.so.2 /x/$(id).so"})
    (shadow,) = findings_of(judge(Facts(pythons=[env]), compat), "SYSTEM_LIB_SHADOWING")
    assert shadow.fix.commands == ["export LD_PRELOAD='/opt/jemalloc/libjemalloc.so:/x/$(id).so'"]


def test_etc_ld_so_preload_names_the_file(compat) -> None:
    lib = replace(PRELOADED, via="/etc/ld.so.preload")
    env = failed_import_env(library_candidates=[lib], env={})
    (shadow,) = findings_of(judge(Facts(pythons=[env]), compat), "SYSTEM_LIB_SHADOWING")
    assert shadow.summary.startswith("/etc/ld.so.preload loads") and "/etc/ld.so.preload" in shadow.fix.summary


def test_same_version_preload_is_a_warning_and_imported_torch_passes_without_candidates(compat) -> None:
    same = replace(PRELOADED, version="2.30.7")
    t = replace(failed_import_env().torch, import_error=None, imported=True, arch_list_source="torch")
    env = failed_import_env(torch=t, library_candidates=[same])
    (shadow,) = findings_of(judge(Facts(pythons=[env]), compat), "SYSTEM_LIB_SHADOWING")
    assert shadow.severity == "warning"
    clean = judge(Facts(pythons=[failed_import_env(torch=t, library_candidates=[], env={})]), compat)
    result = next(c for c in clean.checks if c.id == "libraries.shadowing")
    assert result.status == "passed"


def test_ld_library_path_copy_counts_only_without_rpath(compat) -> None:
    cand = LibraryCopy("nccl", "/opt/nccl/lib/libnccl.so.2", "2.18.1", "system", soname="libnccl.so.2",
                       via="LD_LIBRARY_PATH")
    env = failed_import_env(library_candidates=[cand], env={"LD_LIBRARY_PATH": "/opt/nccl/lib:/usr/lib"})
    # torch 2.x wheels link with DT_RPATH, searched before LD_LIBRARY_PATH: not a shadow
    assert findings_of(judge(Facts(pythons=[env]), compat), "SYSTEM_LIB_SHADOWING") == []
    runpath = replace(env.torch, build_files=replace(BUILD, rpath=None, runpath="$ORIGIN"))
    (shadow,) = findings_of(judge(Facts(pythons=[replace(env, torch=runpath)]), compat), "SYSTEM_LIB_SHADOWING")
    assert shadow.fix.commands == ["export LD_LIBRARY_PATH=/usr/lib"] and shadow.severity == "error"


def test_no_torch_still_judges_the_build_and_the_preload(compat) -> None:
    t = replace(failed_import_env().torch, import_error=None, import_seconds=None)
    env = failed_import_env(torch=t, torch_inspected=False)
    facts = Facts(pythons=[env], driver=Driver(status=ProbeStatus.OK, version="580.65.06",
                                               gpus=[Gpu(index=0, name="Tesla P100-PCIE-16GB",
                                                         compute_capability="6.0")]))
    report = judge(facts, compat)
    status = {c.id: c.status for c in report.checks}
    assert status["torch.import"] == "skipped"
    (arch,) = findings_of(report, "GPU_ARCH_NOT_IN_TORCH_BUILD")
    assert "libtorch_cuda.so (.nv_fatbin)" in arch.evidence[1].source
    (shadow,) = findings_of(report, "SYSTEM_LIB_SHADOWING")
    assert shadow.severity == "error"  # 2.18.1 is not the wheel's 2.30.7


def test_driver_check_uses_static_cuda_after_failed_import(compat) -> None:
    old = Driver(status=ProbeStatus.OK, version="535.104.05", cuda_driver_version="12.2",
                 gpus=[Gpu(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0")])
    report = judge(Facts(pythons=[failed_import_env()], driver=old), compat)
    assert findings_of(report, "DRIVER_TOO_OLD_FOR_TORCH_CUDA"), [f.code for f in report.findings]


@pytest.mark.parametrize("failure,reason,code", [
    ("not_python", "/bin/true ran envdoctor's payload script and printed nothing", "torch.interpreter/not-python"),
    ("not_executable", "could not run /x: permission denied", "torch.interpreter/not-executable"),
    ("crashed", "killed by SIGSEGV while reading installed distributions", "torch.interpreter/crashed"),
])
def test_uninspectable_interpreter_is_an_error(compat, failure: str, reason: str, code: str) -> None:
    env = PythonEnv(status=ProbeStatus.FAILED, executable="/x", requested_as="--python", reason=reason,
                    failure=failure, failure_stage="reading installed distributions" if failure == "crashed" else None)
    report = judge(Facts(pythons=[env]), compat)
    (f,) = findings_of(report, "TARGET_PYTHON_UNUSABLE")
    assert (f.code, f.severity) == (code, "error") and reason in f.summary
    assert report.has_at_least("error")


def test_no_torch_installed(compat) -> None:
    explicit = PythonEnv(status=ProbeStatus.OK, executable="/envs/a/bin/python", requested_as="--python",
                         python_version="3.11.7", torch_inspected=True, packages=[Package("numpy", "2.1.0")])
    (f,) = findings_of(judge(Facts(pythons=[explicit]), compat), "TORCH_NOT_INSTALLED")
    assert (f.code, f.severity) == ("torch.interpreter/no-torch", "error")
    # pinned: the newest torch with a wheel for that Python (a plain `pip install torch` may resolve an old one)
    assert f.fix.commands[0].startswith("/envs/a/bin/python -m pip install torch==")
    fallback = replace(explicit, requested_as="python3 on PATH")
    (g,) = findings_of(judge(Facts(pythons=[fallback]), compat), "TORCH_NOT_INSTALLED")
    assert g.severity == "warning"
    with_torch = replace(explicit, torch=TorchInfo(version="2.13.0+cpu", arch_list=[], imported=True))
    result = next(c for c in judge(Facts(pythons=[with_torch]), compat).checks if c.id == "torch.interpreter")
    assert result.status == "passed"


def test_cpu_torch_without_gpu_is_skipped_not_passed(compat) -> None:
    env = PythonEnv(status=ProbeStatus.OK, executable="/envs/a/bin/python", python_version="3.11.7",
                    torch=TorchInfo(version="2.13.0+cpu", cuda=None, arch_list=[], imported=True))
    report = judge(Facts(pythons=[env], driver=Driver(status=ProbeStatus.ABSENT, reason="no driver")), compat)
    result = next(c for c in report.checks if c.id == "torch.cuda-build")
    assert result.status == "skipped" and "no NVIDIA GPU" in result.reason


def test_facts_round_trip_and_old_snapshots_load() -> None:
    facts = Facts(pythons=[failed_import_env()])
    assert Facts.from_json(facts.to_json()) == facts
    old: Dict[str, Any] = json.loads(facts.to_json())
    py = old["pythons"][0]
    for key in ("library_candidates", "torch_inspected", "failure", "failure_stage"):
        py.pop(key)
    for key in ("imported", "arch_list_source", "build_files"):
        py["torch"].pop(key)
    back = Facts.from_dict(old)
    assert back.pythons[0].torch.build_files is None and back.pythons[0].library_candidates == []


# --------------------------------------------------------------------------- the CLI, with fake interpreters


def _fake_interpreter(tmp: Path, name: str, torch_init: str, version_py: str = VERSION_PY) -> Path:
    """A small shell script that runs this Python with a fake torch package first on sys.path."""
    site = tmp / f"{name}-site"
    fake_torch(site, torch_init, version_py)
    script = tmp / f"{name}-python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return script


def _no_torch_interpreter(tmp: Path) -> Path:
    """A fresh venv without pip and without torch: the same interpreter whether the tests run inside a venv or not.

    Not ``sys.executable -S``: outside a venv that is envdoctor's own environment (the warning below), but inside one
    ``-S`` skips the site module that reads pyvenv.cfg, so the child's sys.prefix is the base interpreter's, none of
    the venv's packages are importable and it is rightly judged as another interpreter (an error)."""
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(tmp / "bare-venv")
    return tmp / "bare-venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _torch_importable_here() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


@pytest.mark.parametrize("kind", ["true", "segfault", "hang", "gil-hang",
                                  pytest.param("no-torch", marks=pytest.mark.slow),  # builds a (bare) venv
                                  "own-no-torch"])
def test_cli_never_says_no_problems_for_an_uninspectable_target(tmp_path: Path, kind: str) -> None:
    extra: List[str] = []
    if kind == "own-no-torch" and _torch_importable_here():
        pytest.skip("torch is installed in envdoctor's own environment here: it cannot be judged as one without")
    if kind == "true":
        target, category = Path("/bin/true"), "TARGET_PYTHON_UNUSABLE"
    elif kind == "segfault":
        target = _fake_interpreter(tmp_path, "segv", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
        category = "TORCH_IMPORT_FAILED"
    elif kind == "hang":
        target = _fake_interpreter(tmp_path, "hang", "import time\ntime.sleep(600)\n")
        category, extra = "TORCH_IMPORT_FAILED", ["--python-timeout", "3"]
    elif kind == "gil-hang":
        # native code that keeps the GIL: the payload's watchdog cannot run, envdoctor's timeout kills the
        # process, and the checkpoint written before `import torch` still carries the build
        target = _fake_interpreter(tmp_path, "gil", "import ctypes\nctypes.PyDLL(None).sleep(600)\n")
        category, extra = "TORCH_IMPORT_FAILED", ["--python-timeout", "3"]
    elif kind == "no-torch":
        target, category = _no_torch_interpreter(tmp_path), "TORCH_NOT_INSTALLED"
    else:
        target, category = Path(sys.executable), "TORCH_NOT_INSTALLED"
    base = [sys.executable, "-m", "envdoctor", "check", "--python", str(target), *extra, "--data", str(tmp_path)]
    # another interpreter named with --python and without torch is an error; envdoctor's own environment without
    # torch is the plain warning "torch was not judged here" (issue 19), not an error; never a clean bill
    severity, rc = ("warning", 0) if kind == "own-no-torch" else ("error", 1)
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert "No problems found" not in proc.stdout and proc.returncode == rc, proc.stdout[-3000:] + proc.stderr
    js = subprocess.run(base + ["--format", "json"], capture_output=True, text=True, timeout=120)
    report = json.loads(js.stdout)
    got = [f for f in report["findings"] if f["category"] == category]
    assert got and got[0]["severity"] == severity, [f["code"] for f in report["findings"]]
    if kind == "no-torch":
        assert got[0]["code"] == "torch.interpreter/no-torch"
    if kind == "own-no-torch":
        assert got[0]["code"] == "torch.interpreter/not-a-torch-environment"
    if kind in ("segfault", "hang", "gil-hang"):
        assert report["facts"]["pythons"][0]["torch"]["version"] == "2.14.1+cu130"  # the build survives
        assert "2.14.1+cu130" in proc.stdout


def test_console_shows_the_build_of_a_crashed_or_skipped_import(compat) -> None:
    from envdoctor.report.console import render_console

    crashed = failed_import_env(status=ProbeStatus.FAILED, failure="crashed", failure_stage="importing torch",
                                reason="killed by SIGSEGV (segmentation fault) while importing torch")
    text = render_console(judge(Facts(pythons=[crashed]), compat), color=False)
    rows = [" ".join(line.split()) for line in text.splitlines()]
    assert any(r.startswith("torch 2.14.1+cu130: import failed") for r in rows), rows[:12]
    assert "arch sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 (read from libtorch_cuda.so)" in rows
    skipped = failed_import_env(torch=replace(crashed.torch, import_error=None), torch_inspected=False)
    rows = [" ".join(line.split()) for line in render_console(judge(Facts(pythons=[skipped]), compat),
                                                                color=False).splitlines()]
    assert "torch 2.14.1+cu130 · torch CUDA 13.0 · not imported (--no-torch): build read from its files" in rows


def test_missing_pinned_wheel_falls_back_to_the_system_copy(compat) -> None:
    from envdoctor.model.facts import SystemLibraries

    env = failed_import_env(library_candidates=[], env={},
                            packages=[Package("torch", "2.14.1")])  # nvidia-nccl-cu13 uninstalled
    system = SystemLibraries(status=ProbeStatus.OK, libraries=[
        LibraryCopy("nccl", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "2.18.1", "system",
                    version_source="text inside the file")])
    report = judge(Facts(pythons=[env], system_libraries=system), compat)
    (shadow,) = findings_of(report, "SYSTEM_LIB_SHADOWING")
    assert shadow.severity == "error" and "nvidia-nccl-cu13==2.30.7 but it is not installed" in shadow.summary
    assert shadow.fix.commands == ["/envs/x/bin/python -m pip install nvidia-nccl-cu13==2.30.7"]
    (imp,) = findings_of(report, "TORCH_IMPORT_FAILED")
    assert imp.fix.commands == shadow.fix.commands
    # with the wheel installed, an older system copy is not what the RPATH'd torch loads
    installed = replace(env, packages=[Package("torch", "2.14.1"), Package("nvidia-nccl-cu13", "2.30.7")])
    report = judge(Facts(pythons=[installed], system_libraries=system), compat)
    assert findings_of(report, "SYSTEM_LIB_SHADOWING") == []
    assert "reinstall" in findings_of(report, "TORCH_IMPORT_FAILED")[0].fix.commands[0]


@pytest.mark.parametrize("progress, shown", [("1", True), ("0", False), (None, False)])
def test_check_on_a_hung_interpreter_says_what_it_waits_for(tmp_path: Path, progress, shown) -> None:
    # progress goes to stderr after ~2 s, where stderr is a terminal (here: a pipe, so only with
    # ENVDOCTOR_PROGRESS=1); stdout, the JSON report, never has it
    target = _fake_interpreter(tmp_path, "hang", "import time\ntime.sleep(600)\n")
    env = {k: v for k, v in os.environ.items() if k != "ENVDOCTOR_PROGRESS"}
    if progress is not None:
        env["ENVDOCTOR_PROGRESS"] = progress
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--python", str(target), "--python-timeout",
                           "6", "--data", str(tmp_path), "--format", "json"], capture_output=True, text=True,
                          timeout=180, env=env)
    json.loads(proc.stdout)  # the report alone
    lines = [x for x in proc.stderr.splitlines() if x.startswith("envdoctor: still waiting for")]
    if shown:
        assert lines and "the target interpreter (its `import torch`; --python-timeout 6 s)" in lines[0], proc.stderr
    else:
        assert not lines, proc.stderr
