"""The kinds of input reports-batch5 showed (issue 42), each on invented pastes in the wording of other trackers
than the batch's (the real batch texts are scored by test_reports.py), and quiet where the context says otherwise."""

from __future__ import annotations

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report


def _report(text: str):
    return diagnose_report([text], load_compat())


def _problems(text: str) -> dict:
    return {f.category: f for f in _report(text).problems}


def _serious(text: str) -> set:
    return {f.category for f in _report(text).findings if f.severity in ("warning", "error")}


# ---- NVRM: a branch that dropped the GPU, the open modules on a pre-Turing GPU, a BAR with no address space


def test_nvrm_legacy_branch_names_the_branch_and_explains_nvidia_smi() -> None:
    text = """$ nvidia-smi
NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.
$ dmesg | grep NVRM
[    5.120871] NVRM: The NVIDIA GeForce GT 710 GPU installed in this system is
               NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please
               NVRM:  visit http://www.nvidia.com/object/unix.html for more
               NVRM:  information.  The 535.129.03 NVIDIA driver will ignore
               NVRM:  this GPU.  Continuing probe...
[    5.121002] NVRM: No NVIDIA GPU found.
"""
    report = _report(text)
    dropped = [f for f in report.findings if f.category == "DRIVER_DROPPED_GPU"]
    assert dropped and dropped[0].severity == "error"
    assert any(e.value == "470" for e in dropped[0].evidence)  # the legacy branch read from the message
    # nvidia-smi's failure follows from it: not a second cause
    assert [f.category for f in report.problems] == ["DRIVER_DROPPED_GPU"]


def test_open_kernel_module_on_pascal() -> None:
    text = """kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)
             NVRM: installed in this system is not supported by open
             NVRM: nvidia.ko because it does not include the required GPU
             NVRM: System Processor (GSP).
kernel: nvidia 0000:09:00.0: probe with driver nvidia failed with error -1
kernel: NVRM: None of the NVIDIA devices were initialized.
"""
    assert "OPEN_KERNEL_MODULE_UNSUPPORTED_GPU" in _problems(text)


def test_bar_without_address_space_is_the_firmware() -> None:
    text = """[    0.512345] pci 0000:01:00.0: BAR 1 [mem size 0x800000000 64bit pref]: can't assign; no space
[    0.512350] pci 0000:01:00.0: BAR 1 [mem size 0x800000000 64bit pref]: failed to assign
"""
    f = _problems(text)["BIOS_PCIE_BAR_DISABLED"]
    assert f.severity == "error" and "Above 4G" in f.fix.summary


def test_rm_init_adapter_failed_is_only_a_lead() -> None:
    text = "NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x24:0x72:1568)\n"
    bar = [f for f in _report(text).findings if f.category == "BIOS_PCIE_BAR_DISABLED"]
    assert bar and bar[0].severity == "warning" and bar[0].confidence == "low"


def test_fabric_manager_of_another_version() -> None:
    text = ("Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version "
            "550.127.05 doesn't match with driver version 550.120. Please update with the matching NVIDIA driver "
            "package.\n")
    f = _problems(text)["INTERCONNECT"]
    assert {e.value for e in f.evidence} >= {"550.127.05", "550.120"}


# ---- other ecosystems: jax's component check, XLA's cuDNN handle, ollama's library choice


def test_jax_outdated_cudnn_on_one_line_reads_the_versions() -> None:
    text = ("CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA "
            "components: Outdated cuDNN installation found. Version JAX was built against: 90300 Minimum "
            "supported: 90100 Installed version: 90000\n")
    report = _report(text)
    f = [f for f in report.findings if f.category == "CUDA_LIBRARY_VERSION_MISMATCH"][0]
    assert {e.value for e in f.evidence} >= {"90300", "90100", "90000"}
    assert not [g for g in report.findings if g.category == "UNRECOGNISED_ERROR"]


def test_cudnn_handle_with_memory_free_is_the_library_with_memory_taken_is_memory() -> None:
    free = """E0607 11:27:34.427160    7414 cuda_dnn.cc:534] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR
E0607 11:27:34.427190    7414 cuda_dnn.cc:538] Memory usage: 23000000000 bytes free, 25300000000 bytes total.
"""
    full = free.replace("23000000000 bytes free", "120000000 bytes free")
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in _serious(free)
    assert "GPU_BUSY" in _serious(full) and "CUDA_LIBRARY_VERSION_MISMATCH" not in _serious(full)
    # a lead at most: never an error from this line alone
    assert not [f for f in _report(full).findings if f.severity == "error"]


