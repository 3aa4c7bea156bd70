"""Which facts a paste can carry, read from their declarations in envdoctor/model/facts.py (``pasted(...)``).

A field declared ``pasted("host.kernel")`` is filled by ``build_facts`` from the reader key ``host.kernel`` and
recorded in ``paste.provenance`` under its fact path; nothing here names a fact. A new fact readable from pastes
is its field (declared ``pasted``), its probe, the reader that puts its key and its test (docs/adding-a-fact.md).

Reader keys that fill no field are *signals*: what a paste shows that no probe measures (an nvidia-smi table was
there at all, a Windows build number, a CUDA wheel the user asked for). Checks read them from ``paste.provenance``
under their key; ``SIGNALS`` lists them, so a test can hold every key a reader puts to a declaration.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import PASTED, Container, CudaToolkit, Driver, Gpu, Host, PythonEnv, TorchInfo

# the sections a paste fills, with the path their fields have in Facts (a paste is one interpreter, and the GPU a
# loose line names is the first). Order: how conflicting facts are listed (diagnose/machines.py)
SECTIONS: Tuple[Tuple[type, str], ...] = (
    (TorchInfo, "pythons[0].torch"), (Driver, "driver"), (PythonEnv, "pythons[0]"),
    (CudaToolkit, "toolkits.on_path"), (Host, "host"), (Container, "host.container"), (Gpu, "driver.gpus[0]"),
)

# reader keys no field holds -> where provenance records them (their key unless said); checks read them there
SIGNALS: Dict[str, str] = {
    "driver.seen": "driver.seen",  # a GPU table or driver line was pasted (the driver is there)
    "driver.no_devices": "driver.no_devices",  # nvidia-smi: "No devices were found"
    "driver.packages_changed": "driver.packages_changed",  # a package log that replaced driver packages
    "torch.cpu_build": "pythons[0].torch.cpu_build",  # torch.version.cuda printed None
    "torch.conda_cpuonly": "torch.conda_cpuonly",  # conda's cpuonly package
    "container.gpus_requested": "container.gpus_requested",  # `docker run` with or without --gpus
    "container.shm_given": "container.shm_given",  # `docker run` with or without --shm-size / --ipc=host
    "container.snap": "container.snap",  # Docker installed as a snap (its confinement hides the host's driver)
    "host.windows_build": "host.windows_build",  # the Windows build under WSL
    "intent.cuda": "intent.cuda",  # the CUDA build the user asked for (an index URL, a +cuXYZ pin)
    "pip.index_variant": "pip.index_variant",
    "paste.date": "paste.date",
    "paste.torch_import": "paste.torch_import",
    "paste.collective_hang": "paste.collective_hang",
    "paste.imports": "paste.imports",  # the packages the paste imports or runs in (readers/imports.py)
    "paste.failed_import": "paste.failed_import",  # the import its first load error ended
    "paste.install_requests": "paste.install_requests",  # "vllm flash-attn==2.7.4": what pip install lines ask for
    "paste.tensorflow": "paste.tensorflow",  # the TensorFlow release a template field, pin or print names (issue 42)
    "paste.mig_device": "paste.mig_device",  # a MIG device named: nvidia-smi -L's MIG lines, a MIG UUID (issue 42)
    "paste.vgpu": "paste.vgpu",  # a vGPU named: the word, a GRID driver, a vGPU profile name (issue 42)
    "paste.l4t_container": "paste.l4t_container",  # a Jetson L4T container (readers/contexts.py, round 15)
    "paste.no_nvidia_gpu": "paste.no_nvidia_gpu",  # the reporter says the machine has no NVIDIA GPU, or a Mac
    "paste.cuda_named": "paste.cuda_named",  # the highest CUDA major the paste names for its program (round 8)
    "paste.gpu_unsupported_said": "paste.gpu_unsupported_said",  # words that the GPU is not supported (archdriver)
    "paste.cuda_needed": "paste.cuda_needed",  # ... that version with its minor, majors 8-19 (issue 42, archdriver)
    "paste.pip_replaced": "paste.pip_replaced",  # pip uninstalled an installed torch during an install (round 10)
    "paste.pip_collected": "paste.pip_collected",  # the packages that install collected ("torch,xformers")
    # an install from an extension's wheel index named for a torch release: "1.7.1 torch-scatter torch-sparse"
    "paste.extension_index": "paste.extension_index",
    "paste.pip_resolved": "paste.pip_resolved",  # the release pip picked for a requirement: "tensorrt==8.6.1.post1"
    "paste.driver_branches": "paste.driver_branches",  # driver branches the report names (readers/driver_words.py)
    "paste.driver_refuses_gpu": "paste.driver_refuses_gpu",  # the report says the driver does not drive the GPU
    # the device the program ran on, in words or its log line, and an NVIDIA GPU named in passing
    # (readers/devices_said.py, round 10)
    "paste.cpu_used_said": "paste.cpu_used_said",
    "paste.gpu_unused_said": "paste.gpu_unused_said",
    "paste.cuda_used_said": "paste.cuda_used_said",
    # a launcher's own torch.cuda.is_available() test failing ("Torch is not able to use GPU", SD web UI), and
    # DirectML named (round 11)
    "paste.torch_gpu_unusable_said": "paste.torch_gpu_unusable_said",
    "paste.directml_named": "paste.directml_named",
    "paste.library_builds": "paste.library_builds",  # "nccl lightgbm-cuda": libraries with their own CUDA builds
    "paste.nvidia_gpu_said": "paste.nvidia_gpu_said",
    "paste.blas_off": "paste.blas_off",  # llama.cpp's system_info "BLAS = 0"
    "paste.engines": "paste.engines",  # engines other than torch the paste names ("paddle dlib other")
    "paste.gpu_layers_asked": "paste.gpu_layers_asked",  # llama.cpp offload asked for (n_gpu_layers, -ngl)
    "paste.llama_cuda_seen": "paste.llama_cuda_seen",  # llama.cpp's CUDA backend at work (ggml-cuda, BLAS = 1)
    "paste.framework_cuda_query": "paste.framework_cuda_query",  # "Open3D False": o3d.core.cuda.is_available()
    "paste.cudnn_named": "paste.cudnn_named",  # the first cuDNN version the reporter names (round 10)
    "paste.gpu_held_said": "paste.gpu_held_said",  # a GPU said held after its program is gone (readers/gpu_held.py)
    "paste.p2p_said": "paste.p2p_said",  # words of traffic between GPUs going wrong (readers/p2p_said.py)
    # the reporter's words of the GPU in a context, and the driver's module (round 15: readers/contexts.py,
    # readers/driver_words.py)
    "paste.container_gpu_said": "paste.container_gpu_said",  # a container said not to reach the GPU
    "paste.wsl_gpu_said": "paste.wsl_gpu_said",  # WSL said not to reach the GPU
    "paste.k8s_node_no_gpu": "paste.k8s_node_no_gpu",  # `kubectl get nodes`: a node with no nvidia.com/gpu
    "paste.module_not_loaded_said": "paste.module_not_loaded_said",  # DKMS by hand after a kernel upgrade, MOK
    "paste.sharing_layer": "paste.sharing_layer",  # HAMi-core's lines, libvgpu.so, its resources (readers/contexts.py)
}
SIGNAL_PREFIXES = ("paste.collective_hang.",  # its parts: "paste.collective_hang.hang_pairs" ...
                   "paste.job.",  # a scheduler launch: its GPU request, what ran under it (readers/scheduler.py)
                   "paste.p2p_said.")  # its kind: "peer-copy-wrong" ... (readers/p2p_said.py)


@dataclass(frozen=True)
class PasteFact:
    section: type  # the dataclass holding the field (Host)
    field: str  # "shm_total_bytes"
    path: str  # its fact path: "host.shm_total_bytes"
    keys: Tuple[str, ...]  # reader keys that fill it, first with a value wins: ("host.shm_total",)
    label: Optional[str]  # how a conflict between two reports names it
    cite: str  # "field" or "key": where provenance records keys[0]


@functools.cache
def declared() -> Tuple[PasteFact, ...]:
    out: List[PasteFact] = []
    for cls, base in SECTIONS:
        for f in dataclasses.fields(cls):
            decl = f.metadata.get(PASTED)
            if decl:
                keys, label, cite = decl
                out.append(PasteFact(cls, f.name, f"{base}.{f.name}", tuple(keys), label, cite))
    return tuple(out)


def values(section: type, acc: Any) -> Dict[str, Any]:
    """The declared fields of ``section`` that the paste gave, as keyword arguments: field -> value."""
    out: Dict[str, Any] = {}
    for fact in declared():
        if fact.section is section:
            for key in fact.keys:
                if acc.has(key):
                    out[fact.field] = acc.get(key)
                    break
    return out


@functools.cache
def provenance_paths() -> Dict[str, str]:
    """Reader key -> the path ``paste.provenance`` records it under (a key not listed: its own name)."""
    out = dict(SIGNALS)
    for fact in declared():
        for i, key in enumerate(fact.keys):
            out.setdefault(key, fact.path if i == 0 and fact.cite == "field" else key)
    return out


def provenance_path(key: str) -> str:
    return provenance_paths().get(key, key)


@functools.cache
def key_of_path(path: str) -> Optional[str]:
    """The reader key that fills fact ``path`` ("driver.cuda_driver_version" -> "driver.cuda"): signature rows
    (compat_data/signatures.json) name the facts their messages quote by path."""
    return next((f.keys[0] for f in declared() if f.path == path), None)


@functools.cache
def compared() -> Dict[str, str]:
    """Reader key -> label of the single-valued facts compared between reports in one paste."""
    return {f.keys[0]: f.label for f in declared() if f.label}


def known(key: str) -> bool:
    """Is ``key`` declared, as a field's reader key or a signal?"""
    return key in provenance_paths() or key.startswith(SIGNAL_PREFIXES)
