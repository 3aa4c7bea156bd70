"""Issue 42, precision round 15 (helper wrongerr): errors of a wrong category, each traced to its mechanism.

- A Jetson L4T container (an L4T image named, or a Jetson/JetPack named with a container): on JetPack 4 the
  NVIDIA runtime mounts the host's CUDA libraries into the container, so a CUDA library torch cannot open there is
  the container started without that runtime (CONTAINER_NO_GPU_RUNTIME), not a shadowing system library plus a
  torch import error (jetson-003: dusty-nv/jetson-containers#93; dusty-nv/jetson-inference#1400). Off Jetson, or
  on a Jetson outside a container, the old reading stays.
- "no kernel image is available" whose line names the failing site as compiled code other than torch's (a `.cu`
  file, a kernel wrapper's "Error in <fn>:"): the same category (the catalogue's GPU_ARCH_NOT_IN_TORCH_BUILD is
  any build without the GPU's architecture), but the finding says that code's build is what lacks it, and its fix
  and settle name that code's architecture list and the GPU's compute capability, not a torch reinstall
  (tensorRT_Pro#162, ggml's llama.cpp, iPERCore#128). torch's own message, or a site in torch's ATen, keeps the
  torch fix.
- A pasted package list's nvidia-*-cuXX wheel of a family torch never requires (nvidia-cutlass-dsl-libs-cu13,
  pulled by vLLM/FlashInfer) says nothing about torch's variant: no CUDA_VARIANT_MIXED error (vllm-017); a wheel
  torch does require (nvidia-cudnn-cu11 beside a cu121 torch) still is one.
"""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

TRACEBACK = ("Traceback (most recent call last):\n"
             '  File "<stdin>", line 1, in <module>\n'
             '  File "/usr/local/lib/python3.6/dist-packages/torch/__init__.py", line 188, in <module>\n'
             "    _load_global_deps()\n"
             '  File "/usr/local/lib/python3.6/dist-packages/torch/__init__.py", line 141, in _load_global_deps\n'
             "    ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)\n"
             "OSError: libcurand.so.10: cannot open shared object file: No such file or directory\n")
# dusty-nv/jetson-containers#93 (jetson-003)
L4T_IMAGE = ("I'm running the container \"dustynv/ros:noetic-pytorch-l4t-r32.5.0\" on a Jetson AGX.\n"
             "Status: Downloaded newer image for dustynv/ros:noetic-pytorch-l4t-r32.5.0\n"
             "root@e22d0ae5ddbc:/# python\n>>> import torch\n" + TRACEBACK)
# dusty-nv/jetson-inference#1400
JETSON_CONTAINER = ("PyTorch can be imported from the host but unable to load in jetson-inference container\n"
                    "My Jetson Xavier automatically updated software, then \"import torch\" gives error message in "
                    "jetson-inference container, but \"import torch\" works well from the host.\n>>> import torch\n"
                    + TRACEBACK +
                    "root@desktop:/jetson-inference/python/training/detection/ssd# ls /usr/local/cuda/lib64\n"
                    "libcudadevrt.a  libcudart_static.a  stubs\n")
# Qengineering/PyTorch-Jetson-Nano#5: a Jetson, torch in a venv on the host (no container)
JETSON_HOST = ("Jetson Nano, Jetpack 4.6\nI am getting an error as below when i install any of the 4 torch files.\n"
               + TRACEBACK.replace("/usr/local/lib/python3.6/dist-packages", "venv/lib/python3.6/site-packages"))
# an x86 host's venv, no Jetson and no container
X86_HOST = "$ python -c 'import torch'\n" + TRACEBACK


def test_cuda_library_missing_in_an_l4t_container_is_the_container_runtime(compat) -> None:
    for text in (L4T_IMAGE, JETSON_CONTAINER):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)
        f = got["CONTAINER_NO_GPU_RUNTIME"]
        assert f.severity == "error" and "default-runtime" in f.fix.summary, f.fix.summary
        # the failed import follows from the missing runtime (its explanation says so): no second error
        assert "TORCH_IMPORT_FAILED" not in got and "SYSTEM_LIB_SHADOWING" not in got, sorted(got)


