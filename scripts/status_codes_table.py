#!/usr/bin/env python3
"""Write compat_data/status_codes.json from NVIDIA's own headers and libraries (issue 42).

Facts are copied, not written: each status's enum name(s) and number are parsed from the library's header, and its
standard message string is what the library's own ``*GetErrorString`` returns (called through ctypes; no GPU is
needed for these). What a status means for the environment is the only judgement here: ``JUDGED`` below gives, for
the statuses that name an environment cause, its catalogue category and confidence, and for the ambiguous ones
what to ask for; every other status is recorded as raised by the program's own call ("program").

Usage (the header and library paths are those of this workplace; give others with the options):

    python scripts/status_codes_table.py --cuda /usr/local/cuda --wheels /path/to/site-packages/nvidia \
        --pynvml /path/to/pynvml.py > compat_data/status_codes.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

RT_DOC = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
DRV_DOC = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"

LAUNCH_ASK = ("rerun with CUDA_LAUNCH_BLOCKING=1 (the failing call then names itself) or under compute-sanitizer; if "
              "every program fails this way on the machine, paste `sudo dmesg | grep -i xid`")
INIT_ASK = "paste `nvidia-smi` and `python -m torch.utils.collect_env` (driver, GPU and the CUDA the program was built with)"
MEM_ASK = ("paste `nvidia-smi` while the program runs (another process may hold the memory) and the size the "
           "program asked for")
NCCL_ASK = "rerun with NCCL_DEBUG=INFO and paste the NCCL WARN lines before this error (they name the failing call)"

# (category or None, confidence, kind, meaning, ask). kind: "environment" (category set), "ambiguous" (the status
# alone does not name the cause: ask), "program" (the program's own call or kernel)
J = Tuple[Optional[str], Optional[str], str, str, Optional[str]]


def env(category: str, confidence: str, meaning: str, ask: Optional[str] = None) -> J:
    return (category, confidence, "environment", meaning, ask)


def amb(meaning: str, ask: str) -> J:
    return (None, None, "ambiguous", meaning, ask)


def prog(meaning: str, ask: str = LAUNCH_ASK) -> J:
    return (None, None, "program", meaning, ask)


_CUDA = {
    # (runtime name, driver name): judgement
    ("cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"): prog(
        "the program asked for more GPU memory than was free", MEM_ASK),
    ("cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED"): amb(
        "CUDA could not initialise (a driver that is missing, mismatched or unusable from this process; a CUDA "
        "context used across fork)", INIT_ASK),
    # the stub is found first when a toolkit's stubs directory is on the library path ahead of the driver's
    # libcuda (numba#8985, the corpus's numba-003; the same with the Video Codec SDK's stub libnvcuvid), or when
    # no driver library is installed at all: shadowing, at medium confidence (the paste's ldconfig/nvidia-smi says which)
    ("cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY"): env(
        "SYSTEM_LIB_SHADOWING", "medium", "the program loaded the toolkit's stub libcuda (made only for linking) "
        "instead of the driver's: a stubs directory ahead of the driver's library on the library path, or no driver "
        "library installed", "paste `echo $LD_LIBRARY_PATH`, `ldconfig -p | grep libcuda` and `nvidia-smi`"),
    ("cudaErrorInsufficientDriver", None): env(
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "high", "the driver is older than the CUDA runtime the program ships"),
    ("cudaErrorCallRequiresNewerDriver", "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"): env(
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "medium", "the program called an API the installed driver does not have"),
    ("cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE"): env(
        "COMPUTE_MODE_RESTRICTED", "medium", "every GPU is busy or unavailable (exclusive-process or prohibited "
        "compute mode, or held by another process)", "paste `nvidia-smi -q -d COMPUTE` and `nvidia-smi`"),
    ("cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE"): env(
        "NO_GPU_VISIBLE", "medium", "the driver answered but reported no CUDA GPU to this process "
        "(CUDA_VISIBLE_DEVICES, a container without GPUs, or no GPU)", "paste `nvidia-smi -L` and `env | grep CUDA`"),
    ("cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE"): amb(
        "the device index the program asked for is not among the visible GPUs",
        "paste `nvidia-smi -L`, `echo $CUDA_VISIBLE_DEVICES` and the device the program selects"),
    ("cudaErrorDeviceNotLicensed", "CUDA_ERROR_DEVICE_NOT_LICENSED"): env(
        "GPU_VIRTUALIZED", "medium", "a vGPU without a valid licence refuses compute"),
    ("cudaErrorSoftwareValidityNotEstablished", None): amb(
        "the driver's integrity checks did not pass", INIT_ASK),
    ("cudaErrorStartupFailure", None): amb("the CUDA runtime failed to start", INIT_ASK),
    ("cudaErrorInvalidKernelImage", "CUDA_ERROR_INVALID_IMAGE"): amb(
        "the kernel image is not valid for this device or driver", INIT_ASK),
    ("cudaErrorInvalidDeviceFunction", None): env(
        "GPU_ARCH_NOT_IN_TORCH_BUILD", "medium", "the kernel has no code for this GPU's architecture"),
    ("cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU"): env(
        "GPU_ARCH_NOT_IN_TORCH_BUILD", "high", "the program's binary holds no code this GPU's architecture can run"),
    ("cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE"): env(
        "GPU_MEMORY_ERRORS", "high", "the GPU's memory had an uncorrectable ECC error"),
    ("cudaErrorDeviceAlreadyInUse", "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"): env(
        "COMPUTE_MODE_RESTRICTED", "medium", "the GPU is in an exclusive compute mode and already in use",
        "paste `nvidia-smi -q -d COMPUTE`"),
    ("cudaErrorPeerAccessUnsupported", "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"): amb(
        "peer-to-peer access is not supported between these GPUs (topology, IOMMU, or the GPUs themselves)",
        "paste `nvidia-smi topo -m`"),
    ("cudaErrorInvalidPtx", "CUDA_ERROR_INVALID_PTX"): amb(
        "the driver could not JIT-compile the program's PTX", "paste `nvidia-smi` and the CUDA the program was built with"),
    ("cudaErrorNvlinkUncorrectable", "CUDA_ERROR_NVLINK_UNCORRECTABLE"): env(
        "GPU_XID_ERRORS", "medium", "an uncorrectable NVLink error was detected during execution",
        "paste `sudo dmesg | grep -i xid` and `nvidia-smi nvlink -e`"),
    ("cudaErrorJitCompilerNotFound", "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"): amb(
        "the driver's PTX JIT compiler library was not found", "paste `ldconfig -p | grep nvidia-ptxjitcompiler` "
        "(in a container: its NVIDIA_DRIVER_CAPABILITIES)"),
    ("cudaErrorUnsupportedPtxVersion", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"): env(
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "high", "the PTX was made by a newer toolkit than the driver supports"),
    ("cudaErrorJitCompilationDisabled", "CUDA_ERROR_JIT_COMPILATION_DISABLED"): amb(
        "PTX JIT compilation is disabled (CUDA_DISABLE_PTX_JIT or a driver setting) and no binary fits",
        "paste `env | grep CUDA` and the GPU's compute capability"),
    ("cudaErrorContained", "CUDA_ERROR_CONTAINED"): amb(
        "a GPU error was contained by the hardware", "paste `sudo dmesg | grep -i xid`"),
    ("cudaErrorSharedObjectSymbolNotFound", "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"): amb(
        "a shared object's symbol could not be resolved", "paste the full traceback and `ldd` of the failing library"),
    ("cudaErrorSharedObjectInitFailed", "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"): amb(
        "a shared object failed to initialise", "paste the full traceback and `ldd` of the failing library"),
    ("cudaErrorOperatingSystem", "CUDA_ERROR_OPERATING_SYSTEM"): amb(
        "an operating-system call failed or the OS does not support the operation (WSL, containers)",
        "paste `uname -a` and `nvidia-smi`"),
    ("cudaErrorSymbolNotFound", "CUDA_ERROR_NOT_FOUND"): amb(
        "a named symbol was not found (the program's own symbol, or a driver that lacks it)",
        "paste `nvidia-smi` and the full traceback"),
    ("cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"): prog("a kernel accessed memory it does not own"),
    ("cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED"): prog("a kernel faulted while running"),
    ("cudaErrorLaunchTimeout", "CUDA_ERROR_LAUNCH_TIMEOUT"): amb(
        "a kernel ran longer than the display watchdog allows (a GPU that also drives a display)",
        "paste `nvidia-smi -q | grep -i -e 'display' -e 'timeout'` and the OS"),
    ("cudaErrorNotPermitted", "CUDA_ERROR_NOT_PERMITTED"): amb(
        "the operation is not permitted here", "paste the full traceback and `nvidia-smi`"),
    ("cudaErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED"): amb(
        "the operation is not supported on this system or device (a vGPU slice, MIG, an OS)",
        "paste `nvidia-smi -q` and the call that failed"),
    ("cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY"): env(
        "INTERCONNECT", "high", "the system is not ready for compute: on NVSwitch systems the fabric manager has "
        "not initialised the fabric", "paste `systemctl status nvidia-fabricmanager`"),
    ("cudaErrorSystemDriverMismatch", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"): env(
        "DRIVER_LIBRARY_MISMATCH", "high", "the display driver and the CUDA driver library are of different versions"),
    ("cudaErrorCompatNotSupportedOnDevice", "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"): env(
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "medium", "the CUDA forward-compatibility package was used on a GPU that "
        "does not support it (the installed driver itself is too old for the program's CUDA)"),
    ("cudaErrorExternalDevice", "CUDA_ERROR_EXTERNAL_DEVICE"): amb(
        "an external device (a peer or network adapter) signalled an error", "paste `sudo dmesg | grep -i xid`"),
    (None, "CUDA_ERROR_KEY_ROTATION"): amb(
        "confidential-computing key rotation failed", "paste `nvidia-smi conf-compute -q`"),
    ("cudaErrorUnknown", "CUDA_ERROR_UNKNOWN"): amb("an unknown error", INIT_ASK),
}
for _pair in [("cudaErrorMpsConnectionFailed", "CUDA_ERROR_MPS_CONNECTION_FAILED"),
              ("cudaErrorMpsRpcFailure", "CUDA_ERROR_MPS_RPC_FAILURE"),
              ("cudaErrorMpsServerNotReady", "CUDA_ERROR_MPS_SERVER_NOT_READY"),
              ("cudaErrorMpsMaxClientsReached", "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"),
              ("cudaErrorMpsMaxConnectionsReached", "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"),
              ("cudaErrorMpsClientTerminated", "CUDA_ERROR_MPS_CLIENT_TERMINATED")]:
    _CUDA[_pair] = amb("the CUDA MPS server refused or lost this client",
                       "paste `ps aux | grep nvidia-cuda-mps` and `env | grep CUDA_MPS`")

JUDGED: Dict[str, J] = {}
for (_rt, _drv), _j in _CUDA.items():
    for _n in (_rt, _drv):
        if _n:
            JUDGED[_n] = _j

JUDGED.update({
    "NVML_ERROR_DRIVER_NOT_LOADED": env("NO_NVIDIA_DRIVER", "high", "the NVIDIA kernel driver is not loaded"),
    "NVML_ERROR_LIBRARY_NOT_FOUND": env("NO_NVIDIA_DRIVER", "medium", "the driver's NVML library was not found",
                                        "paste `ldconfig -p | grep nvidia-ml` (in a container: how it was started)"),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": env("DRIVER_LIBRARY_MISMATCH", "high",
                                              "the loaded kernel module and the user-space driver library differ"),
    "NVML_ERROR_GPU_IS_LOST": env("GPU_XID_ERRORS", "high", "the GPU stopped answering (fell off the bus)",
                                  "paste `sudo dmesg | grep -i xid`"),
    "NVML_ERROR_FUNCTION_NOT_FOUND": env("DRIVER_OUTDATED", "medium",
                                         "the driver's NVML lacks a function the caller needs (an older driver)"),
    "NVML_ERROR_GPU_NOT_FOUND": env("NO_GPU_VISIBLE", "medium", "NVML found no such GPU", "paste `nvidia-smi -L`"),
    "NVML_ERROR_NO_PERMISSION": amb("the caller lacks the permission for this NVML call", "paste the call and the user"),
    "NVML_ERROR_INSUFFICIENT_POWER": amb("a GPU's external power cables are not properly attached",
                                         "paste `nvidia-smi -q -d POWER` and `sudo dmesg | grep -i nvrm`"),
    "NVML_ERROR_IRQ_ISSUE": amb("the kernel detected an interrupt problem with a GPU", "paste `sudo dmesg | grep -i nvrm`"),
    "NVML_ERROR_CORRUPTED_INFOROM": amb("the GPU's infoROM is corrupted", "paste `nvidia-smi -q` (its Inforom section)"),
    "NVML_ERROR_RESET_REQUIRED": amb("the GPU needs a reset before it can be used again",
                                     "paste `nvidia-smi -q` and `sudo dmesg | grep -i xid`"),
    "NVML_ERROR_OPERATING_SYSTEM": amb("the operating system blocked the request", "paste `uname -a` and `nvidia-smi`"),
    "NVML_ERROR_TIMEOUT": amb("the driver did not answer in time", "paste `sudo dmesg | grep -i nvrm`"),
    "NVML_ERROR_UNKNOWN": amb("an unknown NVML error (in containers often a cgroup that lost the device)",
                              "paste `nvidia-smi` on the host and how the container was started"),
    "NVML_ERROR_NOT_SUPPORTED": prog("the GPU does not offer this query (not a failure of the machine)",
                                     "nothing: tools print this for fields a GPU does not report"),
    "ncclUnhandledCudaError": amb("a CUDA call inside NCCL failed", NCCL_ASK),
    "ncclSystemError": amb("a system call inside NCCL failed (network, shared memory, files)", NCCL_ASK),
    "ncclInternalError": amb("an internal NCCL check failed", NCCL_ASK),
    "ncclRemoteError": amb("a remote rank exited or the network failed", NCCL_ASK + "; from every rank"),
    "ncclTimeout": amb("a NCCL operation timed out", NCCL_ASK),
    "ncclInvalidArgument": prog("the program passed NCCL an invalid argument", NCCL_ASK),
    "ncclInvalidUsage": prog("the program called NCCL incorrectly", NCCL_ASK),
    "CUDNN_STATUS_NOT_INITIALIZED": amb("cuDNN could not create its handle (usually a CUDA failure beneath it: "
                                        "memory, driver)", MEM_ASK),
    "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH": env("CUDA_LIBRARY_VERSION_MISMATCH", "medium",
                                                    "cuDNN's sub-libraries are of different versions",
                                                    "paste `pip list | grep -i cudnn` and `ldconfig -p | grep cudnn`"),
    "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED": env("CUDA_LIBRARY_VERSION_MISMATCH", "medium",
                                                  "a cuDNN sub-library could not be loaded",
                                                  "paste `pip list | grep -i cudnn` and `ldconfig -p | grep cudnn`"),
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER": env("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "medium",
                                                               "cuDNN needs a newer CUDA driver"),
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART": env("CUDA_LIBRARY_VERSION_MISMATCH", "medium",
                                                          "cuDNN was built for another CUDA runtime"),
    "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH": env("GPU_ARCH_NOT_IN_TORCH_BUILD", "medium",
                                                    "this cuDNN has no support for the GPU's architecture"),
    "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING": env(
        "CUDA_LIBRARY_VERSION_MISMATCH", "low", "a library cuDNN needs at run time (cuBLAS, NVRTC) is missing"),
    "CUDNN_STATUS_LICENSE_ERROR": amb("cuDNN's licence check failed", "paste the cuDNN package and its version"),
    "CUBLAS_STATUS_NOT_INITIALIZED": amb("cuBLAS could not create its handle (usually a CUDA failure beneath it: "
                                         "memory, driver)", MEM_ASK),
    "CUBLAS_STATUS_MAPPING_ERROR": amb("cuBLAS could not access GPU memory", LAUNCH_ASK),
    "CUBLAS_STATUS_LICENSE_ERROR": amb("cuBLAS's licence check failed", "paste the cuBLAS package and its version"),
    "NVRTC_ERROR_INVALID_OPTION": amb("NVRTC rejected a compile option (often a GPU architecture newer than this "
                                      "NVRTC knows)", "paste NVRTC's version (the CUDA toolkit or nvidia-cuda-nvrtc "
                                      "wheel) and the GPU's compute capability"),
    "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE": amb("NVRTC's builtins library failed (libnvrtc-builtins missing or of "
                                                 "another version)", "paste `pip list | grep -i nvrtc` and "
                                                 "`ldconfig -p | grep nvrtc`"),
    "CURAND_STATUS_VERSION_MISMATCH": env("CUDA_LIBRARY_VERSION_MISMATCH", "medium",
                                          "the cuRAND header and library versions differ"),
})
# the same words mean the same in every math library: an architecture the library cannot use; a failure beneath it
for _lib in ("CUBLAS", "CUSOLVER", "CURAND", "CUSPARSE"):
    JUDGED.setdefault(f"{_lib}_STATUS_ARCH_MISMATCH", env(
        "GPU_ARCH_NOT_IN_TORCH_BUILD", "low", "the call needs a GPU feature this GPU's architecture lacks",
        "paste the GPU's name and compute capability"))
    for _w in ("INTERNAL_ERROR", "EXECUTION_FAILED", "NOT_INITIALIZED", "INITIALIZATION_FAILED", "MAPPING_ERROR"):
        JUDGED.setdefault(f"{_lib}_STATUS_{_w}", amb("the library failed beneath the call (often a CUDA failure: "
                                                     "memory, driver, a kernel fault)", MEM_ASK))
for _w in ("CUDNN_STATUS_INTERNAL_ERROR", "CUDNN_STATUS_EXECUTION_FAILED", "CUFFT_INTERNAL_ERROR",
           "CUFFT_EXEC_FAILED", "CUFFT_SETUP_FAILED", "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
           "CUDNN_STATUS_EXECUTION_FAILED_CUDART"):
    JUDGED.setdefault(_w, amb("the library failed beneath the call (often a CUDA failure: memory, driver, a kernel "
                              "fault)", MEM_ASK))


def enum_block(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i)]


def pairs(block: str, prefix: str) -> List[Tuple[str, str]]:
    """(name, value) of each enumerator of ``block`` whose name starts with ``prefix`` (value: a number, a hex
    number or another enumerator's name)."""
    return re.findall(rf"^\s*({prefix}\w*)(?:\s+CUDNN_DEPRECATED_ENUM)?\s*=\s*\n?\s*(0x[0-9A-Fa-f]+|\d+|[A-Z_]\w+)",
                      block, re.M)


def resolve(found: List[Tuple[str, str]]) -> List[Tuple[List[str], int]]:
    """Enumerators to (names, number), an alias (a deprecated name equal to another) listed under its target."""
    by_name: Dict[str, int] = {}
    rows: Dict[int, List[str]] = {}
    for name, value in found:
        number = int(value, 16) if value.startswith("0x") else int(value) if value.isdigit() else by_name[value]
        by_name[name] = number
        rows.setdefault(number, []).append(name)
    return [(names, number) for number, names in rows.items()]


def strings(lib: Optional[str], func: str) -> Callable[[int], Optional[str]]:
    if lib is None:
        return lambda n: None
    try:
        f = getattr(ctypes.CDLL(lib), func)
    except (OSError, AttributeError):
        return lambda n: None
    f.restype = ctypes.c_char_p
    return lambda n: f(n).decode()


def library_rows(library: str, found: List[Tuple[List[str], int]], message: Callable[[int], Optional[str]],
                 source: str) -> List[Dict[str, Any]]:
    out = []
    for names, number in sorted(found, key=lambda x: x[1]):
        msg = message(number)
        if msg is not None and (msg in names or msg.upper().startswith(names[0].split("_")[0] + "_") or
                                msg.startswith("CUDNN_")):
            msg = None  # the library names the status instead of describing it
        success = number == 0
        category, confidence, kind, meaning, ask = JUDGED.get(names[0]) or next(
            (JUDGED[n] for n in names if n in JUDGED), None) or prog(msg or "", LAUNCH_ASK)
        row: Dict[str, Any] = {"library": library, "names": names, "number": number, "message": msg,
                               "kind": "success" if success else kind, "category": None if success else category}
        if category and not success:
            row["confidence"] = confidence
        if meaning and not success:
            row["meaning"] = meaning
        if ask and not success:
            row["ask"] = ask
        row["source"] = source
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--wheels", default="/work/cudavenv/lib/python3.11/site-packages/nvidia")
    ap.add_argument("--pynvml", default="/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/pynvml.py")
    a = ap.parse_args()
    inc, wh = Path(a.cuda) / "include", Path(a.wheels)
    winc, wlib = wh / "cu13" / "include", wh / "cu13" / "lib"
    cuda_h = (inc / "cuda.h").read_text()
    version = re.search(r"#define CUDA_VERSION (\d+)", cuda_h).group(1)  # type: ignore[union-attr]
    cuda_v = f"{int(version) // 1000}.{int(version) % 1000 // 10}"
    rows: List[Dict[str, Any]] = []
    rt = enum_block((inc / "driver_types.h").read_text(), "enum __device_builtin__ cudaError\n", "};")
    rows += library_rows("cuda_runtime", resolve(pairs(rt, "cuda")), strings(
        str(Path(a.cuda) / "lib64" / "libcudart.so"), "cudaGetErrorString"),
        f"NVIDIA CUDA {cuda_v} header driver_types.h (enum cudaError); messages: cudaGetErrorString of libcudart "
        f"{cuda_v}; {RT_DOC}")
    drv = enum_block(cuda_h, "typedef enum cudaError_enum {", "} CUresult;")
    rows += library_rows("cuda_driver", resolve(pairs(drv, "CUDA_")), strings(None, ""),
                         f"NVIDIA CUDA {cuda_v} header cuda.h (enum CUresult); {DRV_DOC}")
    simple = [
        ("nvrtc", winc / "nvrtc.h", "NVRTC_", None, "",
         "nvrtc.h (nvrtcResult)", "https://docs.nvidia.com/cuda/nvrtc/index.html#_CPPv411nvrtcResult"),
        ("cublas", winc / "cublas_api.h", "CUBLAS_STATUS_", wlib / "libcublas.so.13", "cublasGetStatusString",
         "cublas_api.h (cublasStatus_t)", "https://docs.nvidia.com/cuda/cublas/#cublasstatus-t"),
        ("cusolver", winc / "cusolver_common.h", "CUSOLVER_STATUS_", None, "", "cusolver_common.h (cusolverStatus_t)",
         "https://docs.nvidia.com/cuda/cusolver/#cusolverstatus-t"),
        ("cufft", winc / "cufft.h", "CUFFT_", None, "", "cufft.h (cufftResult)",
         "https://docs.nvidia.com/cuda/cufft/#cufftresult"),
        ("curand", winc / "curand.h", "CURAND_STATUS_", None, "", "curand.h (curandStatus)",
         "https://docs.nvidia.com/cuda/curand/group__HOST.html"),
        ("cusparse", winc / "cusparse.h", "CUSPARSE_STATUS_", wlib / "libcusparse.so.12", "cusparseGetErrorString",
         "cusparse.h (cusparseStatus_t)", "https://docs.nvidia.com/cuda/cusparse/#cusparsestatus-t"),
    ]
    for library, header, prefix, lib, func, what, doc in simple:
        text = header.read_text()
        found = pairs(text, prefix)
        if library == "cufft":  # cufft.h's cufftResult only (its other enums share the prefix)
            found = pairs(enum_block(text, "typedef enum cufftResult_t", "} cufftResult;"), prefix)
        rows += library_rows(library, resolve(found), strings(str(lib) if lib else None, func),
                             f"NVIDIA CUDA {cuda_v} header {what}" + (f"; messages: {func} of {lib.name}" if lib else "")
                             + f"; {doc}")
    cudnn_inc = wh / "cudnn" / "include"
    cv = (cudnn_inc / "cudnn_version.h").read_text()
    cudnn_v = ".".join(re.search(rf"#define CUDNN_{k} (\d+)", cv).group(1)  # type: ignore[union-attr]
                       for k in ("MAJOR", "MINOR", "PATCHLEVEL"))
    cd = enum_block((cudnn_inc / "cudnn_graph.h").read_text(), "typedef enum {\n    CUDNN_STATUS_SUCCESS", "} cudnnStatus_t;")
    rows += library_rows("cudnn", resolve(pairs(cd, "CUDNN_STATUS_")), strings(None, ""),
                         f"NVIDIA cuDNN {cudnn_v} header cudnn_graph.h (cudnnStatus_t; numbers of cuDNN 9, cuDNN 8 "
                         "numbered 0-14); https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/"
                         "cudnn-graph-library.html#cudnnstatus-t")
    nccl_h = (wh / "nccl" / "include" / "nccl.h").read_text()
    nccl_v = ".".join(re.search(rf"#define NCCL_{k} (\d+)", nccl_h).group(1)  # type: ignore[union-attr]
                      for k in ("MAJOR", "MINOR", "PATCH"))
    nc = enum_block(nccl_h, "typedef enum { ncclSuccess", "} ncclResult_t;").replace("typedef enum {", "\n")
    rows += library_rows("nccl", [r for r in resolve(pairs(nc, "nccl")) if "ncclNumResults" not in r[0]],
                         strings(str(wh / "nccl" / "lib" / "libnccl.so.2"), "ncclGetErrorString"),
                         f"NVIDIA NCCL {nccl_v} header nccl.h (ncclResult_t); messages: ncclGetErrorString of "
                         f"libnccl.so.2 {nccl_v}; https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html")
    py = Path(a.pynvml).read_text()
    nvml_v = re.search(r"^Version: (\S+)", (Path(a.pynvml).parent.glob("nvidia_ml_py-*.dist-info/METADATA").__next__())
                       .read_text(), re.M).group(1)  # type: ignore[union-attr]
    nv = re.findall(r"^(NVML_(?:SUCCESS|ERROR_\w+))\s*=\s*(\d+)", py, re.M)
    rows += library_rows("nvml", resolve(nv), strings(None, ""),
                         f"nvidia-ml-py {nvml_v} pynvml.py (nvmlReturn_t constants, as nvml.h); "
                         "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html")
    doc = {
        "title": "NVIDIA library status codes: names, numbers, standard messages and the environment cause each implies",
        "as_of": "2026-12-07",
        "sources": sorted({r["source"] for r in rows}),
        "notes": ("Written by scripts/status_codes_table.py from the headers and libraries named in each row's source "
                  "(names, numbers and messages are copied; the category, kind, meaning and ask are envdoctor's "
                  "judgement). kind: environment (category names the cause), ambiguous (ask says what settles it), "
                  "program (the program's own call or kernel), success. Numbers are those of the header named; older "
                  "CUDA runtimes numbered some codes differently (pastes show `cuda runtime error (59) : device-side "
                  "assert triggered`, 710 here), so a number next to a message string is read by the string."),
        "keys": {"rows": ["library", "number"]},
        "rows": rows,
    }
    # one row a line, so that rows merge row by row
    head = json.dumps({k: v for k, v in doc.items() if k != "rows"}, indent=1, ensure_ascii=False)[:-2]
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in rows)
    sys.stdout.write(head + ',\n "rows": [\n' + body + "\n ]\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
