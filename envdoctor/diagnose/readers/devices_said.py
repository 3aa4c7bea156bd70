"""Which device a program ran on, as a paste says it in words or a program's log line (issue 42, round 10).

A reporter whose program runs on the CPU of a machine with an NVIDIA GPU writes it ("I saw that it was using
CPU", "my cpu load goes astronomical and the gpu does nothing", "I still cannot use the GPU"), or pastes the line
the program printed when it chose the CPU (whisper's "FP16 is not supported on CPU; using FP32 instead",
InvokeAI's ">> Using device_type cpu"). The GPU is often named in passing ("I have a 3060", "13900k+4090").
Signals only (``paste.*``): diagnose.runs-on-cpu judges them with the rest of the paste.
"""

from __future__ import annotations

import re
from typing import Optional

from .base import LOOSE, Acc, Paste

# the program printed that it chose the CPU
# (a log line: at the start of its line after a prompt or a level, or with its colon; not "running on CPU and GPU")
_CPU_LOG = re.compile(r"FP16 is not supported on CPU|(?:^[\W\d]*|\b(?:INFO|WARNING)\b\W*)Using device(?:_type)?:? "
                      r"['\"]?cpu\b|\bRunning on: ['\"]?cpu\b|\bdevice(?:_type)?: ['\"]?cpu['\"]?\s*$", re.I)
# the reporter says it runs on the CPU; not a wish or a question about doing so ("can I run it on the cpu",
# "to use cpu", "should use the CPU"), not CPU offloading ("uses the CPU offload")
_CPU_SAID = re.compile(r"(?<!to )(?<!can )(?<!could )(?<!should )(?<!would )(?<!will )(?<!want )(?<!how )"
                       r"(?<!if )(?<!not )\b(?:using|uses|use|running on|runs on|ran on|run on|running)\s+"
                       r"(?:only\s+)?(?:the\s+)?cpu\b"
                       r"(?!\s*(?:offload|mode|only mode|instead of|version|build|works|is fine|and|or|vs|&|/))|"
                       r"\b(?:falling|falls|fell) back to (?:the )?cpu\b|\bcpu load goes\b", re.I)
# the reporter says the GPU is not used
_GPU_UNUSED = re.compile(r"\b(?:can ?not|can'?t|cannot|unable to|couldn'?t|could not) (?:seem to )?"
                         r"(?:get (?:the |my )?GPU to work|use (?:the |my )?GPU)\b|\bGPU does nothing\b", re.I)
# a launcher's own test of torch failing: Stable Diffusion web UI (AUTOMATIC1111 and its forks: Forge, the DirectML
# and AMD forks, StabilityMatrix's packages) asserts torch.cuda.is_available() before it starts and prints this
# (modules/launch_utils.py); it names torch itself, so other engines in the paste do not take it over
_TORCH_NO_GPU = re.compile(r"\bTorch is not able to use GPU\b", re.I)
# a DirectML build of the program or of torch (torch-directml runs on DirectX 12, never on CUDA)
_DIRECTML = re.compile(r"directml", re.I)
# the program printed that it runs on CUDA (then the CPU words above are about something else)
_CUDA_LOG = re.compile(r"\b(?:Running on|Using device(?:_type)?|device(?:_type)?):? ['\"]?cuda\b", re.I)
# an NVIDIA GPU named in passing: a GeForce model number after an article or a CPU ("a 3060", "13900k+4090"),
# or "an Nvidia GPU"; not a port, a clock or a size ("a 3060 MHz")
_GEFORCE_NUMBER = re.compile(r"(?:\b(?:a|an|my|the|one|have|with)\s+|\+)(?:nvidia\s+)?(?:geforce\s+)?(?:rtx\s?|gtx\s?)?"
                             r"((?:10[5-8]0|16[56]0|20[6-8]0|30[5-9]0|40[6-9]0|50[6-9]0)(?:\s?ti|\s?super)?)\b"
                             r"(?!\s*(?:mhz|ghz|mb|gb|mib|gib|port|rpm|w\b|x\b|series))", re.I)
