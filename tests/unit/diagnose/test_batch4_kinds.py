"""The kinds of input reports-batch4 showed (issue 29), each on the real text (read from ../shared, skipped with a
reason when it is absent) and on an invented variant of the same kind, so the rule is not fitted to one file."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report
from tests.paths import SHARED

BATCH4 = SHARED / "examples" / "reports-batch4"
needs_batch4 = pytest.mark.skipif(not BATCH4.exists(), reason="../shared/examples/reports-batch4 not present")


def _report(text: str):
    return diagnose_report([text], load_compat())


def _facts(text: str):
    return read_paste([text], load_compat())[0]


def _problems(report) -> dict:
    return {f.category: f for f in report.problems}


def _real(rid: str) -> str:
    return (BATCH4 / f"{rid}.txt").read_text(encoding="utf-8")


# ---- syslog-escaped line breaks (#012)


@needs_batch4
def test_real_syslog_escaped_nvrm_mismatch() -> None:
    report = _report(_real("311"))
    assert list(_problems(report)) == ["DRIVER_LIBRARY_MISMATCH"]


# ---- version banners


@needs_batch4
def test_real_ultralytics_banner_cpu_build() -> None:
    facts = _facts(_real("304"))
    t = facts.pythons[0].torch
    assert t.version == "2.1.0+cpu" and facts.pythons[0].python_version == "3.10.11"
    assert facts.pythons[0].package("ultralytics").version == "8.1.3"
    assert "pythons[0].torch.version" in facts.paste.provenance
    assert "Ultralytics banner" in facts.paste.provenance["pythons[0].torch.version"]["reader"]
    assert "TORCH_CPU_ONLY_BUILD" in _problems(_report(_real("304")))


def test_invented_ultralytics_banner_with_its_gpu() -> None:
    text = "Ultralytics 8.3.40 🚀 Python-3.12.7 torch-2.5.1+cu124 CUDA:0 (NVIDIA GeForce RTX 4090, 24210MiB)\n"
    facts = _facts(text)
    py = facts.pythons[0]
    assert (py.python_version, py.torch.version, py.torch.cuda, py.torch.cuda_available) == \
        ("3.12.7", "2.5.1+cu124", "12.4", True)
    assert facts.driver.gpus[0].name == "NVIDIA GeForce RTX 4090"


def test_invented_vllm_ray_and_transformers_env() -> None:
    text = ("INFO 05-06 08:55:01 api_server.py:149] vLLM API server version 0.4.2\n"
            "ray, version 2.10.0\n"
            "- `transformers` version: 4.40.1\n- Platform: Linux-5.15.0-105-generic-x86_64-with-glibc2.35\n"
            "- Python version: 3.10.12\n- PyTorch version (GPU?): 2.3.0+cu121 (True)\n"
            "- Tensorflow version (GPU?): not installed (NA)\n")
    facts = _facts(text)
    py = facts.pythons[0]
    assert py.package("vllm").version == "0.4.2" and py.package("ray").version == "2.10.0"
    assert (py.torch.version, py.torch.cuda, py.torch.cuda_available) == ("2.3.0+cu121", "12.1", True)
    newer = _facts("- PyTorch version (accelerator?): 2.5.1+cpu (NA)\n- GPU type: NVIDIA A100-SXM4-80GB\n")
    assert newer.pythons[0].torch.version == "2.5.1+cpu" and newer.driver.gpus[0].name == "NVIDIA A100-SXM4-80GB"


# ---- the ecosystem's warnings that name a cause


@needs_batch4
def test_real_ray_shm_warning() -> None:
    f = _problems(_report(_real("302")))["SHM_TOO_SMALL"]
    assert f.code == "messages.signature/ray-dev-shm-too-small" and f.severity == "warning"
    assert any(e.value == "67108864" for e in f.evidence)


def test_invented_ray_shm_warning() -> None:
    text = ("2025-01-14 03:08:29,081\tWARNING services.py:2022 -- WARNING: The object store is using /tmp instead of "
            "/dev/shm because /dev/shm has only 2147483648 bytes available. This will harm performance!\n")
    assert "SHM_TOO_SMALL" in _problems(_report(text))


_NCCL = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
         "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")


def test_nccl_system_error_in_a_container_without_shm() -> None:
    launch = "$ docker run --gpus all \\\n    -p 8000:8000 \\\n    vllm/vllm-openai --tensor-parallel-size 4\n"
    cats = _problems(_report(launch + _NCCL))
    assert "SHM_TOO_SMALL" in cats and "INTERCONNECT" not in cats
    for flag in ("--ipc=host", "--shm-size=16g"):
        given = f"$ docker run --gpus all {flag} \\\n    vllm/vllm-openai --tensor-parallel-size 4\n"
        cats = _problems(_report(given + _NCCL))
        assert "INTERCONNECT" in cats and "SHM_TOO_SMALL" not in cats, flag
    # no launch command: the bare system error is a lead to /dev/shm (a warning), as the corpus threads found it
    # (round 7: nccl-001, vllm-021, dekr-001 were each fixed with --ipc=host), not an INTERCONNECT error
    bare = _problems(_report(_NCCL))
    assert bare["SHM_TOO_SMALL"].severity == "warning" and "INTERCONNECT" not in bare


# ---- a CUDA 11 build of a third-party runtime


@needs_batch4
def test_real_onnxruntime_cuda11_provider() -> None:
    # round 10 (issue 42): the old reading here was CUDA_VARIANT_MIXED; the row's established cause (a CUDA 11
    # build of onnxruntime-gpu wanting a cuBLAS of a major the environment lacks; one package, no second one of
    # another variant in the paste) is CUDA_LIBRARY_VERSION_MISMATCH, the label the corpus audit gave the same
    # cause in microsoft/onnxruntime#20745 and #13932 (onnxruntime-001, -005)
    cats = _problems(_report(_real("305")))
    f = cats["CUDA_LIBRARY_VERSION_MISMATCH"]
    # onnxruntime's own row wins the tie over the loader's generic one a qualifier turned into this category
    # (checks/messages.py, paste7fix)
    assert f.code == "messages.signature/ort-cuda-provider-failed" and f.confidence == "medium"
    # ... and the same fault read as the variants it mixes (the label the shared example gives it: a CUDA 11 build
    # in an environment whose CUDA is 12), a low-confidence warning beside it, never a second error
    mixed = cats["CUDA_VARIANT_MIXED"]
    assert mixed.severity == "warning" and mixed.confidence == "low"


def test_invented_cuda11_runtime_in_a_cuda12_environment() -> None:
    env = "torch==2.3.1+cu121\nnvidia-cublas-cu12==12.1.3.1\n"
    msg = ("mxnet fails: OSError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n")
    # a framework's build (MXNet here) wants a CUDA major the environment lacks: a library mismatch, not a
    # variant mix (round 10; the old expectation read CUDA_VARIANT_MIXED)
    cats = _problems(_report(env + msg))
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in cats and cats["CUDA_LIBRARY_VERSION_MISMATCH"].severity == "error"
    assert cats["CUDA_VARIANT_MIXED"].severity == "warning" and cats["CUDA_VARIANT_MIXED"].confidence == "low"
    same = "torch==2.0.1+cu118\n" + msg  # the environment is CUDA 11 itself: not this reading
    assert "CUDA_LIBRARY_VERSION_MISMATCH" not in _problems(_report(same))


# ---- Docker Desktop / WSL runtime errors


@needs_batch4
def test_real_wsl_named_symbol() -> None:
    assert "WSL_SPECIFIC" in _problems(_report(_real("313")))


def test_invented_wsl_named_symbol_variants() -> None:
    for line in ("E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: "
                 "CUDA_ERROR_NOT_FOUND: named symbol not found",
                 "docker: Error response from daemon: failed to create task for container: nvidia-container-cli: "
                 "initialization error: WSL environment detected but no adapters were found: unknown."):
        assert "WSL_SPECIFIC" in _problems(_report(line + "\n")), line


# ---- compiler-version lines of a CMake log


@needs_batch4
def test_real_cmake_log_with_a_new_gcc() -> None:
    f = _problems(_report(_real("309")))["HOST_COMPILER_TOO_NEW"]
    assert f.code == "diagnose.host-compiler/gcc-newer-than-current-nvcc"
    assert ("host.gcc_version", "16.1.1") in [(e.path, e.value) for e in f.evidence]


def test_invented_cmake_compiler_identification() -> None:
    text = ("-- The CXX compiler identification is GNU 14.1.1\n"
            "-- The CUDA compiler identification is NVIDIA 12.4.131\n"
            "CMake Error at CMakeLists.txt:3 (project):\n  The CUDA compiler is not able to compile a simple test program.\n")
    facts = _facts(text)
    assert facts.host.gcc_version == "14.1.1" and facts.toolkits.on_path.version == "12.4"
    f = _problems(_report(text))["HOST_COMPILER_TOO_NEW"]
    assert f.code == "toolchain.host-compiler/gcc-too-new"


# ---- a CPU machine's collect_env


def test_cpu_machine_collect_env_names_no_gpu() -> None:
    text = ("PyTorch version: 2.1.0+cpu\nIs debug build: False\nCUDA used to build PyTorch: None\n"
            "Python version: 3.10.12 (main) [GCC 11.4.0] (64-bit runtime)\nIs CUDA available: False\n"
            "CUDA runtime version: No CUDA\nGPU models and configuration: No CUDA\nNvidia driver version: No CUDA\n"
            "cuDNN version: No CUDA\n")
    report = _report(text)
    assert report.facts.driver.gpus == []
    (f,) = [f for f in report.problems if f.category == "TORCH_CPU_ONLY_BUILD"]
    assert f.code == "diagnose.cuda-unavailable/cpu-build"
    assert "GPUs are present" not in f.detail and "machine with" not in f.summary


@needs_batch4
def test_real_fedora_kernel_names_the_distribution_for_the_fix() -> None:
    report = _report(_real("309"))
    assert (report.facts.host.distro_id, report.facts.host.distro_version) == ("fedora", "44")
    f = _problems(report)["HOST_COMPILER_TOO_NEW"]
    assert not any("apt-get" in c for c in f.fix.commands)  # not Ubuntu's package tool on Fedora


def test_invented_rhel_kernel_release() -> None:
    facts = _facts("Linux gpu7 5.14.0-427.13.1.el9_4.x86_64 #1 SMP PREEMPT_DYNAMIC Wed Apr 10 2024 x86_64 GNU/Linux\n"
                   "gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)\n")
    assert (facts.host.distro_id, facts.host.distro_version) == ("rhel", "9")
    ubuntu = _facts("Linux box 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\ngcc (Ubuntu 13.2.0) 13.2.0\n")
    assert ubuntu.host.distro_id is None
