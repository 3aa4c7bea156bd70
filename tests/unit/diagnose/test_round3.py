"""`diagnose` round 3 (issue 24): the fourteen general gaps, each on a paste built from real captured pieces (the
thread or capture each piece comes from is named next to it; tests/fixtures/SOURCES.md lists them), with the
false readings each mechanism must not produce."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from envdoctor.compat.signatures import SignatureError, parse_signatures
from envdoctor.diagnose import NothingRecognised, read_paste
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES, REPO
from tests.unit.diagnose.test_mechanisms import _serious

PASTES = FIXTURES / "pastes"


def _codes(report) -> set:
    return {f.code for f in report.findings}


# ---- gap 1: a CPU-only build shown by the install, not by torch.__version__

def test_default_index_windows_wheel_is_a_cpu_build(compat) -> None:
    # pip's log lines in the form of pytorch/pytorch#52662, a GPU list in nvidia-smi -L's layout
    text = ("PS C:\\Users\\me> pip install torch torchvision\nCollecting torch\n"
            "  Downloading torch-2.1.0-cp311-cp311-win_amd64.whl (192.3 MB)\n"
            "Successfully installed torch-2.1.0 torchvision-0.16.0\nPS C:\\Users\\me> nvidia-smi -L\n"
            "GPU 0: NVIDIA GeForce RTX 3060 (UUID: GPU-0d3f)\n")
    report = diagnose_report([text], compat)
    assert _serious(report).get("TORCH_CPU_ONLY_BUILD") == {"error"}
    pkg = report.facts.pythons[0].package("torch")
    assert pkg.variant == "cpu" and "default index" in pkg.variant_evidence and "192.3 MB" in pkg.variant_evidence
    # a CUDA index in the same paste, a +cu tag, or a Linux wheel (PyPI's Linux wheel is a CUDA build): no claim
    for other in (text.replace("pip install torch torchvision",
                               "pip install torch --index-url https://download.pytorch.org/whl/cu121"),
                  text.replace("torch-2.1.0-cp311", "torch-2.1.0+cu121-cp311"),
                  text.replace("win_amd64", "manylinux1_x86_64").replace("PS C:\\Users\\me>", "$")):
        assert "TORCH_CPU_ONLY_BUILD" not in _serious(diagnose_report([other], compat)), other


def test_conda_plan_cpu_build_string(compat) -> None:
    report = diagnose_report([(PASTES / "conda-plan-cpuonly.txt").read_text()], compat)
    assert "TORCH_CPU_ONLY_BUILD" in _serious(report)


# ---- gap 2: well-known messages of the catalogue

@pytest.mark.parametrize("text, category", [
    # torch's message alone, with none of the reader's error words (vllm-project/vllm#6184's first line)
    ("Found no NVIDIA driver on your system.\n", "NO_NVIDIA_DRIVER"),
    # nvidia-smi after a GPU fell off the bus (NVIDIA/open-gpu-kernel-modules#387)
    ("$ nvidia-smi\nUnable to determine the device handle for GPU 0000:0B:00.0: Unknown Error\n", "GPU_XID_ERRORS"),
    # cuda-python under WSL (NVIDIA/cuda-python#17)
    ("Ubuntu in WSL2\nRuntimeError: Failed to dlopen libcuda.so\n", "WSL_SPECIFIC"),
])
def test_catalogue_families(compat, text, category) -> None:
    assert category in _serious(diagnose_report([text], compat))


def test_dlopen_libcuda_outside_wsl_is_only_a_lead(compat) -> None:
    report = diagnose_report(["RuntimeError: Failed to dlopen libcuda.so\n"], compat)
    assert _serious(report) == {"NO_NVIDIA_DRIVER": {"warning"}}  # low confidence: a warning, never an error


# ---- gap 3: one message, another meaning where the paste's platform says so

def test_busy_or_unavailable_qualified_by_wsl_and_windows_build(compat) -> None:
    report = diagnose_report([(PASTES / "wsl-busy-insider.txt").read_text()], compat)
    serious = _serious(report)
    assert serious.get("WSL_SPECIFIC") == {"error"} and "COMPUTE_MODE_RESTRICTED" not in serious
    linux = "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable\n"
    assert "COMPUTE_MODE_RESTRICTED" in _serious(diagnose_report([linux], compat))
    assert "WSL_SPECIFIC" not in _serious(diagnose_report([linux], compat))


# ---- gap 4: a companion's own library is a companion mismatch

@pytest.mark.parametrize("line", [
    "ImportError: /usr/local/lib/python3.5/dist-packages/_torch_sox.cpython-35m-x86_64-linux-gnu.so: undefined "
    "symbol: _ZN2at19UndefinedTensorImpl10_singletonE",  # pytorch/audio#99
    "OSError: /env/lib/python3.8/site-packages/torchaudio/_torchaudio.so: undefined symbol: "
    "_ZN5torch3jit17parseSchemaOrNameERKSs",  # pytorch/audio#62
    "OSError: /usr/lib/python3/dist-packages/torchvision/image.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSs",
])
def test_companion_library_symbol(compat, line) -> None:
    serious = _serious(diagnose_report([line + "\n"], compat))
    assert "COMPANION_VERSION_MISMATCH" in serious and "THIRD_PARTY_EXTENSION_MISMATCH" not in serious


# ---- gap 5: a conda solve that mixes CUDA majors


# ---- gap 6: a topology matrix and a hang between some pairs


# ---- gap 7: legacy GPUs get a compute capability from NVIDIA's table

@pytest.mark.parametrize("gpu, cc", [("GeForce GTX 480", "2.0"), ("Quadro K4000", "3.0"), ("GeForce GT 630", "2.1")])
def test_legacy_gpu_rows(compat, gpu, cc) -> None:
    spec = compat.gpu(gpu)
    assert spec is not None and spec.compute_capability == cc and "legacy" in spec.source


def test_legacy_gpu_judged_on_its_arch(compat) -> None:
    text = ("PyTorch version: 1.9.0\nCUDA used to build PyTorch: 10.2\nGPU models and configuration: GPU 0: "
            "GeForce GTX 480\nNvidia driver version: 390.138\n")
    report = diagnose_report([text], compat)
    f = next(f for f in report.findings if f.category == "GPU_ARCH_NOT_IN_TORCH_BUILD")
    assert f.severity == "error" and "2.0" in f.summary


# ---- gap 8: an extension built for another CUDA variant of the same torch


# ---- gap 9: root cause and consequence both in the JSON

TORCH_SHADOWED = """>>> import torch
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/__init__.py", line 290, in <module>
    from torch._C import *  # noqa: F403