def test_ollama_skipping_the_gpu_library_is_the_variable() -> None:
    text = ('time=2025-11-02T10:00:00.000Z level=INFO source=runner.go:80 msg="skipping available library at users '
            'request" requested=cuda_v11 libDir=/usr/lib/ollama/cuda_v12\n')
    f = _problems(text)["ENV_VAR_HARMFUL"]
    assert "OLLAMA_LLM_LIBRARY" in f.fix.summary


# ---- context: a Kubernetes pod is a container, its missing driver is the runtime's


def test_found_no_driver_in_a_pod_is_the_container_runtime() -> None:
    text = """Our job runs in a Kubernetes pod (EKS, resources: limits: nvidia.com/gpu: 1):
RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver
"""
    facts, _ = read_paste([text], load_compat())
    assert facts.host.container.runtime == "kubernetes"
    problems = _problems(text)
    assert "CONTAINER_NO_GPU_RUNTIME" in problems and "NO_NVIDIA_DRIVER" not in problems


def test_the_same_error_on_a_workstation_stays_the_driver() -> None:
    text = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU\n"
    facts, _ = read_paste([text], load_compat())
    assert facts.host.container is None or not facts.host.container.runtime
    assert "NO_NVIDIA_DRIVER" in _serious(text) and "CONTAINER_NO_GPU_RUNTIME" not in _serious(text)


def test_the_word_pod_in_other_senses_is_not_kubernetes() -> None:
    text = "I use a tripod and an iPod; the episode is about podcasts.\nRuntimeError: Found no NVIDIA driver on your system.\n"
    facts, _ = read_paste([text], load_compat())
    assert facts.host.container is None or facts.host.container.runtime != "kubernetes"


# ---- version pairing: a companion library missing a torch symbol, in every platform's wording


def test_companion_symbol_missing_on_macos_and_by_bare_name() -> None:
    mac = ("OSError: dlopen(/opt/homebrew/lib/python3.11/site-packages/torchvision/image.so, 0x0006): "
           "Symbol not found: __ZN3c1017RegisterOperatorsD1Ev\n")
    bare = "OSError: libtorchvision.so: undefined symbol: _ZN3c106detail14torchCheckFail\n"
    assert "COMPANION_VERSION_MISMATCH" in _problems(mac)
    assert "COMPANION_VERSION_MISMATCH" in _problems(bare)


# ---- a GPU-sharing layer in the way; a pod's runtime fixed on the pod spec


def test_hamis_libvgpu_in_the_way_is_the_sharing_layer() -> None:
    missing = "bash: symbol lookup error: /usr/local/vgpu/libvgpu.so: undefined symbol: cuMemAllocAsync\n"
    preload = ("ERROR: ld.so: object '/usr/local/vgpu/libvgpu.so' from /etc/ld.so.preload cannot be preloaded "
               "(cannot read file data): ignored.\n")
    for text in (missing, preload):
        assert "GPU_SHARING_LAYER_INTERCEPTS_CUDA" in _problems(text), text
    # an extension's undefined symbol stays the extension's
    other = "ImportError: /opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.so: undefined symbol: _ZN3c10\n"
    assert "GPU_SHARING_LAYER_INTERCEPTS_CUDA" not in _serious(other)


def test_a_pods_missing_runtime_is_fixed_on_the_pod_spec() -> None:
    text = "$ kubectl exec -it trainer-0 -- nvidia-smi\nbash: nvidia-smi: command not found\n"
    f = _problems(text)["CONTAINER_NO_GPU_RUNTIME"]
    assert "pod" in f.fix.summary and "nvidia.com/gpu" in f.fix.summary
    assert not any("apt" in c for c in f.fix.commands)  # not a host driver install
    # the message finding's own fix, where no facts-based finding takes it over
    found = "Running in a GKE pod.\nRuntimeError: Found no NVIDIA driver on your system.\n"
    g = _problems(found)["CONTAINER_NO_GPU_RUNTIME"]
    assert "runtimeClassName" in g.fix.summary or "pod" in g.fix.summary
    docker = "$ docker run -it --rm pytorch/pytorch nvidia-smi\nbash: nvidia-smi: command not found\n"
    h = _problems(docker)["CONTAINER_NO_GPU_RUNTIME"]
    assert "pod spec" not in h.fix.summary


