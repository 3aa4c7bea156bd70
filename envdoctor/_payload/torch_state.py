"""`import torch` and what torch then says about its build and its CUDA state (the only module that imports torch
for the inspect task)."""

import os
import time
import warnings
from typing import Any, Dict, List, Optional

from .common import State, _exc_text, _guard, _short, _str_or_none, pci_key

MAX_WARNINGS = 50


def _record_warnings(caught: List[Any], into: List[str]) -> None:
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, ResourceWarning)):
            continue  # noise from unrelated modules, not a fact about the stack
        text = _short(str(w.message))
        if text not in into and len(into) < MAX_WARNINGS:
            into.append(text)


def inspect_torch(state: State, errors: List[str], cuda_gate: bool = False,
                  before_cuda: Any = None) -> Optional[Dict[str, Any]]:
    """Import torch and read its build and CUDA state; None when torch is not installed. With ``cuda_gate``, wait
    until stdin is closed before initialising CUDA (wait_for_stdin_eof). ``before_cuda(torch)`` is called once
    torch imported and the gate opened, before this process initialises CUDA (the smoke tier forks there)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError) as e:
        spec = None
        errors.append(f"find_spec('torch'): {_exc_text(e)}")
    if spec is None:
        return None
    info: Dict[str, Any] = {"warnings": [], "devices": []}
    state.envelope["result"]["torch"] = info  # visible to the watchdog as it fills
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        state.stage = "importing torch"
        t0 = time.monotonic()
        try:
            import torch  # noqa: F401  (the whole point of this payload)
        except BaseException as e:  # SystemExit, OSError from dlopen...: all are facts
            info["import_seconds"] = round(time.monotonic() - t0, 3)
            info["import_error"] = _exc_text(e)
            _record_warnings(caught, info["warnings"])
            return info
        info["import_seconds"] = round(time.monotonic() - t0, 3)
        state.stage = "reading torch build information"
        _torch_build(torch, info, errors)
        if cuda_gate:
            state.stage = "waiting for envdoctor to read the GPUs' process lists"
            wait_for_stdin_eof()
        if before_cuda is not None:
            state.stage = "starting the smoke steps that need torch"
            _guard(errors, "starting the smoke steps", lambda: before_cuda(torch))
        state.stage = "initialising CUDA in torch"
        _torch_cuda(torch, info, errors)
        _record_warnings(caught, info["warnings"])
    state.stage = "reading loaded libraries"
    return info


def wait_for_stdin_eof() -> None:
    """Block until stdin reaches its end. envdoctor may start this payload before NVML has listed the GPUs'
    processes (to import torch meanwhile); it closes our stdin once they are listed, so that the CUDA context
    created next is never among them (in a container NVML's host PIDs cannot be matched to ours). Run by hand or
    by Runner.run, stdin is /dev/null or closed: no wait."""
    while True:
        try:
            if not os.read(0, 65536):
                return
        except InterruptedError:
            continue
        except OSError:  # no stdin at all
            return


def _torch_build(torch: Any, info: Dict[str, Any], errors: List[str]) -> None:
    version = getattr(torch, "version", None)
    info["version"] = _str_or_none(getattr(torch, "__version__", None))
    info["cuda"] = _str_or_none(getattr(version, "cuda", None))
    info["hip"] = _str_or_none(getattr(version, "hip", None))
    info["git_version"] = _str_or_none(getattr(version, "git_version", None))
    debug = getattr(version, "debug", None)
    info["debug"] = debug if isinstance(debug, bool) else None
    abi = _guard(errors, "torch cxx11 abi", lambda: torch._C._GLIBCXX_USE_CXX11_ABI)
    info["cxx11_abi"] = bool(abi) if abi is not None else None
    cudnn = None
    try:
        cudnn = torch.backends.cudnn.version()
    except Exception as e:  # a cuDNN that fails to load is itself worth seeing
        errors.append(f"torch.backends.cudnn.version(): {_exc_text(e)}")
    info["cudnn_version"] = cudnn if isinstance(cudnn, int) and not isinstance(cudnn, bool) else None
    nccl = None
    if info["cuda"] or info["hip"]:
        try:
            v = torch.cuda.nccl.version()
            nccl = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
        except Exception as e:
            errors.append(f"torch.cuda.nccl.version(): {_exc_text(e)}")
    info["nccl_version"] = nccl
    # torch.cuda.get_arch_list() returns [] whenever CUDA is unavailable; the compiled-in arch flags
    # are a property of the build, so read them directly (torch/cuda/__init__.py, get_arch_list)
    arch = None
    flags_fn = getattr(getattr(torch, "_C", None), "_cuda_getArchFlags", None)
    if flags_fn is not None:
        flags = _guard(errors, "torch._C._cuda_getArchFlags()", flags_fn)
        if isinstance(flags, str):
            arch = flags.split()
        elif flags is None and not info["cuda"] and not info["hip"]:
            arch = []
    if arch is None:
        got = _guard(errors, "torch.cuda.get_arch_list()", lambda: torch.cuda.get_arch_list())
        arch = list(got) if got is not None else None
    info["arch_list"] = arch


def _peer_access(torch: Any, devices: List[Dict[str, Any]], errors: List[str]) -> None:
    """Each device's peers as CUDA answers (torch.cuda.can_device_access_peer: cudaDeviceCanAccessPeer): GeForce
    boards have none over PCIe, an IOMMU/ACS or a hypervisor can take it away from data-center ones."""
    fn = getattr(torch.cuda, "can_device_access_peer", None)
    if fn is None or len(devices) < 2:
        return
    for dev in devices:
        i = dev["index"]
        peers: Optional[List[int]] = []
        for other in devices:
            j = other["index"]
            if j == i or peers is None:
                continue
            can = _guard(errors, f"torch.cuda.can_device_access_peer({i}, {j})", lambda i=i, j=j: bool(fn(i, j)))
            if can is None:
                peers = None  # one unanswered pair: the device's peers are unknown, never "none"
            elif can:
                peers.append(j)
        dev["peer_access"] = peers


def _torch_cuda(torch: Any, info: Dict[str, Any], errors: List[str]) -> None:
    with warnings.catch_warnings(record=True) as init_warnings:
        warnings.simplefilter("always")
        try:
            available = bool(torch.cuda.is_available())
        except Exception as e:
            available = None
            info["cuda_init_error"] = _exc_text(e)
        info["cuda_available"] = available
        if available is False:
            # the exact reason: torch.cuda._lazy_init raises it ("Found no NVIDIA driver on your
            # system...", "CUDA driver initialization failed...", "Torch not compiled with CUDA enabled")
            try:
                torch.cuda._lazy_init()
            except BaseException as e:
                info["cuda_init_error"] = _short(str(e).strip() or type(e).__name__)
        count = _guard(errors, "torch.cuda.device_count()", lambda: torch.cuda.device_count())
        info["device_count"] = int(count) if isinstance(count, int) else None
        if available:
            for i in range(info["device_count"] or 0):
                dev: Dict[str, Any] = {"index": i}
                props = _guard(errors, f"torch.cuda.get_device_properties({i})",
                               lambda i=i: torch.cuda.get_device_properties(i))
                if props is not None:
                    dev["name"] = _str_or_none(getattr(props, "name", None))
                    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
                    dev["capability"] = f"{major}.{minor}" if major is not None else None
                    mem = getattr(props, "total_memory", None)
                    dev["total_memory_bytes"] = int(mem) if mem is not None else None
                    dev["pci_bus_id"] = pci_key(props)
                info["devices"].append(dev)
            _peer_access(torch, info["devices"], errors)
    for w in init_warnings:
        text = str(w.message)
        # torch turns the C++ "CUDA initialization: ..." TORCH_WARN into this UserWarning
        if not info.get("cuda_init_error") and "CUDA initialization" in text:
            info["cuda_init_error"] = _short(text)
    _record_warnings(init_warnings, info["warnings"])
