"""NVML probe: the driver and its GPUs through pynvml (the only module that imports pynvml, lazily)."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from envdoctor.domain.gpus import mig_profile
from envdoctor.domain.versions import release
from envdoctor.model.facts import Driver, Gpu, GpuProcess, MigDevice, NvlinkLink, P2pStatus, ProbeStatus
from envdoctor.parsers.nvidia_smi_xml import cuda_version_from_int
from envdoctor.probes.registry import guard

DEFAULT_TIMEOUT_S = 30.0

# NVML clock-event reason bits (nvml.h nvmlClocksEventReason*, as nvidia-ml-py 13.615 defines them), in
# facts.Gpu.throttle_reasons names. A bit not listed here is kept as "unknown_0x<bit>", never dropped: newer
# drivers add reasons (nvidia-ml-py 13.615.71 defines none above 0x100, so 0x200/0x400 have no confirmed name).
_REASON_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
)
_KNOWN_REASON_MASK = sum(bit for bit, _ in _REASON_BITS)
_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
# NVML_GPU_FABRIC_STATE_* (nvml.h / nvidia-ml-py: NOT_SUPPORTED 0, NOT_STARTED 1, IN_PROGRESS 2, COMPLETED 3)
_FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
# NVML_NVLINK_DEVICE_TYPE_* (nvml.h: GPU 0x00, IBMNPU 0x01, SWITCH 0x02, UNKNOWN 0xFF)
_NVLINK_REMOTE = {0: "gpu", 1: "ibmnpu", 2: "switch", 0xFF: "unknown"}
# NVML_NVLINK_MAX_LINKS differs by binding version (6, 12, 18, 36): ask at least as many links as NVLink 4/5
# GPUs have (H100/B200: 18), so the count does not depend on which pynvml was imported
_MIN_NVLINK_INDICES = 18

# A GPU that answers one of these answers nothing more (nvml.h: GPU_IS_LOST "the GPU has fallen off the bus or
# has otherwise become inaccessible", RESET_REQUIRED "the GPU requires a reset", GPU_NOT_FOUND)
_LOST = ("GPU_IS_LOST", "GPU_NOT_FOUND", "RESET_REQUIRED")
# answers that mean "this GPU or driver does not have it": not worth a note
_QUIET = ("NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "NOT_FOUND", "NO_DATA", "INVALID_ARGUMENT")
# the fields whose NVML calls a driver may answer NVML_ERROR_DEPRECATED (26, nvml.h API 13), by the feature a note
# names: nvml.h 13 marks nvmlDeviceGetApplicationsClock / nvmlDeviceGetDefaultApplicationsClock DEPRECATED(13.0)
# ("Applications clocks are deprecated and will be removed in CUDA 14.0"), and R590's nvidia-smi -q prints
# "Requested functionality has been deprecated" for both application clock sections
# (tests/fixtures/other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt): the successor nvmlDeviceGetClock with
# NVML_CLOCK_ID_APP_CLOCK_TARGET / _DEFAULT answers the same there
_DEPRECATED_FEATURES = {"clocks_app": "application clocks", "clocks_app_default": "application clocks"}
# nvml.h nvmlGpuVirtualizationMode_t: NONE 0, PASSTHROUGH 1, VGPU 2 (a vGPU guest), HOST_VGPU 3, HOST_VSGA 4
_VIRT_MODES = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}

# Why NVML init failed -> (status, reason). "absent" only where the driver is simply not there.
_INIT_ERRORS: Dict[str, Tuple[str, str]] = {
    "LIBRARY_NOT_FOUND": (
        ProbeStatus.ABSENT,
        "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed",
    ),
    "DRIVER_NOT_LOADED": (
        ProbeStatus.ABSENT,
        "the NVIDIA kernel module is not loaded (NVML: Driver Not Loaded)",
    ),
    "LIB_RM_VERSION_MISMATCH": (
        ProbeStatus.FAILED,
        "NVML library and the loaded kernel module are different driver versions "
        "(NVML: LIB_RM_VERSION_MISMATCH); the driver was upgraded without a reboot",
    ),
    "NO_PERMISSION": (
        ProbeStatus.FAILED,
        "no permission to open the NVIDIA device nodes (NVML: NO_PERMISSION)",
    ),
}


def _missing_symbol(err: BaseException) -> bool:
    # pynvml's throwOnVersionMismatch turns FUNCTION_NOT_FOUND of an unversioned wrapper (e.g. the
    # nvmlDeviceGetComputeRunningProcesses_v3 it calls, absent before driver 510.39) into
    # NVMLLibraryMismatchError, a plain Exception, not an NVMLError
    return type(err).__name__ == "NVMLLibraryMismatchError"


class _Reader:
    """Calls NVML functions by name; an error becomes ``None`` (and a note unless NotSupported)."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.notes: List[str] = []
        self.lost: Optional[str] = None
        self.fabric_health: Optional[List[str]] = None  # what _fabric read beside the state (V2/V3 structs)
        self.fabric_summary: Optional[str] = None
        # field -> the calls that answered NVML_ERROR_DEPRECATED (nvml.h API 13: "The requested functionality has
        # been deprecated"): said once per GPU by deprecated_note(), not once per call
        self.deprecated: Dict[str, List[str]] = {}

    def error_name(self, err: BaseException) -> str:
        return error_name(self.nvml, err)

    def nvml_failure(self, field: str, name: str, fn_name: str = "") -> None:
        if name == "DEPRECATED":
            self.deprecated.setdefault(field, []).append(fn_name or field)
            return
        if name in _LOST:
            self.lost = self.lost or name
            self.notes.append(f"{field}: NVML {name}")
        elif name not in _QUIET:
            self.notes.append(f"{field}: NVML {name}")

    def call(self, field: str, fn_name: str, *args: Any) -> Any:
        if self.lost:
            return None  # a lost GPU answers nothing more; do not wait on it field after field
        fn = getattr(self.nvml, fn_name, None)
        if fn is None:
            return None  # an older pynvml without this function
        try:
            return fn(*args)
        except self.nvml.NVMLError as e:
            self.nvml_failure(field, self.error_name(e), fn_name)
            return None
        except Exception as e:  # the per-field guard: one field lost, never the whole probe
            if not _missing_symbol(e):
                # a binding whose signature, struct or return differs from the one this code was written for
                self.notes.append(f"{field}: {type(e).__name__}: {e}")
            return None

    def successor(self, field: str, calls: Tuple[Tuple[str, Tuple[Any, ...]], ...]) -> Any:
        """The first of ``calls`` ((function, args), the NVML 13 successor first, then the call it deprecates)
        that answers. NOT_SUPPORTED from one tries the next; when none exists in this binding or driver
        (absent, FUNCTION_NOT_FOUND), a note says so instead of a silent None."""
        missing = 0
        for name, args in calls:
            if self.lost:
                return None
            fn = getattr(self.nvml, name, None)
            if fn is None:
                missing += 1
                continue
            try:
                return fn(*args)
            except self.nvml.NVMLError as e:
                err = self.error_name(e)
                if err == "FUNCTION_NOT_FOUND":
                    missing += 1
                elif err in _LOST or err not in _QUIET:
                    self.nvml_failure(field, err, name)
                    if self.lost:
                        return None
            except Exception as e:  # the per-field guard
                if _missing_symbol(e):
                    missing += 1
                else:
                    self.notes.append(f"{field}: {type(e).__name__}: {e}")
        if missing == len(calls):
            self.notes.append(f"{field}: neither " + " nor ".join(n for n, _ in calls)
                              + " exists in this driver or binding")
        return None

    def deprecated_note(self) -> Optional[str]:
        """One note for every call this GPU's driver answered DEPRECATED, by feature: "application clocks: not
        available on this driver (...)". None when nothing was."""
        if not self.deprecated:
            return None
        features: Dict[str, List[str]] = {}
        for field, calls in self.deprecated.items():
            features.setdefault(_DEPRECATED_FEATURES.get(field, field), []).extend(calls)
        return "; ".join(f"{feature}: not available on this driver (NVML answers DEPRECATED to "
                         + ", ".join(dict.fromkeys(calls)) + ")" for feature, calls in features.items())

    def first(self, field: str, fn_names: Tuple[str, ...], *args: Any) -> Any:
        """The first of ``fn_names`` that answers: versioned functions first, then older ones."""
        for name in fn_names:
            value = self.call(field, name, *args)
            if value is not None or self.lost:
                return value
        return None


def error_name(nvml: Any, err: BaseException) -> str:
    """NVML's name for an NVMLError ("NOT_SUPPORTED", "GPU_IS_LOST" ...), "UNKNOWN" if not known."""
    value = getattr(err, "value", None)
    return return_name(nvml, value) if value is not None else "UNKNOWN"


