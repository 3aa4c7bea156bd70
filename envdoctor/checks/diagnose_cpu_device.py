"""A program said to run on the CPU of a machine with an NVIDIA GPU: a build without its GPU part (issue 42, round 10).

The reporter writes that the program uses the CPU ("I saw that it was using CPU", "the gpu does nothing", "I still
cannot use the GPU") or pastes the line the program printed when it chose the CPU (whisper's "FP16 is not supported
on CPU; using FP32 instead", InvokeAI's "Using device_type cpu"), and the paste shows or names an NVIDIA GPU (an
nvidia-smi table, "I have a 3060"). Programs that pick the GPU by themselves when their build has one fall back to
the CPU when it has none, so the usual cause is a build without CUDA:

- torch, in an application built on it (an installer or requirements step that pulled PyPI's CPU wheel):
  TORCH_CPU_ONLY_BUILD, low confidence, with the command that settles it;
- PaddlePaddle: ``paddlepaddle`` is the CPU package and ``paddlepaddle-gpu`` the GPU one (the install guide,
  https://www.paddlepaddle.org.cn/documentation/docs/en/install/index_en.html);
- dlib (face_recognition): the GPU is used only when dlib was compiled with CUDA (``dlib.DLIB_USE_CUDA``);
  ``dlib.cuda.get_num_devices()`` counts GPUs in any build (ageitgey/face_recognition#796, #211);
- llama.cpp (llama-cpp-python): a plain ``pip install llama-cpp-python`` compiles the CPU backend; layers are
  offloaded (n_gpu_layers) only by a build with CMAKE_ARGS naming the CUDA backend, and its system_info line
  says ``BLAS = 1`` then (abetlen/llama-cpp-python#787). Judged only where offload was asked for or BLAS = 0 shown.

Stays quiet where the program says it runs on CUDA, torch's build is shown (another check judges it), a CUDA index
was installed from, the reporter says the machine has no NVIDIA GPU, or an engine other than these is named
(ctranslate2, ONNX Runtime, TensorFlow ...: their own device defaults and builds, not judged here).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..domain.variants import is_cpu_build
from ..model.facts import Facts, ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ._paste import no_nvidia_gpu_said, paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

RUNS_ON_CPU = Findings("diagnose.runs-on-cpu", "TORCH_CPU_ONLY_BUILD", kinds=("torch", "paddle", "dlib", "llama.cpp"),
                       categories=("FRAMEWORK_CPU_ONLY_BUILD",))
TORCH_CMD = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'
PADDLE_DOC = "https://www.paddlepaddle.org.cn/documentation/docs/en/install/index_en.html"


def _value(prov: Dict[str, Any], key: str) -> Optional[str]:
    hit = prov.get(key)
    return None if hit is None else str(hit.get("value"))


def _gpu_shown(facts: Facts, prov: Dict[str, Any]) -> Optional[str]:
    """What shows an NVIDIA GPU on this machine: a GPU listed or named, a driver that answered, a GPU said."""
    d = facts.driver
    if d.gpus and d.gpus[0].name:
        return d.gpus[0].name
    if d.status == ProbeStatus.OK or "driver.seen" in prov:
        return f"driver {d.version}" if d.version else "an NVIDIA driver table"
    return _value(prov, "paste.nvidia_gpu_said")


def _package(facts: Facts, *names: str) -> Any:
    for py in facts.pythons:
        for name in names:
            p = py.package(name)
            if p is not None:
                return p
    return None


def _torch_cuda_shown(facts: Facts, prov: Dict[str, Any]) -> bool:
    """torch's build or CUDA's availability is in the paste (other checks judge them), or a CUDA index was used."""
    t = facts.pythons[0].torch if facts.pythons else None
    if t is not None and (t.cuda_available is not None or is_cpu_build(t) is not None):
        return True
    index = _value(prov, "pip.index_variant") or ""
    return index.startswith(("cu", "rocm"))


@check(RUNS_ON_CPU, "A program said to run on the CPU beside an NVIDIA GPU has a build with its GPU part")
def check_runs_on_cpu(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov = paste.provenance or {}
    torch_said = _value(prov, "paste.torch_gpu_unusable_said")  # a launcher's torch.cuda.is_available() test
    said = _value(prov, "paste.cpu_used_said") or _value(prov, "paste.gpu_unused_said") or torch_said
    blas_off = _value(prov, "paste.blas_off")
    if not (said or blas_off):
        raise SkipCheck("the paste does not say the program runs on the CPU", not_applicable="no CPU use said")
    facts = ctx.facts
    # a GPU shown or named; else the reporter's "the gpu does nothing" / "can't get GPU to work" says there is one
    shown = _gpu_shown(facts, prov)
    gpu = f"an NVIDIA GPU ({shown})" if shown else ("a GPU the reporter says goes unused"
                                                    if "paste.gpu_unused_said" in prov else None)
    if gpu is None:
        raise SkipCheck("the paste shows or names no NVIDIA GPU (a CPU run may be the machine's only choice)")
    if no_nvidia_gpu_said(facts) or "paste.cuda_used_said" in prov:
        return []  # no NVIDIA GPU after all, or the program says it runs on CUDA: the CPU words mean something else
    engines = (_value(prov, "paste.engines") or "").split()
    ev = [Evidence("paste.cpu_used_said", said or blas_off), Evidence("driver.gpus", gpu)]
    if torch_said:
        engines = []  # the launcher's message names torch itself: other engines the paste names do not explain it
        line = " ".join(torch_said.split())[:60]  # the error line this finding explains, as the messages hold it
        ev += [Evidence(f"paste.messages[{i}]", m[:500]) for i, m in enumerate(paste.messages)
               if line and line in " ".join(m.split())][:1]
    if "paddle" in engines:
        return _paddle(facts, said or blas_off or "", ev)
    if "dlib" in engines:
        return [RUNS_ON_CPU.warning(
            "dlib", category="FRAMEWORK_CPU_ONLY_BUILD", confidence="low",
            summary=f"dlib runs on the CPU beside {gpu}: probably a dlib compiled without CUDA",
            detail=("dlib uses the GPU only when it was compiled with CUDA (dlib.DLIB_USE_CUDA is True); "
                    "dlib.cuda.get_num_devices() counts GPUs in any build, so it does not tell. Only its CNN "
                    "detector (model='cnn') runs on the GPU at all; the HOG detector is CPU code in every build."),
            evidence=ev, fix=Fix("Rebuild dlib with CUDA (cmake -DDLIB_USE_CUDA=1, or setup.py install --set "
                                 "DLIB_USE_CUDA=1) and check dlib.DLIB_USE_CUDA",
                                 ['python -c "import dlib; print(dlib.__version__, dlib.DLIB_USE_CUDA)"']))]
    if "llama.cpp" in engines:
        return _llama(facts, prov, said, blas_off, gpu, ev)
    if engines or not said:
        return []  # another engine than torch (its own device default or build), not judged here
    if _torch_cuda_shown(facts, prov):
        return []  # torch's build or availability is shown: torch.cuda-build / diagnose.cuda-unavailable judge it
    directml = ("" if "paste.directml_named" not in prov else
                " The paste names DirectML: a DirectML package of the program (torch-directml) runs torch on "
                "DirectX 12 with a torch that has no CUDA, so on an NVIDIA GPU the program's CUDA package is the one "
                "to install.")
    return [RUNS_ON_CPU.warning(
        "torch", confidence="low",
        summary=(f"torch cannot use {gpu}: possibly a CPU-only torch in the program's environment" if torch_said
                 else f"The program runs on the CPU beside {gpu}: possibly a CPU-only torch in its environment"),
        detail=("Programs built on torch pick the GPU when torch.cuda.is_available() is True, so running on the CPU "
                "of a machine with an NVIDIA GPU usually means the torch in the program's environment is a CPU build "
                "(an installer or requirements step that pulled PyPI's default wheel). A driver torch cannot use, or "
                "CUDA_VISIBLE_DEVICES hiding the GPU, looks the same: the command below settles it." + directml),
        evidence=ev + [Evidence("paste.settle", TORCH_CMD)],
        fix=Fix("Check the torch in the program's environment; if it is a CPU build, reinstall torch from the CUDA "
                "index for the driver (download.pytorch.org/whl/cuXXX) inside that environment", [TORCH_CMD]))]


def _paddle(facts: Facts, said: str, ev: List[Evidence]) -> List[Finding]:
    gpu_pkg = _package(facts, "paddlepaddle-gpu")
    if gpu_pkg is not None:
        return []  # the GPU package is installed: its CUDA or the driver is another check's question
    cpu_pkg = _package(facts, "paddlepaddle")
    what = f"paddlepaddle {cpu_pkg.version}" if cpu_pkg is not None and cpu_pkg.version else None
    return [RUNS_ON_CPU.warning(
        "paddle", category="FRAMEWORK_CPU_ONLY_BUILD", confidence="medium" if what else "low",
        summary=(f"PaddlePaddle runs on the CPU beside an NVIDIA GPU: {what} is the CPU package (the GPU build is "
                 "paddlepaddle-gpu)" if what else
                 "PaddlePaddle runs on the CPU beside an NVIDIA GPU: possibly its CPU package (paddlepaddle, not "
                 "paddlepaddle-gpu)"),
        detail=("PaddlePaddle publishes its CPU build as paddlepaddle and its CUDA builds as paddlepaddle-gpu "
                "(from PyPI or PaddlePaddle's own index, one build per CUDA); with the CPU package every model runs "
                "on the CPU whatever the driver."),
        evidence=ev + ([Evidence("pythons[0].packages.paddlepaddle", cpu_pkg.version, expected="paddlepaddle-gpu",
                                 source=PADDLE_DOC)] if what else []),
        fix=Fix("Uninstall paddlepaddle and install paddlepaddle-gpu of the same release for the driver's CUDA, from "
                "the index PaddlePaddle's install guide names", ["pip uninstall -y paddlepaddle"], PADDLE_DOC))]


def _llama(facts: Facts, prov: Dict[str, Any], said: Optional[str], blas_off: Optional[str], gpu: str,
           ev: List[Evidence]) -> List[Finding]:
    pkg = _package(facts, "llama-cpp-python", "llama_cpp_python")
    if "paste.llama_cuda_seen" in prov or (pkg is not None and any(
            t in (pkg.version or "").lower() for t in ("cu", "rocm", "metal", "vulkan"))):
        return []  # a build with a GPU backend at work: its CUDA or the GPU's architecture is another question
    if not blas_off and "paste.gpu_layers_asked" not in prov:
        return []  # offload not asked for: n_gpu_layers defaults to 0, so the CPU is what was asked
    return [RUNS_ON_CPU.warning(
        "llama.cpp", category="FRAMEWORK_CPU_ONLY_BUILD", confidence="medium" if blas_off else "low",
        summary=(f"llama.cpp says BLAS = 0 beside {gpu}: a build without its CUDA backend" if blas_off
                 else f"llama.cpp offloads nothing to {gpu} although n_gpu_layers is set: probably "
                      "a build without its CUDA backend"),
        detail=("A plain `pip install llama-cpp-python` (also an upgrade) compiles llama.cpp's CPU backend; layers "
                "go to the GPU only in a build made with CMAKE_ARGS naming the CUDA backend (-DGGML_CUDA=on, "
                "-DLLAMA_CUBLAS=on in older releases), whose start-up line says BLAS = 1."),
        evidence=ev, fix=Fix("Reinstall llama-cpp-python with its CUDA backend: CMAKE_ARGS=\"-DGGML_CUDA=on\" pip "
                             "install llama-cpp-python --force-reinstall --upgrade --no-cache-dir (or the prebuilt "
                             "CUDA wheel for the driver)", [], "https://github.com/abetlen/llama-cpp-python#installation"))]


# ---- a framework's own query of its CUDA part answering no: Open3D's o3d.core.cuda.is_available(), dlib's
# DLIB_USE_CUDA, PaddlePaddle's is_compiled_with_cuda(). The last two are the build's compile flags (the build has no
# CUDA); Open3D's is an availability test, False also without a working driver, but Open3D publishes CUDA wheels for
# Linux x86_64 only ("open3d # Linux x86_64 CUDA, others CPU", OPEN3D_WHEELS), so on Windows or macOS it is the build.

QUERY = Findings("diagnose.framework-cuda-query", "FRAMEWORK_CPU_ONLY_BUILD", kinds=("compile-flag", "open3d"))
OPEN3D_WHEELS = "https://www.open3d.org/docs/latest/dev_wheels.html"
_QUERY_TEXT = {"Open3D": "o3d.core.cuda.is_available()", "dlib": "dlib.DLIB_USE_CUDA",
               "PaddlePaddle": "paddle.is_compiled_with_cuda()"}
_QUERY_FIX = {
    "dlib": Fix("Rebuild dlib with CUDA (cmake -DDLIB_USE_CUDA=1, or setup.py install --set DLIB_USE_CUDA=1, with the "
                "CUDA toolkit and cuDNN found by CMake) and check dlib.DLIB_USE_CUDA",
                ['python -c "import dlib; print(dlib.__version__, dlib.DLIB_USE_CUDA)"']),
    "PaddlePaddle": Fix("Uninstall paddlepaddle and install paddlepaddle-gpu for the driver's CUDA from the index "
                        "PaddlePaddle's install guide names", ["pip uninstall -y paddlepaddle"], PADDLE_DOC),
}


@check(QUERY, "A framework's own query of its CUDA part answers yes")
def check_framework_cuda_query(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov = paste.provenance or {}
    said = _value(prov, "paste.framework_cuda_query")
    if not said or not said.endswith(" False"):
        raise SkipCheck("no framework's CUDA query answered False in the paste", not_applicable="no query answered")
    facts = ctx.facts
    if no_nvidia_gpu_said(facts):
        return []  # a machine without an NVIDIA GPU: the CPU build is the one that fits it
    name = said.rsplit(" ", 1)[0]
    ev = [Evidence("paste.framework_cuda_query", False, source=str(prov["paste.framework_cuda_query"].get("reader")))]
    if name != "Open3D":
        return [QUERY.warning(
            "compile-flag", f"{name} is a build without CUDA: {_QUERY_TEXT[name]} is False", confidence="high",
            detail=(f"{_QUERY_TEXT[name]} reports how {name} was compiled, not what the machine has: False means "
                    "the installed build has no CUDA code, so it runs on the CPU whatever the driver and GPU."),
            evidence=ev, fix=_QUERY_FIX[name])]
    os_name = facts.host.os or ""
    not_linux = os_name in ("Windows", "Darwin", "macOS")
    shown = _gpu_shown(facts, prov)
    return [QUERY.warning(
        "open3d", (f"Open3D on {os_name} is a build without CUDA: o3d.core.cuda.is_available() is False"
                   if not_linux else "o3d.core.cuda.is_available() is False: probably an Open3D build without CUDA"),
        confidence="medium" if not_linux else "low",
        detail=("Open3D publishes wheels with CUDA for Linux x86_64 only; its Windows and macOS wheels (and the "
                "open3d-cpu wheel, conda's Windows package) are CPU builds, so its CUDA device is never available "
                "there." + ("" if not_linux else " On Linux the open3d wheel has CUDA, so a driver that does not "
                            "answer gives the same False: `nvidia-smi` settles it.")
                + ("" if shown else " The paste shows no GPU list.")),
        evidence=ev + [Evidence("host.os", os_name or None, expected="Linux x86_64 for the CUDA wheel",
                                source=OPEN3D_WHEELS)],
        fix=Fix("Use Open3D with CUDA: the open3d wheel on Linux x86_64 (WSL2 on Windows), or build Open3D from "
                "source with -DBUILD_CUDA_MODULE=ON", ['python -c "import open3d as o3d; print(o3d.__version__, '
                                                      'o3d.core.cuda.is_available(), o3d.core.cuda.device_count())"'],
                OPEN3D_WHEELS))]
