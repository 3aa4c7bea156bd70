"""Issue 42, round 10, helper kernel: kernel, driver and fabric messages in pasted reports.

- The open kernel module's refusal of a pre-Turing GPU quoted by its second half only ("nvidia.ko because it does
  not include the required GPU", the wrapped kernel line cut at the terminal width): aurora-001, pop-os-001.
- The driver's kernel module and a user-space library (or a second module) of two versions, in the words of the
  program that compared them: XLA's "kernel version X does not match DSO version Y" (jax-008, TensorFlow too) and
  nvidia-modeset's "Version mismatch: nvidia.ko(X) nvidia-modeset(Y)" (void-linux-001, void-packages#4473).
- Hardware faults told in the reporter's words: "gpu randomly falls off the bus" (Xid 79, nvidia-driver-004) and
  "abnormal due to Uncorrectable ECC Error" (k8s-device-plugin-004).
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious


@pytest.mark.parametrize("text", [
    # aurora-001 (ublue-os/aurora#1924): the kernel log quoted from its second line
    "Kernel log shows:\n```\nNVRM: nvidia.ko because it does not include the required GPU\n"
    "nvidia 0000:01:00.0: probe with driver nvidia failed with error -1\n"
    "NVRM: The NVIDIA probe routine failed for 1 device(s).\n```\n",
    # pop-os-001 (pop-os/pop#3859): dmesg quoted in prose
    "dmesg shows:\n\"nvidia.ko because it does not include the required GPU\"\n"
    "\"probe with driver nvidia failed with error -1\"\n",
])
def test_the_open_modules_refusal_quoted_by_its_tail_is_recognised(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("OPEN_KERNEL_MODULE_UNSUPPORTED_GPU")
    assert f is not None, sorted(got)
    assert f.code == "messages.signature/nvrm-open-module-needs-gsp"
    assert "UNRECOGNISED_ERROR" not in got


def test_near_miss_a_probe_failure_alone_is_not_the_open_modules_refusal(compat) -> None:
    text = "nvidia 0000:01:00.0: probe with driver nvidia failed with error -1\n"
    assert "OPEN_KERNEL_MODULE_UNSUPPORTED_GPU" not in _serious(text, compat)


@pytest.mark.parametrize("text,code,numbers", [
    # jax-008 (jax-ml/jax#11477)
    ("I recently upgraded and was hitting this error:\n\n    kernel version 515.48.7 does not match DSO version "
     "510.73.5 -- cannot find working devices in this configuration\n",
     "xla-kernel-driver-not-dso-version", ("515.48.7", "510.73.5")),
    # TensorFlow's glog line of the same diagnostics
    ("2021-09-13 23:57:29.694695: E tensorflow/stream_executor/cuda/cuda_diagnostics.cc:306] kernel version "
     "460.56.0 does not match DSO version 470.57.2 -- cannot find working devices in this configuration\n",
     "xla-kernel-driver-not-dso-version", ("460.56.0", "470.57.2")),
    # void-linux-001 (voidlinux/void-packages#5745)
    ("\"nvidia-modeset: Version mismatch: nvidia.ko(378.13) nvidia-modeset(375.26)\n",
     "nvidia-module-version-mismatch", ("378.13", "375.26")),
    # void-linux/void-packages#4473: the other module named with its .ko
    ("dmesg output shows nvidia-modeset: Version mismatch: nvidia.ko(410.73) nvidia-modeset.ko(390.87) upon boot\n",
     "nvidia-module-version-mismatch", ("410.73", "390.87")),
])
def test_a_kernel_module_and_a_library_of_two_versions_is_a_driver_library_mismatch(text, code, numbers,
                                                                                      compat) -> None:
    got = _serious(text, compat)
    f = got.get("DRIVER_LIBRARY_MISMATCH")
    assert f is not None, sorted(got)
    assert f.code == f"messages.signature/{code}"
    assert all(n in f.detail for n in numbers), f.detail
    assert "UNRECOGNISED_ERROR" not in got


def test_near_miss_the_versions_that_match_say_nothing(compat) -> None:
    text = ("2021-09-13 23:57:29.694689: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:192] libcuda "
            "reported version is: 470.57.2\n2021-09-13 23:57:29.694695: I tensorflow/stream_executor/cuda/"
            "cuda_diagnostics.cc:196] kernel version seems to match DSO: 470.57.2\n"
            "Error: something else failed\n")
    assert "DRIVER_LIBRARY_MISMATCH" not in _serious(text, compat)


@pytest.mark.parametrize("text,category", [
    # nvidia-driver-004 (NVIDIA/open-gpu-kernel-modules#507): the maintainer: Xid 79
    ("### Describe the bug\n\ngpu randomly falls off the bus when playing games on the nvidia gpu\n",
     "GPU_XID_ERRORS"),
    # the kernel's own line (pop-os/pop#3363)
    ("Apr 29 19:24:11 EVE kernel: NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.\n", "GPU_XID_ERRORS"),
    # k8s-device-plugin-004 (NVIDIA/k8s-device-plugin#267)
    ("when one GPU on the host is abnormal due to Uncorrectable ECC Error, k8s-device-plugin seems to think it "
     "healthy.\nand my pod still be scheduled to this GPU, and everytime get RuntimeError: CUDA error: out of memory\n",
     "GPU_MEMORY_ERRORS"),
    # the CUDA error itself (shared examples reports-batch2/107, reports-batch4/303)
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered\n", "GPU_MEMORY_ERRORS"),
])
def test_a_hardware_fault_told_in_words_is_its_category(text, category, compat) -> None:
    got = _serious(text, compat)
    assert category in got, sorted(got)


@pytest.mark.parametrize("text,category", [
    ("The bus fell off the road; the GPU works fine.\nError: unrelated failure\n", "GPU_XID_ERRORS"),
    ("nvidia-smi -q shows no uncorrectable ECC errors on any GPU.\nError: unrelated failure\n", "GPU_MEMORY_ERRORS"),
])
def test_near_miss_words_that_deny_the_fault_stay_quiet(text, category, compat) -> None:
    assert not [f for f in _findings(text, compat) if f.category == category]


# ---- a driver branch that no longer drives the GPU, told in words (DRIVER_DROPPED_GPU; checks/diagnose_driver_gpu.py)

def _dropped(text, compat):
    return [f for f in _findings(text, compat) if f.category == "DRIVER_DROPPED_GPU" and f.severity == "warning"]


def test_a_named_branch_newer_than_the_gpus_last_is_dropped_gpu(compat) -> None:
    # linux-mint-001 (linuxmint/mintdrivers#111): a Kepler GTX 760 (last branch R470) steered to 535
    text = ("2. Use a system with an NVIDIA GeForce GTX 760:\n"
            "On this system, the normal `nvidia-driver-470` package behaved like a transitional trap and attempted "
            "to depend on/install NVIDIA 535 packages. NVIDIA 535 is incompatible with the GTX 760 and explicitly "
            "ignored the GPU at boot.\n")
    got = _dropped(text, compat)
    assert [f.code for f in got] == ["diagnose.driver-gpu/named-branch"], [f.code for f in got]
    assert "R470" in got[0].summary and "R535" in got[0].summary
    assert "nvidia-driver-470" in " ".join(got[0].fix.commands)


def test_no_branch_named_and_no_supported_branch_for_the_gpu_is_a_low_warning(compat) -> None:
    # pop-os-002 (pop-os/pop#1178): a Fermi GTX 580 (last branch R390, compat driver_gpu_support.json)
    text = ("Nvidia driver does not work. System runs at 640x480 resolution on GTX 580, probably as result of using "
            "the fallback modesetting or VESA driver\n")
    got = _dropped(text, compat)
    assert [f.code for f in got] == ["diagnose.driver-gpu/no-supported-branch"], [f.code for f in got]
    assert got[0].confidence == "low" and "R390" in got[0].summary


@pytest.mark.parametrize("text", [
    # a Pascal GPU: R580 is still supported, so a current driver may well drive it
    "Nvidia driver does not work on my GeForce GTX 1070, the screen is 640x480.\n",
    # the branch it names is the Kepler GPU's own last branch
    "The nvidia-driver-470 package does not work with my GeForce GTX 760: black screen.\n",
    # a driver version shown: the lifecycle check compares it, not this one
    "Driver Version: 535.104.05\nNVIDIA driver does not work with the NVIDIA GeForce GTX 760\n",
    # an old GPU named, the driver not said to fail
    "I train on a GeForce GTX 580 with nvidia-driver-535 and it is slow.\nError: out of patience\n",
    # torch, not the driver, no longer supports the GPU (the driver drives it: torch found it)
    "GPU: NVIDIA GeForce GTX 760\nnvidia-driver-535 installed.\nFound GPU0 NVIDIA GeForce GTX 760 which is of cuda "
    "capability 3.0. PyTorch no longer supports this GPU because it is too old.\n",
])
def test_near_miss_dropped_gpu_stays_quiet(text, compat) -> None:
    assert not [f for f in _findings(text, compat) if f.code.startswith("diagnose.driver-gpu")]


# ---- a bus error in the job's processes: shared memory first (SHM_TOO_SMALL, warning)

@pytest.mark.parametrize("text", [
    # nccl-009 (msr-fiddle/pipedream#76): UCX's handler, NCCL's threads, a container's hex host name
    "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
    "==== backtrace (tid:   3095) ====\n 2 0x000000000007587d ncclGroupEnd()  ???:0\n",
    # deepspeedai/DeepSpeed#2638
    "cf0b62962198:378934:382525 [2] NCCL INFO Connected all trees\n"
    "[cf0b62962198:378934:0:382579] Caught signal 7 (Bus error: nonexistent physical address)\n",
    # NVIDIA/JAX-Toolbox#183 (gdb)
    "Thread 787 \"imagenet_fake_d\" received signal SIGBUS, Bus error.\n"
    "0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) ()\n",
])
def test_a_bus_error_in_the_job_is_shared_memory_first(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("SHM_TOO_SMALL")
    assert f is not None and f.severity == "warning", sorted(got)
    assert "UNRECOGNISED_ERROR" not in got


def test_near_miss_bus_words_that_are_no_signal_stay_quiet(compat) -> None:
    text = "PCI bus error counters are zero on every GPU.\nError: something else failed\n"
    assert "SHM_TOO_SMALL" not in _serious(text, compat)


# ---- CUDA error 802 named by its number (INTERCONNECT: the fabric manager)

@pytest.mark.parametrize("text", [
    # fabric-manager-001 (aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop#33)
    "CUDA initialization fails with 802 system error owing to lack of nvidia-fabricmanager install\n",
    # pytorch/pytorch#35710: the CUDA sample's line
    "[CUDA Bandwidth Test] - Starting...\ncudaGetDeviceProperties returned 802\n",
])
def test_cuda_error_802_by_its_number_is_the_fabric(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("INTERCONNECT")
    assert f is not None and f.code == "messages.signature/system-not-yet-initialized", sorted(got)


def test_near_miss_802_that_is_no_cuda_error_stays_quiet(compat) -> None:
    text = "The request fails with 802 retries left; port 8021 returned 802 bytes.\nError: unrelated\n"
    assert "INTERCONNECT" not in _serious(text, compat)


# ---- MIG said in words, and CUDA sees one device (MIG_ENABLED through the mig_enabled qualifier)

@pytest.mark.parametrize("text", [
    # mig-003 (pytorch/pytorch#102715)
    "Hi, I have an a100 machine and the configuration for MIG is following.\n\n"
    "and `torch.cuda.device_count()` shows only one gpu. How could I solve it?\n\ntorch is 1.13.1\n",
    # nvidia-smi -L's MIG lines (mlcommons/training#442's machine kind), the count said after them
    "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)\n"
    "  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)\n"
    "  MIG 3g.20gb     Device  1: (UUID: MIG-cba663e8-9bed-5b86-b2e8-35a5a0bf9d5d)\n"
    "torch.cuda.device_count() returns 1 although there are two instances.\n",
])
def test_one_cuda_device_on_a_mig_gpu_is_mig(text, compat) -> None:
    got = _serious(text, compat)
    f = got.get("MIG_ENABLED")
    assert f is not None and f.severity == "warning", sorted(got)
    assert "MIG-" in f.fix.summary and "one MIG device" in f.detail


@pytest.mark.parametrize("text", [
    "On my laptop torch.cuda.device_count() shows only one gpu, the RTX 3060.\n",
    # MIG named as something else: no configuration said
    "We use the MIG welding robot's camera; torch.cuda.device_count() returns 1.\n",
])
def test_near_miss_one_device_without_mig_says_nothing_serious(text, compat) -> None:
    assert _serious(text, compat) == {}


# ---- one model split over several GPUs that the reporter says does not pay (COMMUNICATION_BOUND, low)

@pytest.mark.parametrize("text,split", [
    # vllm-032 (vllm-project/vllm#1873)
    ("I have tested the tensor parallelism of vllm on multiple gpus, but the effect is not as good as running on a "
     "single card, even if the batch size is relatively large.\n\nMy service startup command is: "
     "CUDA_VISIBLE_DEVICES=0,1,2,3 python3 -m vllm.entrypoints.openai.api_server --dtype bfloat16 "
     "--tensor-parallel-size=4 --max-num-seqs 1024\n", "--tensor-parallel-size=4"),
    # vllm-031 (vllm-project/vllm#6131)
    ("I'm using vllm `0.4.0.post1`, and I start the server mode.\n\nHowever, I note that my GPU-UTIL is constantly "
     "below 50% (8xA100-40G).\n", "8xA100"),
])
def test_a_split_model_said_not_to_pay_is_communication_bound(text, split, compat) -> None:
    got = _serious(text, compat)
    f = got.get("COMMUNICATION_BOUND")
    assert f is not None and f.severity == "warning" and f.confidence == "low", sorted(got)
    assert f.code == "watch.bottleneck/reported-split" and split in f.summary


@pytest.mark.parametrize("text", [
    # data-parallel training on several GPUs, utilisation low: the input is the usual suspect, not a split model
    "Training with DDP on 4 GPUs, my GPU-UTIL is constantly below 50%.\n",
    # a split of one: nothing is exchanged
    "python -m vllm.entrypoints.openai.api_server --tensor-parallel-size 1\nthe effect is not as good as running on "
    "a single card\n",
    # a split said to work well
    "vllm with --tensor-parallel-size 4 runs at 95% GPU-Util on every GPU.\n",
])
def test_near_miss_split_words_stay_quiet(text, compat) -> None:
    assert "COMMUNICATION_BOUND" not in _serious(text, compat)