def return_name(nvml: Any, value: Any) -> str:
    """An nvmlReturn_t by name: 0 -> "SUCCESS", 15 -> "GPU_IS_LOST"; "UNKNOWN" if not known."""
    if value == 0:
        return "SUCCESS"
    for attr in dir(nvml):
        if attr.startswith("NVML_ERROR_") and getattr(nvml, attr, None) == value:
            return attr[len("NVML_ERROR_") :]
    return "UNKNOWN"


def _s(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    value = str(value).strip()
    return value or None


def _w(milliwatts: Any) -> Optional[float]:
    return round(milliwatts / 1000.0, 3) if isinstance(milliwatts, (int, float)) else None


def _pair(value: Any) -> Tuple[Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) >= 2:
        return value[0], value[1]
    return None, None


# nvmlDriverModel_t (nvml.h): NVML_DRIVER_WDDM 0, NVML_DRIVER_WDM 1 (the TCC model; nvidia-smi says "TCC"),
# NVML_DRIVER_MCDM 2; the same words as the nvidia-smi readers (parsers/nvidia_smi_fields.driver_model)
_DRIVER_MODELS = {0: "WDDM", 1: "TCC", 2: "MCDM"}


def _flag(value: Any) -> Optional[bool]:
    return bool(value) if isinstance(value, int) else None


def _arch_name(nvml: Any, value: Any) -> Optional[str]:
    if not isinstance(value, int):
        return None
    for attr in dir(nvml):
        if attr.startswith("NVML_DEVICE_ARCH_") and getattr(nvml, attr) == value and not attr.endswith("UNKNOWN"):
            name = attr[len("NVML_DEVICE_ARCH_") :]
            return "Ada Lovelace" if name == "ADA" else name.title()
    return None


def decode_reasons(mask: Any) -> Optional[List[str]]:
    """Clock-event reason names of an NVML bit mask; unknown bits as "unknown_0x200" rather than dropped."""
    if not isinstance(mask, int):
        return None
    names = [n for bit, n in _REASON_BITS if mask & bit]
    rest = mask & ~_KNOWN_REASON_MASK
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"unknown_0x{bit:x}")
            rest &= ~bit
        bit <<= 1
    return names


def _nvlinks(r: _Reader, handle: Any) -> Optional[List[NvlinkLink]]:
    """Every link index NVML answers for; an unsupported index is skipped, not the end of the list."""
    nvml = r.nvml
    fn = getattr(nvml, "nvmlDeviceGetNvLinkState", None)
    if fn is None:
        return None
    links: List[NvlinkLink] = []
    failures: List[str] = []
    top = max(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 0) or 0), _MIN_NVLINK_INDICES)
    for link in range(top):
        try:
            state = fn(handle, link)
        except nvml.NVMLError as e:
            name = r.error_name(e)
            if name in _LOST:
                r.nvml_failure("nvlinks", name)
                return None
            if name not in _QUIET:
                failures.append(name)
            continue  # this index has no link (cut-down SKUs skip indices): ask the next
        except Exception as e:  # the per-field guard
            r.notes.append(f"nvlinks: {type(e).__name__}: {e}")
            return None
        remote = rtype = None
        if state:
            remote = r.call(f"nvlink{link}.remote", "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
            rtype = r.call(f"nvlink{link}.remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
        links.append(
            NvlinkLink(
                link=link,
                active=bool(state),
                remote_pci_bus_id=_s(getattr(remote, "busId", None)) if remote is not None else None,
                remote_device_type=_NVLINK_REMOTE.get(rtype) if isinstance(rtype, int) else None,
            )
        )
    if failures and not links:
        r.notes.append(f"nvlinks: NVML {failures[0]}")
        return None
    return links


def _inforom_valid(r: _Reader, handle: Any) -> Optional[bool]:
    fn = getattr(r.nvml, "nvmlDeviceValidateInforom", None)
    if fn is None or r.lost:
        return None
    try:
        fn(handle)
        return True
    except r.nvml.NVMLError as e:
        name = r.error_name(e)
        if name == "CORRUPTED_INFOROM":
            return False
        r.nvml_failure("inforom", name)
        return None
    except Exception as e:  # the per-field guard
        r.notes.append(f"inforom: {type(e).__name__}: {e}")
        return None


# ---------------------------------------------------------------------------- structs as nvml.h lays them out
# NVML's versioned and array-filling calls are made with envdoctor's own ctypes structs, laid out as nvml.h
# declares them (NVIDIA/go-nvml gen/nvml/nvml.h, a copy of the R580/NVML 13 header, commit 2f9e261f):
# the bindings' own structs differ from the header in some nvidia-ml-py releases (every 12.x declares
# nvmlGpuFabricInfo_t.clusterUuid as 80 bytes where nvml.h has NVML_GPU_FABRIC_UUID_LEN = 16, so the driver
# writes 28 bytes into a 92-byte struct and ``state`` is read from zeros; 12.535.77 added a field to
# nvmlProcessInfo_t that no driver writes). The function pointer still comes from the binding
# (``_nvmlGetFunctionPointer``), so the library it loaded, or the tests' stand-in, answers.
_FABRIC_UUID_LEN = 16  # NVML_GPU_FABRIC_UUID_LEN
_ARGUMENT_VERSION_MISMATCH = 25  # NVML_ERROR_ARGUMENT_VERSION_MISMATCH (nvml.h; not in nvidia-ml-py 12.535)
_FUNCTION_NOT_FOUND = 13
_INSUFFICIENT_SIZE = 7
_VALUE_NOT_AVAILABLE_ULL = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE as unsigned long long (WDDM)


class _FabricInfoV1(ctypes.Structure):
    """nvmlGpuFabricInfo_t (nvmlDeviceGetGpuFabricInfo, R535+): 28 bytes."""

    _fields_ = [("clusterUuid", ctypes.c_ubyte * _FABRIC_UUID_LEN), ("status", ctypes.c_uint),
                ("cliqueId", ctypes.c_uint), ("state", ctypes.c_ubyte)]  # nvmlGpuFabricState_t: unsigned char


class _FabricInfoV2(ctypes.Structure):
    """nvmlGpuFabricInfo_v2_t (nvmlDeviceGetGpuFabricInfoV, R550+): 36 bytes, version 0x02000024."""

    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_ubyte * _FABRIC_UUID_LEN),
                ("status", ctypes.c_uint), ("cliqueId", ctypes.c_uint), ("state", ctypes.c_ubyte),
                ("healthMask", ctypes.c_uint)]


class _FabricInfoV3(ctypes.Structure):
    """nvmlGpuFabricInfo_v3_t (= nvmlGpuFabricInfoV_t in NVML 12.570+/13): 40 bytes, version 0x03000028."""

    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_ubyte * _FABRIC_UUID_LEN),
                ("status", ctypes.c_uint), ("cliqueId", ctypes.c_uint), ("state", ctypes.c_ubyte),
                ("healthMask", ctypes.c_uint), ("healthSummary", ctypes.c_ubyte)]