# ---- speed symptoms: a framework's own warning that the loader has too few workers


def test_lightning_few_workers_warning_is_a_lead_in_both_wordings() -> None:
    old = ("/opt/conda/lib/python3.8/site-packages/pytorch_lightning/utilities/distributed.py:51: UserWarning: The "
           "dataloader, train dataloader, does not have many workers which may be a bottleneck. Consider increasing "
           "the value of the `num_workers` argument` (try 8 which is the number of cpus on this machine) in the "
           "`DataLoader` init to improve performance.\n")
    new = ("/venv/lib/python3.11/site-packages/lightning/pytorch/trainer/connectors/data_connector.py:424: The "
           "'val_dataloader' does not have many workers which may be a bottleneck. Consider increasing the value of "
           "the `num_workers` argument` to `num_workers=15` in the `DataLoader` to improve performance.\n")
    for text in (old, new):
        found = [f for f in _report(text).findings if f.category == "DATALOADER_IN_MAIN_PROCESS"]
        assert found and found[0].severity == "warning" and found[0].confidence == "low", text


# ---- MIG: a CUDA process enumerates one MIG device, so a second ordinal is invalid


def test_invalid_device_ordinal_on_mig_is_mig() -> None:
    text = """$ nvidia-smi -L
GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
  MIG 3g.20gb     Device  1: (UUID: MIG-cba663e8-9bed-5b7c-b4c5-f3fd3e9e1a49)
$ python -c "import torch; torch.cuda.set_device(1)"
RuntimeError: CUDA error: invalid device ordinal
"""
    f = _problems(text)["MIG_ENABLED"]
    assert f.severity == "error" and "MIG-<UUID>" in f.fix.summary
    plain = "RuntimeError: CUDA error: invalid device ordinal\n"
    assert "MIG_ENABLED" not in _serious(plain) and "NO_GPU_VISIBLE" in _serious(plain)


# ---- a device without stream-ordered memory pools (cudaMallocAsync -> 801): a vGPU slice when the paste names one


def test_memory_pools_unsupported_on_a_named_vgpu_profile() -> None:
    # xgboost's and Azure's wording (not the openvdb report the batch holds): a GRID profile name in nvidia-smi
    text = """terminate called after throwing an instance of 'thrust::system::system_error'
  what():  cudaMallocAsync failed: cudaErrorNotSupported: operation not supported
|   0  NVIDIA A40-48C                 On  |   00000000:02:00.0 Off |                    0 |
"""
    f = _problems(text)["GPU_VIRTUALIZED"]
    assert (f.code, f.severity, f.confidence) == ("messages.signature/cuda-memory-pools-unsupported", "error", "high")
    assert "PYTORCH_CUDA_ALLOC_CONF" in f.fix.summary


def test_memory_pools_unsupported_without_a_vgpu_named_is_said_with_low_confidence() -> None:
    # cuvs' wording on a GPU the paste does not name: a slice is the usual cause, Maxwell and TCC the others
    text = "compute_distance.hpp:244: call='cudaMallocAsync(&ptr, size, stream)', Reason=cudaErrorNotSupported:" \
           "operation not supported\n"
    f = _problems(text)["GPU_VIRTUALIZED"]
    assert f.confidence == "low" and "Maxwell" in f.detail


def test_vgpu_names_and_what_is_not_one() -> None:
    from envdoctor.diagnose.readers.nvidia_smi import _VGPU

    for named in ("NVIDIA GRID driver 19.5", "GRID A100-4C", "|   0  NVIDIA A100-3-20C   On |", "on a vGPU slice",
                  "    Virtualization Mode                   : VGPU", "NVIDIA L4-3Q"):
        assert _VGPU.search(named), named
    for plain in ("grid size (128, 1, 1)", "GRID_SIZE=4", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090",
                  "    Virtualization Mode                   : None", "NVIDIA H100 80GB HBM3"):
        assert not _VGPU.search(plain), plain
    # a healthy nvidia-smi on a whole GPU with an unrelated 801 in it: no memory-pool finding
    assert "GPU_VIRTUALIZED" not in _serious("Step 801: loss 0.25\nNVIDIA-SMI 580.65.06  Driver Version: 580.65.06\n")
