"""Tests of the payload folder envdoctor/_payload/: run as a script in real interpreters, with a fake torch, and its pure helpers."""

from __future__ import annotations

import ast
import json
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pytest

from envdoctor._payload import common, dists, elf, libraries, tasks
from envdoctor.probes import package_variants as pv

PAYLOAD = Path(tasks.__file__).resolve().parent  # the payload folder, run as a script


def run(args: Sequence[str] = (), python: str = sys.executable, pythonpath: Optional[Path] = None,
        extra_env: Optional[Dict[str, str]] = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.update(extra_env or {})
    return subprocess.run([python, str(PAYLOAD), *args], capture_output=True, text=True, timeout=timeout, env=env)


def envelope(proc: subprocess.CompletedProcess) -> Dict[str, Any]:
    """The payload's stdout is one final JSON object, optionally preceded by checkpoint objects (one just before
    `import torch`, one when the files read while it runs are in), so a crash there still reports what was
    read; nothing else."""
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    objs = [json.loads(ln) for ln in lines]
    checkpoints = [o for o in objs[:-1] if o.get("checkpoint") is True]
    assert len(lines) >= 1 and len(checkpoints) == len(objs) - 1 <= 2, \
        f"stdout is not [checkpoints] + one final JSON line: {proc.stdout!r}\nstderr: {proc.stderr}"
    data = objs[-1]
    assert "checkpoint" not in data
    assert data["envdoctor_payload"] == common.PAYLOAD_VERSION
    return data


# --------------------------------------------------------------------------- the current interpreter


def test_inspect_current_interpreter_without_torch() -> None:
    proc = run()
    data = envelope(proc)
    assert proc.returncode == 0
    assert data["ok"] is True and data["error"] is None and data["task"] == "inspect"
    r = data["result"]
    assert r["python_version"] == ".".join(str(x) for x in sys.version_info[:3])
    assert r["implementation"] == platform.python_implementation()
    assert os.path.realpath(r["executable"]) == os.path.realpath(sys.executable)
    assert r["prefix"] == sys.prefix
    assert isinstance(r["is_venv"], bool) and isinstance(r["is_conda"], bool)
    assert set(tasks.ENV_VARS) <= set(r["env"])
    # torch is not installed here: an absent fact, not an error
    assert r["torch"] is None and r["torch_inspected"] is True
    names = {p["name"] for p in r["packages"]}
    assert "pytest" in names
    pytest_rec = next(p for p in r["packages"] if p["name"] == "pytest")
    assert set(pytest_rec) == {"name", "version"}  # not a stack package: name + version only
    # neither the payload folder (tasks, bench, elf...) nor envdoctor/ may shadow top-level modules
    on_path = [os.path.abspath(p) for p in r["sys_path"] if p]
    assert str(PAYLOAD) not in on_path and str(PAYLOAD.parent) not in on_path


def test_no_torch_flag() -> None:
    data = envelope(run(["--no-torch"]))
    assert data["ok"] is True
    assert data["result"]["torch"] is None and data["result"]["torch_inspected"] is False


def test_unknown_task_and_bad_arguments_still_answer_json() -> None:
    proc = run(["--task", "nope"])
    data = envelope(proc)
    assert proc.returncode == 2 and data["ok"] is False and "unknown task 'nope'" in data["error"]
    proc = run(["--bogus-flag"])
    data = envelope(proc)
    assert data["ok"] is False and "bad arguments" in data["error"]


def _other_pythons() -> List[str]:
    found = []
    for name in ("python3.8", "python3.9"):
        exe = shutil.which(name)
        if exe and subprocess.run([exe, "-c", "pass"], capture_output=True).returncode == 0:
            found.append(exe)
    root = Path(os.path.expanduser("~/.pyenv/versions"))
    if root.is_dir():
        for d in sorted(root.glob("3.8*")):
            if (d / "bin" / "python").is_file():
                found.append(str(d / "bin" / "python"))
    return found[:1]


def test_runs_on_python_38() -> None:
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no Python 3.8 on this machine")
    data = envelope(run(python=pythons[0]))
    assert data["ok"] is True, data
    assert data["result"]["python_version"].startswith("3.8")


def test_the_payload_runs_without_envdoctor_importable(tmp_path: Path) -> None:
    """The target has no envdoctor: a copy of the folder alone, run with -I (no site, no PYTHONPATH, no cwd),
    still answers, and under a name that shadows nothing (its modules are never top-level)."""
    copy = tmp_path / "somewhere" / "payload"
    shutil.copytree(PAYLOAD, copy, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-I", str(copy), "--task", "inspect", "--no-torch"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    data = envelope(proc)
    assert data["ok"] is True, proc.stderr
    assert str(copy) not in data["result"]["sys_path"]
    probe = ("import runpy, sys; sys.argv = ['x', '--task', 'nope']; "
             f"runpy.run_path({str(copy)!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    assert envelope(proc)["error"].startswith("unknown task 'nope'")


PAYLOAD_MODULES = sorted(PAYLOAD.glob("*.py"))
BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def _annotations(tree: ast.AST) -> List[ast.AST]:
    out: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs + [node.args.vararg, node.args.kwarg]
            out += [a.annotation for a in args if a is not None and a.annotation is not None]
            out += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            out.append(node.annotation)
    return out


@pytest.mark.parametrize("path", PAYLOAD_MODULES, ids=lambda p: p.name)
def test_every_payload_module_is_python38_and_stdlib_only(path: Path) -> None:
    """Each module runs in the target (3.8+): 3.8 grammar, annotations that 3.8 evaluates (no list[str], no X | Y,
    no postponed evaluation), imports of the stdlib or of sibling modules only, torch only inside functions."""
    src = path.read_text()
    tree = ast.parse(src, feature_version=(3, 8))
    siblings = {p.stem for p in PAYLOAD_MODULES}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            assert node.level == 1 and (node.module or "").split(".")[0] in siblings, ast.dump(node)
            continue
        if isinstance(node, ast.ImportFrom):
            assert node.module != "__future__", f"{path.name}: postponed annotations are evaluated late only on 3.8+"
            roots = [(node.module or "").split(".")[0]]
        elif isinstance(node, ast.Import):
            roots = [a.name.split(".")[0] for a in node.names]
        else:
            continue
        for root in roots:
            top = node in tree.body
            allowed = set(sys.stdlib_module_names) | (set() if top else {"torch"})
            assert root in allowed, f"{path.name} line {node.lineno}: import {root}"
    for ann in _annotations(tree):
        for sub in ast.walk(ann):
            assert not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)
                        and sub.value.id in BUILTIN_GENERICS), f"{path.name} line {sub.lineno}: {ast.unparse(ann)}"
            assert not (isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.BitOr)), \
                f"{path.name} line {sub.lineno}: {ast.unparse(ann)}"