class _ProcessInfo(ctypes.Structure):
    """nvmlProcessInfo_v2_t = nvmlProcessInfo_t (the _v2 and _v3 process queries): 24 bytes."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


def _struct_version(cls: Any, version: int) -> int:
    # NVML_STRUCT_VERSION(data, ver): sizeof(struct) | (ver << 24)
    return ctypes.sizeof(cls) | (version << 24)


# sizes nvml.h gives these structs (checked against ctypes.sizeof by the tests and before each use)
HEADER_SIZES = {_FabricInfoV1: 28, _FabricInfoV2: 36, _FabricInfoV3: 40, _ProcessInfo: 24}


def _c_call(nvml: Any, symbol: str, *args: Any) -> Optional[int]:
    """Call NVML's C function ``symbol`` through the binding's loader; its nvmlReturn_t, or None when the
    binding has no loader and no wrapper of that name (a module-level fake)."""
    loader = getattr(nvml, "_nvmlGetFunctionPointer", None)
    try:
        if loader is not None:
            return int(loader(symbol)(*args))
        wrapper = getattr(nvml, symbol, None)
        if wrapper is None:
            return None
        wrapper(*args)
        return 0
    except nvml.NVMLError as e:  # FUNCTION_NOT_FOUND from the loader, or the wrapper's own check
        value = getattr(e, "value", None)
        return value if isinstance(value, int) else -1


# The V call with the newest struct first; a driver that does not know that version answers
# ARGUMENT_VERSION_MISMATCH (nvml.h: "The provided version is invalid/unsupported"), then the older one;
# a driver without the V call (R535/R545) has only nvmlDeviceGetGpuFabricInfo with the unversioned struct.
_FABRIC_CALLS = (("nvmlDeviceGetGpuFabricInfoV", _FabricInfoV3, 3),
                 ("nvmlDeviceGetGpuFabricInfoV", _FabricInfoV2, 2),
                 ("nvmlDeviceGetGpuFabricInfo", _FabricInfoV1, None))


# nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*: 2-bit fields at shifts 0, 2, 4, 6 (NOT_SUPPORTED 0, TRUE 1, FALSE 2) and a
# 4-bit incorrect-configuration code at shift 8 (NONE 1, INCORRECT_SYSGUID 2, INCORRECT_CHASSIS_SN 3,
# NO_PARTITION 4, INSUFFICIENT_NVLINKS 5); NVML_GPU_FABRIC_HEALTH_SUMMARY_* NOT_SUPPORTED 0, HEALTHY 1,
# UNHEALTHY 2, LIMITED_CAPACITY 3 (nvml.h of R570+, as the nvml-sys bindings copy it)
_FABRIC_HEALTH_FLAGS = ((0, "degraded_bandwidth"), (2, "route_recovery"), (4, "route_unhealthy"),
                        (6, "access_timeout_recovery"))
_FABRIC_CONFIG = {2: "incorrect_sysguid", 3: "incorrect_chassis_serial", 4: "no_partition", 5: "insufficient_nvlinks"}
_FABRIC_SUMMARY = {1: "healthy", 2: "unhealthy", 3: "limited_capacity"}


def decode_fabric_health(mask: Any) -> Optional[List[str]]:
    """The conditions an NVML fabric health mask reports true; None for no mask."""
    if not isinstance(mask, int):
        return None
    out = [name for shift, name in _FABRIC_HEALTH_FLAGS if (mask >> shift) & 0x3 == 1]
    config = (mask >> 8) & 0xF
    if config in _FABRIC_CONFIG:
        out.append(f"incorrect_configuration:{_FABRIC_CONFIG[config]}")
    elif config > 5:
        out.append(f"incorrect_configuration:unknown_{config}")
    return out


def _fabric(r: _Reader, handle: Any) -> Tuple[Optional[str], Optional[str]]:
    """(state, status) of the GPU's NVSwitch fabric registration, from NVML GPU fabric info (Hopper+).

    Read into envdoctor's own nvml.h structs (above), never the binding's. ``state`` is
    NVML_GPU_FABRIC_STATE_*, ``status`` an nvmlReturn_t. Unlike /proc, this works inside containers.
    """
    nvml = r.nvml
    skip_v = False
    for symbol, cls, version in _FABRIC_CALLS:
        if r.lost or (skip_v and version is not None):
            continue
        if ctypes.sizeof(cls) != HEADER_SIZES[cls]:  # a ctypes that pads differently: do not guess
            r.notes.append(f"fabric: {cls.__name__} is {ctypes.sizeof(cls)} bytes, nvml.h says {HEADER_SIZES[cls]}")
            return None, None
        info = cls()
        if version is not None:
            info.version = _struct_version(cls, version)
        try:
            code = _c_call(nvml, symbol, handle, ctypes.byref(info))
        except Exception as e:  # the per-field guard
            r.notes.append(f"fabric: {type(e).__name__}: {e}")
            return None, None
        if code is None or code == _FUNCTION_NOT_FOUND:
            skip_v = skip_v or version is not None  # no V call on this driver or binding: go to the v1 call
            continue
        if code == _ARGUMENT_VERSION_MISMATCH:
            continue  # this driver does not know the struct version: try the older one
        if code != 0:
            r.nvml_failure("fabric", return_name(nvml, code))
            return None, None
        if version is not None:
            r.fabric_health = decode_fabric_health(info.healthMask)
            if version >= 3:
                r.fabric_summary = _FABRIC_SUMMARY.get(info.healthSummary)
        return (_FABRIC_STATES.get(info.state, f"unknown_{info.state}"), return_name(nvml, info.status))
    return None, None


# nvml.h nvmlGridLicensableFeatures_t: int isGridLicenseSupported @0, unsigned licensableFeaturesCount @4, then
# NVML_GRID_LICENSE_FEATURE_MAX_COUNT (3) nvmlGridLicensableFeature_t of 284 bytes each (featureCode, featureState,
# licenseInfo[128], productName[128], featureEnabled, nvmlGridLicenseExpiry_t of 16): featureState at 12 + 284*i.
# Read from a zeroed buffer larger than any version of the struct, so no binding layout is trusted.
_LICENSE_FEATURE_SIZE = 284
_LICENSE_BUFFER = 4096


def _vgpu_license(r: _Reader, handle: Any) -> Optional[str]:
    """"licensed" / "unlicensed" for a vGPU guest (nvmlDeviceGetGridLicensableFeatures_v4); None when unknown."""
    import struct

    if r.lost:
        return None
    buf = (ctypes.c_ubyte * _LICENSE_BUFFER)()
    try:
        code = _c_call(r.nvml, "nvmlDeviceGetGridLicensableFeatures_v4", handle, ctypes.byref(buf))
    except Exception as e:  # the per-field guard
        r.notes.append(f"vgpu_license: {type(e).__name__}: {e}")
        return None
    if code is None or code == _FUNCTION_NOT_FOUND:
        return None
    if code != 0:
        r.nvml_failure("vgpu_license", return_name(r.nvml, code))
        return None
    supported, count = struct.unpack_from("<iI", bytes(buf), 0)
    if not supported or not 0 < count <= 3:
        return None
    states = [struct.unpack_from("<I", bytes(buf), 12 + _LICENSE_FEATURE_SIZE * i)[0] for i in range(count)]
    return "licensed" if any(states) else "unlicensed"


def _mig_device(r: _Reader, index: int, mh: Any) -> MigDevice:
    """One MIG device through its own handle: its SMs and memory are the slice's, not the board's."""
    c = r.call
    name = _s(c("mig.name", "nvmlDeviceGetName", mh))
    attrs = r.first("mig.attributes", ("nvmlDeviceGetAttributes_v2", "nvmlDeviceGetAttributes"), mh)
    mem = c("mig.memory", "nvmlDeviceGetMemoryInfo", mh)
    sms = getattr(attrs, "multiprocessorCount", None)
    gi, ci = c("mig.gi", "nvmlDeviceGetGpuInstanceId", mh), c("mig.ci", "nvmlDeviceGetComputeInstanceId", mh)
    return MigDevice(index=index, gpu_instance_id=gi if isinstance(gi, int) else None,
                     compute_instance_id=ci if isinstance(ci, int) else None, profile=mig_profile(name),
                     uuid=_s(c("mig.uuid", "nvmlDeviceGetUUID", mh)),
                     sm_count=sms if isinstance(sms, int) and sms > 0 else None,
                     memory_total_bytes=getattr(mem, "total", None), memory_used_bytes=getattr(mem, "used", None))


def _mig_devices(r: _Reader, handle: Any) -> Optional[List[MigDevice]]:
    """MIG devices (instances CUDA can use) on a GPU in MIG mode; None when NVML cannot say."""
    nvml = r.nvml
    top = r.call("mig_devices", "nvmlDeviceGetMaxMigDeviceCount", handle)
    fn = getattr(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", None)
    if not isinstance(top, int) or fn is None:
        return None
    out: List[MigDevice] = []
    for i in range(top):
        try:
            mh = fn(handle, i)
        except nvml.NVMLError as e:
            name = r.error_name(e)
            if name in ("NOT_FOUND", "INVALID_ARGUMENT"):
                continue  # an empty slot
            r.nvml_failure("mig_devices", name)
            return None
        except Exception as e:  # the per-field guard
            r.notes.append(f"mig_devices: {type(e).__name__}: {e}")
            return None
        out.append(_mig_device(r, i, mh))
    return out


def _parent_pid(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    # the comm field is in parentheses and may itself contain spaces or ")": the ppid follows the last ")"
    parts = text[text.rfind(")") + 2 :].split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def is_own_pid(pid: Any) -> bool:
    """envdoctor itself or a child of it (the payload that imports torch, the PCIe load): not "another process"."""
    if not isinstance(pid, int):
        return False
    me = os.getpid()
    return pid == me or _parent_pid(pid) == me


_PROCESS_FUNCTIONS = (
    # the binding's wrappers, for a module without the C loader (a module-level fake): _v3 from driver
    # 510.39, _v2 before it; the unversioned wrapper last (it raises NVMLLibraryMismatchError when its _v3
    # is missing)
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses",
)
# the C functions, newest first, each filling an array of nvml.h nvmlProcessInfo_t (24 bytes). Graphics
# processes too (Xorg, a browser, a Wayland compositor): their memory is not "held with no visible process".
_PROCESS_SYMBOLS = (
    ("C", ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2")),
    ("G", ("nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2")),
)

# The initial PID namespace's inode is fixed (PROC_PID_INIT_INO = 0xEFFFFFFC, include/linux/proc_ns.h)
INIT_PID_NS = f"pid:[{0xEFFFFFFC}]"


def in_child_pid_namespace() -> Optional[bool]:
    """True inside a PID namespace other than the host's (a container): NVML's PIDs are then host PIDs,
    which neither match this process's PIDs nor name processes here; None when it cannot be told."""
    try:
        return os.readlink("/proc/self/ns/pid") != INIT_PID_NS
    except OSError:
        return None


