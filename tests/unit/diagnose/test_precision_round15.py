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
- CUDA error 35 ("driver version is insufficient") where the reporter says the machine has no NVIDIA GPU or uses
  none ("I haven't gpu on this computer", arnabgho/iSketchNFill#1; "我没有使用gpu", paddle-012): the CUDA runtime
  found no driver at all, so "upgrade the driver" is wrong advice; a warning says to run the CPU build. With no such
  words the old-driver error stays.
- A pasted `pip show torch` names torch's requirements ("Requires: filelock, fsspec, ...") and nothing else of the
  environment: a requirement the paste does not list is unknown, not "not installed" (vllm-019, pytorch3d-004);
  one a message says is missing ("No module named 'typing_extensions'") is still an error.
- xFormers "built for PyTorch 2.1.0+cu121 ... (you have 2.1.0+cpu)": the +cpu build of the very release xFormers
  was built for is torch's CPU build, not an xFormers mismatch (invokeai-001, -004, xformers-001); another release
  (2.2.0 vs 2.1.2) is still xFormers' mismatch (comfyui-011).
- nvidia-container-cli's initialization error whose detail is NVML's "driver/library version mismatch": the host's
  driver (a module older than its libraries until a reboot), not the container runtime (container-toolkit-004,
  k8s-device-plugin-001); its other details (a libnvidia-ml that does not load) keep the runtime's reading.
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


E35 = "CUDA driver version is insufficient for CUDA runtime version"
# arnabgho/iSketchNFill#1, PaddlePaddle/Paddle (paddle-012)
NO_GPU_35 = (f"THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=34 error=35 : {E35}\n"
             f"RuntimeError: cuda runtime error (35) : {E35} at /pytorch/torch/csrc/cuda/Module.cpp:34\n"
             "I haven't gpu on this computer. How can i start iSketchNFill using cpu?\n",
             "# tiny\u6587\u4ef6\u5939\u4e2d run_train.sh \u8fd0\u884c\u9519\u8bef\n"
             "\u6211\u6ca1\u6709\u4f7f\u7528gpu\u54c8\uff0c\u4e0d\u4f7f\u7528gpu\u4e5f\u9700\u8981\u5347\u7ea7cuda\u5417\uff1f\n"
             f"Check failed: cudaSuccess == cudaStat (0 vs. 35) Cuda Error: {E35}\n")
# open-mmlab/mmskeleton#30 without the question about the CPU: a GPU machine's old driver
GPU_35 = f"RuntimeError: cuda runtime error (35) : {E35} at torch/csrc/cuda/Module.cpp:107\n"


def test_error_35_where_the_reporter_says_no_gpu_is_no_driver_advice(compat) -> None:
    for text in NO_GPU_35:
        got = _serious(text, compat)
        assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in got, sorted(got)
        assert not [f for f in _findings(text, compat) if f.severity == "error"]
        note = got["NOTE"]
        assert note.severity == "warning" and "CPU build" in note.fix.summary, note.fix.summary


def test_error_35_on_a_gpu_machine_stays_the_old_driver(compat) -> None:
    got = _serious(GPU_35, compat)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "error", sorted(got)


SHOW = ("Name: torch\nVersion: {v}\nSummary: Tensors and Dynamic neural networks in Python with strong GPU "
        "acceleration\nLocation: {loc}\nRequires: {req}\nRequired-by: torchaudio, torchvision\n")
# vllm-project/vllm (vllm-019), facebookresearch/pytorch3d (pytorch3d-004)
VLLM_SHOW = (SHOW.format(v="2.5.1+gita8d6afb", loc="/usr/local/lib/python3.12/dist-packages",
                         req="filelock, fsspec, jinja2, networkx, setuptools, sympy, typing-extensions")
             + "ImportError: /workspace/vllm/vllm/_C.abi3.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb\n")
P3D_SHOW = ("pytorch3d/_C.cpython-38-x86_64-linux-gnu.so: undefined symbol: _ZNK2at6Tensor7is_cudaEv\n"
            "pip show torch\n" + SHOW.format(v="2.4.1+cu121", loc="/home/user/anaconda3/envs/dp3/lib/python3.8/site-packages",
                                             req="filelock, fsspec, jinja2, networkx, sympy, typing-extensions"))
MISSING = (P3D_SHOW.split("pip show torch\n", 1)[1] + ">>> import torch\nTraceback (most recent call last):\n"
           '  File "/home/user/anaconda3/envs/dp3/lib/python3.8/site-packages/torch/__init__.py", line 1, in <module>\n'
           "ModuleNotFoundError: No module named 'typing_extensions'\n")


def test_requirements_a_pip_show_names_are_not_missing_for_being_unlisted(compat) -> None:
    for text in (VLLM_SHOW, P3D_SHOW):
        codes = [f.code for f in _findings(text, compat)]
        assert not [c for c in codes if c.startswith("packages.requires-dist")], codes
        assert "THIRD_PARTY_EXTENSION_MISMATCH" in _serious(text, compat)


def test_a_requirement_a_message_says_is_missing_is_still_unmet(compat) -> None:
    got = {f.code: f for f in _findings(MISSING, compat) if f.code.startswith("packages.requires-dist")}
    assert list(got) == ["packages.requires-dist/typing-extensions"], list(got)
    assert got["packages.requires-dist/typing-extensions"].severity == "error"


XF = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
      "    PyTorch {built} with CUDA 1201 (you have {have})\n    Python  3.10.11 (you have 3.10.11)\n"
      "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n")