def test_the_grammar_check_catches_what_38_cannot_run(tmp_path: Path) -> None:
    """The check above fails on the things it is there for (a walrus is 3.8; a match statement is not)."""
    with pytest.raises(SyntaxError):
        ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 8))
    bad = ast.parse("def f(x: list[str]) -> int | None:\n    import numpy\n")
    anns = _annotations(bad)
    assert any(isinstance(s, ast.Subscript) for a in anns for s in ast.walk(a))
    assert any(isinstance(s, ast.BinOp) for a in anns for s in ast.walk(a))


# --------------------------------------------------------------------------- a fake torch

FAKE_TORCH = '''
import os, sys, time, types, warnings
MODE = os.environ.get("FAKE_TORCH_MODE", "nodriver")
print("torch says hello on stdout")
os.write(1, b"raw write to fd 1\\n")
warnings.warn("Failed to initialize NumPy: _ARRAY_API not found", UserWarning)
warnings.warn("old api", DeprecationWarning)
if MODE == "raise":
    raise ImportError("libcudnn.so.9: cannot open shared object file: No such file or directory")
if MODE == "hang":
    time.sleep(60)
if os.environ.get("FAKE_TORCH_SAY_READS"):  # whether this process had read the distributions before the import
    _dists = sys.modules.get("_envdoctor_payload.dists")
    sys.stderr.write("distributions read here before the import: %s\\n" % (
        getattr(_dists, "_DISTRIBUTIONS", None) is not None))
__version__ = "9.9.9+cu999"
version = types.SimpleNamespace(cuda="99.9", hip=None, git_version="abc123", debug=False)
class _C:
    _GLIBCXX_USE_CXX11_ABI = True
    @staticmethod
    def _cuda_getArchFlags():
        return "sm_80 sm_90 compute_90"
def _cudnn_version():
    raise RuntimeError("cuDNN version incompatibility: PyTorch was compiled against (9, 1, 0)")
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=_cudnn_version))
class _Props:
    name = "NVIDIA Fake GPU"
    major, minor = 12, 0
    total_memory = 34359738368
    pci_domain_id, pci_bus_id, pci_device_id = 0, 0x41, 0
class cuda:
    nccl = types.SimpleNamespace(version=lambda: (2, 21, 5))
    @staticmethod
    def can_device_access_peer(i, j):
        return False  # a GeForce pair: no peer access over PCIe
    @staticmethod
    def is_available():
        if MODE == "available":
            return True
        warnings.warn("CUDA initialization: Found no NVIDIA driver on your system. (Triggered internally)")
        return False
    @staticmethod
    def _lazy_init():
        if MODE == "available":
            warnings.warn("NVIDIA Fake GPU with CUDA capability sm_120 is not compatible with the current PyTorch installation.")
            return
        if MODE == "warnonly":
            return
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU")
    @staticmethod
    def device_count():
        if MODE == "available":
            cuda._lazy_init()
            return 2
        return 0
    @staticmethod
    def get_device_properties(i):
        return _Props()
    @staticmethod
    def get_arch_list():
        return []
'''


