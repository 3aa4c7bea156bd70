"""Issue 42, the still-wrong corpus rows grouped by kind (helper kinds8): three kinds, each seen in reports from
several trackers, read from the pasted lines the corpus rows hold (quoted below verbatim).

A CPU-only build of a framework other than torch. DGL says so itself ("Device API cuda is not enabled. Please install
the cuda version of dgl": dgl-001, dmlc/dgl#5427), Faiss's CPU build has no GPU classes ("module 'faiss' has no
attribute 'StandardGpuResources'": faiss-002, facebookresearch/faiss#888, and faiss-003, facebookresearch/
deepcluster#56), and reporters say it in words ("it installs a cpu-only version of JAX": numpyro-001; "`dgl` with
ONLY CPU version is installed": dgl-002; "TensorFlow CPU installed instead of GPU": sagemaker-002; "only the CPU
version will be reinstalled": comfyui-018). None was read. They are FRAMEWORK_CPU_ONLY_BUILD warnings (a framework
other than torch without its GPU part; TORCH_CPU_ONLY_BUILD until the split of 2026-12-07, helper cpubuild), with a
headline naming the framework: medium confidence for the framework's own line, low for words. Words that name torch
and no other framework (comfyui-018) are torch's own CPU build, TORCH_CPU_ONLY_BUILD.

The driver too old, in words or in ollama's cuda_compat line. "it prompts that the driver version is too low"
(tensorrt-llm-001, NVIDIA/TensorRT-LLM#331), "the drivers are too old to support them" (jade-hpc-003), and ollama's
`cuda_compat.go: "NVIDIA driver too old"` without the msg= of the line the catalogue knew (ollama-004). The words
are a DRIVER_TOO_OLD_FOR_TORCH_CUDA warning of low confidence; ollama's line is its existing row's error.

NVRM's data-center gate. The 515-535 open kernel modules refused GeForce and workstation GPUs ("Open nvidia.ko is
only ready for use on Data Center GPUs", open-gpu-kernel-modules-002, NVIDIA/open-gpu-kernel-modules#230; also
siderolabs/extensions#114): an OPEN_KERNEL_MODULE_UNSUPPORTED_GPU error, and the RmInitAdapter line that follows
it is no longer a firmware (BIOS_PCIE_BAR_DISABLED) lead."""

from __future__ import annotations

import pytest

from envdoctor.compat.signatures import SignatureError, parse_signatures
from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# ---- a CPU-only build of a framework other than torch

@pytest.mark.parametrize("text,name", [
    # dgl-001
    ("`dgl._ffi.base.DGLError: [14:00:04] /opt/dgl/src/runtime/c_runtime_api.cc:82: Check failed: allow_missing: "
     "Device API cuda is not enabled. Please install the cuda version of dgl.`\n", "DGL"),
    # faiss-002
    ("while executing i got the error AttributeError: module 'faiss' has no attribute 'StandardGpuResources can "
     "anyone helpme me\n", "Faiss"),
    # faiss-003
    ("AttributeError: 'module' object has no attribute 'StandardGpuResources'\n\n"
     "faiss-cpu                 1.6.1            py27h6bb024c_0    pytorch\n", "Faiss"),
])
def test_a_frameworks_own_line_says_its_build_has_no_cuda(text, name, compat) -> None:
    got = _serious(text, compat)
    f = got.get("FRAMEWORK_CPU_ONLY_BUILD")
    assert f is not None and "TORCH_CPU_ONLY_BUILD" not in got, sorted(got)
    assert (f.severity, f.confidence) == ("warning", "medium")
    # the headline names the framework: the category's own title says "torch"
    assert f.summary.startswith(name) and "torch" not in f.summary.split(":")[0]
    assert "UNRECOGNISED_ERROR" not in got


