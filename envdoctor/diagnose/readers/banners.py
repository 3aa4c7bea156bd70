"""Reader for the version banners of the ecosystem's tools (issue 29): what a framework prints about itself at
start-up, or its own environment report, read as facts with their provenance.

- Ultralytics' banner, printed by the running process: ``Ultralytics YOLOv8.1.3 🚀 Python-3.10.11 torch-2.1.0+cpu
  CUDA:0 (NVIDIA GeForce RTX 3060, 12036MiB)`` (or ``CPU`` / nothing after torch): the ultralytics version, the
  Python, torch's build and the device it chose.
- vLLM's start-up lines: ``vLLM API server version 0.4.0``, ``Initializing an LLM engine (v0.4.0) with config:``,
  ``Initializing a V1 LLM engine (v0.8.3) with config:``; Ray's ``ray, version 2.9.0`` / ``Ray version: 2.9.0``:
  the package versions.
- ``transformers env`` / ``transformers-cli env``: ``- PyTorch version (GPU?): 2.1.2+cu121 (True)`` (newer
  releases: ``(accelerator?): 2.5.1+cu124 (CUDA)``), ``- GPU type: NVIDIA A100-SXM4-80GB``; its "- `transformers`
  version:" and "- Python version:" lines are read by the package and key-value readers already.

Each is printed by the program about itself, so it stands like REPL output; the banner's own text is the
provenance.
"""

from __future__ import annotations

import re

from ...model.facts import Package
from .base import REPL, Acc, Paste

_TV = r"\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc|\.dev|\.post)\d*)*(?:\+[\w.]+)?"
_ULTRALYTICS = re.compile(
    rf"\bUltralytics (?:YOLO\w*?\s*)?v?(?P<ul>\d+\.\d+\.\d+)\b.*?\bPython-(?P<py>\d+\.\d+(?:\.\d+)?)\s+"
    rf"torch-(?P<torch>{_TV})(?:\s+(?:(?P<cpu>CPU)\b|CUDA:(?P<dev>\d+) \((?P<gpu>[^,()]{{3,60}}), (?P<mib>\d+)\s?Mi?B\)))?")
_VLLM = re.compile(r"\bvLLM API server version (\d+\.\d+\.\d+[\w.+]*)|\bInitializing an? (?:V\d )?LLM engine "
                   r"\(v(\d+\.\d+\.\d+[\w.+]*)\) with config")
_RAY = re.compile(r"\bray, version (\d+\.\d+\.\d+)\b|\bRay version:\s*(\d+\.\d+\.\d+)\b")
_HF_TORCH = re.compile(rf"^\W*PyTorch version \((?:GPU|accelerator)\?\):\s*(?P<torch>{_TV})\s*\((?P<gpu>[^)]*)\)")
_HF_GPU = re.compile(r"^\W*GPU type:\s*(?P<name>(?:NVIDIA |Tesla |GeForce |Quadro )[\w .-]{2,60}?)\s*$")

_WORDS = ["ultralytics", "vllm", "llm engine", "ray", "pytorch version (", "gpu type:"]


def read_banners(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    for i in paste.distinct(paste.with_any(_WORDS), head=1000, tail=200):
        line = lines[i][:2000]
        m = _ULTRALYTICS.search(line)
        if m:
            how = f"Ultralytics banner: {m.group(0).strip()[:140]}"
            acc.add_package(Package(name="ultralytics", version=m.group("ul")), REPL)
            acc.put("python.version", m.group("py"), REPL, how)
            acc.put("torch.version", m.group("torch"), REPL, how)
            if m.group("gpu"):
                acc.put("torch.cuda_available", True, REPL, how)
                acc.put("gpu.loose_name", m.group("gpu").strip(), REPL, how)
            elif m.group("cpu") or m.group("torch").endswith("+cpu"):
                # the framework chose the CPU, or torch is a CPU build: torch sees no GPU either way
                acc.put("torch.cuda_available", False, REPL, how)
            acc.add_found("an Ultralytics start-up banner (Python, torch build, device)")
            continue
        m = _VLLM.search(line)
        if m:
            acc.add_package(Package(name="vllm", version=m.group(1) or m.group(2)), REPL)
            acc.add_found("vLLM start-up lines")
        m = _RAY.search(line)
        if m:
            acc.add_package(Package(name="ray", version=m.group(1) or m.group(2)), REPL)
        m = _HF_TORCH.search(line)
        if m:
            how = f"transformers env: {m.group(0).strip()[:120]}"
            acc.put("torch.version", m.group("torch"), REPL, how)
            flag = m.group("gpu").strip().lower()
            if flag in ("true", "cuda"):
                acc.put("torch.cuda_available", True, REPL, how)
            elif flag in ("false", "cpu"):
                acc.put("torch.cuda_available", False, REPL, how)
            acc.add_found("`transformers env` output")
        m = _HF_GPU.search(line)
        if m:
            acc.put("gpu.loose_name", m.group("name").strip(), REPL, f"transformers env: {line.strip()[:120]}")