@pytest.fixture()
def fake_torch(tmp_path: Path) -> Path:
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(FAKE_TORCH)
    return tmp_path


def test_fake_torch_without_driver(fake_torch: Path) -> None:
    proc = run(pythonpath=fake_torch)
    data = envelope(proc)  # torch's prints went to stderr
    assert "torch says hello on stdout" in proc.stderr and "raw write to fd 1" in proc.stderr
    assert data["ok"] is True
    t = data["result"]["torch"]
    assert t["version"] == "9.9.9+cu999" and t["cuda"] == "99.9" and t["git_version"] == "abc123"
    assert t["debug"] is False and t["cxx11_abi"] is True
    assert t["arch_list"] == ["sm_80", "sm_90", "compute_90"]  # from the build, even without a driver
    assert t["cuda_available"] is False and t["device_count"] == 0 and t["devices"] == []
    assert t["cuda_init_error"].startswith("Found no NVIDIA driver on your system")
    assert t["nccl_version"] == "2.21.5"
    assert t["cudnn_version"] is None
    assert any("cuDNN version incompatibility" in e for e in data["result"]["errors"])
    assert "Failed to initialize NumPy: _ARRAY_API not found" in t["warnings"]
    assert not any("old api" in w for w in t["warnings"])  # DeprecationWarnings are noise
    assert "import_error" not in t  # set only when `import torch` raised
    assert t["import_seconds"] >= 0


def test_fake_torch_init_error_from_warning(fake_torch: Path) -> None:
    data = envelope(run(pythonpath=fake_torch, extra_env={"FAKE_TORCH_MODE": "warnonly"}))
    t = data["result"]["torch"]
    assert t["cuda_init_error"].startswith("CUDA initialization: Found no NVIDIA driver")


def test_fake_torch_available_with_devices_and_arch_warning(fake_torch: Path) -> None:
    data = envelope(run(pythonpath=fake_torch, extra_env={"FAKE_TORCH_MODE": "available"}))
    t = data["result"]["torch"]
    assert t["cuda_available"] is True and t["device_count"] == 2
    assert t["devices"][1] == {"index": 1, "name": "NVIDIA Fake GPU", "capability": "12.0",
                               "total_memory_bytes": 34359738368, "pci_bus_id": "0000:41:00",
                               "peer_access": []}  # torch.cuda.can_device_access_peer(1, 0) is False
    assert t.get("cuda_init_error") is None
    assert any("sm_120 is not compatible" in w for w in t["warnings"])


def test_fake_torch_import_error(fake_torch: Path) -> None:
    data = envelope(run(pythonpath=fake_torch, extra_env={"FAKE_TORCH_MODE": "raise"}))
    assert data["ok"] is True  # the interpreter was inspected; torch failing is the fact
    t = data["result"]["torch"]
    assert t["import_error"] == "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    assert "version" not in t
    assert data["result"]["packages"] is not None


def test_fake_torch_hang_hits_the_deadline(fake_torch: Path) -> None:
    proc = run(["--deadline-s", "1.5"], pythonpath=fake_torch, extra_env={"FAKE_TORCH_MODE": "hang"}, timeout=30)
    data = envelope(proc)
    assert proc.returncode == 3
    assert data["ok"] is False and data["timed_out"] is True
    assert data["stage"] == "importing torch"
    assert data["error"] == "timed out after 1.5 s while importing torch"
    # what was collected before the hang still comes back
    assert data["result"]["python_version"] and isinstance(data["result"]["packages"], list)


# --------------------------------------------------------------------------- ELF and variants


