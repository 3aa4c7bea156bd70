"""Tests for the CUDA toolkit and system-library probes against temp trees, a FakeRunner, and this machine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envdoctor.model.facts import ProbeStatus
from envdoctor.probes.cuda_toolkit import parse_version_json, parse_version_txt, probe_toolkits
from envdoctor.probes.cudnn import parse_cudnn_header, parse_ldconfig_p, probe_system_libraries
from envdoctor.probes.runner import Runner
from tests.fakes.runner import FakeRunner

NVCC_124 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:18:24_PDT_2024
Cuda compilation tools, release 12.4, V12.4.131
Build cuda_12.4.r12.4/compiler.34097967_0
"""
NVCC_118 = NVCC_124.replace("release 12.4, V12.4.131", "release 11.8, V11.8.89")


def _w(root: Path, rel: str, text: str = "") -> Path:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _tree(root: Path) -> None:
    _w(root, "/usr/local/cuda-12.4/bin/nvcc", "#!/bin/sh\n")
    _w(root, "/usr/local/cuda-12.4/version.json", '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    # an old toolkit without nvcc, known only from version.txt
    _w(root, "/usr/local/cuda-10.2/version.txt", "CUDA Version 10.2.89\n")
    (root / "usr/local/cuda-9.9-empty").mkdir(parents=True)
    os.symlink("/etc/alternatives/cuda", root / "usr/local/cuda")
    (root / "etc/alternatives").mkdir(parents=True)
    os.symlink("/usr/local/cuda-12.4", root / "etc/alternatives/cuda")
    _w(root, "/opt/conda-cuda/bin/nvcc", "#!/bin/sh\n")


def test_toolkits_tree_path_and_env(tmp_path):
    _tree(tmp_path)
    nvcc_124 = str(tmp_path / "usr/local/cuda-12.4/bin/nvcc")
    runner = FakeRunner(
        {
            (nvcc_124, "--version"): NVCC_124,
            ("/usr/local/cuda-12.4/bin/nvcc", "--version"): NVCC_124,
            (str(tmp_path / "opt/conda-cuda/bin/nvcc"), "--version"): NVCC_118,
        },
        which={"nvcc": "/usr/local/cuda-12.4/bin/nvcc"},
    )
    tk = probe_toolkits(runner, root=str(tmp_path), env={"CUDA_HOME": "/opt/conda-cuda", "CUDA_PATH": "/nope"})
    assert tk.status == ProbeStatus.OK
    assert (tk.cuda_home_env, tk.cuda_path_env) == ("/opt/conda-cuda", "/nope")
    by = {t.path: t for t in tk.installed}
    assert set(by) == {"/opt/conda-cuda", "/usr/local/cuda-12.4", "/usr/local/cuda-10.2"}
    assert (by["/opt/conda-cuda"].version, by["/opt/conda-cuda"].found_via) == ("11.8", "CUDA_HOME")
    t124 = by["/usr/local/cuda-12.4"]
    assert (t124.version, t124.version_full, t124.found_via) == ("12.4", "12.4.131", "/usr/local")
    assert t124.nvcc_path == "/usr/local/cuda-12.4/bin/nvcc"
    t102 = by["/usr/local/cuda-10.2"]
    assert (t102.version, t102.version_full, t102.nvcc_path) == ("10.2", "10.2.89", None)
    assert tk.on_path.path == "/usr/local/cuda-12.4" and tk.on_path.version_full == "12.4.131"
    assert tk.on_path.found_via == "PATH"
    assert "CUDA_PATH=/nope is not a CUDA toolkit" in tk.reason
    assert "/usr/local/cuda -> /usr/local/cuda-12.4" in tk.reason
    assert tk.env_problems == {"CUDA_PATH": "no such directory"}


def test_cuda_home_without_nvcc_or_not_a_toolkit_is_a_fact(tmp_path):
    _tree(tmp_path)
    nvcc = str(tmp_path / "usr/local/cuda-12.4/bin/nvcc")
    runner = FakeRunner({(nvcc, "--version"): NVCC_124, (str(tmp_path / "opt/conda-cuda/bin/nvcc"), "--version"):
                         NVCC_118}, which={})
    tk = probe_toolkits(runner, root=str(tmp_path), env={"CUDA_HOME": "/usr/local/cuda-10.2",
                                                         "CUDA_PATH": "/usr/local/cuda-9.9-empty"})
    assert tk.env_problems == {"CUDA_HOME": "it has no bin/nvcc",
                               "CUDA_PATH": "neither bin/nvcc nor version.json / version.txt there"}


def test_toolkits_nvcc_timeout_falls_back_to_version_json(tmp_path):
    _w(tmp_path, "/usr/local/cuda-12.4/bin/nvcc", "")
    _w(tmp_path, "/usr/local/cuda-12.4/version.json", '{"cuda": {"version": "12.4.1"}}')
    runner = FakeRunner({(str(tmp_path / "usr/local/cuda-12.4/bin/nvcc"), "--version"): FakeRunner.TIMEOUT})
    tk = probe_toolkits(runner, root=str(tmp_path), env={})
    (t,) = tk.installed
    assert (t.version, t.version_full) == ("12.4", "12.4.1")
    assert tk.on_path is None and "timed out" in tk.reason and "no nvcc on PATH" in tk.reason


def test_toolkits_absent(tmp_path):
    tk = probe_toolkits(FakeRunner(), root=str(tmp_path), env={})
    assert tk.status == ProbeStatus.ABSENT and tk.installed == [] and tk.on_path is None
    assert "no nvcc on PATH" in tk.reason


def test_version_file_parsers():
    assert parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}') == "13.0.2"
    assert parse_version_json("not json") is None
    assert parse_version_txt("CUDA Version 11.0.228\n") == "11.0.228"