@pytest.mark.parametrize("text,category", [
    # numpyro-001
    ("It seems that when NumPyro upgrades the jax and jaxlib, it installs a cpu-only version of JAX. Please see the "
     "example below.\n", "FRAMEWORK_CPU_ONLY_BUILD"),
    # dgl-002
    ("After run that, `dgl` with ONLY CPU version is installed. Users who want DGL CUDA version can only build and "
     "install it from source.\n", "FRAMEWORK_CPU_ONLY_BUILD"),
    # sagemaker-002
    ("# Summary\n: SMD 1.8.0+ has TensorFlow CPU installed instead of GPU\n", "FRAMEWORK_CPU_ONLY_BUILD"),
    ("4. running `$conda list | grep tensorflow` will show cpu build is installed\n", "FRAMEWORK_CPU_ONLY_BUILD"),
    # comfyui-018: the line names torch and no other framework, so it is torch's own CPU build
    ("The problem I encountered is that when I upgrade COMFYUI and its dependencies using the \"update_comfyui_1d_"
     "python_deependencies. bat\" file in the \"update\" folder, by default, the original torch torch torch vision "
     "torch studio three dependencies will be uninstalled and only the CPU version will be reinstalled. This will "
     "cause my COMFYUI to not start properly\n", "TORCH_CPU_ONLY_BUILD"),
    # torch named beside another framework: the words are not torch's alone
    ("pip install -r requirements.txt pulled jaxlib and torch, and only the CPU version was installed\n",
     "FRAMEWORK_CPU_ONLY_BUILD"),
])
def test_a_cpu_only_build_said_in_words_is_a_low_confidence_lead(text, category, compat) -> None:
    got = _serious(text, compat)
    f = got.get(category)
    assert f is not None, sorted(got)
    assert (f.severity, f.confidence) == ("warning", "low")
    assert f.code == "messages.signature/framework-cpu-build-said"
    other = ({"TORCH_CPU_ONLY_BUILD", "FRAMEWORK_CPU_ONLY_BUILD"} - {category}).pop()
    assert other not in got
    # torch's reading says torch and fixes torch; the other frameworks' reading does not tell a user to reinstall torch
    assert ("torch" in f.fix.summary) == (category == "TORCH_CPU_ONLY_BUILD")


@pytest.mark.parametrize("text", [
    # paddle-009 (HEALTHY: the user meant to run on the CPU with the CPU paddlepaddle)
    "Config use_gpu cannot be set as true while you are using paddlepaddle cpu version !\nPlease try:\n"
    "        1. Install paddlepaddle-gpu to run model on GPU\n",
    # faiss-001 (faiss-cpu shadowing faiss-gpu, labelled CUDA_VARIANT_MIXED): the GPU class named in code, no error
    "I have already installed faiss-gpu(1.7.2) using pip install, seen as followings:\n"
    "```\nres = faiss.StandardGpuResources()\nflat_config = faiss.GpuIndexFlatConfig()\n```\n",
    # a question and a condition are not a statement that the CPU build got installed
    "Should I install the cpu-only version of JAX for this notebook?\n",
    "If the CPU build is installed, jax.devices() lists only the CPU.\n",
    # TVM prints the same runtime check without naming DGL
    "tvm._ffi.base.TVMError: Check failed: allow_missing: Device API gpu is not enabled.\n",
])
def test_cpu_build_near_misses_stay_quiet(text, compat) -> None:
    found = _findings(text, compat)
    assert not {"TORCH_CPU_ONLY_BUILD", "FRAMEWORK_CPU_ONLY_BUILD"} & {f.category for f in found}
    assert not [f for f in found if f.severity == "error"]


# ---- the driver too old, in words or in ollama's cuda_compat line