def _instance_id(value: Any) -> Optional[int]:
    """A process's MIG GPU or compute instance id; None off MIG, where NVML sets it to 0xFFFFFFFF (nvml.h,
    nvmlProcessInfo_t: "If MIG is enabled, stores a valid GPU instance ID ... set to 0xFFFFFFFF otherwise")."""
    return value if isinstance(value, int) and 0 <= value < 0xFFFFFFFF else None


def _c_process_list(r: _Reader, handle: Any, symbols: Tuple[str, ...]) -> Optional[List[Tuple[Any, ...]]]:
    """(pid, used bytes or None, GPU instance id, compute instance id) of one process query through the C
    functions; None when none answered."""
    nvml = r.nvml
    for symbol in symbols:
        if r.lost:
            return None
        count = ctypes.c_uint(0)
        code = _c_call(nvml, symbol, handle, ctypes.byref(count), None)
        if code == _FUNCTION_NOT_FOUND:
            continue  # an older driver: its older version
        for _ in range(3):  # processes may start between the size query and the read
            if code != _INSUFFICIENT_SIZE:
                break
            n = count.value * 2 + 5
            array = (_ProcessInfo * n)()
            count.value = n
            code = _c_call(nvml, symbol, handle, ctypes.byref(count), array)
            if code == 0:
                return [(p.pid, None if p.usedGpuMemory == _VALUE_NOT_AVAILABLE_ULL else p.usedGpuMemory,
                         _instance_id(p.gpuInstanceId), _instance_id(p.computeInstanceId))
                        for p in array[: min(count.value, n)]]
        if code == 0:
            return []  # the size query answered: no processes
        r.nvml_failure("processes", return_name(nvml, code if isinstance(code, int) else -1))
        return None
    return None


def _process_lists(r: _Reader, handle: Any) -> Optional[List[Tuple[Any, ...]]]:
    """(type "C"/"G", pid, used bytes, GPU instance id, compute instance id) of every compute and graphics
    process; None when unknown."""
    if getattr(r.nvml, "_nvmlGetFunctionPointer", None) is None:
        procs = r.first("processes", _PROCESS_FUNCTIONS, handle)
        if procs is None:
            return None
        return [("C", getattr(p, "pid", None), getattr(p, "usedGpuMemory", None),
                 _instance_id(getattr(p, "gpuInstanceId", None)), _instance_id(getattr(p, "computeInstanceId", None)))
                for p in procs]
    if ctypes.sizeof(_ProcessInfo) != HEADER_SIZES[_ProcessInfo]:
        r.notes.append(f"processes: nvmlProcessInfo_t is {ctypes.sizeof(_ProcessInfo)} bytes here, nvml.h says 24")
        return None
    out: List[Tuple[Any, ...]] = []
    answered = False
    for kind, symbols in _PROCESS_SYMBOLS:
        procs = _c_process_list(r, handle, symbols)
        if procs is None:
            if kind == "C":
                return None  # no compute list: the processes are unknown
            continue
        answered = True
        out += [(kind,) + tuple(p) for p in procs]
    return out if answered else None


def _processes(r: _Reader, handle: Any, own: Callable[[Any], bool],
               host_pids: Optional[bool] = None) -> Optional[List[GpuProcess]]:
    """The GPU's compute and graphics processes, envdoctor's own left out.

    ``host_pids``: this process sits in a child PID namespace, so NVML's PIDs are the host's: they are kept
    (as the host's) but not named, since nvmlSystemGetProcessName would look them up in the wrong namespace.
    """
    listed = _process_lists(r, handle)
    if listed is None:
        return None
    # pid and slice -> [types, memory]: one process can be both C and G (and, on MIG, on two slices: each its own)
    merged: Dict[Any, List[Any]] = {}
    for kind, pid, mem, gi, ci in listed:
        entry = merged.setdefault((pid, gi, ci), ["", None])
        entry[0] = "C+G" if entry[0] and entry[0] != kind else kind
        if isinstance(mem, int):
            entry[1] = max(entry[1] or 0, mem)
    out = []
    mine = 0
    for (pid, gi, ci), (kind, mem) in merged.items():
        if not host_pids and own(pid):
            mine += 1
            continue
        name = None
        if pid is not None and not host_pids:
            name = r.call("process_name", "nvmlSystemGetProcessName", pid)
        out.append(GpuProcess(pid=pid, name=_s(name), used_memory_bytes=mem if isinstance(mem, int) else None,
                              type=kind, gpu_instance_id=gi, compute_instance_id=ci))
    if mine:
        r.notes.append(f"processes: {mine} of envdoctor's own process(es) left out")
    if host_pids and out:
        r.notes.append("processes: PIDs are the host's (this runs in a container's PID namespace); names not looked up")
    return out


