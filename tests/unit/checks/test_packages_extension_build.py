"""packages.extension-build (issue 30): a compiled extension judged by what its binary says it was built for.

The boxes are built the way users get there, without network: a site-packages holding a fake torch (its own
libc10.so, compiled here, loaded RTLD_GLOBAL by its __init__ as the real torch loads its libraries) and an
extension (dist-info METADATA + RECORD, a shared object compiled with gcc that has DT_NEEDED on libc10.so and an
undefined mangled c10:: symbol), inspected by the real payload in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

import pytest

from envdoctor._payload import elf, tasks
from envdoctor._payload.extension_build import TORCH_ABI_SYMBOL
from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import ExtensionBuild, ExtensionLibrary, ExtensionScan, Facts, Package, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.probes import python_env as pe
from tests import machines
from tests.unit.probes.test_torch_static import GCC, needs_gcc

PAYLOAD = Path(tasks.__file__).parent
OLD = "_ZN3c106detail19torchInternalAssertEPKcS2_jS2_"  # what a build for the older torch calls
NEW = "_ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_"  # the same entry point, renamed in the newer torch


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _cc(out: Path, source: str, *flags: str) -> Path:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True, capture_output=True,
                   timeout=60)
    return out


def _dist_info(site: Path, name: str, version: str, files: List[str], requires: List[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"] + [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n\n")
    rows = [f"{f},," for f in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def build_box(root: Path, torch_defines: str, ext_calls: str, ext_requires: List[str],
              built_for: Optional[str] = "2.5.1+cu124", ext_version: str = "0.0.28.post3",
              cudart: Optional[str] = None) -> Path:
    """A site-packages: torch 2.5.1 whose libc10.so defines ``torch_defines``, and xformers whose _C.so calls
    ``ext_calls`` (both mangled c10:: names), with its cpp_lib.json saying ``built_for``."""
    site = root / "site"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    _cc(lib / "libc10.so", f'void defined_here(void) __asm__("{torch_defines}");\nvoid defined_here(void) {{}}\n',
        "-Wl,-soname,libc10.so")
    (site / "torch" / "__init__.py").write_text(
        "import ctypes, os\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libc10.so'), mode=ctypes.RTLD_GLOBAL)\n"
        "from . import version\n__version__ = '2.5.1+cu124'\n")
    (site / "torch" / "version.py").write_text("__version__ = '2.5.1+cu124'\ncuda = '12.4'\nhip = None\n")
    _dist_info(site, "torch", "2.5.1+cu124", ["torch/__init__.py", "torch/lib/libc10.so"], [])
    ext = site / "xformers"
    ext.mkdir()
    (ext / "__init__.py").write_text("")
    flags = [f"-L{lib}", "-Wl,--no-as-needed", "-lc10"]
    if cudart:  # a DT_NEEDED on a CUDA runtime of some major: a stub library of that SONAME
        stub = root / "cudart"
        stub.mkdir()
        _cc(stub / cudart, "int cudaRuntimeGetVersion(int *v) { *v = 0; return 0; }\n", f"-Wl,-soname,{cudart}")
        flags += [str(stub / cudart), f"-Wl,-rpath,{stub}"]
    _cc(ext / "_C.so", f'void needed_there(void) __asm__("{ext_calls}");\nint call(void) {{ needed_there(); '
        "return 0; }\n", *flags)
    files = ["xformers/__init__.py", "xformers/_C.so"]
    if built_for:
        (ext / "cpp_lib.json").write_text(json.dumps({"version": {"cuda": 1204, "torch": built_for,
                                                                  "python": "3.11.7"}}))
        files.append("xformers/cpp_lib.json")
    _dist_info(site, "xformers", ext_version, files, ext_requires)
    return site


def inspect_box(site: Path, *args: str):
    out = subprocess.run([sys.executable, str(PAYLOAD), "--task", "inspect", *args], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=str(site)))
    envelope = pe.parse_envelope(out.stdout)
    assert envelope is not None, out.stderr[-2000:]
    env = pe.env_from_result(envelope["result"], [])
    return replace(env, status=ProbeStatus.OK, executable="/opt/venv/bin/python")


def judge_env(env, compat):
    f = machines.facts(machines.driver(None, None, []), [env])
    (res,) = run_checks(f, compat, [c for c in all_checks() if c.id == "packages.extension-build"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


# --------------------------------------------------------------------------- what the payload reads


@needs_gcc
def test_elf_symbols_read_undefined_and_defined(tmp_path: Path) -> None:
    site = build_box(tmp_path, NEW, OLD, ["torch==2.4.1"])
    ext = str(site / "xformers" / "_C.so")
    assert elf.elf_undefined_symbols(ext, TORCH_ABI_SYMBOL) == [OLD]
    assert elf.elf_defined_symbols(str(site / "torch" / "lib" / "libc10.so"), TORCH_ABI_SYMBOL) == [NEW]
    assert elf.elf_needed(ext) and "libc10.so" in elf.elf_needed(ext)
    assert elf.elf_undefined_symbols(str(tmp_path / "nothing.so"), TORCH_ABI_SYMBOL) is None


@needs_gcc
def test_payload_reports_links_symbols_build_metadata_and_the_load_error(tmp_path: Path) -> None:
    site = build_box(tmp_path, NEW, OLD, ["torch==2.4.1"], built_for="2.4.1+cu124")
    env = inspect_box(site)
    (lib,) = [x for x in env.extensions.libraries if x.distribution == "xformers"]
    assert "libc10.so" in lib.needed and lib.torch_symbols == 1
    assert lib.unresolved_count == 1 and lib.unresolved_symbols == [OLD]
    assert lib.symbols_checked_against == ["libc10.so"]
    assert lib.loaded is False and "undefined symbol: " + OLD in lib.load_error
    (build,) = env.extensions.builds
    assert (build.distribution, build.torch, build.cuda) == ("xformers", "2.4.1+cu124", "1204")
    # the snapshot round-trips
    f = machines.facts(machines.driver(None, None, []), [env])
    assert Facts.from_json(f.to_json()).pythons[0].extensions == env.extensions
    # --no-extension-load: read, never loaded
    quiet = inspect_box(site, "--no-extension-load")
    (lib2,) = [x for x in quiet.extensions.libraries if x.distribution == "xformers"]
    assert lib2.loaded is None and lib2.unresolved_count == 1


@needs_gcc
def test_a_library_that_aborts_or_hangs_when_loaded_costs_the_forked_loader_not_the_payload(tmp_path: Path) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork here: the loads run in the payload's own process")
    ok = _cc(tmp_path / "ok.so", "int ok(void) { return 1; }\n")
    aborts = _cc(tmp_path / "aborts.so", "#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) "
                 "{ abort(); }\n")
    hangs = _cc(tmp_path / "hangs.so", "#include <unistd.h>\n__attribute__((constructor)) static void wait(void) "
                "{ sleep(60); }\n")
    def load(paths, budget_s):  # in a plain interpreter, as the payload runs (not under pytest's faulthandler)
        recs = [{"path": str(p), "torch_symbols": 1} for p in paths]
        code = (f"import json, sys; sys.path.insert(0, {str(PAYLOAD.parent)!r}); from _payload import extension_build "
                f"as e; recs = {recs!r}; e.load_extensions({{'libraries': recs}}, budget_s={budget_s}); "
                "print(json.dumps(recs))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
        return json.loads(out.stdout)

    recs = load((ok, aborts, ok, hangs, ok), 3.0)
    assert recs[0]["loaded"] is True
    assert recs[1] == dict(recs[1], loaded=False, load_error="loading it killed the process (SIGABRT)")
    assert "loaded" not in recs[2] and recs[2]["load_skipped"] == "not loaded (the loader stopped)"
    # what follows the library that killed the loader is not tried again (the payload's deadline is the budget)
    more = load((ok, hangs, ok), 2.0)
    assert more[0]["loaded"] is True and more[1]["load_skipped"] == "still loading after 2 s (stopped)"
    assert more[2]["load_skipped"] == "load budget spent (2 s)"
    assert "loaded" not in recs[3] and "loaded" not in more[1]


# --------------------------------------------------------------------------- the check on those boxes


@needs_gcc
def test_extension_built_for_another_torch_is_the_whole_finding(tmp_path: Path, compat) -> None:
    site = build_box(tmp_path, NEW, OLD, ["torch==2.4.1"], built_for="2.4.1+cu124")
    res = judge_env(inspect_box(site), compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert f.code == "packages.extension-build/does-not-load"
    assert f.category == "THIRD_PARTY_EXTENSION_MISMATCH" and f.severity == Severity.ERROR
    # the loader's words without the file it names first, and what the build metadata says
    assert f.summary == (f"xformers 0.0.28.post3 is not built for torch 2.5.1+cu124: _C.so does not load: undefined "
                         f"symbol: {OLD}; its build metadata (cpp_lib.json) says torch 2.4.1+cu124")
    paths = {e.path: e.value for e in f.evidence}
    assert paths["pythons[0].extensions.libraries[0].unresolved_symbols"] == [OLD]
    assert OLD in paths["pythons[0].extensions.libraries[0].load_error"]
    assert paths["pythons[0].extensions.builds.xformers.torch"] == "2.4.1+cu124"
    # its pin excludes this torch: pip chooses the release with torch pinned to the installed build, from the
    # PyTorch index of torch's variant (xformers publishes one per variant); never a bare reinstall
    (cmd,) = f.fix.commands
    assert cmd == ("/opt/venv/bin/python -m pip install xformers torch==2.5.1+cu124 "
                   "--index-url https://download.pytorch.org/whl/cu124")
    assert "2.4.1+cu124" in f.fix.summary  # changing torch is said, not commanded


@needs_gcc
def test_the_fixed_install_is_green(tmp_path: Path, compat) -> None:
    # after the fix: an xformers built for this torch (its symbols defined, pins and metadata matching)
    site = build_box(tmp_path, NEW, NEW, ["torch==2.5.1"], built_for="2.5.1+cu124", ext_version="0.0.29")
    env = inspect_box(site)
    (lib,) = [x for x in env.extensions.libraries if x.distribution == "xformers"]
    assert lib.loaded is True and lib.load_error is None and lib.unresolved_count == 0
    res = judge_env(env, compat)
    assert res.status == CheckStatus.PASSED and res.findings == []


@needs_gcc
def test_pins_that_match_but_ops_that_do_not_load_still_fail(tmp_path: Path, compat) -> None:
    # the version fix applied (pins and build metadata now name this torch) but the binary is still the old one
    site = build_box(tmp_path, NEW, OLD, ["torch==2.5.1"], built_for="2.5.1+cu124", ext_version="0.0.29")
    res = judge_env(inspect_box(site), compat)
    (f,) = res.findings
    assert (f.code, f.severity) == ("packages.extension-build/does-not-load", Severity.ERROR)
    assert "build metadata" not in f.summary
    # nothing in its metadata can pick a matching wheel any more: rebuild against the installed torch
    (cmd,) = f.fix.commands
    assert cmd == ("/opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation "
                   "--no-binary xformers xformers==0.0.29")


@needs_gcc
def test_unresolved_symbols_judge_without_a_load(tmp_path: Path, compat) -> None:
    # --no-torch (or torch failed to import): the files alone say the loader will refuse it
    site = build_box(tmp_path, NEW, OLD, [], built_for=None)
    res = judge_env(inspect_box(site, "--no-extension-load"), compat)
    (f,) = res.findings
    assert (f.code, f.severity) == ("packages.extension-build/unresolved-symbols", Severity.ERROR)
    assert "--no-binary xformers" in f.fix.commands[0]


@needs_gcc
def test_cuda_runtime_of_another_major(tmp_path: Path, compat) -> None:
    site = build_box(tmp_path, NEW, NEW, ["torch==2.5.1"], built_for=None, cudart="libcudart.so.11.0")
    res = judge_env(inspect_box(site), compat)
    (f,) = res.findings
    # it loads (a libcudart.so.11.0 is there), so a warning: two CUDA runtimes in one process
    assert (f.code, f.severity) == ("packages.extension-build/cuda-runtime", Severity.WARNING)
    assert "links the CUDA 11 runtime (libcudart.so.11.0); torch is built with CUDA 12" in f.summary
    # a library that links nothing of torch is its package's choice at run time (bitsandbytes: one per CUDA major)
    bnb = ExtensionLibrary("bitsandbytes", "0.45.0", "/v/bitsandbytes/libbitsandbytes_cuda118.so",
                           needed=["libcudart.so.11.0", "libc.so.6"], torch_symbols=0)
    assert judge_env(_scan_env([bnb]), compat).status == CheckStatus.PASSED


def _scan_env(libs: List[ExtensionLibrary], builds: Optional[List[ExtensionBuild]] = None, torch_cuda="12.4"):
    env = machines.torch_env("2.5.1+cu124" if torch_cuda else "2.5.1+cpu", torch_cuda, [],
                             packages=[Package("xformers", "0.0.28.post3", requires=["torch==2.4.1"])])
    return replace(env, extensions=ExtensionScan(libraries=libs, builds=builds))


def test_a_cpu_torch_without_the_cuda_library_and_metadata_alone(compat) -> None:
    lib = ExtensionLibrary("xformers", "0.0.28.post3", "/v/xformers/_C.so", needed=["libc10.so", "libc10_cuda.so"],
                           torch_symbols=3, unresolved_count=0, unresolved_symbols=[],
                           symbols_checked_against=["libc10.so", "libtorch_cpu.so"])
    (f,) = judge_env(_scan_env([lib], torch_cuda=None), compat).findings
    assert f.code == "packages.extension-build/torch-library" and f.severity == Severity.ERROR
    assert "links libc10_cuda.so, which the installed torch does not ship (a CUDA build's library" in f.summary
    # metadata alone (nothing loaded, nothing unresolved): a warning; a stable-ABI build that loads: nothing
    meta = [ExtensionBuild("xformers", "/v/xformers/cpp_lib.json", torch="2.4.1+cu124")]
    ok = replace(lib, needed=["libc10.so"])
    (w,) = judge_env(_scan_env([ok], meta), compat).findings
    assert (w.code, w.severity) == ("packages.extension-build/built-for", Severity.WARNING)
    assert judge_env(_scan_env([replace(ok, loaded=True)], meta), compat).status == CheckStatus.PASSED


def test_libraries_that_say_the_same_are_one_line_naming_every_file(compat) -> None:
    old_abi = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"  # const std::string& of the pre-C++11 ABI
    libs = [ExtensionLibrary("xformers", "0.0.28.post3", f"/v/xformers/_op{k}.so", needed=["libc10.so"],
                             torch_symbols=1, unresolved_count=1, unresolved_symbols=[old_abi],
                             symbols_checked_against=["libc10.so"], loaded=False,
                             load_error=f"/v/xformers/_op{k}.so: undefined symbol: {old_abi}") for k in range(10)]
    env = _scan_env(libs)
    env = replace(env, torch=replace(env.torch, cxx11_abi=True))
    (f,) = judge_env(env, compat).findings
    assert f.summary == (f"xformers 0.0.28.post3 is not built for torch 2.5.1+cu124: 10 libraries (_op0.so ... "
                         f"_op9.so) do not load: undefined symbol: {old_abi}; a pre-C++11-ABI build (std::string "
                         "mangled Ss) next to a torch built with the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1)")
    assert f.items == [f"_op{k}.so" for k in range(10)]
    assert len([e for e in f.evidence if e.path.endswith(".load_error")]) == 10


def test_skipped_without_link_facts(compat) -> None:
    old = ExtensionLibrary("xformers", "0.0.28.post3", "/v/xformers/_C.so", fatbins=0)
    res = judge_env(_scan_env([old]), compat)
    assert res.status == CheckStatus.SKIPPED and "older envdoctor" in res.reason
    none = judge_env(replace(_scan_env([]), extensions=None), compat)
    assert none.status == CheckStatus.SKIPPED and "no compiled extension" in none.reason
    # nothing installed to judge is "did not apply", not "facts unknown" (the older-facts case above is unknown)
    assert none.not_applicable == "no torch extensions" and res.not_applicable is None


def _deepspeed_env(built_for: str, compiled, torch="2.13.0+cpu"):
    env = machines.torch_env(torch, None, [], packages=[Package("deepspeed", "0.19.8", requires=["torch"])])
    build = ExtensionBuild("deepspeed", "/v/deepspeed/git_version_info_installed.py", torch=built_for, cuda="0.0",
                           compiled=compiled)
    return replace(env, extensions=ExtensionScan(libraries=[], builds=[build]))


def test_deepspeed_metadata_is_judged_at_its_precision_and_only_for_what_it_compiled(compat) -> None:
    # issue 38: deepspeed records torch's major.minor ("2.13"), which is torch 2.13.0; a wheel that compiled no op
    # JIT-compiles each against the running torch, so its metadata binds nothing
    assert judge_env(_deepspeed_env("2.13", []), compat).status == CheckStatus.PASSED
    assert judge_env(_deepspeed_env("2.13", ["cpu_adam"]), compat).status == CheckStatus.PASSED
    assert judge_env(_deepspeed_env("2.12", []), compat).status == CheckStatus.PASSED
    assert judge_env(_deepspeed_env("0.0", None), compat).status == CheckStatus.PASSED  # built without torch
    (f,) = judge_env(_deepspeed_env("2.12", ["cpu_adam", "fused_adam"]), compat).findings
    assert (f.code, f.severity) == ("packages.extension-build/built-for", Severity.WARNING)
    assert f.summary == ("deepspeed 0.19.8 is not built for torch 2.13.0+cpu: its build metadata "
                         "(git_version_info_installed.py) says torch 2.12 for its pre-compiled cpu_adam, fused_adam")
    # a file that does not say what it compiled is judged on its torch alone (xformers' cpp_lib.json)
    assert judge_env(_deepspeed_env("2.12", None), compat).findings


def test_payload_reads_what_deepspeed_compiled(tmp_path: Path) -> None:
    from envdoctor._payload.extension_build import read_build_info

    # the file deepspeed's setup.py writes (version, git_hash, git_branch, installed_ops, accelerator_name,
    # torch_info), here for a pip install that compiled no op
    pkg = tmp_path / "deepspeed"
    pkg.mkdir()
    (pkg / "git_version_info_installed.py").write_text(
        "version='0.19.8'\ngit_hash='unknown'\ngit_branch='unknown'\n"
        "installed_ops={'async_io': False, 'fused_adam': False, 'cpu_adam': False}\naccelerator_name='cpu'\n"
        "torch_info={'version': '2.13', 'bf16_support': False, 'cuda_version': '0.0', 'nccl_version': '0.0', "
        "'hip_version': '0.0'}\n")
    info = read_build_info("deepspeed", str(tmp_path))
    assert (info["torch"], info["cuda"], info["compiled"]) == ("2.13", "0.0", [])
    (pkg / "git_version_info_installed.py").write_text("installed_ops={'cpu_adam': 1, 'fused_adam': False}\n"
                                                       "torch_info={'version': '2.3', 'cuda_version': '12.1'}\n")
    assert read_build_info("deepspeed", str(tmp_path))["compiled"] == ["cpu_adam"]
