"""Issue 42, precision audit (helper precision2; scripts/signature_precision.py, docs/diagnose.md "Precision audit"):
message rows that were sure of one cause where their message has several now give a warning that says what to
paste, and keep their error where the paste shows the context that makes them sure.

- ``gpu-access-blocked-by-os`` (cudaErrorOperatingSystem, NVML's "GPU access blocked by the operating system"): an
  error of WSL only where the paste shows WSL (a WSL kernel, /usr/lib/wsl, WSL named); elsewhere (FreeBSD's Linux
  layer, shkhln/libc6-shim#9; a 2015 Docker container, Kaixhin/dockerfiles#1) a low warning asking for uname -a.
- ``invalid-device-ordinal`` (cudaErrorInvalidDevice): most reports are the program's own device index (cuda:1 on
  a one-GPU machine: gaomingqi/Track-Anything#83, yuanzhoulvpi2017/DocumentSearch#4), not a machine that shows no
  GPU: a low warning asking for nvidia-smi -L and CUDA_VISIBLE_DEVICES; MIG named stays MIG_ENABLED's error.
- ``torchvision-op-no-cuda-kernel``: a torchvision op with CPU kernels and no CUDA one is a CPU torchvision
  (ultralytics-005) or one of another release (comfyui-001), the text alone cannot say: both readings are low
  warnings; a package list that shows the variants differ stays CUDA_VARIANT_MIXED's error.
"""

from __future__ import annotations

from tests.unit.diagnose.pastes import asks, findings, serious

BLOCKED = "Failed to initialize NVML: GPU access blocked by the operating system\n"
# shkhln/libc6-shim#9: nvidia-smi through FreeBSD's Linux compatibility layer
FREEBSD = ("I'm running 525.105.17 on 13.2 with a RTX 3060.\n# SHIM_DEBUG=1  nv-sglrun nvidia-smi\nshim init\n"
           + BLOCKED)
# Kaixhin/dockerfiles#1: a CUDA 7.0 caffe image on an AWS GRID K520 host
DOCKER_2015 = ("I encountered the same problem, even with the driver matched exactly...\n" + BLOCKED
               + "I am using cuda-caffe7.0, which has 346.46 according to the README.md\n")
# microsoft/WSL#14339 (WSL 2, its kernel) and staralt/dxgkrnl-dkms#7 (a GPU-PV guest, WSL's library path)
WSL_KERNEL = ("### Kernel Version\n\nLinux version 6.6.87.2-microsoft-standard-WSL2 (root@439a258ad544) (gcc (GCC) "
              "11.2.0, GNU ld (GNU Binutils) 2.37)\n\n### Distro Version\n\nUbuntu 24.04\n$ nvidia-smi\n" + BLOCKED)
GPU_PV = "$ /usr/lib/wsl/lib/nvidia-smi\n" + BLOCKED + \
    "Failed to properly shut down NVML: GPU access blocked by the operating system\n"


def _one(text: str, compat, category: str):
    got = [f for f in findings(text, compat) if f.category == category and f.severity in ("warning", "error")]
    assert got, (category, [(f.code, f.category, f.severity) for f in findings(text, compat)])
    return got[0]


def test_os_blocked_gpu_off_wsl_is_a_warning_asking_for_the_os(compat) -> None:
    for text in (FREEBSD, DOCKER_2015):
        f = _one(text, compat, "WSL_SPECIFIC")
        assert (f.severity, f.confidence) == ("warning", "low"), (f.severity, f.confidence)
        assert asks(f, "uname -a"), f.evidence
        assert not [g for g in findings(text, compat) if g.severity == "error"], text  # nothing else said either


def test_os_blocked_gpu_under_wsl_stays_an_error(compat) -> None:
    for text in (WSL_KERNEL, GPU_PV):
        f = _one(text, compat, "WSL_SPECIFIC")
        assert (f.severity, f.confidence) == ("error", "medium"), (f.severity, f.confidence)
        assert "wsl --update" in f.fix.summary