_NVIDIA_GPU = re.compile(r"\b(?:an?|my|the)\s+nvidia\s+(?:gpu|graphics card|card)\b", re.I)
# llama.cpp's system_info line: "BLAS = 0" is a build without a GPU (cuBLAS/hipBLAS) backend
_BLAS_OFF = re.compile(r"\bBLAS ?= ?0\b")

# the engines the paste names that are not torch: the three whose CPU-only builds diagnose.runs-on-cpu judges,
# then others, named only so that torch is not blamed for them (an engine of their own, or a default device of CPU)
_ENGINES = (("paddle", re.compile(r"\bpaddle(?:paddle|ocr|hub|nlp|x|seg|detection|speech)?\b", re.I)),
            ("dlib", re.compile(r"\bdlib\b|\bface_recognition\b", re.I)),
            ("llama.cpp", re.compile(r"\bllama[-_.]?cpp\w*|\bllama_cpp\w*", re.I)),
            ("other", re.compile(r"\b(?:ollama|ctranslate2|faster[-_]whisper|whisper\.cpp|onnx\w*|tensorflow\w*|"
                                 r"keras|jax\w*|mxnet|tensorrt|openvino|directml|djl|deepface|blender|cycles|upbge|"
                                 r"open3d|colmap|xgboost|lightgbm|catboost|cupy|cuml|opencv|cv2|exllama\w*|"
                                 r"koboldcpp|lm ?studio|gpt4all|mlc[-_]llm|ggml|vulkan|opencl|"
                                 # GPU programs and languages with their own CUDA back end (round 22: taichi-001)
                                 r"taichi|numba|jittor|mindspore|julia|matlab|ffmpeg|handbrake|hashcat|\w+miner)\b", re.I)))
# libraries whose own CUDA builds start at a compute capability (diagnose.library-gpu-arch judges them with the cited
# floors of compat_data's context.library_min_compute_capability): NCCL named (its library, its tests, its errors),
# LightGBM's CUDA build asked for (device / device_type "cuda"; its "gpu" device is the OpenCL build, judged nowhere),
# warp-ctc named (its name, its library warpctc, its C entry point compute_ctc_loss in its tests' errors)
_LIBRARY_BUILDS = (("nccl", re.compile(r"\bnccl\b|\bncclUnhandledCudaError\b", re.I)),
                   ("warp-ctc", re.compile(r"\bwarp[-_]?ctc(?:_pytorch|_tensorflow)?\b|\bcompute_ctc_loss\b", re.I)),
                   ("lightgbm-cuda", re.compile(r"\blightgbm\b[\s\S]{0,4000}?\bdevice(?:_type)?\s*=\s*['\"]cuda['\"]|"
                                                r"\bdevice(?:_type)?\s*=\s*['\"]cuda['\"][\s\S]{0,4000}?\blightgbm\b",
                                                re.I)))
# llama.cpp offload asked for: n_gpu_layers, --n-gpu-layers, -ngl
_GPU_LAYERS = re.compile(r"\bn_gpu_layers\b|--n-gpu-layers\b|\s-ngl\b", re.I)

# a llama.cpp build with its CUDA backend shows it: ggml-cuda's own lines, cuBLAS initialised, layers offloaded,
# BLAS = 1, a -cuXXX wheel
_LLAMA_CUDA = re.compile(r"ggml[-_]cuda|ggml_init_cublas|\bBLAS ?= ?1\b|offloaded [1-9]\d*/\d+ layers to GPU|"
                         r"llama[-_]cpp[-_]python\S*[ :=-]+\d[\w.]*[-+]cu\d{3}", re.I)

