"""Issue 42, corpus round 12's misses (helper fix12), each read as a kind seen in two or more trackers.

- NVML's "driver not loaded", whoever prints it, is the host's driver: nvidia-container-cli runs on the host and
  loads the host's NVML before it sets up any container (iterative/cml#1069: a cloud runner provisioned without the
  driver), as pynvml's NVMLError_DriverNotLoaded (wookayin/gpustat#110). NO_NVIDIA_DRIVER, not the container's
  runtime.
- nvidia-smi's failure to reach the driver, said in the reporter's words (elementary/os-patches#155) as the
  message itself (many trackers), is NO_NVIDIA_DRIVER; a daemon's own words are not nvidia-smi's.
- PCIe peer-to-peer broken by the IOMMU or ACS, told by its symptoms without a topology matrix: a copy between
  GPUs arriving as zeros (pytorch/pytorch#84803), four GPUs slower than one (soumith/imagenet-multiGPU.torch#59),
  a CUDA error only with data parallel on four GPUs (huggingface/transformers#8628), the IOMMU named or
  NCCL_P2P_DISABLE=1 said to fix a multi-GPU hang (NVIDIA/nccl#2079, vllm-project/vllm issues): INTERCONNECT.
"""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# ---- NVML: driver not loaded ------------------------------------------------------------------------------------
# cml-001 (iterative/cml)
CML = ("docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create "
       "failed: unable to start container process: error during container init: error running hook #0: error "
       "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
       "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n")
# gpustat-001 (wookayin/gpustat)
GPUSTAT = ('  File "/usr/lib/python3/dist-packages/pynvml.py", line 310, in _nvmlCheckReturn\n'
           "    raise NVMLError(ret)\npynvml.NVMLError_DriverNotLoaded: Driver Not Loaded\n")


def test_nvml_driver_not_loaded_is_the_hosts_driver_whoever_prints_it(compat) -> None:
    for text in (CML, GPUSTAT):
        got = _serious(text, compat)
        assert "NO_NVIDIA_DRIVER" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)
        assert got["NO_NVIDIA_DRIVER"].severity == "error"


def test_near_miss_other_container_cli_failures_stay_the_runtime_or_the_library(compat) -> None:
    mount = ("docker: Error response from daemon: OCI runtime create failed: stderr: nvidia-container-cli: mount "
             "error: file creation failed: /var/lib/docker/overlay2/x/merged/run/nvidia-persistenced/socket: no "
             "such device or address: unknown.\n")
    got = _serious(mount, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got and "NO_NVIDIA_DRIVER" not in got, sorted(got)
    mismatch = "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.\n"
    got = _serious(mismatch, compat)
    assert "DRIVER_LIBRARY_MISMATCH" in got and "NO_NVIDIA_DRIVER" not in got, sorted(got)


# ---- nvidia-smi cannot reach the driver, in words ----------------------------------------------------------------
def test_nvidia_smi_failing_to_reach_the_driver_in_words_is_no_driver(compat) -> None:
    elementary = ("Can't install drivers. `nvidia-smi` cannot communicate with drivers. I've tried "
                  "`nvidia-driver-390`, `nvidia-driver-450` and `nvidia-driver-455`.\n")
    said = "After the kernel update nvidia-smi could not communicate with the NVIDIA driver any more.\n"
    for text in (elementary, said):
        codes = {f.code for f in _findings(text, compat) if f.category == "NO_NVIDIA_DRIVER"}
        assert "messages.signature/nvidia-smi-could-not-communicate" in codes, codes


def test_near_miss_a_daemons_own_words_are_not_nvidia_smis(compat) -> None:
    # lxd-001 (juju's charm log; a driver/library mismatch in an LXD container)
    text = "2017-05-12 13:32:35 INFO juju-log Unable to communicate with the NVIDIA driver.\n"
    codes = {f.code for f in _findings(text, compat)}
    assert "messages.signature/nvidia-smi-could-not-communicate" not in codes, codes


# ---- GPU peer-to-peer broken by the IOMMU / ACS, told by its symptoms ----------------------------------------------
# pytorch-005 (pytorch/pytorch)
PEER_COPY = ("Moving a tensor from one GPU to another GPU, results in data corruption (silently with no warning or "
             "errors).\n```\nimport torch\nx = torch.tensor([1], device=0)\nx.to(1)\n>tensor([0], device='cuda:1')\n```\n")
# imagenet-multigpu-torch-001 (soumith/imagenet-multiGPU.torch)
SLOWER = ("Train Alexnet with 4 GPUs seems slower than one\n\nI have 4 GPUs on my machine, and they're connected with "
          "PCIE16. When I train AlexnetOWT model with nGPU=4, one batch takes 2.3s; but when nGPU=1, one batch takes "
          "only 0.48s.\n")
# transformers-007 (huggingface/transformers)
DATA_PARALLEL = ("CUDA error when training roBERTa from scratch with data parallel.\n\n- PyTorch version (GPU?): "
                 "1.7.0+cu110\n```shell\nexport CUDA_VISIBLE_DEVICES=0,1,2,3\npython run_language_modeling.py "
                 "--model_type=roberta\n```\nWhen we enable all four GPUs (4xNVIDIA\n")
# the mechanism or its test said in words (NVIDIA/nccl#2079, vllm-project/vllm reports of the same hang)
P2P_OFF = "Training with DDP on 2 GPUs hangs at the first all_reduce; with NCCL_P2P_DISABLE=1 it works.\n"
IOMMU = "On our EPYC server multi-GPU training hangs forever unless we turn off the IOMMU in the BIOS.\n"


def test_gpu_to_gpu_symptoms_read_as_a_suspected_p2p_break(compat) -> None:
    for text, confidence in ((PEER_COPY, "medium"), (SLOWER, "low"), (DATA_PARALLEL, "low"),
                             (P2P_OFF, "medium"), (IOMMU, "medium")):
        got = {f.code: f for f in _findings(text, compat) if f.category == "INTERCONNECT"}
        f = got.get("diagnose.p2p-said/p2p-suspected")
        assert f is not None, (text[:60], sorted(got))
        assert (f.severity, f.confidence) == ("warning", confidence), (text[:60], f.severity, f.confidence)
        assert any("NCCL_P2P_DISABLE=1" in c for c in f.fix.commands)


def test_near_misses_say_nothing_of_p2p(compat) -> None:
    texts = (
        "Moving a tensor from one GPU to another works; the loss is wrong after epoch 3.\n",  # no corrupt copy
        "Training with 4 GPUs is 3.5x faster than one, as expected.\n",  # faster, not slower
        "The CPU version is slower than one GPU by far.\n",  # not several GPUs
        # an error with DataParallel in a paste that never names several GPUs
        "RuntimeError: CUDA error: out of memory when training with DataParallel\n",
        # NCCL_P2P_DISABLE only as a setting in an environment listing (easyr1-001: a /dev/shm problem)
        "env_vars:\n  NCCL_P2P_DISABLE: 1\n  NCCL_DEBUG: INFO\n",
        "The IOMMU group of the NIC is 14.\n",  # the word, no multi-GPU failure
        "DDP on 2 GPUs times out in all_reduce; NCCL_P2P_DISABLE=1 doesn't help, it still fails.\n",  # said not to fix
    )
    for text in texts:
        codes = {f.code for f in _findings(text, compat)}
        assert "diagnose.p2p-said/p2p-suspected" not in codes, (text, codes)