def read_gpu(nvml: Any, index: int, own: Callable[[Any], bool] = is_own_pid, host_pids: Optional[bool] = None,
             processes_read: Callable[[], None] = lambda: None) -> Gpu:
    """Everything NVML tells about GPU ``index``; each field on its own, so one failure loses one field.

    The process list is read first and ``processes_read()`` called right after it (or when there is none),
    so that the payload, which starts once every GPU's list is read, is not in it.
    """
    r = _Reader(nvml)
    try:
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as e:
            name = error_name(nvml, e)
            return Gpu(index=index, nvml_error=name, notes=[f"handle: NVML {name}"])
        processes = _processes(r, handle, own, host_pids)
    finally:
        processes_read()
    c = r.call
    k = nvml
    pci = r.first("pci", ("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo"), handle)
    mem = c("memory", "nvmlDeviceGetMemoryInfo", handle)
    cc_major, cc_minor = _pair(c("compute_capability", "nvmlDeviceGetCudaComputeCapability", handle))
    mig_cur, mig_pend = _pair(c("mig_mode", "nvmlDeviceGetMigMode", handle))
    ecc_cur, ecc_pend = _pair(c("ecc_mode", "nvmlDeviceGetEccMode", handle))
    # Windows only (NotSupported, so no note, on Linux): nvmlDriverModel_t, current and pending
    dm_cur, dm_pend = _pair(c("driver_model", "nvmlDeviceGetDriverModel", handle))
    corrected = getattr(k, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    uncorrected = getattr(k, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    volatile = getattr(k, "NVML_VOLATILE_ECC", 0)
    aggregate = getattr(k, "NVML_AGGREGATE_ECC", 1)
    ecc_on = ecc_cur == 1
    sbe = c("retired_pages", "nvmlDeviceGetRetiredPages", handle,
            getattr(k, "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0))
    dbe = c("retired_pages", "nvmlDeviceGetRetiredPages", handle,
            getattr(k, "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1))
    remap = c("remapped_rows", "nvmlDeviceGetRemappedRows", handle)
    remap = tuple(remap) if isinstance(remap, (list, tuple)) and len(remap) >= 4 else (None,) * 4
    mig_devices = _mig_devices(r, handle) if mig_cur == 1 else None
    if mig_cur == 1 and remap[0] is None and not r.lost:
        # NVML does not report row remapping through a GPU in MIG mode here: say so rather than drop it
        r.notes.append("remapped_rows: not reported while MIG is on"
                       + (f" ({len(mig_devices)} MIG instance(s))" if mig_devices else "")
                       + "; read it with `nvidia-smi -q -d ROW_REMAPPER` on the host")
    sm, memclk, gr = getattr(k, "NVML_CLOCK_SM", 1), getattr(k, "NVML_CLOCK_MEM", 2), getattr(k, "NVML_CLOCK_GRAPHICS", 0)
    # the Event name is the one drivers >= R535 export; older drivers only have the Throttle name
    reasons = r.successor("throttle_reasons", (("nvmlDeviceGetCurrentClocksEventReasons", (handle,)),
                                               ("nvmlDeviceGetCurrentClocksThrottleReasons", (handle,))))
    # NVML 13 deprecates the application-clock getters and nvmlDeviceGetTemperature: their successors first
    # (nvmlDeviceGetClock with NVML_CLOCK_ID_APP_CLOCK_TARGET / _DEFAULT, nvmlDeviceGetTemperatureV)
    app_target = getattr(k, "NVML_CLOCK_ID_APP_CLOCK_TARGET", 1)
    app_default = getattr(k, "NVML_CLOCK_ID_APP_CLOCK_DEFAULT", 2)
    temp_sensor = getattr(k, "NVML_TEMPERATURE_GPU", 0)
    pmin, pmax = _pair(c("power_limits", "nvmlDeviceGetPowerManagementLimitConstraints", handle))
    util = c("utilization", "nvmlDeviceGetUtilizationRates", handle)
    pstate = c("performance_state", "nvmlDeviceGetPerformanceState", handle)
    compute_mode = c("compute_mode", "nvmlDeviceGetComputeMode", handle)
    persistence = c("persistence_mode", "nvmlDeviceGetPersistenceMode", handle)
    device_id = getattr(pci, "pciDeviceId", None)
    fabric_state, fabric_status = _fabric(r, handle)
    virt_mode = _VIRT_MODES.get(c("virtualization_mode", "nvmlDeviceGetVirtualizationMode", handle))

    gpu = Gpu(
        index=index,
        name=_s(c("name", "nvmlDeviceGetName", handle)),
        uuid=_s(c("uuid", "nvmlDeviceGetUUID", handle)),
        serial=_s(c("serial", "nvmlDeviceGetSerial", handle)),
        pci_bus_id=_s(getattr(pci, "busId", None)),
        pci_device_id=f"0x{device_id:08X}" if isinstance(device_id, int) else None,
        architecture=_arch_name(k, c("architecture", "nvmlDeviceGetArchitecture", handle)),
        compute_capability=f"{cc_major}.{cc_minor}" if cc_major is not None else None,
        vbios_version=_s(c("vbios", "nvmlDeviceGetVbiosVersion", handle)),
        memory_total_bytes=getattr(mem, "total", None),
        memory_used_bytes=getattr(mem, "used", None),
        pcie_gen_current=c("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        pcie_gen_max=c("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", handle),
        pcie_gen_device_max=c("pcie_gen_device_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", handle),
        pcie_width_current=c("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth", handle),
        pcie_width_max=c("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", handle),
        pcie_replay_counter=c("pcie_replay_counter", "nvmlDeviceGetPcieReplayCounter", handle),
        persistence_mode=_flag(persistence),
        mig_mode_current=_flag(mig_cur),
        mig_mode_pending=_flag(mig_pend),
        mig_device_count=len(mig_devices) if mig_devices is not None else None,
        mig_devices=mig_devices,
        compute_mode=_COMPUTE_MODES.get(compute_mode) if isinstance(compute_mode, int) else None,
        ecc_mode_current=_flag(ecc_cur),
        ecc_mode_pending=_flag(ecc_pend),
        # ECC counters are only meaningful (and only supported) while ECC is on
        ecc_volatile_corrected=c("ecc", "nvmlDeviceGetTotalEccErrors", handle, corrected, volatile) if ecc_on else None,
        ecc_volatile_uncorrected=c("ecc", "nvmlDeviceGetTotalEccErrors", handle, uncorrected, volatile)
        if ecc_on
        else None,
        ecc_aggregate_corrected=c("ecc", "nvmlDeviceGetTotalEccErrors", handle, corrected, aggregate)
        if ecc_on
        else None,
        ecc_aggregate_uncorrected=c("ecc", "nvmlDeviceGetTotalEccErrors", handle, uncorrected, aggregate)
        if ecc_on
        else None,
        retired_pages_single_bit=len(sbe) if isinstance(sbe, list) else None,
        retired_pages_double_bit=len(dbe) if isinstance(dbe, list) else None,
        retired_pages_pending=_flag(c("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", handle)),
        remapped_rows_correctable=remap[0],
        remapped_rows_uncorrectable=remap[1],
        remapped_rows_pending=_flag(remap[2]),
        remapped_rows_failure=_flag(remap[3]),
        inforom_valid=_inforom_valid(r, handle),
        recovery_action=_recovery_action(r, handle),
        clocks_sm_mhz=c("clocks", "nvmlDeviceGetClockInfo", handle, sm),
        clocks_mem_mhz=c("clocks", "nvmlDeviceGetClockInfo", handle, memclk),
        clocks_sm_max_mhz=c("clocks_max", "nvmlDeviceGetMaxClockInfo", handle, sm),
        clocks_mem_max_mhz=c("clocks_max", "nvmlDeviceGetMaxClockInfo", handle, memclk),
        clocks_sm_app_mhz=r.successor("clocks_app", (("nvmlDeviceGetClock", (handle, gr, app_target)),
                                                     ("nvmlDeviceGetApplicationsClock", (handle, gr)))),
        clocks_sm_app_default_mhz=r.successor("clocks_app_default", (
            ("nvmlDeviceGetClock", (handle, gr, app_default)),
            ("nvmlDeviceGetDefaultApplicationsClock", (handle, gr)))),
        throttle_reasons=decode_reasons(reasons),
        power_draw_w=_w(c("power_draw", "nvmlDeviceGetPowerUsage", handle)),
        # the limit the driver enforces (the lowest of the requested and any system-imposed limit), not only
        # the one requested with nvidia-smi -pl (NVML reference: nvmlDeviceGetEnforcedPowerLimit)
        power_limit_w=_w(r.first("power_limit", ("nvmlDeviceGetEnforcedPowerLimit",
                                                 "nvmlDeviceGetPowerManagementLimit"), handle)),
        power_default_limit_w=_w(c("power_default_limit", "nvmlDeviceGetPowerManagementDefaultLimit", handle)),
        power_min_limit_w=_w(pmin),
        power_max_limit_w=_w(pmax),
        temperature_c=r.successor("temperature", (("nvmlDeviceGetTemperatureV", (handle, temp_sensor)),
                                                  ("nvmlDeviceGetTemperature", (handle, temp_sensor)))),
        temperature_slowdown_c=c("temperature_slowdown", "nvmlDeviceGetTemperatureThreshold", handle,
                                 getattr(k, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
        temperature_shutdown_c=c("temperature_shutdown", "nvmlDeviceGetTemperatureThreshold", handle,
                                 getattr(k, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0)),
        fan_speed_pct=c("fan_speed", "nvmlDeviceGetFanSpeed", handle),
        utilization_gpu_pct=getattr(util, "gpu", None),
        utilization_memory_pct=getattr(util, "memory", None),
        # NVML_PSTATE_UNKNOWN is 32
        performance_state=f"P{pstate}" if isinstance(pstate, int) and 0 <= pstate < 16 else None,
        processes=processes,
        nvlinks=_nvlinks(r, handle) if not r.lost else None,
        fabric_state=fabric_state,
        fabric_status=fabric_status,
        # a mask means something only once the GPU is on a fabric (NOT_SUPPORTED fields read 0 elsewhere)
        fabric_health=r.fabric_health if fabric_state not in (None, "not_supported") else None,
        fabric_health_summary=r.fabric_summary if fabric_state not in (None, "not_supported") else None,
        virtualization_mode=virt_mode,
        vgpu_license=_vgpu_license(r, handle) if virt_mode == "vgpu" else None,
        driver_model_current=_DRIVER_MODELS.get(dm_cur),
        driver_model_pending=_DRIVER_MODELS.get(dm_pend),
    )
    return _finish(gpu, r)


def _recovery_action(r: _Reader, handle: Any) -> Optional[str]:
    """The GPU recovery action the driver reports (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, field 230, nvml.h API 13;
    R565 and later): a name of compat.xid.RECOVERY_ACTIONS, "unknown_<n>" for a value newer than those, None
    where the field is not answered. The deprecated fields it replaces (NVML_FI_DEV_RESET_STATUS 226,
    _DRAIN_AND_RESET_STATUS 227) are not read."""
    from ..compat.xid import RECOVERY_ACTIONS

    if r.lost:
        return None
    value = read_fields(r.nvml, handle, (_RECOVERY_ACTION_FIELD,)).get(_RECOVERY_ACTION_FIELD)
    if value is None:
        return None
    return RECOVERY_ACTIONS.get(value, f"unknown_{value}")


_RECOVERY_ACTION_FIELD = 230


def _finish(gpu: Gpu, r: _Reader) -> Gpu:
    note = r.deprecated_note()
    notes = r.notes + ([note] if note else [])
    return dataclasses.replace(gpu, notes=notes or None, nvml_error=r.lost)


# Open while no NVML probe is reading GPU process lists: the inspect payload waits on it (wait_for_process_lists)
# so that its own CUDA context is not among them; in a container NVML's host PIDs cannot be matched to it.
_PROCESS_GATE = threading.Event()
_PROCESS_GATE.set()
PROCESS_GATE_WAIT_S = 5.0


def hold_process_lists() -> None:
    """Close the gate before the probes start (collect); the NVML probe opens it once the lists are read."""
    _PROCESS_GATE.clear()


def release_process_lists() -> None:
    _PROCESS_GATE.set()


def wait_for_process_lists(timeout_s: float = PROCESS_GATE_WAIT_S) -> bool:
    """Wait (at most ``timeout_s``) until no NVML probe is reading GPU process lists; True if none is."""
    return _PROCESS_GATE.wait(timeout_s)


def _read_gpus(nvml: Any, count: int, deadline: float, own: Callable[[Any], bool],
               host_pids: Optional[bool] = None) -> Tuple[List[Gpu], List[int]]:
    """Each GPU in its own thread (NVML is thread-safe: NVML API reference, "Thread-safety"), so one hung GPU
    costs its own facts only; (GPUs, indices still unanswered at ``deadline``)."""
    results: Dict[int, Gpu] = {}
    pending = [count]
    lock = threading.Lock()
    if count <= 0:
        release_process_lists()

    def work(i: int) -> None:
        done = [False]

        def processes_read() -> None:
            with lock:
                if not done[0]:
                    done[0] = True
                    pending[0] -= 1
                    if pending[0] <= 0:
                        release_process_lists()

        try:
            results[i] = read_gpu(nvml, i, own, host_pids, processes_read)
        except Exception as e:  # the per-GPU guard
            results[i] = Gpu(index=i, notes=[f"read crashed: {type(e).__name__}: {e}"])
        finally:
            processes_read()

    threads = [threading.Thread(target=work, args=(i,), name=f"envdoctor-nvml-gpu{i}", daemon=True)
               for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    hung = [i for i in range(count) if i not in results]
    gpus = [results.get(i) or Gpu(index=i, nvml_error="TIMEOUT",
                                  notes=["NVML did not answer for this GPU before the probe's deadline"])
            for i in range(count)]
    return gpus, hung


def _probe_and_release(nvml: Any, deadline: Optional[float] = None, own: Callable[[Any], bool] = is_own_pid,
                       host_pids: Optional[bool] = None) -> Driver:
    try:
        return _probe(nvml, deadline, own, host_pids)
    finally:
        release_process_lists()  # whatever happened, the payload must not wait on this probe any longer


def _probe(nvml: Any, deadline: Optional[float] = None, own: Callable[[Any], bool] = is_own_pid,
           host_pids: Optional[bool] = None) -> Driver:
    deadline = deadline if deadline is not None else time.monotonic() + DEFAULT_TIMEOUT_S
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        name = error_name(nvml, e)
        status, reason = _INIT_ERRORS.get(name, (ProbeStatus.FAILED, f"NVML init failed: {name} ({e})"))
        return Driver(status=status, reason=reason, source="nvml", nvml_error=name)
    if host_pids is None:
        host_pids = in_child_pid_namespace()
    hung: List[int] = []
    try:
        r = _Reader(nvml)
        version = _s(r.call("driver_version", "nvmlSystemGetDriverVersion"))
        cuda_int = r.first("cuda_driver_version", ("nvmlSystemGetCudaDriverVersion_v2",
                                                   "nvmlSystemGetCudaDriverVersion"))
        nvml_version = _s(r.call("nvml_version", "nvmlSystemGetNVMLVersion"))
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as e:
            name = error_name(nvml, e)
            return Driver(
                status=ProbeStatus.FAILED,
                reason=f"NVML could not count the GPUs: {name}",
                source="nvml",
                version=version,
                cuda_driver_version=cuda_version_from_int(cuda_int) if isinstance(cuda_int, int) else None,
                nvml_version=nvml_version,
                nvml_error=name,
            )
        gpus, hung = _read_gpus(nvml, int(count), deadline, own, host_pids)
        p2p = None
        if not hung:
            p2p, finished = read_p2p(nvml, gpus, deadline)
            if not finished:
                hung = [-1]  # a pair's call is still inside the driver: no shutdown under it
    finally:
        if not hung:  # a thread still inside the driver: leave the library as it is
            try:
                nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001 - nothing to undo: the facts are already read
                pass
    lost = [g.index for g in gpus if g.nvml_error]
    reason = f"NVML: driver {version}, {len(gpus)} GPU(s)"
    if lost:
        reason += "; " + ", ".join(f"GPU {g.index} did not answer ({g.nvml_error})" for g in gpus if g.nvml_error)
    return Driver(
        status=ProbeStatus.OK,
        reason=reason,
        source="nvml",
        version=version,
        cuda_driver_version=cuda_version_from_int(cuda_int) if isinstance(cuda_int, int) else None,
        nvml_version=nvml_version,
        gpus=gpus,
        p2p=p2p,
    )


# nvmlGpuP2PStatus_t (nvml.h): 0 OK, 1 CHIPSET_NOT_SUPPORED (sic), 2 GPU_NOT_SUPPORTED, 3 IOH_TOPOLOGY_NOT_SUPPORTED,
# 4 DISABLED_BY_REGKEY, 5 NOT_SUPPORTED, 6 UNKNOWN
P2P_STATUS = {0: "ok", 1: "chipset_not_supported", 2: "gpu_not_supported", 3: "topology_not_supported",
              4: "disabled_by_regkey", 5: "not_supported", 6: "unknown"}
P2P_CAPS_INDEX_READ = 0  # nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_READ (pynvml spells it as a tuple, (0,))


def read_p2p(nvml: Any, gpus: List[Gpu], deadline: float) -> Tuple[Optional[List[P2pStatus]], bool]:
    """(NVML's P2P read status of every ordered pair of answering GPUs (nvmlDeviceGetP2PStatus), whether the
    reading finished). In a thread of its own so that a hung call costs these facts only: None when the binding
    has no such call or the reading did not finish by ``deadline``."""
    fn = getattr(nvml, "nvmlDeviceGetP2PStatus", None)
    if fn is None:
        return None, True
    live = [g.index for g in gpus if not g.nvml_error]
    out: List[P2pStatus] = []

    def work() -> None:
        handles = {}
        for i in live:
            try:
                handles[i] = nvml.nvmlDeviceGetHandleByIndex(i)
            except Exception:  # noqa: BLE001 - a GPU without a handle has no pairs to read
                continue
        for a in handles:
            for b in handles:
                if a == b:
                    continue
                try:
                    code = fn(handles[a], handles[b], P2P_CAPS_INDEX_READ)
                    word = P2P_STATUS.get(code) if isinstance(code, int) else None
                except Exception:  # noqa: BLE001 - the per-pair guard: an unanswered pair is unknown
                    word = None
                out.append(P2pStatus(a, b, word))

    if len(live) < 2:
        return [], True
    if not run_with_timeout(work, max(0.5, deadline - time.monotonic())):
        return None, False
    # no pair answered (a driver or binding without the call: FUNCTION_NOT_FOUND each time): not read
    return (list(out) if any(p.read is not None for p in out) else None), True


def _import_pynvml() -> Any:
    # lazy: importing envdoctor must not load libnvidia-ml, and pynvml is optional
    import pynvml

    return pynvml


# nvidia-ml-py 12.535.77 declares the _v3 process struct with a field drivers from 535.98 on do not write, so the
# second and later PIDs come back as garbage; 12.535.108 fixed it (gpustat and nvitop exclude 12.535.77 too:
# https://github.com/wookayin/gpustat/issues/161, https://github.com/XuehaiPan/nvitop)
MIN_BINDING = (12, 535, 108)


def binding_problem(module: Any) -> Optional[str]:
    """Why the imported ``pynvml`` must not be trusted, or None when it is NVIDIA's nvidia-ml-py >= 12.535.108.

    The old third-party ``pynvml`` package (a package directory with its own copy of the bindings) and a
    stale nvidia-ml-py can both be the module ``import pynvml`` finds; the file's owner decides.
    """
    import importlib.metadata as md

    path = getattr(module, "__file__", None)
    if not path:
        return "the imported pynvml has no file: not NVIDIA's nvidia-ml-py bindings"
    try:
        dist = md.distribution("nvidia-ml-py")
    except md.PackageNotFoundError:
        return f"the imported pynvml ({path}) does not come from NVIDIA's nvidia-ml-py (not installed)"
    owned = False
    for f in dist.files or []:
        if f.name == "pynvml.py":
            try:
                owned = os.path.samefile(str(dist.locate_file(f)), path)
            except OSError:
                owned = False
            if owned:
                break
    if not owned:
        return (f"the imported pynvml ({path}) is not the one nvidia-ml-py {dist.version} installed: an old "
                "third-party pynvml package shadows NVIDIA's bindings")
    if release(dist.version) < MIN_BINDING:
        return (f"nvidia-ml-py {dist.version} is older than 12.535.108: its process list is wrong on drivers "
                "from 535.98 on")
    return None


def probe_nvml(nvml: Any = None, timeout_s: float = DEFAULT_TIMEOUT_S,
               own: Callable[[Any], bool] = is_own_pid, host_pids: Optional[bool] = None) -> Driver:
    """The driver as NVML sees it. ``nvml`` is the pynvml module or a fake with the same names.

    Runs in a daemon thread so that a hung driver call (a GPU fallen off the bus) costs at most
    ``timeout_s`` and a ``failed`` fact, never a hang. GPUs read before the deadline are kept.
    ``host_pids``: NVML's PIDs are another PID namespace's (None: tell from /proc/self/ns/pid).
    """
    try:
        return _probe_nvml(nvml, timeout_s, own, host_pids)
    finally:
        release_process_lists()


def _pynvml_findable() -> bool:
    """pynvml can be imported (found on sys.path; not executed): its absence keeps its own answer below."""
    import importlib.util

    try:
        return importlib.util.find_spec("pynvml") is not None
    except (ImportError, ValueError):
        return False


def _no_library() -> bool:
    """libnvidia-ml.so.1 cannot be loaded (not Windows): what pynvml's nvmlInit would find, asked without importing
    pynvml (a 5,000-line module: 20-40 ms of every run on a machine without the driver, a CPU box or a
    docker build, where NVML can only answer LIBRARY_NOT_FOUND). pynvml loads the library by the same name."""
    if sys.platform.startswith("win"):
        return False
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return True
    return False


def _probe_nvml(nvml: Any, timeout_s: float, own: Callable[[Any], bool], host_pids: Optional[bool]) -> Driver:
    if nvml is None and _pynvml_findable() and _no_library():
        status, reason = _INIT_ERRORS["LIBRARY_NOT_FOUND"]
        return Driver(status=status, reason=reason, source="nvml", nvml_error="LIBRARY_NOT_FOUND")
    if nvml is None:
        try:
            nvml = _import_pynvml()
        except ImportError:
            return Driver(
                status=ProbeStatus.UNSUPPORTED,
                reason="pynvml (nvidia-ml-py) is not installed: NVML cannot be asked",
                source="nvml",
            )
        problem = binding_problem(nvml)
        if problem:
            return Driver(status=ProbeStatus.UNSUPPORTED, reason=f"NVML not asked: {problem}", source="nvml",
                          nvml_error="BINDING")
    result: List[Driver] = []
    # the GPUs' own deadline comes a little before the outer one, so that the partial result is returned
    deadline = time.monotonic() + max(timeout_s - min(1.0, timeout_s / 10), 0.0)

    def target() -> None:
        # in its own thread, so under the probe guard here: an exception would not cross back to the caller
        result.append(guard("nvml", functools.partial(_probe_and_release, nvml, deadline, own, host_pids),
                            lambda reason: Driver(status=ProbeStatus.FAILED, reason=f"NVML {reason}",
                                                  source="nvml"))[0])

    run_with_timeout(target, timeout_s)
    if result:
        return result[0]
    return Driver(
        status=ProbeStatus.FAILED,
        reason=f"NVML did not answer within {timeout_s:g} s (a GPU or the driver is hung)",
        source="nvml",
        nvml_error="TIMEOUT",
    )


def run_with_timeout(target: Callable[[], None], timeout_s: float) -> bool:
    """Run ``target`` in a daemon thread; True if it finished within ``timeout_s``."""
    t = threading.Thread(target=target, name="envdoctor-nvml", daemon=True)
    t.start()
    t.join(timeout_s)
    return not t.is_alive()


def sample_pcie_links(nvml: Any, keep_going: Callable[[], bool], interval_s: float = 0.05,
                      max_s: float = 600.0) -> Tuple[Dict[str, Tuple[int, int]], int, Optional[str]]:
    """Best (generation, width) per GPU bus id seen while ``keep_going()`` is true, the sample count, error.

    Links train up to their top speed within milliseconds of traffic and drop back at idle, so the
    maximum over the load window is the reading that tells a degraded link (NVIDIA nvidia-smi docs:
    "pcie.link.gen.current ... may be reduced when the GPU is not in use"). Never raises.
    """
    import time

    best: Dict[str, Tuple[int, int]] = {}
    samples = 0
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        return best, 0, f"NVML init failed: {error_name(nvml, e)}"
    try:
        handles = []
        skipped: List[str] = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            try:
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                bus = _s(getattr(nvml.nvmlDeviceGetPciInfo(h), "busId", None)) or f"index:{i}"
            except nvml.NVMLError as e:
                # a GPU this process may not open (cgroup device limits, NO_PERMISSION) or one off the bus:
                # the others are still sampled
                skipped.append(f"GPU {i}: {error_name(nvml, e)}")
                continue
            handles.append((bus, h))
        deadline = time.monotonic() + max_s
        while True:
            for bus, h in handles:
                try:
                    gen = nvml.nvmlDeviceGetCurrPcieLinkGeneration(h)
                    width = nvml.nvmlDeviceGetCurrPcieLinkWidth(h)
                except nvml.NVMLError:
                    continue  # one GPU not answering must not stop the others' samples
                old = best.get(bus, (0, 0))
                best[bus] = (max(old[0], int(gen)), max(old[1], int(width)))
            samples += 1
            if not keep_going() or time.monotonic() > deadline:
                break
            time.sleep(interval_s)
    except nvml.NVMLError as e:
        return best, samples, f"NVML: {error_name(nvml, e)}"
    except Exception as e:  # the probe guard: a binding that differs must not crash collect
        return best, samples, f"{type(e).__name__}: {e}"
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass
    return best, samples, ("not sampled: " + "; ".join(skipped)) if skipped else None


def import_pynvml() -> Any:
    """pynvml for callers outside this module (which must not import it themselves); ImportError if absent."""
    return _import_pynvml()


# --------------------------------------------------------------------------- sampling under load
# bench/sampler.py and watch read the GPUs through these (this module stays the one that calls NVML).


def _quiet(nvml: Any, fn: str, *args: Any) -> Any:
    """One NVML call whose failure (NotSupported and friends) is an unknown field of one sample: None (the
    probe's per-field guard, _Reader.call)."""
    return _Reader(nvml).call(fn, fn, *args)


def nvml_init(nvml: Any) -> Optional[str]:
    """nvmlInit (counted: each call wants its nvml_shutdown); None when it worked, else NVML's name for why not.
    A binding that is not pynvml raises (the caller's guard reports it)."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        return error_name(nvml, e)
    return None


def nvml_shutdown(nvml: Any) -> None:
    _quiet(nvml, "nvmlShutdown")


def gpu_handles(nvml: Any) -> List[Tuple[str, Any]]:
    """(PCI bus id as NVML gives it, or "index:N", handle) of every GPU; NVML must be initialised. Raises the
    binding's error when the count or a handle cannot be read (the caller's guard reports it)."""
    out = []
    for i in range(int(nvml.nvmlDeviceGetCount())):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        out.append((_s(getattr(nvml.nvmlDeviceGetPciInfo(h), "busId", None)) or f"index:{i}", h))
    return out


def read_sample(nvml: Any, h: Any) -> Dict[str, Any]:
    """One sample of one GPU under load (clocks, power, temperature, utilisation, clock-event reasons through
    decode_reasons: every bit the probe keeps); fields NVML does not answer are None."""
    reasons = _quiet(nvml, "nvmlDeviceGetCurrentClocksEventReasons", h)
    if reasons is None:
        reasons = _quiet(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", h)
    util = _quiet(nvml, "nvmlDeviceGetUtilizationRates", h)
    power = _quiet(nvml, "nvmlDeviceGetPowerUsage", h)
    # nvml.h API 13 deprecates nvmlDeviceGetTemperature for nvmlDeviceGetTemperatureV: the successor first
    sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
    temperature = _quiet(nvml, "nvmlDeviceGetTemperatureV", h, sensor)
    if not isinstance(temperature, (int, float)):
        temperature = _quiet(nvml, "nvmlDeviceGetTemperature", h, sensor)
    return {
        "t": round(time.monotonic(), 4),
        "sm_clock_mhz": _quiet(nvml, "nvmlDeviceGetClockInfo", h, getattr(nvml, "NVML_CLOCK_SM", 1)),
        "mem_clock_mhz": _quiet(nvml, "nvmlDeviceGetClockInfo", h, getattr(nvml, "NVML_CLOCK_MEM", 2)),
        "power_w": round(power / 1000.0, 1) if isinstance(power, (int, float)) else None,
        "temperature_c": temperature,
        "utilization_pct": getattr(util, "gpu", None),
        "throttle_reasons": decode_reasons(reasons),
    }


def read_watch_fields(nvml: Any, h: Any, pcie: bool = True) -> Dict[str, Any]:
    """What `envdoctor watch` samples besides read_sample(): memory, memory-controller utilisation, PCIe
    throughput (each NVML PCIe read blocks ~20 ms, so the caller asks for it only every few ticks) and the pids
    of the compute processes; fields NVML does not answer are None."""
    mem = _quiet(nvml, "nvmlDeviceGetMemoryInfo", h)
    util = _quiet(nvml, "nvmlDeviceGetUtilizationRates", h)
    out: Dict[str, Any] = {
        "mem_used_mib": round(mem.used / 2**20) if isinstance(getattr(mem, "used", None), int) else None,
        "mem_total_mib": round(mem.total / 2**20) if isinstance(getattr(mem, "total", None), int) else None,
        "mem_util_pct": getattr(util, "memory", None),
    }
    if pcie:
        for key, counter in (("pcie_rx_mbps", "NVML_PCIE_UTIL_RX_BYTES"), ("pcie_tx_mbps", "NVML_PCIE_UTIL_TX_BYTES")):
            kbps = _quiet(nvml, "nvmlDeviceGetPcieThroughput", h, getattr(nvml, counter, 1 if "RX" in counter else 0))
            out[key] = round(kbps / 1000.0, 1) if isinstance(kbps, (int, float)) else None
    procs = _quiet(nvml, "nvmlDeviceGetComputeRunningProcesses", h)
    out["pids"] = sorted({int(p.pid) for p in procs if isinstance(getattr(p, "pid", None), int)}) \
        if isinstance(procs, list) else None
    return out


# The counters DCGM diag watches while its load runs (targeted_stress "reports memory, thermal, PCIe, and other
# GPU errors observed under that load", docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/plugins/
# targeted-stress.html): volatile ECC counts (nvml.h NVML_MEMORY_ERROR_TYPE_CORRECTED 0 / UNCORRECTED 1,
# NVML_VOLATILE_ECC 0), PCIe replays, and the clock-event violation times per policy (nvmlDeviceGetViolationStatus:
# violationTime in ns; NVML_PERF_POLICY_POWER 0, THERMAL 1, SYNC_BOOST 2, BOARD_LIMIT 3, LOW_UTILIZATION 4,
# RELIABILITY 5). Xid events come through an NVML event set (nvmlEventTypeXidCriticalError 0x8).
_VIOLATION_POLICIES = (("violation_power_ns", 0), ("violation_thermal_ns", 1), ("violation_sync_boost_ns", 2),
                       ("violation_board_limit_ns", 3), ("violation_low_utilization_ns", 4),
                       ("violation_reliability_ns", 5))
# the same times as NVML 13 field values, read first where the driver answers them, in the order of nvml.h API 13:
# nvmlDeviceGetViolationStatus is DEPRECATED(13.0) ("Use nvmlDeviceGetFieldValues ... removed in CUDA 14.0") with
# the translations NVML_PERF_POLICY_POWER -> NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP (= 74),
# NVML_PERF_POLICY_THERMAL -> NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN (269), SYNC_BOOST -> 76,
# BOARD_LIMIT -> NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT (77), LOW_UTILIZATION 78, RELIABILITY 79; the thermal time
# falls back to NVML_FI_DEV_PERF_POLICY_THERMAL (75) on a driver without 269. Two counters have no policy of their
# own: NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN (270) and _HW_POWER_BRAKE_SLOWDOWN (271), "reducing core
# clocks by a factor of 2 or more", in ns (nvidia-smi -q "Clocks Event Reasons Counters": HW Thermal Slowdown,
# HW Power Braking). The deprecated call stays the last fallback of the six policies.
_VIOLATION_FIELDS: Dict[str, Tuple[int, ...]] = {
    "violation_power_ns": (74,), "violation_thermal_ns": (269, 75), "violation_sync_boost_ns": (76,),
    "violation_board_limit_ns": (77,), "violation_low_utilization_ns": (78,), "violation_reliability_ns": (79,),
    "violation_hw_thermal_ns": (270,), "violation_hw_power_brake_ns": (271,)}
_VALUE_TYPES = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
_XID_EVENT = 0x8
_MAX_EVENTS = 1000  # drained per stop(): a GPU that floods Xids still ends the watch


def read_health_counters(nvml: Any, h: Any) -> Dict[str, int]:
    """The error and violation counters of one GPU that NVML answers (ECC off, a GeForce card or an old driver
    leave some out): ``ecc_sbe_volatile``, ``ecc_dbe_volatile``, ``pcie_replays``, ``violation_*_ns``."""
    out: Dict[str, int] = {}
    for key, err_type in (("ecc_sbe_volatile", 0), ("ecc_dbe_volatile", 1)):
        v = _quiet(nvml, "nvmlDeviceGetTotalEccErrors", h, err_type, 0)
        if isinstance(v, int):
            out[key] = v
    v = _quiet(nvml, "nvmlDeviceGetPcieReplayCounter", h)
    if isinstance(v, int):
        out["pcie_replays"] = v
    out.update(_violation_fields(nvml, h))
    for key, policy in _VIOLATION_POLICIES:
        if key in out:
            continue
        v = getattr(_quiet(nvml, "nvmlDeviceGetViolationStatus", h, policy), "violationTime", None)
        if isinstance(v, int):
            out[key] = v
    return out


def read_fields(nvml: Any, h: Any, ids: Sequence[int]) -> Dict[int, int]:
    """The integer field values NVML answers (nvmlDeviceGetFieldValues), by field id; a field the driver does not
    answer (its own nvmlReturn not SUCCESS) is left out, and so is every field where the call fails."""
    values = _quiet(nvml, "nvmlDeviceGetFieldValues", h, list(ids))
    out: Dict[int, int] = {}
    if values is None:
        return out
    try:
        for fv in values:
            fid = getattr(fv, "fieldId", None)
            if fid not in ids or getattr(fv, "nvmlReturn", 1) != 0:
                continue
            raw = getattr(getattr(fv, "value", None), _VALUE_TYPES.get(getattr(fv, "valueType", 3), "ullVal"), None)
            if isinstance(raw, int):
                out[fid] = raw
    except TypeError:  # a binding whose answer is not the array of nvmlFieldValue_t
        return {}
    return out


def _violation_fields(nvml: Any, h: Any) -> Dict[str, int]:
    """The violation times NVML answers as field values, each from the first of its fields that answers."""
    ids = sorted({i for group in _VIOLATION_FIELDS.values() for i in group})
    got = read_fields(nvml, h, ids)
    out: Dict[str, int] = {}
    for key, group in _VIOLATION_FIELDS.items():
        value = next((got[i] for i in group if i in got), None)
        if value is not None:
            out[key] = value
    return out


class HealthWatch:
    """The counters of read_health_counters() and Xid events of every GPU over a load, as DCGM diag watches
    them: start() before the load, stop() after it. Holds its own NVML reference (nvmlInit is counted) so that
    the event set lives through the load. NVML errors never raise (a counter or a GPU's Xid watch is lost); a
    binding that is not pynvml is the caller's guard's to report."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.error: Optional[str] = None
        self._handles: List[Tuple[str, Any]] = []
        self._before: Dict[str, Dict[str, int]] = {}
        self._events: Any = None
        self._xid_watched: Dict[str, bool] = {}
        self._inited = False

    def start(self) -> None:
        nvml = self.nvml
        why = nvml_init(nvml)
        if why is not None:
            self.error = f"NVML: {why}"
            return
        self._inited = True
        try:
            self._handles = gpu_handles(nvml)
        except nvml.NVMLError as e:
            self.error = f"NVML: {error_name(nvml, e)}"
            return
        for bus, h in self._handles:
            self._before[bus] = read_health_counters(nvml, h)
        self._events = _quiet(nvml, "nvmlEventSetCreate")  # None: no event sets here, Xids go unwatched
        for bus, h in self._handles:
            watched = False
            if self._events is not None:
                try:
                    nvml.nvmlDeviceRegisterEvents(h, getattr(nvml, "nvmlEventTypeXidCriticalError", _XID_EVENT),
                                                  self._events)
                    watched = True
                except nvml.NVMLError:  # NOT_SUPPORTED on this GPU: its Xids go unwatched
                    pass
            self._xid_watched[bus] = watched

    def _drain(self) -> Dict[str, List[int]]:
        nvml = self.nvml
        xids: Dict[str, List[int]] = {}
        if self._events is None:
            return xids
        by_address = {a: bus for bus, h in self._handles for a in [_address(h)] if a is not None}
        for _ in range(_MAX_EVENTS):
            try:
                data = nvml.nvmlEventSetWait_v2(self._events, 0)
            except nvml.NVMLError:  # TIMEOUT: nothing queued
                break
            address = _address(getattr(data, "device", None))
            bus = by_address.get(address) if address is not None else None
            if bus is None:
                bus = _s(getattr(_quiet(nvml, "nvmlDeviceGetPciInfo", data.device), "busId", None)) or "unknown"
            xids.setdefault(bus, []).append(int(getattr(data, "eventData", 0)))
        return xids

    def stop(self) -> Dict[str, Dict[str, Any]]:
        """Per GPU bus id: ``deltas`` (counter -> growth over the load, for the counters read at both ends),
        ``xids`` (the Xid numbers seen) and ``xid_watched``."""
        nvml = self.nvml
        out: Dict[str, Dict[str, Any]] = {}
        if not self._inited:
            return out
        try:
            xids = self._drain()
            for bus, h in self._handles:
                before, after = self._before.get(bus, {}), read_health_counters(nvml, h)
                out[bus] = {"deltas": {k: after[k] - before[k] for k in sorted(before) if k in after},
                            "xids": xids.get(bus, []), "xid_watched": self._xid_watched.get(bus, False)}
        finally:
            if self._events is not None:
                _quiet(nvml, "nvmlEventSetFree", self._events)
                self._events = None
            nvml_shutdown(nvml)
            self._inited = False
        return out


def _address(handle: Any) -> Optional[int]:
    try:
        return ctypes.addressof(handle.contents)
    except (AttributeError, TypeError, ValueError):  # not a ctypes pointer, or NULL: matched by PCI info
        return None


def error_text(nvml: Any, e: BaseException) -> str:
    """An NVMLError by NVML's name, anything else as "Type: message"."""
    nvml_error = getattr(nvml, "NVMLError", None)
    if isinstance(nvml_error, type) and isinstance(e, nvml_error):
        return error_name(nvml, e)
    return f"{type(e).__name__}: {e}"