# invoke-ai/InvokeAI (invokeai-001), facebookresearch/xformers (xformers-001)
XF_CPU = (XF.format(built="2.1.0+cu121", have="2.1.0+cpu"),
          XF.format(built="2.1.2+cu121", have="2.1.2+cpu") + "\u6211\u7684CUDA\u662f12.2.79\n")
# comfyanonymous/ComfyUI (comfyui-011): xFormers built for another torch release
XF_OTHER = XF.format(built="2.2.0+cu121", have="2.1.2+cu121")


def test_xformers_built_for_the_cuda_build_of_a_cpu_torch_is_torch_cpu_build(compat) -> None:
    for text in XF_CPU:
        got = _serious(text, compat)
        assert "THIRD_PARTY_EXTENSION_MISMATCH" not in got, sorted(got)
        assert got["TORCH_CPU_ONLY_BUILD"].severity == "error", sorted(got)


def test_xformers_built_for_another_torch_release_is_still_its_mismatch(compat) -> None:
    got = _serious(XF_OTHER, compat)
    assert got["THIRD_PARTY_EXTENSION_MISMATCH"].severity == "error", sorted(got)
    assert "TORCH_CPU_ONLY_BUILD" not in got


CLI = "nvidia-container-cli: initialization error: {detail}: unknown.\n"
# NVIDIA/nvidia-container-toolkit (container-toolkit-004), NVIDIA/k8s-device-plugin (k8s-device-plugin-001)
CLI_MISMATCH = (CLI.format(detail="nvml error: driver/library version mismatch"),
                "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
                "failed: unable to start container process: error during container init: error running prestart hook\n"
                + CLI.format(detail="nvml error: driver/library version mismatch") + "cli-version: 1.17.8\n"
                "nvidia-smi output\nFailed to initialize NVML: Driver/library version mismatch\n"
                "NVML library version: 570.195\nnvidia/k8s-device-plugin:v0.16.2\n")
# container-toolkit-034: the runtime's own failure to load the host's NVML
CLI_LOAD = CLI.format(detail="load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or "
                             "directory")


def test_container_cli_with_nvml_version_mismatch_is_the_host_driver(compat) -> None:
    for text in CLI_MISMATCH:
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)
        assert got["DRIVER_LIBRARY_MISMATCH"].severity == "error", sorted(got)


def test_container_cli_other_failures_keep_the_runtime_reading(compat) -> None:
    got = _serious(CLI_LOAD, compat)
    assert "DRIVER_LIBRARY_MISMATCH" not in got, sorted(got)
    assert set(got) & {"CONTAINER_NO_GPU_RUNTIME", "NO_NVIDIA_DRIVER"}, sorted(got)