ImportError: /opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: cudnnGetLastErrorString
"""


def test_consequence_kept_with_caused_by_in_json(tmp_path) -> None:
    # the symbol of pytorch/pytorch#111469's class (a cuDNN 8 copy loaded for a cuDNN 9 build)
    paste = tmp_path / "p.txt"
    paste.write_text(TORCH_SHADOWED)
    out = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", str(paste), "--format", "json"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    doc = json.loads(out.stdout)
    findings = [f for c in doc["checks"] for f in c["findings"]]
    root = next(f for f in findings if f["category"] == "SYSTEM_LIB_SHADOWING")
    follows = next(f for f in findings if f["category"] == "TORCH_IMPORT_FAILED")
    assert root.get("caused_by") is None and follows["caused_by"] == root["code"]
    assert follows["severity"] == "error" and follows["code"] != root["code"]
    assert subprocess.run([sys.executable, "-m", "envdoctor", "explain", follows["code"]], capture_output=True,
                          text=True, timeout=120, cwd=REPO).returncode == 0


# ---- gap 10: the paste's own platform

def test_os_line_sets_the_platform(compat) -> None:
    text = ("PyTorch version: 2.1.0\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
            "OS: Microsoft Windows 10 Pro\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 3060\n")
    facts, _ = read_paste([text], compat)
    assert facts.pythons[0].platform == "win-amd64"
    report = diagnose_report([text], compat)
    assert not any("assumed: the platform" in str(e.value) or "assumed: the platform" in f.summary
                   for f in report.findings for e in f.evidence)
    # a real Linux kernel string with its machine word sets Linux x86_64
    facts, _ = read_paste(["Linux gpu1 5.15.0-91-generic #101-Ubuntu SMP x86_64 GNU/Linux\n" + text.replace(
        "OS: Microsoft Windows 10 Pro\n", "OS: Ubuntu 22.04.3 LTS (x86_64)\n")], compat)
    assert facts.pythons[0].platform == "linux-x86_64"


# ---- gap 11: one message over several log lines with a repeated prefix

def test_journalctl_nvrm_lines_are_one_message(compat) -> None:
    # the kernel's wording from NVIDIA/nvidia-docker#182, each line under journalctl's own prefix
    text = ("Mar 03 09:12:44 gpu-box kernel: NVRM: API mismatch: the client has the version 550.120, but\n"
            "Mar 03 09:12:44 gpu-box kernel: NVRM: this kernel module has the version 550.107.02.  Please\n"
            "Mar 03 09:12:44 gpu-box kernel: NVRM: make sure that this kernel module and all NVIDIA driver\n"
            "Mar 03 09:12:44 gpu-box kernel: NVRM: components have the same version.\n")
    report = diagnose_report([text], compat)
    assert _serious(report).get("DRIVER_LIBRARY_MISMATCH") == {"error"}
    joined = [m for m in report.facts.paste.messages if "this kernel module has the version 550.107.02" in m]
    assert joined and "kernel: NVRM: this" not in joined[0] and joined[0].startswith("NVRM: API mismatch")


def test_nccl_prefixed_lines(compat) -> None:
    # NCCL's host:pid:tid [rank] prefix (NVIDIA/nccl#342's warnings, as NCCL prints them with NCCL_DEBUG=WARN)
    text = ("node1:4711:4790 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
            "node1:4711:4790 [1] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
            "nccl-shm-recv-250a7cc850ba9298-0-1-3 (size 9637888)\n")
    assert _serious(diagnose_report([text], compat)).get("SHM_TOO_SMALL") == {"error"}


# ---- gap 12: the ecosystem's own messages

@pytest.mark.parametrize("name, category", [
    ("container-requires-newer-cuda.txt", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("ollama-driver-too-old.txt", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
])
def test_ecosystem_messages(compat, name, category) -> None:
    serious = _serious(diagnose_report([(PASTES / name).read_text()], compat))
    assert category in serious
    assert "CONTAINER_NO_GPU_RUNTIME" not in serious  # the container runtime did its job: the driver is old


# ---- gap 13: where it happened decides what it means

def test_found_no_driver_inside_compose_is_the_container(compat) -> None:
    # Compose v1 progress line (docker/compose#6691's layout) above torch's message
    text = ("Creating vqgan_generate_run ... done\nRuntimeError: Found no NVIDIA driver on your system. Please "
            "check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n")
    serious = _serious(diagnose_report([text], compat))
    assert "CONTAINER_NO_GPU_RUNTIME" in serious and "NO_NVIDIA_DRIVER" not in serious
    run = "$ docker run --rm -it myimage python train.py\n" + text.splitlines()[1] + "\n"
    f = next(f for f in diagnose_report([run], compat).findings if f.category == "CONTAINER_NO_GPU_RUNTIME")
    assert f.confidence == "high"  # docker run without --gpus


def test_cuda_library_symbol_judged_by_its_path(compat) -> None:
    system = ("Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_train.so.8: "
              "undefined symbol: _ZN5cudnn3cnn34layerNormFwd_execute_internal_implERKNS_7backend11VariantPackE, "
              "version libcudnn_cnn_infer.so.8\n")  # the line of pytorch/pytorch#119989
    serious = _serious(diagnose_report([system], compat))
    assert "SYSTEM_LIB_SHADOWING" in serious and "THIRD_PARTY_EXTENSION_MISMATCH" not in serious
    assert "CUDA_VARIANT_MIXED" not in serious
    wheel = ("OSError: /venv/lib/python3.10/site-packages/torch/lib/../../nvidia/cublas/lib/libcublas.so.11: "
             "undefined symbol: cublasLtGetStatusString, version libcublasLt.so.11\n")  # pytorch/pytorch#103832
    serious = _serious(diagnose_report([wheel], compat))
    assert "SYSTEM_LIB_SHADOWING" in serious and "CUDA_VARIANT_MIXED" in serious


# ---- gap 14: versions in prose and banners

def test_version_in_a_sentence_is_a_fact(compat) -> None:
    # Dao-AILab/flash-attention#825's sentence and nvcc -V output
    text = ('My environment is "torch.__version__  = 2.3.1+cu121"\n\nnvcc: NVIDIA (R) Cuda compiler driver\n'
            "Cuda compilation tools, release 10.1, V10.1.243\n")
    facts, _ = read_paste([text], compat)
    assert facts.pythons[0].torch.version == "2.3.1+cu121"
    assert "NVCC_TORCH_CUDA_MISMATCH" in _serious(diagnose_report([text], compat))


def test_banner_line_alone_is_judged(compat) -> None:
    # ultralytics/yolov5#7639's banner and the user's sentence
    text = "yolo trains on the cpu, not on my gpu (gtx 1080 )\n\n`YOLOv5  2022-4-22 torch 1.11.0+cpu CPU`\n"
    report = diagnose_report([text], compat)  # no NothingRecognised
    assert "TORCH_CPU_ONLY_BUILD" in _serious(report)
    assert report.facts.driver.gpus[0].name == "GeForce GTX 1080"
    cuda = "YOLOv5 v6.1 torch 1.10.0+cu113 CUDA:0 (NVIDIA GeForce RTX 3090, 24268MiB)\n"
    facts, _ = read_paste([cuda], compat)
    t = facts.pythons[0].torch
    assert t.version == "1.10.0+cu113" and t.cuda_available is True
    assert facts.driver.gpus[0].name == "NVIDIA GeForce RTX 3090"
    with pytest.raises(NothingRecognised):
        read_paste(["the torch library is great, version numbers are hard\n"], compat)


# ---- the catalogue's data model

def test_loader_rejects_bad_also_and_context() -> None:
    doc = json.loads((REPO / "compat_data" / "error_signatures.json").read_text())
    parse_signatures(doc)
    bad = copy.deepcopy(doc)
    bad["rows"][0]["also"] = [{"category": "CUDA_VARIANT_MIXED", "when": "no_such_predicate"}]
    with pytest.raises(SignatureError, match="no_such_predicate"):
        parse_signatures(bad)
    bad = copy.deepcopy(doc)
    bad["context"]["wsl_min_kernel"].pop("source")
    with pytest.raises(SignatureError, match="context"):
        parse_signatures(bad)


def test_docs_list_every_signature_source_and_qualifier() -> None:
    from envdoctor.compat.signatures import PREDICATES

    doc = (REPO / "docs" / "diagnose.md").read_text(encoding="utf-8")
    rows = json.loads((REPO / "compat_data" / "error_signatures.json").read_text())["rows"]
    for row in rows:
        assert f"| `{row['id']}` |" in doc and row["source"] in doc, row["id"]
    for name in PREDICATES:
        assert f"`{name}`" in doc, name
