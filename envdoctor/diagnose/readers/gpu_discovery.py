"""The GPUs other runtimes report finding (issue 42): llama.cpp's (ggml's) CUDA backend and Ollama's server log.

- ggml prints, as its CUDA backend starts, ``ggml_cuda_init: found 2 CUDA devices:`` (``ggml_init_cublas:`` in
  older builds) and one line per device, ``  Device 0: Tesla P40, compute capability 6.1, VMM: yes`` with
  ``, VRAM: 24438 MiB`` in newer builds (ggml-cuda.cu, ggml_cuda_init: "Device %d: %s, compute capability %d.%d,
  VMM: %s"); its ROCm and MUSA builds say "ROCm devices" / "MUSA devices" and are left out (HIP maps an AMD gfx
  target into the same major.minor fields). ``ggml_cuda_init: failed to initialize CUDA: <the CUDA runtime's error
  string>`` when it cannot (the message reader keeps that line). Real output: tests/fixtures/corpus/llama-cpp/.
- Ollama logs each GPU it will use as ``msg="inference compute" id=GPU-<uuid> library=cuda variant=v12 compute=8.9
  driver=12.4 name="NVIDIA GeForce RTX 4090" total="23.6 GiB"`` (newer releases: ``library=CUDA ... name=CUDA0
  description="NVIDIA GeForce RTX 3060" ... driver=12.8``): ``compute`` is the compute capability and ``driver`` the
  CUDA version the driver supports (cuDriverGetVersion's major.minor); ROCm devices (``library=rocm``) are not
  NVIDIA GPUs and are left out.
- JAX's ``jax.print_environment_info()`` names the first device's kind and the device counts: ``device info: NVIDIA
  GeForce RTX 4060 Laptop GPU-1, 1 local devices`` (a real one: /work/shared/examples/reports-batch5/422.txt,
  conda-forge/jaxlib-feedstock#312); ``cpu-1`` (JAX on its CPU backend only) and TPUs are no NVIDIA GPU list.
- TensorFlow logs each GPU it creates a device on (tensorflow/core/common_runtime/gpu/gpu_device.cc): ``Created
  device /job:localhost/replica:0/task:0/device:GPU:0 with 10819 MB memory:  -> device: 0, name: Tesla K80, pci bus
  id: 0000:00:04.0, compute capability: 3.7`` (before 2.5 or so: ``Created TensorFlow device (/job:.../device:GPU:0
  with 3044 MB memory) -> physical GPU (device: 0, name: GeForce GTX 970, pci bus id: ..., compute capability:
  5.2)``); the memory is what TensorFlow took, not the GPU's. A PluggableDevice (``name: METAL``) has no compute
  capability and is left out.
All become the paste's GPU list (name and compute capability) below an nvidia-smi table, which wins where both are
there (it is filled in with the compute capability by index)."""

from __future__ import annotations

import re
from typing import List

from ...model.facts import Gpu
from .base import REPL, Acc, Paste

_GGML_FOUND = re.compile(r"\bggml_(?:cuda_init|init_cublas): found (\d+) CUDA devices")
_GGML_DEVICE = re.compile(r"^\s*Device (\d+): (.+?), compute capability (\d+)\.(\d+)\b(?:.*?\bVRAM: (\d+) MiB)?")
_OLLAMA = re.compile(r'msg="inference compute" .*?\blibrary=(?P<lib>\w+)\b')
_KV = re.compile(r'\b(?P<k>id|compute|driver|name|description)=(?:"(?P<q>[^"]*)"|(?P<v>\S+))')


def _merge(acc: Acc, gpus: List[Gpu], how: str) -> None:
    if not gpus:
        return
    if acc.gpus and acc.gpus_priority > REPL:
        # the nvidia-smi table's list stays; each of its GPUs gets the compute capability the runtime read
        by_index = {g.index: g for g in gpus}
        acc.gpus = [Gpu(**{**g.__dict__, "compute_capability": g.compute_capability or (
            by_index[g.index].compute_capability if g.index in by_index else None)}) for g in acc.gpus]
        return
    acc.set_gpus(gpus, REPL)
    acc.add_found(how)