def make_elf(path: Path, needed: Sequence[str], is64: bool = True) -> Path:
    """A minimal ELF shared object: one PT_LOAD, one PT_DYNAMIC with DT_NEEDED/DT_STRTAB/DT_STRSZ."""
    strtab = b"\0"
    offsets = []
    for name in needed:
        offsets.append(len(strtab))
        strtab += name.encode() + b"\0"
    ehsize, phentsize = (64, 56) if is64 else (52, 32)
    dyn_entry = 16 if is64 else 8
    dyn_off = ehsize + 2 * phentsize
    dyn_size = dyn_entry * (len(needed) + 3)
    str_off = dyn_off + dyn_size
    total = str_off + len(strtab)
    base = 0x400000
    dfmt = "<qQ" if is64 else "<iI"
    dyn = b"".join(struct.pack(dfmt, 1, off) for off in offsets)
    dyn += struct.pack(dfmt, 5, base + str_off) + struct.pack(dfmt, 10, len(strtab)) + struct.pack(dfmt, 0, 0)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1, 1, 0]) + b"\0" * 8
    if is64:
        eh = struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, ehsize, 0, 0, ehsize, phentsize, 2, 64, 0, 0)
        ph = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, total, total, 0x1000)
        ph += struct.pack("<IIQQQQQQ", 2, 6, dyn_off, base + dyn_off, base + dyn_off, dyn_size, dyn_size, 8)
    else:
        eh = struct.pack("<HHIIIIIHHHHHH", 3, 3, 1, 0, ehsize, 0, 0, ehsize, phentsize, 2, 40, 0, 0)
        ph = struct.pack("<IIIIIIII", 1, 0, base, base, total, total, 5, 0x1000)
        ph += struct.pack("<IIIIIIII", 2, dyn_off, base + dyn_off, base + dyn_off, dyn_size, dyn_size, 6, 4)
    data = ident + eh + ph + dyn + strtab
    assert len(data) == total
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("is64", [True, False])
def test_elf_needed_reads_dt_needed(tmp_path: Path, is64: bool) -> None:
    so = make_elf(tmp_path / "x.so", ["libc10.so", "libcudart.so.12", "libc.so.6"], is64=is64)
    assert elf.elf_needed(str(so)) == ["libc10.so", "libcudart.so.12", "libc.so.6"]


def test_elf_needed_not_elf_and_truncated(tmp_path: Path) -> None:
    (tmp_path / "a.so").write_bytes(b"not an elf at all")
    (tmp_path / "b.so").write_bytes(b"\x7fELF\x02\x01\x01")
    assert elf.elf_needed(str(tmp_path / "a.so")) is None
    assert elf.elf_needed(str(tmp_path / "b.so")) is None
    assert elf.elf_needed(str(tmp_path / "missing.so")) is None


def test_elf_needed_matches_readelf_on_a_real_library() -> None:
    readelf = shutil.which("readelf")
    lib = Path(sys.executable).resolve()
    if readelf is None:
        pytest.skip("readelf not installed")
    out = subprocess.run([readelf, "-d", str(lib)], capture_output=True, text=True).stdout
    expected = [ln.split("[", 1)[1].rstrip("]") for ln in out.splitlines() if "(NEEDED)" in ln]
    assert elf.elf_needed(str(lib)) == expected


@pytest.mark.parametrize(
    "libs, variant",
    [
        (["libc10.so", "libtorch.so", "libcudart.so.13", "libc10_cuda.so"], "cuda13"),
        (["libcudart.faf08d9a.so.13"], "cuda13"),  # auditwheel-renamed vendored copy
        (["libcudart-1b201d85.so.12"], "cuda12"),
        (["libcudart.so.12.4"], "cu124"),
        (["libc10.so", "libtorch_cuda.so"], "cuda"),
        (["libc10.so", "libtorch_cpu.so", "libstdc++.so.6"], "cpu"),
        (["libamdhip64.so.6", "libc10.so"], "rocm"),
        (["libstdc++.so.6"], None),
    ],
)
def test_variant_from_libs(libs: List[str], variant: Optional[str]) -> None:
    assert pv.variant_from_libs(libs)[0] == variant


@pytest.mark.parametrize(
    "version, variant",
    [("2.5.1+cu124", "cu124"), ("2.13.0+cpu", "cpu"), ("2.4.0+rocm6.1", "rocm6.1"), ("0.20.1+cu121.post1", "cu121"),
     ("2.5.1", None), ("1.0+local", None), ("2.6.0+xpu", "xpu")],
)
def test_variant_from_version(version: str, variant: Optional[str]) -> None:
    assert pv.variant_from_version(version) == variant