ORDINAL = ("RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at "
           "some other API call, so the stacktrace below might be incorrect.\n"
           "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n")
# gaomingqi/Track-Anything#83 (fixed by setting args.device = "cuda:0" at app.py line 381; the code line here is
# reconstructed from that comment); yuanzhoulvpi2017/DocumentSearch#4 (.cuda(1) on Colab's one GPU)
TRACK_ANYTHING = ('  File "app.py", line 381, in <module>\n    args.device = "cuda:1"\n' + ORDINAL
                  + "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
COLAB = ("AutoModel.from_pretrained(gen_model_name_or_path, trust_remote_code=True).half().cuda(1)\n" + ORDINAL)
MIG = """$ nvidia-smi -L
GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
  MIG 3g.20gb     Device  1: (UUID: MIG-cba663e8-9bed-5b7c-b4c5-f3fd3e9e1a49)
$ python -c "import torch; torch.cuda.set_device(1)"
RuntimeError: CUDA error: invalid device ordinal
"""


def test_invalid_device_ordinal_alone_is_a_warning_asking_for_the_gpus(compat) -> None:
    for text in (TRACK_ANYTHING, COLAB):
        f = _one(text, compat, "NO_GPU_VISIBLE")
        assert (f.severity, f.confidence) == ("warning", "low"), (f.severity, f.confidence)
        assert asks(f, "nvidia-smi -L") and "CUDA_VISIBLE_DEVICES" in f.fix.summary
        assert "own choice" in f.detail
        assert not [g for g in findings(text, compat) if g.severity == "error"], text


def test_invalid_device_ordinal_on_mig_stays_an_error(compat) -> None:
    f = serious(MIG, compat)["MIG_ENABLED"]
    assert (f.severity, f.confidence) == ("error", "high")


NMS = ("NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be "
       "because the operator doesn't exist for this backend, or was omitted during the selective/custom build process "
       "(if using custom build). 'torchvision::nms' is only available for these backends: [CPU, QuantizedCPU, "
       "BackendSelect, Python, Named, AutogradOther, AutogradCPU, AutogradCUDA, AutocastCPU, AutocastCUDA].\n")
# ultralytics/ultralytics (ultralytics-005: a CPU torchvision) and ComfyUI (comfyui-001: a torchvision of another
# build): the same message, the same backend list
ULTRALYTICS = ("Ultralytics YOLOv8.0.20 Python-3.10.9 torch-1.13.1 CUDA:0 (NVIDIA GeForce RTX 3060, 12288MiB)\n"
               + NMS + "CPU: registered at C:\\Users\\circleci\\project\\torchvision\\csrc\\ops\\cpu\\nms_kernel.cpp:112 "
               "[kernel]\n")
COMFYUI = ("!!! Exception during processing !!!\n  File \"ComfyUI/custom_nodes/ComfyUI-Impact-Pack/modules/impact/"
           "core.py\", line 294, in detect\n" + NMS)
MIXED = "torch==2.4.1+cu121\ntorchvision==0.19.1+cpu\n" + NMS


def test_torchvision_op_without_cuda_kernel_names_both_readings_as_warnings(compat) -> None:
    for text in (ULTRALYTICS, COMFYUI):
        got = serious(text, compat)
        assert got["COMPANION_VERSION_MISMATCH"].severity == "warning", got["COMPANION_VERSION_MISMATCH"].severity
        assert got["CUDA_VARIANT_MIXED"].severity == "warning"
        assert asks(got["COMPANION_VERSION_MISMATCH"], "pip list")
        assert not [g for g in findings(text, compat) if g.severity == "error"], text


def test_torchvision_op_without_cuda_kernel_with_the_variants_shown_stays_an_error(compat) -> None:
    f = serious(MIXED, compat)["CUDA_VARIANT_MIXED"]
    assert f.severity == "error"
