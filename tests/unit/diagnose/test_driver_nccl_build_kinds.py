"""Kinds of message the corpus missed (issue 29, kinds C): driver errors by their CUDA error code or without a
version, NCCL's /dev/shm "Last error", extension builders' toolkit and torch messages, a compiled extension module
that is not defined. Each kind on invented lines of the same shape, a healthy paste using the same words, and the
real corpus rows it fixes."""

from __future__ import annotations

import json

import pytest

from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES

CORPUS = FIXTURES / "corpus"


def _serious(text: str, compat) -> dict:
    report = diagnose_report([text], compat)
    return {f.category: f for f in report.findings if f.severity in ("warning", "error")}


def _errors(text: str, compat) -> set:
    return {f.category for f in diagnose_report([text], compat).findings if f.severity == "error"}


# ---- the driver: torch's message without its version, CUDA error 35 by number, 804 by what the paste shows

@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n  File \"serve.py\", line 3, in <module>\n"
    "RuntimeError: The NVIDIA driver on your system is too old",
    "[TRT] [W] CUDA initialization failure with error: 35. Please check your CUDA installation",
    "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient at Module.cpp:32",
    "OSError: (External) CUDA error(35), see the hint.",
])
def test_driver_too_old_without_a_version(text: str, compat) -> None:
    got = _serious(text, compat)
    f = got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert f.severity == "error" and f.code.startswith("messages.signature/")
    assert "NO_NVIDIA_DRIVER" not in got


def test_driver_message_with_its_version_keeps_the_versioned_row(compat) -> None:
    report = diagnose_report(["RuntimeError: The NVIDIA driver on your system is too old (found version 11040)."],
                             compat)
    codes = {f.code for f in report.findings}
    assert "messages.signature/driver-too-old-found-version" in codes
    assert "messages.signature/driver-too-old-no-version" not in codes


@pytest.mark.parametrize("text", [
    "CUDA error: 350 blocks launched",  # another number
    "cuda graph replay: error 35.2% above baseline",  # a decimal, not the code
    "CUDA initialization succeeded with error: 0",
])
def test_other_numbers_are_not_error_35(text: str, compat) -> None:
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in _serious(text, compat)


_804 = ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
        "compatibility was attempted on non supported HW")


def test_804_alone_is_a_driver_older_than_the_cuda_wanted(compat) -> None:
    got = _serious(_804, compat)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "error"
    assert "DRIVER_LIBRARY_MISMATCH" not in got


def test_804_with_a_ceiling_above_the_drivers_branch_is_a_library_mismatch(compat) -> None:
    # nvidia-smi's "CUDA Version" comes from the loaded libcuda: 12.2 on a 470 kernel driver is a compat copy
    text = "Driver Version: 470.57.02\nCUDA Version: 12.2\n\n" + _804
    got = _serious(text, compat)
    assert got["DRIVER_LIBRARY_MISMATCH"].code == "messages.signature/forward-compat-unsupported-hw"
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in {c for c, f in got.items() if f.code.endswith("unsupported-hw")}


def test_804_with_a_consistent_driver_stays_driver_too_old(compat) -> None:
    text = "Driver Version: 535.104.05\nCUDA Version: 12.2\n\n" + _804
    got = _serious(text, compat)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].code == "messages.signature/forward-compat-unsupported-hw"


@pytest.mark.parametrize("text", ["cudaErrorSystemDriverMismatch", "Error 803: system has unsupported display "
                                                                  "driver / cuda driver combination"])
def test_803_by_name_and_text_is_a_library_mismatch(text: str, compat) -> None:
    assert "DRIVER_LIBRARY_MISMATCH" in _serious("RuntimeError: " + text, compat)


# ---- NCCL's last error is a /dev/shm segment

_NCCL = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error "
         "(run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
         "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
         "Last error:\n")


def test_nccl_system_error_from_a_shm_segment_is_shm(compat) -> None:
    text = _NCCL + "Error while creating shared memory segment /dev/shm/nccl-Qw3rTy (size 4194304)"
    got = _serious(text, compat)
    assert got["SHM_TOO_SMALL"].severity == "error"
    assert "INTERCONNECT" not in got


def test_nccl_system_error_from_a_socket_stays_interconnect(compat) -> None:
    text = _NCCL + "socketStartConnect: Connect to 10.1.2.3<43121> failed : Software caused connection abort"
    got = _serious(text, compat)
    assert "INTERCONNECT" in got and "SHM_TOO_SMALL" not in got


def test_nccl_info_over_shm_is_not_an_error(compat) -> None:
    text = ("node1:311:402 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
            "node1:311:402 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
            "Filesystem      Size  Used Avail Use% Mounted on\nshm              16G     0   16G   0% /dev/shm\n")
    assert "SHM_TOO_SMALL" not in _serious(text, compat)


# ---- extension builders: nvcc against torch's CUDA, torch missing where the build runs