_JAX_INFO = re.compile(r"^\s*device info: (?P<kind>.+?)-(?P<n>\d+), (?P<local>\d+) local devices")


def _jax_devices(paste: Paste, acc: Acc) -> None:
    for i in paste.with_any(["device info: "])[:5]:
        m = _JAX_INFO.match(paste.lines[i])
        if not m:
            continue
        kind = m.group("kind").strip()
        if kind.lower() == "cpu" or "tpu" in kind.lower() or kind.lower().startswith(("amd", "radeon")):
            return
        n = min(int(m.group("local")), 64)
        _merge(acc, [Gpu(index=k, name=kind) for k in range(n)], f"JAX's device info ({n} local {kind})")
        return


_TF_DEVICE = re.compile(r"Creat(?:ed|ing) (?:TensorFlow )?device \(?/job:\S*?/device:GPU:\d+ with \d+ MB memory\)?:?\s*->\s*"
                        r"(?:physical GPU \()?device: (\d+), name: (.+?), pci bus id: ([0-9a-fA-F:.]+), "
                        r"compute capability: (\d+)\.(\d+)")


def _tf_devices(paste: Paste, acc: Acc) -> None:
    gpus: dict = {}
    for i in paste.with_any(["device:gpu:"])[:200]:
        m = _TF_DEVICE.search(paste.lines[i])
        if m and int(m.group(1)) not in gpus:
            gpus[int(m.group(1))] = Gpu(index=int(m.group(1)), name=m.group(2).strip(), pci_bus_id=m.group(3),
                                        compute_capability=f"{m.group(4)}.{m.group(5)}")
    if gpus:
        _merge(acc, [gpus[k] for k in sorted(gpus)], f"TensorFlow's GPU devices ({len(gpus)})")


def read_gpu_discovery(paste: Paste, acc: Acc) -> None:
    _jax_devices(paste, acc)
    _tf_devices(paste, acc)
    lines = paste.lines
    for i in paste.with_any(["ggml_cuda_init: found", "ggml_init_cublas: found"])[:5]:
        m = _GGML_FOUND.search(lines[i])
        if not m:
            continue
        gpus: List[Gpu] = []
        for line in lines[i + 1:i + 1 + min(int(m.group(1)), 64)]:
            d = _GGML_DEVICE.match(line)
            if not d:
                break
            gpus.append(Gpu(index=int(d.group(1)), name=d.group(2).strip(), compute_capability=f"{d.group(3)}.{d.group(4)}",
                            memory_total_bytes=int(d.group(5)) * 2**20 if d.group(5) else None))
        _merge(acc, gpus, f"llama.cpp's CUDA device list ({m.group(1)} found)")
        return
    gpus = []
    seen: set = set()
    for i in paste.with_any(['msg="inference compute"'])[:64]:
        line = lines[i]
        m = _OLLAMA.search(line)
        if not m or m.group("lib").lower() != "cuda":
            continue
        kv = {x.group("k"): x.group("q") if x.group("q") is not None else x.group("v") for x in _KV.finditer(line)}
        name = kv.get("description") or kv.get("name")
        if name and re.fullmatch(r"CUDA\d+", name):
            name = None
        cc = kv.get("compute") if re.fullmatch(r"\d+\.\d+", kv.get("compute") or "") else None
        key = kv.get("id") or (name, cc)
        if key in seen:
            continue  # the same GPU again (the server restarted, the log goes on)
        seen.add(key)
        gpus.append(Gpu(index=len(gpus), name=name, compute_capability=cc))
        driver = kv.get("driver")
        if driver and re.fullmatch(r"\d{2}\.\d", driver):
            acc.put("driver.cuda", driver, REPL, "Ollama's inference compute line (the driver's CUDA version)")
            acc.put("driver.seen", True, REPL, "Ollama's inference compute line")
    _merge(acc, gpus, f"Ollama's GPU discovery ({len(gpus)} CUDA GPU{'s' if len(gpus) != 1 else ''})")