# a framework's own query of its CUDA part, and its answer on the line (after a verb or in a comment) or on the next
# line (REPL output, "now False"): "o3d.core.cuda.is_available()" False, "dlib.DLIB_USE_CUDA" False
_FRAMEWORK_QUERIES = (("Open3D", re.compile(r"\b(?:o3d|open3d)\.core\.cuda\.is_available\(\)")),
                      ("dlib", re.compile(r"\bdlib\.DLIB_USE_CUDA\b")),
                      ("PaddlePaddle", re.compile(r"\bpaddle\.(?:device\.)?is_compiled_with_cuda\(\)")))
_SAME_LINE = re.compile(r"^[)`'\"\s]*(?:#\s*|(?:returns?|returned|is|was|gives?|gave|==?|->|:|prints?|printed)\s*)"
                        r"[`*'\"]*\s*(False|True)\b", re.I)
_NEXT_LINE = re.compile(r"^\s*(?:Out\[\d+\]:\s*)?(?:(?:now|it|still|but|and)\s+)?(?:(?:returns?|gives?|shows?|is)\s+)?"
                        r"[`*'\"]*(False|True)\b[`*'\".]*\s*$", re.I)

_WORDS = ["cpu", "gpu", "nvidia", "blas", "+", " a ", " my ", "cuda"]


def read_devices_said(paste: Paste, acc: Acc) -> None:
    text = paste.text[:200000]
    engines = [name for name, pat in _ENGINES if pat.search(text)]
    if engines:
        acc.put("paste.engines", " ".join(engines), LOOSE, "engines other than torch named in the paste")
    m = _LLAMA_CUDA.search(text)
    if m:
        acc.put("paste.llama_cuda_seen", m.group(0).strip(), LOOSE, m.group(0).strip())
    libs = [name for name, pat in _LIBRARY_BUILDS if pat.search(text)]
    if libs:
        acc.put("paste.library_builds", " ".join(libs), LOOSE, "libraries with their own CUDA builds named")
    m = _DIRECTML.search(text)
    if m:
        acc.put("paste.directml_named", m.group(0), LOOSE, "DirectML named in the paste")
    m = _GPU_LAYERS.search(text)
    if m:
        acc.put("paste.gpu_layers_asked", m.group(0).strip(), LOOSE, m.group(0).strip())
    for i in paste.distinct(paste.with_any(_WORDS), head=2000, tail=500):
        line = paste.lines[i][:2000]
        how = line.strip()[:160]
        if _CPU_LOG.search(line) or _CPU_SAID.search(line):
            acc.put("paste.cpu_used_said", how, LOOSE, how)
        if _GPU_UNUSED.search(line):
            acc.put("paste.gpu_unused_said", how, LOOSE, how)
        if _TORCH_NO_GPU.search(line):
            acc.put("paste.torch_gpu_unusable_said", how, LOOSE, how)
        if _CUDA_LOG.search(line) and not re.search(r"\bshould\b|\bexpect", line, re.I):
            acc.put("paste.cuda_used_said", how, LOOSE, how)
        m = _GEFORCE_NUMBER.search(line) or _NVIDIA_GPU.search(line)
        if m and "|" not in line:
            acc.put("paste.nvidia_gpu_said", m.group(0).strip(" +"), LOOSE, how)
        if _BLAS_OFF.search(line):
            acc.put("paste.blas_off", how, LOOSE, how)
        for name, query in _FRAMEWORK_QUERIES:
            q = query.search(line)
            answer = _answer(paste, i, line[q.end():]) if q else None
            if answer is not None:
                acc.put("paste.framework_cuda_query", f"{name} {answer}", LOOSE, f"{q.group(0)} -> {answer}")


def _answer(paste: Paste, i: int, rest: str) -> Optional[bool]:
    """What a framework's CUDA query answered: on its line after a verb, else on the next non-empty line."""
    m = _SAME_LINE.match(rest)
    if m is None:
        nxt = next((ln for ln in paste.lines[i + 1:i + 4] if ln.strip()), "")
        m = _NEXT_LINE.match(nxt)
    return None if m is None else m.group(1).lower() == "true"