@pytest.mark.parametrize("text", [
    "Installed CUDA version 12.0 does not match the version torch was compiled with 12.1 but since the APIs "
    "are compatible, accepting this combination",
])
def test_builder_nvcc_older_than_torch(text: str, compat) -> None:
    got = _serious(text, compat)
    assert got["NVCC_TORCH_CUDA_MISMATCH"].severity == "error"


def test_builder_nvcc_without_the_architecture(compat) -> None:
    # nvcc not knowing the target is a toolkit older than the architecture (issue 42, archdriver: cuda-build-009
    # and -013 are plain CUDA builds); only a torch extension's build names the toolkit that is not torch's too
    alone = _serious("nvcc fatal   : Unsupported gpu architecture 'compute_90'", compat)
    assert alone["GPU_ARCH_NOT_IN_TORCH_BUILD"].severity == "error" and "NVCC_TORCH_CUDA_MISMATCH" not in alone
    ext = _serious("python setup.py install\nnvcc fatal   : Unsupported gpu architecture 'compute_90'", compat)
    assert {"GPU_ARCH_NOT_IN_TORCH_BUILD", "NVCC_TORCH_CUDA_MISMATCH"} <= set(ext)


def test_builder_nvcc_healthy_lines(compat) -> None:
    text = ("nvcc warning : The 'compute_35', 'compute_37' architectures are deprecated, and may be removed in a "
            "future release\nInstalled CUDA version 12.1 matches the version torch was compiled with 12.1\n")
    assert "NVCC_TORCH_CUDA_MISMATCH" not in _serious(text, compat)


def test_build_without_torch(compat) -> None:
    text = ("  Preparing metadata (setup.py) ... error\n"
            "  [WARNING] Unable to import torch, pre-compiling ops will be disabled. Please visit pytorch.org\n")
    f = _serious(text, compat)["TORCH_NOT_INSTALLED"]
    assert f.severity == "error" and f.code == "messages.signature/build-needs-torch-installed"


_DS = ("DeepSpeed general environment info:\ntorch install path ............... ['/venv/lib/python3.10/"
       "site-packages/torch']\ntorch version .................... 2.1.0+cu121\ntorch cuda version ............... "
       "12.1\nnvcc version ..................... {nvcc}\ndeepspeed info ................... 0.12.3, unknown, unknown\n")


def test_ds_report_nvcc_of_another_cuda_than_torch(compat) -> None:
    f = _serious(_DS.format(nvcc="11.8"), compat)["NVCC_TORCH_CUDA_MISMATCH"]
    assert f.code == "toolchain.nvcc-torch/major" and f.severity == "warning"
    assert any(e.value == "11.8" for e in f.evidence)


def test_ds_report_with_torch_and_its_nvcc_is_healthy(compat) -> None:
    got = _serious(_DS.format(nvcc="12.1"), compat)
    assert "TORCH_NOT_INSTALLED" not in got and "NVCC_TORCH_CUDA_MISMATCH" not in got


# ---- a compiled extension module that is not defined

def test_extension_module_not_defined(compat) -> None:
    text = "Cannot import /srv/app/nodes/fused module for custom nodes: name 'fused_dense_cuda' is not defined"
    f = _serious(text, compat)["THIRD_PARTY_EXTENSION_MISMATCH"]
    assert f.severity == "warning" and f.confidence == "low"


def test_an_ordinary_name_not_defined_is_not_an_extension(compat) -> None:
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in _serious("NameError: name 'model' is not defined", compat)


# ---- the real corpus rows these kinds fix

_ROWS = ["vllm/vllm-001", "vllm/vllm-016", "tensorrt/tensorrt-001", "sglang/sglang-003", "deepspeed/deepspeed-003",
         "nccl/nccl-003", "nccl/nccl-004", "nccl/nccl-005", "nccl/nccl-006",
         "deepspeed/deepspeed-005", "deepspeed/deepspeed-006", "comfyui/comfyui-012"]


@pytest.mark.parametrize("row", _ROWS)
def test_corpus_rows(row: str, compat) -> None:
    folder, rid = row.split("/")
    labels = next(r["labels"] for r in json.loads((CORPUS / folder / "labels.json").read_text()) if r["id"] == rid)
    got = _serious((CORPUS / folder / f"{rid}.txt").read_text(encoding="utf-8"), compat)
    assert set(labels) <= set(got), sorted(got)


# ---- two framework banners are two runs: each judged on its own, never one value dropped for the other

def test_two_banners_before_and_after_an_update(compat) -> None:
    text = ("Ultralytics YOLOv8.1.0 Python-3.11.4 torch-2.1.2+cu121 CUDA:0 (NVIDIA GeForce RTX 4070, 12282MiB)\n"
            "Ultralytics YOLOv8.2.5 Python-3.11.4 torch-2.3.0+cpu CPU\n")
    report = diagnose_report([text], compat)
    assert len(report.machines) == 2
    first, second = ({f.category for f in m.findings if f.severity in ("warning", "error")} for m in report.machines)
    assert not first and "TORCH_CPU_ONLY_BUILD" in second