def test_cuda_library_missing_off_an_l4t_container_keeps_the_import_reading(compat) -> None:
    for text in (JETSON_HOST, X86_HOST):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)
        assert got["TORCH_IMPORT_FAILED"].severity == "error", sorted(got)


NKI = "no kernel image is available for execution on the device"
# shouxieai/tensorRT_Pro#162 (tensorrt-pro-001), ggml in llama.cpp (llama-cpp-001), iPERDance/iPERCore#128
SITES = (f"[error][simple_yolo.cu:556]:launch failed: {NKI}\n[error][simple_yolo.cu:450]:launch failed: {NKI}\n",
         "ggml_init_cublas: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce 940MX, compute capability 5.0\n"
         f"CUDA error 209 at D:\\Download\\ggml-master\\ggml-master\\src\\ggml-cuda.cu:5284: {NKI}\n",
         f"While attempting to run the program, I got the error `Error in forward_face_index_map_1: {NKI}`. "
         "I have a GTX 1660 TI, and am running Windows 10.\n")
TORCH_OWN = (f"RuntimeError: CUDA error: {NKI}\nCUDA kernel errors might be asynchronously reported at some other "
             "API call, so the stacktrace below might be incorrect.\n",
             f"RuntimeError: CUDA error: {NKI} (launch_kernel at /pytorch/aten/src/ATen/native/cuda/Loops.cuh:103)\n")


def _nki(text, compat):
    return [f for f in _findings(text, compat) if f.code.startswith("messages.signature/no-kernel-image")][0]


def _settle(f):
    return [e.value for e in f.evidence if e.path == "paste.settle"]


def test_no_kernel_image_at_a_named_non_torch_site_names_that_build(compat) -> None:
    for text in SITES:
        f = _nki(text, compat)
        assert (f.category, f.severity) == ("GPU_ARCH_NOT_IN_TORCH_BUILD", "error")
        assert f.fix.summary.startswith("Rebuild the code the message names"), f.fix.summary
        assert "not torch's kernels" in f.detail
        assert _settle(f) == ["nvidia-smi --query-gpu=name,compute_cap --format=csv"]


def test_no_kernel_image_of_torch_itself_keeps_the_torch_build_fix(compat) -> None:
    for text in TORCH_OWN:
        f = _nki(text, compat)
        assert (f.category, f.severity) == ("GPU_ARCH_NOT_IN_TORCH_BUILD", "error")
        assert f.fix.summary.startswith("Install a torch"), f.fix.summary
        assert "get_arch_list" in _settle(f)[0]


PIP = ("[pip3] numpy==2.2.6\n[pip3] nvidia-cublas-cu12==12.9.1.4\n[pip3] nvidia-cuda-runtime-cu12==12.9.79\n"
       "[pip3] nvidia-cudnn-cu12==9.17.1.4\n")
TORCH = "[pip3] torch==2.11.0+cu129\n[pip3] torchaudio==2.11.0+cu129\n[pip3] torchvision==0.26.0+cu129\n"
# vllm-project/vllm (vllm-017): CUTLASS's DSL libraries for CUDA 13, pulled by vLLM, beside a cu129 torch
VLLM = PIP + "[pip3] nvidia-cutlass-dsl==4.5.2\n[pip3] nvidia-cutlass-dsl-libs-cu13==4.5.2\n" + TORCH
# a cuDNN wheel of another CUDA major than torch's: torch's own requirement, still a mixed set
TORCH_WHEEL = PIP + "[pip3] nvidia-cudnn-cu11==8.9.5.29\n" + TORCH


def test_a_wheel_torch_never_requires_says_nothing_of_torch_variant(compat) -> None:
    codes = {f.code: f for f in _findings(VLLM, compat)}
    assert "packages.cuda-variant/mixed" not in codes, sorted(codes)


def test_a_wheel_torch_requires_of_another_major_is_still_mixed(compat) -> None:
    codes = {f.code: f for f in _findings(TORCH_WHEEL, compat)}
    assert "packages.cuda-variant/mixed" in codes, sorted(codes)
    assert "nvidia-cudnn-cu11" in codes["packages.cuda-variant/mixed"].summary