def test_variant_from_requires() -> None:
    reqs = ["filelock", 'nvidia-cuda-runtime-cu12==12.4.127; platform_system == "Linux"']
    assert pv.variant_from_requires(reqs) == ("cu124", "nvidia-cuda-runtime-cu12==12.4.127")
    reqs = ['cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"']
    assert pv.variant_from_requires(reqs)[0] == "cu130"
    assert pv.variant_from_requires(["numpy"]) == (None, None)


def _fake_dist(site: Path, name: str, version: str, files: Dict[str, bytes], requires: Sequence[str] = ()) -> None:
    info = site / f"{name}-{version.split('+')[0]}.dist-info"
    info.mkdir(parents=True)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    (info / "METADATA").write_text(meta)
    (info / "INSTALLER").write_text("pip\n")
    record = [f"{info.name}/METADATA,,", f"{info.name}/INSTALLER,,"]
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        record.append(f"{rel},,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def test_torchvision_variant_from_compiled_files(tmp_path: Path) -> None:
    """The PyPI torchvision 0.28.0 case: no local tag in the metadata, a CUDA build by its linkage."""
    site = tmp_path / "site"
    so = make_elf(tmp_path / "build" / "_C.so", ["libc10.so", "libtorch.so", "libcudart.so.13", "libc10_cuda.so",
                                                 "libtorch_cuda.so"])
    img = make_elf(tmp_path / "build" / "image.so", ["libcudart.faf08d9a.so.13", "libjpeg.5980e1e3.so.8"])
    _fake_dist(site, "torchvision", "0.28.0", {
        "torchvision/__init__.py": b"",
        "torchvision/_C.so": so.read_bytes(),
        "torchvision/image.so": img.read_bytes(),
        "torchvision.libs/libcudart.faf08d9a.so.13": b"\x7fELF junk",
    }, requires=["torch (==2.13.0)"])
    # a compiled file that is not ELF at all (a Mach-O, say): found by byte search
    _fake_dist(site, "xformers", "0.0.28", {"xformers/_C.so": b"\xcf\xfa\xed\xfe....libcudart.so.12\0...."})
    _fake_dist(site, "apex", "0.1", {"apex/amp_C.so": make_elf(tmp_path / "b2" / "amp.so",
                                                               ["libc10.so", "libtorch_cpu.so"]).read_bytes()})
    data = envelope(run(["--no-torch"], pythonpath=site))
    raw = {p["name"]: p for p in data["result"]["packages"]}
    # the payload reports the linkage; envdoctor's side judges the variant from it
    assert "variant" not in raw["torchvision"]
    assert raw["torchvision"]["variant_inputs"]["linked"]["libcudart.so.13"] == "torchvision/_C.so"
    pkgs = {name: pv.with_variant(p) for name, p in raw.items()}
    tv = pkgs["torchvision"]
    assert tv["variant"] == "cuda13"
    assert "libcudart.so.13 (torchvision/_C.so)" in tv["variant_evidence"]
    assert "major version only" in tv["variant_evidence"]
    assert tv["requires"] == ["torch (==2.13.0)"] and tv["installer"] == "pip"
    assert tv["location"] == str(site)
    assert pkgs["xformers"]["variant"] == "cuda12"
    assert pkgs["apex"]["variant"] == "cpu"


def test_version_py_local_tag_wins_over_linkage(tmp_path: Path) -> None:
    site = tmp_path / "site"
    so = make_elf(tmp_path / "b" / "_C.so", ["libcudart.so.12", "libtorch_cuda.so"])
    _fake_dist(site, "torchvision", "0.20.1", {
        "torchvision/version.py": b"__version__ = '0.20.1+cu124'\ngit_version = 'x'\n",
        "torchvision/_C.so": so.read_bytes(),
    })
    def package_variant(key: str, version: str, location: Optional[str], requires: List[str], files: List[str]):
        return pv.package_variant(key, version, requires, dists.package_evidence(key, location, files))

    variant, evidence = package_variant(
        "torchvision", "0.20.1", str(site), [], ["torchvision/version.py", "torchvision/_C.so"])
    assert variant == "cu124"
    assert evidence.startswith("torchvision/version.py: __version__ = '0.20.1+cu124'")
    # torch without a local tag (conda builds): torch/version.py's cuda = '12.4'
    _fake_dist(site, "torch", "2.5.1", {"torch/version.py": b"__version__ = '2.5.1'\ncuda: Optional[str] = '12.4'\n"})
    assert package_variant("torch", "2.5.1", str(site), [], ["torch/version.py"])[0] == "cu124"
    # the metadata's own local tag is the first and cheapest answer
    assert package_variant("torch", "2.5.1+cu121", None, [], []) == ("cu121", "version local tag: 2.5.1+cu121")


# --------------------------------------------------------------------------- loaded libraries


def test_loaded_libraries_from_maps(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    sp = "/venv/lib/python3.11/site-packages"
    lines = [
        f"7f00-7f01 r--p 00000000 08:01 1 {sp}/nvidia/cudnn/lib/libcudnn.so.9",
        f"7f01-7f02 r-xp 00001000 08:01 1 {sp}/nvidia/cudnn/lib/libcudnn.so.9",  # same file, second segment
        f"7f02-7f03 r--p 00000000 08:01 2 {sp}/torch/lib/libcudart-d0da41ae.so.11.0",
        "7f03-7f04 r--p 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14",
        "7f04-7f05 r--p 00000000 08:01 4 /opt/conda/lib/libnccl.so.2.21.5",
        "7f05-7f06 r--p 00000000 08:01 5 /usr/local/cuda/lib64/libcublasLt.so.12.4.5.8 (deleted)",
        "7f06-7f07 r--p 00000000 08:01 6 /usr/lib/libcudadebugger.so.1",  # not one we report
        "7f07-7f08 rw-p 00000000 00:00 0 [heap]",
        "7f08-7f09 r--p 00000000 08:01 7 /usr/lib/libc.so.6",
    ]
    maps.write_text("\n".join(lines) + "\n")
    owners = {f"{sp}/nvidia/cudnn/lib/libcudnn.so.9": ("nvidia-cudnn-cu12", "9.1.0.70")}
    libs, err = libraries.loaded_libraries(["/opt/conda"], owners, maps_path=str(maps))
    assert err is None
    got = [(x["name"], x["version"], x["origin"]) for x in libs]
    assert got == [
        ("cudnn", "9.1.0.70", "wheel"),
        ("cudart", "11.0", "torch"),
        ("cuda", "550.54.14", "system"),
        ("nccl", "2.21.5", "conda"),
        ("cublas", "12.4.5.8", "system"),
    ]
    assert libs[4]["path"] == "/usr/local/cuda/lib64/libcublasLt.so.12.4.5.8"
    assert libraries.loaded_libraries([], maps_path=str(tmp_path / "nope"))[1].startswith("cannot read")


def test_shared_library_files_names_the_wheel_whose_copy_is_on_disk(tmp_path: Path) -> None:
    """Two NVIDIA wheels unpack the same library (nvidia-cudnn-cu12 and -cu13 both ship nvidia/cudnn/lib/
    libcudnn.so.9): the payload lists the file with both claims, read from RECORD, and names the one whose recorded
    size the file on disk has. The same answer importlib.metadata's dist.files gives (the reader it replaced)."""
    site = tmp_path / "site"
    lib = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"\x7fELF" + b"\0" * 116)  # 120 bytes: the cu12 wheel's copy, installed last
    for name, version, size in (("nvidia-cudnn-cu13", "9.24.0.43", 100), ("nvidia-cudnn-cu12", "9.3.0.75", 120)):
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
        (info / "RECORD").write_text(f"nvidia/cudnn/lib/libcudnn.so.9,sha256=x,{size}\n"
                                     f"nvidia/cudnn/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    data = envelope(run(["--no-torch"], pythonpath=site))
    (shared,) = data["result"]["shared_library_files"]
    assert shared["path"] == os.path.realpath(lib) and shared["size"] == 120
    assert shared["owner"] == "nvidia-cudnn-cu12"
    assert sorted((c["name"], c["version"], c["size"]) for c in shared["claimants"]) == [
        ("nvidia-cudnn-cu12", "9.3.0.75", 120), ("nvidia-cudnn-cu13", "9.24.0.43", 100)]
    from importlib import metadata

    dists = [d for d in metadata.distributions(path=[str(site)])]
    by_dist = sorted((d.metadata["Name"], d.version, f.size) for d in dists for f in d.files or []
                     if str(f).endswith(".so.9"))
    assert by_dist == sorted((c["name"], c["version"], c["size"]) for c in shared["claimants"])


# --------------------------------------------------------------------------- the forked file reader


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not k.endswith(("seconds", "_s"))}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_the_files_are_read_beside_the_import_with_the_same_answer(fake_torch: Path) -> None:
    # issue 38: a forked reader reads the files while this process imports torch (reader.py); --sequential reads
    # them first, in this process. Both answer the same, and both checkpoint the files with the stage "importing
    # torch" before anything of the import is known (a crash inside it still leaves them)
    env = {"FAKE_TORCH_MODE": "available", "FAKE_TORCH_SAY_READS": "1"}
    beside = run(pythonpath=fake_torch, extra_env=env)
    first = run(["--sequential"], pythonpath=fake_torch, extra_env=env)
    a, b = envelope(beside), envelope(first)
    assert a["ok"] and b["ok"] and a["result"]["packages"] and a["result"]["torch"]["version"] == "9.9.9+cu999"
    assert _timeless(a["result"]) == _timeless(b["result"])
    assert "distributions read here before the import: False" in beside.stderr
    assert "distributions read here before the import: True" in first.stderr
    for proc in (beside, first):
        ckpt = json.loads([ln for ln in proc.stdout.splitlines() if ln.strip()][0])
        assert ckpt.get("checkpoint") is True and ckpt["stage"] == "importing torch"
        assert ckpt["result"]["packages"] and ckpt["result"]["torch_build"] and "torch" not in ckpt["result"]


def test_a_hang_in_the_reader_is_named_by_its_stage_and_the_import_is_kept(fake_torch: Path, tmp_path: Path) -> None:
    # a distribution whose METADATA never ends (a FIFO: a hung network mount reads the same): the reader hangs
    # on it while torch imports here; the deadline's answer names the reader's stage, has the interpreter facts
    # the reader sent before it and the import done meanwhile. Read first (--sequential), torch is never imported
    site = tmp_path / "site"
    info = site / "stuck-1.0.dist-info"
    info.mkdir(parents=True)
    os.mkfifo(info / "METADATA")
    path = f"{fake_torch}{os.pathsep}{site}"
    beside = run(["--deadline-s", "3"], pythonpath=path, extra_env={"FAKE_TORCH_MODE": "available"}, timeout=60)
    data = envelope(beside)
    assert beside.returncode == 3 and data["timed_out"] is True
    assert data["stage"] == "reading installed distributions and torch's files"
    assert data["result"]["python_version"] and data["result"]["site_packages"] is not None
    assert data["result"]["torch"]["version"] == "9.9.9+cu999" and "packages" not in data["result"]
    first = envelope(run(["--deadline-s", "3", "--sequential"], pythonpath=path,
                         extra_env={"FAKE_TORCH_MODE": "available"}, timeout=60))
    assert first["stage"] == "reading installed distributions and torch's files" and "torch" not in first["result"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="finds the reader through /proc (Linux)")
def test_a_reader_that_dies_leaves_the_reads_to_this_process(fake_torch: Path, tmp_path: Path) -> None:
    # the reader killed while it hangs on a FIFO: the payload's process reads the files itself after the import
    # (said in errors), and the answer is whole once the FIFO is fed
    site = tmp_path / "site"
    info = site / "stuck-1.0.dist-info"
    info.mkdir(parents=True)
    fifo = info / "METADATA"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=f"{fake_torch}{os.pathsep}{site}", FAKE_TORCH_MODE="available")
    proc = subprocess.Popen([sys.executable, str(PAYLOAD), "--task", "inspect", "--deadline-s", "50"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        reader = None
        for _ in range(400):  # the launcher -> its worker -> the reader, blocked opening the FIFO
            worker = _children(proc.pid)
            reader = _children(worker[0])[0] if worker and _children(worker[0]) else None
            if reader and _blocked_on_fifo(reader):
                break
            time.sleep(0.05)
        assert reader is not None
        os.kill(reader, signal.SIGKILL)
        end = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < end:  # feed the worker's own reads after the import
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: nobody reads it now
                time.sleep(0.02)
                continue
            try:
                os.write(fd, b"Metadata-Version: 2.1\nName: stuck\nVersion: 1.0\n")
            except OSError:  # EPIPE: that read ended meanwhile (the one before this, seeing its end)
                pass
            os.close(fd)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    data = json.loads(out.decode().splitlines()[-1])
    assert data["ok"] is True, err
    r = data["result"]
    assert any(e.startswith("reading the files in a child process: it ended without answering") for e in r["errors"])
    assert {"name": "stuck", "version": "1.0"} in r["packages"] and r["torch"]["version"] == "9.9.9+cu999"
    assert r["torch_build"] and "pth_exec" in r


def _children(pid: int) -> List[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _blocked_on_fifo(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read() in ("wait_for_partner", "pipe_read", "fifo_open")
    except OSError:
        return False


def _dist_info(root, name, version, record=True):
    d = root / f"{name}-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (d / "INSTALLER").write_text("pip\n", encoding="utf-8")
    if record:
        (d / "RECORD").write_text(f"{name}/__init__.py,,\n{name}/_c.so,sha256=x,12\n", encoding="utf-8")


def test_distributions_are_found_without_importlib_metadata_as_it_finds_them(tmp_path, monkeypatch):
    """The payload lists dist-info directories itself (importing importlib.metadata was a third of a --no-torch
    payload): the same distributions, in the same order, with the same texts and locations; anything not plain
    (an egg-info, a zip or an egg on sys.path, a dist-info without RECORD) is left to importlib.metadata."""
    import zipfile
    from importlib import metadata

    from envdoctor._payload import dists as D

    first, second = tmp_path / "a", tmp_path / "b"
    _dist_info(first, "alpha", "1.0")
    _dist_info(first, "beta", "2.0")
    _dist_info(second, "alpha", "0.9")  # shadowed by the first entry's
    monkeypatch.setattr(sys, "path", [str(first) + "/", str(tmp_path / "absent"), str(second) + "//"])
    light = D._light_distributions()
    heavy = list(metadata.distributions())
    assert light is not None and len(light) == len(heavy) == 3

    def view(d):
        return (d.read_text("METADATA"), d.read_text("INSTALLER"), d.read_text("RECORD"), d.read_text("nope"),
                str(d.locate_file("")))

    assert [view(d) for d in light] == [view(d) for d in heavy]
    assert sorted(view(d)[4] for d in light) == [str(first), str(first), str(second)]
    for plain_no in ("egg", "zip", "no-record"):
        other = tmp_path / plain_no
        if plain_no == "egg":
            (other / "gamma.egg-info").mkdir(parents=True)
            entry = str(other)
        elif plain_no == "zip":
            other.mkdir()
            entry = str(other / "x.zip")
            with zipfile.ZipFile(entry, "w") as z:
                z.writestr("delta-1.dist-info/METADATA", "Name: delta\nVersion: 1\n")
        else:
            _dist_info(other, "epsilon", "3", record=False)
            entry = str(other)
        monkeypatch.setattr(sys, "path", [str(first), entry])
        assert D._light_distributions() is None, plain_no


def test_compiled_lines_are_the_lines_naming_a_library_each_once() -> None:
    # the lines a RECORD can name a library on (dists._dist_files_sized parses only these), found by token
    record = ('torch/__init__.py,sha256=a,10\n'
              'torch/lib/libc10.so,sha256=b,20\n'
              'torch/_C.cpython-311-x86_64-linux-gnu.so,sha256=c,30\n'
              'torch/x.so.sym/y.so,,\n'  # two tokens, one line
              'torch/x.socket.py,,\n'  # ".so" inside a name: kept, _is_compiled drops it
              'a.pyd,,\r\n'
              '"b,c.dylib",,\n'
              'last.so.12')  # no newline at the end
    assert dists._compiled_lines(record) == [
        'torch/lib/libc10.so,sha256=b,20', 'torch/_C.cpython-311-x86_64-linux-gnu.so,sha256=c,30',
        'torch/x.so.sym/y.so,,', 'torch/x.socket.py,,', 'a.pyd,,\r', '"b,c.dylib",,', 'last.so.12']
    assert dists._compiled_lines("") == [] and dists._compiled_lines("a.py,,\n\n") == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the launcher forks its worker (POSIX)")
def test_the_inspect_task_runs_in_a_worker_the_started_process_relays(tmp_path: Path) -> None:
    # __main__.hand_off: torch is imported in a forked worker; the process envdoctor started answers with the
    # worker's exit code once the worker has answered and closed its output, and dies by the worker's signal
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import os, signal\n"
        f"open({str(tmp_path / 'pids')!r}, 'w').write('%d %d' % (os.getpid(), os.getppid()))\n"
        "if os.environ.get('FAKE_TORCH_MODE') == 'crash':\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n"
        "__version__ = '9.9.9'\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.Popen([sys.executable, str(PAYLOAD), "--task", "inspect", "--no-extension-load"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, _err = proc.communicate(timeout=60)
    worker, parent = (int(x) for x in (tmp_path / "pids").read_text().split())
    assert proc.returncode == 0 and parent == proc.pid and worker != proc.pid
    assert json.loads(out.decode().splitlines()[-1])["result"]["torch"]["version"] == "9.9.9"
    crashed = run(["--task", "inspect"], pythonpath=tmp_path, extra_env={"FAKE_TORCH_MODE": "crash"})
    assert crashed.returncode == -signal.SIGSEGV
    assert json.loads(crashed.stdout.splitlines()[-1])["checkpoint"] is True  # what was read before the import
    bad = run(["--task", "inspect", "--no-such-option"])
    assert bad.returncode == 2 and envelope(bad)["error"].startswith("bad arguments")
