"""Issue 29, three kinds the corpus missed, each on invented lines of the same class (not copies of a corpus
paste), a healthy paste that mentions the same words, and the corpus rows each kind fixes:

1. "loaded X but built with Y" lines of XLA (JAX, TensorFlow) and jaxlib, and pip's resolver conflict over an
   NVIDIA library pin;
2. torchvision's own messages that its compiled ops did not load or have no CUDA kernel;
3. a torch extension's compiled module (vLLM, flash-attn ...) failing is an extension mismatch, a companion's
   (torchvision, torchaudio) a companion problem: compat_data/torch_family.json says which is which.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.compat.torch_family import COMPANION, EXTENSION, parse_torch_family, torch_family
from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"


def _report(text: str):
    return diagnose_report([text], load_compat())


def _problems(text: str) -> dict:
    """category -> finding, warnings and errors only."""
    return {f.category: f for f in _report(text).findings if f.severity in ("warning", "error")}


def _signature(text: str, row: str):
    hits = [f for f in _report(text).findings if f.code.startswith(f"messages.signature/{row}")]
    assert hits, [f.code for f in _report(text).findings]
    return hits[0]


def _corpus(tracker: str, rid: str) -> str:
    return (CORPUS / tracker / f"{rid}.txt").read_text(encoding="utf-8")


def _labels(tracker: str, rid: str) -> list:
    rows = json.loads((CORPUS / tracker / "labels.json").read_text(encoding="utf-8"))
    return next(r["labels"] for r in rows if r["id"] == rid)


# ---- the table


def test_torch_family_table_roles() -> None:
    table = torch_family(load_compat())
    assert table.role_of_module("vllm._C").role == EXTENSION
    assert table.role_of_module("flash_attn_2_cuda").distribution == "flash-attn"
    assert table.role_of_module("torchvision").role == COMPANION
    assert table.role_of_library("libtorchaudio.so").distribution == "torchaudio"
    assert table.role_of_library("_C.so").distribution == "torchvision"  # a bare _C: the companion's
    assert table.role_of_module("...vision").distribution == "torchvision"  # a path the paste cut short
    assert table.role_of_module("vision") is None
    assert table.role_of_module("numpy") is None and table.role_of_library("libfoo.so") is None
    assert set(table.names(COMPANION)) == {"torchvision", "torchaudio"}


def test_torch_family_rejects_a_bad_row() -> None:
    from envdoctor.compat import CompatDataError

    doc = {"rows": [{"distribution": "x", "role": "friend", "modules": ["x"], "source": "s"}]}
    with pytest.raises(CompatDataError, match="torch_family.json: rows\\[0\\].*role"):
        parse_torch_family(doc)
    doc = {"rows": [{"distribution": "x", "role": "extension", "modules": [], "source": "s"}]}
    with pytest.raises(CompatDataError, match="modules"):
        parse_torch_family(doc)


# ---- kind 3: an extension's compiled module vs a companion's


def test_extension_module_undefined_torch_symbol_is_an_extension_mismatch() -> None:
    text = ("Traceback (most recent call last):\n"
            "  File \"/srv/app/run.py\", line 3, in <module>\n"
            "    import flash_attn\n"
            "ImportError: /opt/venv/lib/python3.11/site-packages/flash_attn/_C.cpython-311-x86_64-linux-gnu.so: "
            "undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    f = _signature(text, "extension-undefined-torch-symbol")
    assert (f.category, f.severity) == ("THIRD_PARTY_EXTENSION_MISMATCH", "error")
    assert any(e.path.endswith(".lib") and e.value.startswith("_C.cpython-311") for e in f.evidence)


def test_companion_module_undefined_torch_symbol_stays_a_companion_problem() -> None:
    for lib in ("/env/lib/python3.12/site-packages/torchvision/_C.so",
                "/env/lib/python3.12/site-packages/torchaudio/lib/libtorchaudio.so",
                "_C.so", "...audio/_torch_sox.cpython-36m-x86_64-linux-gnu.so"):
        text = f"OSError: {lib}: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev\n"
        cats = _problems(text)
        assert "COMPANION_VERSION_MISMATCH" in cats and "THIRD_PARTY_EXTENSION_MISMATCH" not in cats, (lib, cats)


def test_unknown_package_module_undefined_torch_symbol_is_third_party() -> None:
    text = ("ImportError: /home/u/.local/lib/python3.10/site-packages/mycustomops/_C.abi3.so: undefined symbol: "
            "_ZN2at4_ops5zeros4callEN3c108ArrayRefIlEE\n")
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in _problems(text)


def test_extension_import_cannot_open_cuda_runtime_is_an_extension_mismatch() -> None:
    text = (">>> import xformers.ops\n"
            "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n")
    f = _signature(text, "cuda-library-cannot-open")
    assert f.category == "THIRD_PARTY_EXTENSION_MISMATCH" and f.severity == "error"
    facts = read_paste([text], load_compat())[0]
    assert facts.paste.provenance["paste.imports"]["value"] == "xformers"


def test_standalone_runtime_cannot_open_older_major_is_a_library_mismatch() -> None:
    # onnxruntime is no torch extension: its own CUDA-11 build next to a CUDA-12 environment wants a library the
    # environment lacks (round 10: CUDA_LIBRARY_VERSION_MISMATCH; the old reading, a variant mix, needs a second
    # package of another variant, and microsoft/onnxruntime#13932 established the one-build cause)
    text = ("[pip3] nvidia-cublas-cu12==12.4.5.8\n"
            ">>> import onnxruntime\n"
            "ImportError: libcublasLt.so.11: cannot open shared object file: No such file or directory\n")
    assert _signature(text, "cuda-library-cannot-open").category == "CUDA_LIBRARY_VERSION_MISMATCH"


def test_torch_import_failure_is_not_blamed_on_an_extension() -> None:
    text = (">>> import vllm\n"
            "  File \"/venv/lib/python3.10/site-packages/torch/__init__.py\", line 237, in <module>\n"
            "    from torch._C import *\n"
            "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n")
    cats = _problems(text)
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in cats and "TORCH_IMPORT_FAILED" in cats


def test_the_import_after_a_working_torch_import_is_the_one_that_failed() -> None:
    # torch imported fine; the next statement, an extension's compiled module, is the one the error ended
    text = ("import torch\nimport torch_scatter\n\n"
            "OSError: libcusparse.so.11: cannot open shared object file: No such file or directory\n")
    facts = read_paste([text], load_compat())[0]
    assert facts.paste.provenance["paste.failed_import"]["value"] == "torch_scatter"
    cats = _problems(text)
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in cats and "TORCH_IMPORT_FAILED" not in cats, sorted(cats)


def test_healthy_extension_import_says_no_error() -> None:
    text = (">>> import vllm\n>>> from vllm import LLM\n>>> import torchvision\n"
            ">>> print(torchvision.__version__)\n0.19.1+cu121\n")
    report = _report(text)
    assert not [f for f in report.findings if f.severity == "error"]


@pytest.mark.parametrize("tracker,rid", [("vllm", "vllm-003"), ("vllm", "vllm-005"), ("vllm", "vllm-006"),
                                         ("vllm", "vllm-011"), ("flash-attention", "flash-attention-004")])
def test_corpus_extension_rows(tracker: str, rid: str) -> None:
    assert _labels(tracker, rid) == ["THIRD_PARTY_EXTENSION_MISMATCH"]
    cats = _problems(_corpus(tracker, rid))
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in cats
    assert "COMPANION_VERSION_MISMATCH" not in cats and "CUDA_VARIANT_MIXED" not in cats


# ---- kind 2: torchvision's own messages


def test_torchvision_no_cuda_kernel_is_a_companion_problem() -> None:
    text = ("RuntimeError: Could not run 'torchvision::roi_align' with arguments from the 'CUDA' backend. "
            "'torchvision::roi_align' is only available for these backends: [CPU, BackendSelect, "
            "AutogradCPU, AutogradCUDA].\n")
    f = _signature(text, "torchvision-op-no-cuda-kernel")
    # a lead, not an error: a CPU torchvision or one of another release, the message cannot tell (precision audit,
    # tests/unit/diagnose/test_precision_audit.py)
    assert (f.category, f.severity, f.confidence) == ("COMPANION_VERSION_MISMATCH", "warning", "low")
    assert any(e.value == "torchvision::roi_align" for e in f.evidence)


def test_torchvision_no_cuda_kernel_with_a_cpu_torchvision_is_a_variant_mix() -> None:
    text = ("torch==2.4.1+cu121\ntorchvision==0.19.1+cpu\n"
            "NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend.\n")
    cats = _problems(text)
    assert cats["CUDA_VARIANT_MIXED"].severity == "error"


def test_torchvision_custom_ops_not_loaded() -> None:
    text = ("  File \"/usr/lib/python3/dist-packages/torchvision/extension.py\", line 92, in _assert_has_ops\n"
            "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions "
            "are incompatible, or if you had errors while compiling torchvision from source.\n")
    f = _signature(text, "torchvision-custom-ops-not-loaded")
    assert (f.category, f.severity, f.confidence) == ("COMPANION_VERSION_MISMATCH", "error", "high")


def test_healthy_torchvision_ops_mention_says_no_error() -> None:
    text = (">>> import torch, torchvision\n>>> torchvision.ops.nms(boxes.cuda(), scores.cuda(), 0.5)\n"
            "tensor([0, 2], device='cuda:0')\n>>> torch.__version__\n'2.4.1+cu121'\n")
    assert not [f for f in _report(text).findings if f.severity == "error"]


@pytest.mark.parametrize("tracker,rid", [("ultralytics", "ultralytics-008"), ("comfyui", "comfyui-001")])
def test_corpus_torchvision_rows(tracker: str, rid: str) -> None:
    assert _labels(tracker, rid) == ["COMPANION_VERSION_MISMATCH"]
    assert "COMPANION_VERSION_MISMATCH" in _problems(_corpus(tracker, rid))


# ---- kind 1: loaded-vs-built CUDA library lines, and pip's NVIDIA pin conflict


def test_xla_cudnn_loaded_older_than_built_alone_is_a_low_confidence_lead() -> None:
    # the line alone does not say whether an older copy was found first or the only cuDNN is too old (round 11)
    text = ("E0612 09:14:02.118811   4411 cuda_dnn.cc:535] Loaded runtime CuDNN library: 9.1.0 but source was "
            "compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor "
            "version.\n")
    f = _signature(text, "dnn-loaded-older-than-built")
    assert (f.category, f.severity, f.confidence) == ("SYSTEM_LIB_SHADOWING", "warning", "low")
    values = {e.path.rsplit(".", 1)[-1]: e.value for e in f.evidence if e.path.startswith("paste.messages[")}
    assert (values["loaded"], values["compiled"]) == ("9.1.0", "9.3.0")


def test_older_tensorflow_cudnn_line_with_compatibility_versions() -> None:
    text = ("2019-06-01 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:343] Loaded runtime CuDNN "
            "library: 7102 (compatibility version 7100) but source was compiled with 7301 (compatibility version "
            "7300).  If using a binary install, upgrade your CuDNN library to match.\n")
    f = _signature(text, "dnn-loaded-older-than-built")
    values = {e.path.rsplit(".", 1)[-1]: e.value for e in f.evidence if e.path.startswith("paste.messages[")}
    assert (f.category, values["loaded"], values["compiled"]) == ("SYSTEM_LIB_SHADOWING", "7102", "7301")


def test_xla_cudnn_loaded_is_the_environments_own_pip_wheel() -> None:
    # the loaded cuDNN is the pip wheel the paste lists: the wheel is at the wrong version, nothing shadows it
    text = ("nvidia-cudnn-cu12         9.1.0.70\njax                       0.4.35\n"
            "E0612 cuda_dnn.cc:535] Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.\n")
    assert _signature(text, "dnn-loaded-older-than-built").category == "CUDA_LIBRARY_VERSION_MISMATCH"


def test_jaxlib_found_older_library_is_shadowing() -> None:
    text = ("An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed.\n"
            "CUDA backend failed to initialize: Found cuSPARSE version 12100, but JAX was built against version "
            "12200, which is newer. The copy of cuSPARSE that is installed must be at least as new.\n")
    f = _signature(text, "jax-found-older-cuda-library")
    assert f.category == "SYSTEM_LIB_SHADOWING"
    assert any(e.value == "cuSPARSE" for e in f.evidence)


@pytest.mark.parametrize("text", [
    "Found cuDNN version 8902, but JAX was built against version 90100, which is newer.\n",
    "Could not run 'torchvision::deform_conv2d' with arguments from the 'CUDA' backend.\n",
    "jaxlib 0.4.30 requires nvidia-cublas-cu12==12.3.4.1, but you have nvidia-cublas-cu12 12.1.3.1 which is "
    "incompatible.\n",
])
def test_each_new_line_is_read_alone(text: str) -> None:
    # a message of its own on one line, with no "Error" or traceback around it: the reader still keeps it
    assert _problems(text)


def test_pip_resolver_nvidia_pin_conflict() -> None:
    text = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
            "installed. This behaviour is the source of the following dependency conflicts.\n"
            "torch 2.5.1 requires nvidia-nccl-cu12==2.21.5; platform_system == \"Linux\", but you have "
            "nvidia-nccl-cu12 2.23.4 which is incompatible.\n")
    f = _signature(text, "pip-resolver-nvidia-pin-conflict")
    assert (f.category, f.severity) == ("CUDA_LIBRARY_VERSION_MISMATCH", "error")
    got = {e.path.rsplit(".", 1)[-1]: e.value for e in f.evidence if e.path.startswith("paste.messages[")}
    assert (got["pkg"], got["lib"], got["want"], got["have"]) == ("torch", "nvidia-nccl-cu12", "2.21.5", "2.23.4")


def test_pip_resolver_conflict_over_another_package_is_not_a_cuda_library_finding() -> None:
    text = ("torch 2.5.1 requires sympy==1.13.1; python_version >= \"3.9\", but you have sympy 1.13.3 which is "
            "incompatible.\n")
    assert "CUDA_LIBRARY_VERSION_MISMATCH" not in _problems(text)


def test_healthy_cudnn_version_lines_say_no_error() -> None:
    text = (">>> import torch\n>>> torch.backends.cudnn.version()\n90100\n"
            "I0612 cuda_dnn.cc:530] Loaded cuDNN version 90100\n")
    assert not [f for f in _report(text).findings if f.severity == "error"]


# jax-005 left this list on 2026-12-07: relabelled CUDA_LIBRARY_VERSION_MISMATCH (one cuDNN, older than the build's),
# which the line is read as SYSTEM_LIB_SHADOWING; test_corpus_score.py lists it
@pytest.mark.parametrize("rid", ["jax-001", "jax-003", "jax-004"])
def test_corpus_jax_rows(rid: str) -> None:
    labels = _labels("jax", rid)
    cats = _problems(_corpus("jax", rid))
    assert all(label in cats for label in labels), (labels, sorted(cats))