def test_one_banner_repeated_is_one_run(compat) -> None:
    line = "Ultralytics YOLOv8.1.0 Python-3.11.4 torch-2.1.2+cu121 CUDA:0 (NVIDIA GeForce RTX 4070, 12282MiB)\n"
    report = diagnose_report([line + "epoch 1/10\n" + line], compat)
    assert not report.machines
    assert not [f for f in report.all_findings if f.severity in ("warning", "error")]


# ---- which import failed: the statement after `import torch` ran, so torch's import went through

def test_listing_whose_next_import_failed_is_not_torchs_import(compat) -> None:
    from envdoctor.diagnose import read_paste

    text = ("import torch\nimport fused_norm_cuda\n\n"
            "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n")
    facts, _ = read_paste([text], compat)
    assert "paste.torch_import" not in facts.paste.provenance
    assert "TORCH_IMPORT_FAILED" not in _serious(text, compat)


def test_torch_import_that_raised_stays_torchs(compat) -> None:
    from envdoctor.diagnose import read_paste

    text = ("import torch\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
            "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\nimport numpy\n")
    facts, _ = read_paste([text], compat)
    assert facts.paste.provenance["paste.torch_import"]["value"] is True


# ---- an NCCL INFO log: the communicator completes, then the run makes no progress

_NCCL_LOG = ("ws1:4021:4100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
             "ws1:4022:4101 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM\n"
             "ws1:4021:4100 [0] NCCL INFO comm 0x5a rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 - Init COMPLETE\n"
             "INFO 03-02 10:11:12 model_runner.py:1000] Graph capturing finished in 4 secs.\n")
_TOPO = ("        GPU0    GPU1    CPU Affinity    NUMA Affinity\nGPU0     X      PXB     0-31            0\n"
         "GPU1    PXB      X      0-31            0\n\n")


def test_nccl_log_stalled_at_zero_asks_for_the_topology(compat) -> None:
    text = _NCCL_LOG + "Processed prompts:   0%|          | 0/64 [00:00<?, ?it/s]\n"
    report = diagnose_report([text], compat)
    f = next(f for f in report.findings if f.code == "diagnose.p2p-hang/topology-unknown")
    assert f.severity == "info" and "topo -m" in f.summary


def test_nccl_log_stalled_with_gpus_behind_one_switch_is_interconnect(compat) -> None:
    text = _TOPO + _NCCL_LOG + "Processed prompts:   0%|          | 0/64 [00:00<?, ?it/s]\n"
    f = _serious(text, compat)["INTERCONNECT"]
    assert f.code == "diagnose.p2p-hang/pcie-p2p-broken" and f.severity == "warning"


def test_nccl_log_that_progresses_is_no_hang(compat) -> None:
    from envdoctor.diagnose import read_paste

    text = (_TOPO + _NCCL_LOG + "Processed prompts:   0%|          | 0/64 [00:00<?, ?it/s]\n"
            "Processed prompts: 100%|##########| 64/64 [00:09<00:00,  6.91it/s]\n")
    facts, _ = read_paste([text], compat)
    assert "paste.collective_hang" not in (facts.paste.provenance or {})
    assert "INTERCONNECT" not in _serious(text, compat)


# ---- NVLink SHARP (NVLS): NCCL's multicast setup over the NVSwitches failed (the Fabric Manager)

@pytest.mark.parametrize("text", [
    "gpu12:4962:5097 [1] transport/nvls.cc:223 NCCL WARN Cuda failure 999 'unknown error'\n",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\nncclUnhandledCudaError: Call to CUDA function failed.\n"
    "Last error:\nFailed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error 1 'invalid "
    "argument'.\n",
])
def test_nvls_setup_failure_is_the_fabric(text: str, compat) -> None:
    report = diagnose_report([text], compat)
    (f,) = [f for f in report.findings if f.severity in ("warning", "error")]  # NCCL's wrappers are explained too
    assert (f.category, f.severity, f.code) == ("INTERCONNECT", "error", "messages.signature/nccl-nvls-setup-failed")
    assert "NCCL_NVLS_ENABLE=0" in f.fix.summary and "fabricmanager" in f.fix.summary


def test_nccl_nvls_info_lines_are_not_an_error(compat) -> None:
    text = ("Driver Version: 550.54.15\nnode1:311:402 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
            "node1:311:402 [0] NCCL INFO transport/nvls.cc:410 NVLS comm 0x55 headRank 0 nHeads 4\n")
    assert "INTERCONNECT" not in _serious(text, compat)


def test_nccl_wrapper_without_a_cause_stays_unexplained(compat) -> None:
    # the wrapper is generic only where a finding names the cause: alone it is still an error line not judged
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error (run "
            "with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")
    assert "UNRECOGNISED_ERROR" in _serious(text, compat)