@pytest.mark.parametrize("text", [
    # tensorrt-llm-001
    "In my case，build tensorrtt-llm source code success，but my image runs in a cloud cluster, and the cluster GPU "
    "driver is version 470.82. When compiling the model, it prompts that the driver version is too low. I would "
    "like to ask, is there any way to make TensorRT-LLM use this version of the driver?\n",
    # jade-hpc-003
    "However, by running nvidia-smi it seems that those are not currently supported by jade: \" NVIDIA-SMI "
    "450.142.00   Driver Version: 450.142.00   CUDA Version: 11.0 \". I can locally install both cuda and cudnn of "
    "the required version, however the drivers are too old to support them.\n",
])
def test_the_driver_too_old_said_in_words_is_a_lead(text, compat) -> None:
    f = _serious(text, compat).get("DRIVER_TOO_OLD_FOR_TORCH_CUDA")
    assert f is not None
    assert (f.severity, f.confidence, f.code) == ("warning", "low", "messages.signature/driver-too-old-said")


def test_ollamas_cuda_compat_line_is_its_driver_row(compat) -> None:
    # ollama-004, as the reporter quoted the OLLAMA_DEBUG=2 log
    f = _serious('cuda_compat.go: "NVIDIA driver too old"\nsupported=map[]\n', compat).get(
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA")
    assert f is not None
    assert (f.severity, f.code) == ("error", "messages.signature/serving-tool-driver-too-old")


@pytest.mark.parametrize("text,code", [
    ("Is my driver too old? nvidia-smi shows 470.82\n", None),
    ("when I am doing the training. I am facing a typical GPU-Util too low and memory-usage high issue.\n", None),
    # the lines other rows read stay theirs, without a second finding of the words row
    ('msg="Unable to load cudart" error="your nvidia driver is too old or missing.  If you have a CUDA GPU please '
     'upgrade to run ollama"\n', "messages.signature/serving-tool-driver-too-old"),
    ("RuntimeError: CUDA driver version is too old\n", "messages.signature/serving-tool-driver-too-old"),
])
def test_driver_words_near_misses(text, code, compat) -> None:
    codes = [f.code for f in _findings(text, compat) if f.category == "DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert codes == ([code] if code else [])


# ---- NVRM's data-center gate of the 515-535 open kernel modules

_GATE = """```
[    3.513141] NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.
[    3.513144] NVRM: To force use of Open nvidia.ko on other GPUs, see the
[    3.513145] NVRM: 'OpenRmEnableUnsupportedGpus' kernel module parameter described
[    3.513145] NVRM: in the README.
[    3.824916] NVRM: GPU 0000:04:00.0: RmInitAdapter failed! (0x63:0x0:1905)
[    3.827920] NVRM: GPU 0000:04:00.0: rm_init_adapter failed, device minor number 0
```
"""


def test_the_open_modules_data_center_gate(compat) -> None:
    got = _serious(_GATE, compat)
    f = got.get("OPEN_KERNEL_MODULE_UNSUPPORTED_GPU")
    assert f is not None
    assert (f.severity, f.confidence, f.code) == ("error", "high",
                                                  "messages.signature/nvrm-open-module-datacenter-only")
    assert "OpenRmEnableUnsupportedGpus" in f.fix.summary + " ".join(f.fix.commands or []) + (f.detail or "")
    # the RmInitAdapter line follows from the gate: not a firmware lead beside it
    assert "BIOS_PCIE_BAR_DISABLED" not in got
    # the headline no longer says "older than Turing": the gate refused Turing and newer GeForce cards too
    assert "older than Turing" not in f.summary


def test_rm_init_adapter_alone_stays_a_firmware_lead(compat) -> None:
    # ../shared/examples/reports-batch5/408 (BIOS_PCIE_BAR_DISABLED): the same line without the open module's words
    got = _serious("Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)\n",
                   compat)
    assert "BIOS_PCIE_BAR_DISABLED" in got and "OPEN_KERNEL_MODULE_UNSUPPORTED_GPU" not in got


def test_a_rows_title_must_be_text() -> None:
    row = {"id": "x", "pattern": "abc", "category": "TORCH_CPU_ONLY_BUILD", "severity": "warning",
           "explanation": "e", "fix": "f", "source": "s", "title": ""}
    with pytest.raises(SignatureError, match="title"):
        parse_signatures({"rows": [row]})
    row["title"] = "A CPU-only build"
    assert parse_signatures({"rows": [row]})[0].title == "A CPU-only build"