@pytest.mark.skipif(not os.path.isdir("/usr/local/cuda-13.0"), reason="no CUDA 13.0 toolkit on this machine")
def test_toolkits_real_machine_finds_cuda_13():
    tk = probe_toolkits(Runner())
    assert tk.status == ProbeStatus.OK
    t = next(t for t in tk.installed if t.path == "/usr/local/cuda-13.0")
    assert t.version == "13.0" and t.version_full and t.version_full.startswith("13.0.")
    if shutil.which("nvcc"):
        assert tk.on_path is not None and tk.on_path.version == "13.0"
        assert tk.on_path.path == "/usr/local/cuda-13.0"


# --------------------------------------------------------------------------- cuDNN and system libraries

CUDNN_VERSION_H = """/* cudnn_version.h */
#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_
#define CUDNN_MAJOR 9
#define CUDNN_MINOR 1
#define CUDNN_PATCHLEVEL 0
#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
#endif
"""

LDCONFIG = """1234 libs found in cache `/etc/ld.so.cache'
\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9
\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9
\tlibcudnn.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so
\tlibcublasLt.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcublasLt.so.12
\tlibcublas.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcublas.so.12
\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1
\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1
\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2
Cache generated by: ldconfig (GNU libc) stable release version 2.35
"""


def _libs_root(root: Path) -> None:
    _w(root, "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h", CUDNN_VERSION_H)
    lib = root / "usr/lib/x86_64-linux-gnu"
    _w(root, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0")
    os.symlink("libcudnn.so.9.1.0", lib / "libcudnn.so.9")
    os.symlink("libcudnn.so.9", lib / "libcudnn.so")
    _w(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14")
    os.symlink("libcuda.so.550.54.14", lib / "libcuda.so.1")
    # NCCL's version is inside the file, not in its name (libnccl.so.2 says only "2")
    (lib / "libnccl.so.2").write_bytes(b"\x7fELF...\0NCCL version 2.27.7+cuda12.9\0...")


def test_system_libraries_header_and_ldconfig(tmp_path):
    _libs_root(tmp_path)
    runner = FakeRunner({("/sbin/ldconfig", "-p"): LDCONFIG}, which={"ldconfig": "/sbin/ldconfig"})
    sl = probe_system_libraries(runner, root=str(tmp_path))
    assert sl.status == ProbeStatus.OK
    assert sl.cudnn_version == "9.1.0"
    assert sl.cudnn_path == "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"
    got = [(lib.name, lib.path, lib.version) for lib in sl.libraries]
    assert got == [
        ("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0", "9.1.0"),  # .so.9 and .so: one file
        ("cublas", "/usr/local/cuda-12.4/lib64/libcublas.so.12", None),  # the major alone is no version
        ("cuda", "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14", "550.54.14"),  # the 32-bit copy is left out
        ("nccl", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "2.27.7"),
    ]
    assert next(lib for lib in sl.libraries if lib.name == "nccl").version_source == "text inside the file"
    assert all(lib.origin == "system" for lib in sl.libraries)


def test_system_libraries_old_cudnn_h_and_ldconfig_timeout(tmp_path):
    _w(tmp_path, "/usr/local/cuda-10.2/include/cudnn.h", "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n"
       "#define CUDNN_PATCHLEVEL 5\n")
    runner = FakeRunner({("/sbin/ldconfig", "-p"): FakeRunner.TIMEOUT}, which={"ldconfig": "/sbin/ldconfig"})
    sl = probe_system_libraries(runner, root=str(tmp_path))
    assert sl.status == ProbeStatus.OK and sl.cudnn_version == "7.6.5" and "timed out" in sl.reason
    assert sl.libraries == []


def test_system_libraries_absent_and_failed(tmp_path):
    runner = FakeRunner({("/sbin/ldconfig", "-p"): "0 libs found in cache\n"}, which={"ldconfig": "/sbin/ldconfig"})
    assert probe_system_libraries(runner, root=str(tmp_path)).status == ProbeStatus.ABSENT
    sl = probe_system_libraries(FakeRunner(), root=str(tmp_path))
    assert sl.status == ProbeStatus.FAILED and "ldconfig not found" in sl.reason


def test_header_and_ldconfig_parsers():
    assert parse_cudnn_header(CUDNN_VERSION_H) == "9.1.0"
    assert parse_cudnn_header("#define FOO 1") is None
    rows = parse_ldconfig_p(LDCONFIG)
    assert rows[1] == ("libcudnn.so.9", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9")
    assert len(rows) == 8


def test_system_libraries_real_machine():
    sl = probe_system_libraries(Runner())
    assert sl.status in (ProbeStatus.OK, ProbeStatus.ABSENT, ProbeStatus.FAILED)
    assert sl.reason
    if os.path.exists("/usr/local/cuda-13.0/lib/libcudart.so.13") and shutil.which("ldconfig"):
        assert any(lib.name == "cudart" for lib in sl.libraries)
