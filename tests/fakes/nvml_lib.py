"""A stand-in for libnvidia-ml.so that the REAL pynvml wrappers (nvidia-ml-py) call through ctypes-like arguments.

pynvml resolves every C function with ``_nvmlGetFunctionPointer(name)``: ``getattr(pynvml.nvmlLib, name)``,
cached in ``_nvmlGetFunctionPointer_cache``, an AttributeError becoming NVML_ERROR_FUNCTION_NOT_FOUND. So an
object put in ``pynvml.nvmlLib`` whose attributes behave like the C functions (return an ``nvmlReturn_t`` and
write results through the ``byref()`` pointers and string buffers they are given) lets the bindings' own struct
layouts, ``_v2``/``_v3`` fallbacks, ``throwOnVersionMismatch`` and error classes run, as on a machine with a
driver. A function left out of a driver generation's symbol table is simply absent, as in the older library.

Data per GPU is keyed by the C symbol name: a value, a tuple (one per output), a dict keyed by the input
arguments, ``ERR("NOT_SUPPORTED")``, or a callable ``f(gpu, args) -> return code``.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

# NVML return codes (nvml.h); the same numbers pynvml exposes as NVML_ERROR_*
ERROR_CODES = {
    "UNINITIALIZED": 1,
    "INVALID_ARGUMENT": 2,
    "NOT_SUPPORTED": 3,
    "NO_PERMISSION": 4,
    "ALREADY_INITIALIZED": 5,
    "NOT_FOUND": 6,
    "INSUFFICIENT_SIZE": 7,
    "DRIVER_NOT_LOADED": 9,
    "TIMEOUT": 10,
    "LIBRARY_NOT_FOUND": 12,
    "FUNCTION_NOT_FOUND": 13,
    "CORRUPTED_INFOROM": 14,
    "GPU_IS_LOST": 15,
    "RESET_REQUIRED": 16,
    "LIB_RM_VERSION_MISMATCH": 18,
    "ARGUMENT_VERSION_MISMATCH": 25,
    "DEPRECATED": 26,
    "GPU_NOT_FOUND": 28,
    "UNKNOWN": 999,
}

SUCCESS = 0


@dataclass(frozen=True)
class ERR:
    """An NVML return code by name, in the data in place of a value."""

    name: str

    @property
    def code(self) -> int:
        return ERROR_CODES[self.name]


# Symbols each driver generation lacks, from the NVML API reference's "Added in" notes and the nvidia-ml-py
# changelog: the *_v3 process queries arrived with R510 (510.39.01), nvmlDeviceGetCurrentClocksEventReasons
# (the "event" renaming) with R535's NVML 12, GPU fabric info with R525/R535 (nvmlDeviceGetGpuFabricInfo) and
# its versioned form nvmlDeviceGetGpuFabricInfoV with R550; nvmlSystemGetCudaDriverVersion_v2 with R440.
_R550_ONLY = {"nvmlDeviceGetGpuFabricInfoV"}
_R535_ONLY = {"nvmlDeviceGetGpuFabricInfo", "nvmlDeviceGetCurrentClocksEventReasons",
              "nvmlDeviceGetSupportedClocksEventReasons"}
_R510_ONLY = {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3",
              "nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetGpuMaxPcieLinkGeneration"}
MISSING_BY_DRIVER: Dict[str, Set[str]] = {
    "550": set(),
    "535": set(_R550_ONLY),
    "470": _R550_ONLY | _R535_ONLY | _R510_ONLY,
    "450": _R550_ONLY | _R535_ONLY | _R510_ONLY,
}


@dataclass
class FakeGpu:
    """One GPU as the stand-in library reports it."""

    data: Dict[str, Any]
    handle_error: Optional[str] = None  # nvmlDeviceGetHandleByIndex_v2 fails (NO_PERMISSION: cgroup device limits)
    lost_after: Optional[int] = None  # calls answered before every call returns GPU_IS_LOST
    delay_s: float = 0.0  # each call sleeps this long (a slow GPU)
    hang: Optional[threading.Event] = None  # each call waits until this is set (a hung GPU)
    calls: int = 0
    mig: List[FakeGpu] = field(default_factory=list)  # MIG device handles (nvmlDeviceGetMigDeviceHandleByIndex)


# nvml.h layouts (NVIDIA/go-nvml gen/nvml/nvml.h), built with struct, not ctypes, so that they are an
# independent statement of the header: what a driver writes, byte for byte, whatever the binding declared
_FABRIC_IMAGES = {  # version -> (struct format, size); None: nvmlGpuFabricInfo_t of the unversioned call
    None: ("<16sIIB3x", 28),  # clusterUuid[16], status, cliqueId, state (unsigned char) + padding
    2: ("<I16sIIB3xI", 36),  # version, ..., state, healthMask
    3: ("<I16sIIB3xIB3x", 40),  # version, ..., healthMask, healthSummary + padding
}
_PROCESS_INFO = ("<I4xQII", 24)  # nvmlProcessInfo_t: pid, (padding), usedGpuMemory, gpuInstanceId, computeInstanceId
NO_MIG_ID = 0xFFFFFFFF


@dataclass(frozen=True)
class FABRIC:
    """What nvmlDeviceGetGpuFabricInfo(V) writes: NVML_GPU_FABRIC_STATE_* and an nvmlReturn_t."""

    state: int
    status: int = 0
    clique: int = 0
    health_mask: int = 0
    cluster_uuid: bytes = bytes(range(1, 17))
    health_summary: int = 0  # NVML_GPU_FABRIC_HEALTH_SUMMARY_* (v3 only)


def _memmove_into(out: Any, data: bytes, offset: int = 0) -> int:
    """Write ``data`` at byte ``offset`` of the object the binding passed (byref() or an array), as a C
    library writes through the pointer; never past the object's end (a real driver would). Bytes written."""
    target = getattr(out, "_obj", out)
    room = max(0, ctypes.sizeof(target) - offset)
    n = min(len(data), room)
    ctypes.memmove(ctypes.addressof(target) + offset, data, n)
    return n


def _value_of(arg: Any) -> Any:
    return getattr(arg, "value", arg)


def _write(out: Any, value: Any) -> None:
    """Store ``value`` through what the binding passed: a byref() pointer or a string buffer."""
    target = getattr(out, "_obj", out)  # ctypes.byref(x) -> CArgObject whose _obj is x
    if isinstance(target, ctypes.Array) and issubclass(target._type_, ctypes.c_char):
        target.value = value.encode() if isinstance(value, str) else value
    elif isinstance(target, ctypes.Structure):
        for k, v in (value or {}).items():
            setattr(target, k, v.encode() if isinstance(v, str) else v)
    else:
        target.value = value


class FakeNvmlLib:
    """The object to put in ``pynvml.nvmlLib`` (see :func:`installed`)."""

    def __init__(self, gpus: List[FakeGpu], driver: str = "550.54.15", cuda: int = 12040,
                 missing: Optional[Set[str]] = None, init_error: Optional[str] = None,
                 processes: Optional[Dict[int, str]] = None, fabric_versions: Optional[Set[int]] = None):
        import pynvml

        self._pynvml = pynvml
        self.gpus = gpus
        self.driver = driver
        self.cuda = cuda
        self.missing = set(missing or ())
        self.init_error = init_error
        self.process_names = processes or {}
        # nvmlGpuFabricInfo versions the V call accepts: R550 knows v2, later drivers v2 and v3
        if fabric_versions is None:
            fabric_versions = {2} if driver.startswith(("550.", "555.", "560.")) else {2, 3}
        self.fabric_versions = set(fabric_versions)
        self.fabric_writes: List[Any] = []  # (symbol, version, sizeof the caller's struct, bytes nvml.h has)
        self.called: List[str] = []
        self._structs: Dict[int, FakeGpu] = {}
        self._keep: List[Any] = []
        self._lock = threading.Lock()
        self.event_sets = 0  # event sets created and not yet freed
        self._registered: Dict[int, Any] = {}  # id(gpu) -> (its handle struct, event types)
        self._queued: List[Any] = []  # (gpu, xid) waiting for nvmlEventSetWait

    # ------------------------------------------------------------------ symbol lookup, like dlsym
    def __getattr__(self, name: str) -> Callable[..., int]:
        if name.startswith("_") or name in self.missing:
            raise AttributeError(name)
        special = getattr(type(self), "_c_" + name, None)
        if special is not None:
            def call_special(*args: Any) -> int:
                self.called.append(name)
                return special(self, *args)
            return call_special

        def call(*args: Any) -> int:
            self.called.append(name)
            return self._device_call(name, args)
        return call

    # ------------------------------------------------------------------ handles
    def _handle_for(self, gpu: FakeGpu) -> Any:
        s = self._pynvml.struct_c_nvmlDevice_t()
        self._keep.append(s)
        with self._lock:
            self._structs[ctypes.addressof(s)] = gpu
        return s

    def _gpu(self, handle: Any) -> FakeGpu:
        return self._structs[ctypes.addressof(handle.contents)]

    def _enter(self, gpu: FakeGpu) -> Optional[int]:
        """Per-call behaviour of a GPU: slow, hung, or lost after some calls."""
        if gpu.hang is not None:
            gpu.hang.wait()
        if gpu.delay_s:
            time.sleep(gpu.delay_s)
        gpu.calls += 1
        if gpu.lost_after is not None and gpu.calls > gpu.lost_after:
            return ERROR_CODES["GPU_IS_LOST"]
        return None

    # ------------------------------------------------------------------ system functions
    def _c_nvmlInitWithFlags(self, flags: Any) -> int:
        return ERROR_CODES[self.init_error] if self.init_error else SUCCESS

    def _c_nvmlInit_v2(self) -> int:
        return self._c_nvmlInitWithFlags(0)

    def _c_nvmlShutdown(self) -> int:
        return SUCCESS

    def _c_nvmlErrorString(self, result: Any) -> bytes:
        names = {v: k for k, v in ERROR_CODES.items()}
        return names.get(_value_of(result), "Unknown Error").encode()

    def _c_nvmlSystemGetDriverVersion(self, buf: Any, size: Any) -> int:
        _write(buf, self.driver)
        return SUCCESS

    def _c_nvmlSystemGetNVMLVersion(self, buf: Any, size: Any) -> int:
        _write(buf, "12." + self.driver)
        return SUCCESS

    def _c_nvmlSystemGetCudaDriverVersion(self, out: Any) -> int:
        _write(out, self.cuda)
        return SUCCESS

    _c_nvmlSystemGetCudaDriverVersion_v2 = _c_nvmlSystemGetCudaDriverVersion

    def _c_nvmlDeviceGetCount_v2(self, out: Any) -> int:
        _write(out, len(self.gpus))
        return SUCCESS

    def _c_nvmlDeviceGetHandleByIndex_v2(self, index: Any, out: Any) -> int:
        i = _value_of(index)
        if i >= len(self.gpus):
            return ERROR_CODES["INVALID_ARGUMENT"]
        gpu = self.gpus[i]
        if gpu.handle_error:
            return ERROR_CODES[gpu.handle_error]
        out._obj.contents = self._handle_for(gpu)
        return SUCCESS

    def _c_nvmlSystemGetProcessName(self, pid: Any, buf: Any, size: Any) -> int:
        name = self.process_names.get(_value_of(pid))
        if name is None:
            return ERROR_CODES["NOT_FOUND"]
        _write(buf, name)
        return SUCCESS

    # ------------------------------------------------------------------ device functions with array protocols
    def _processes(self, handle: Any, count: Any, array: Any, name: str) -> int:
        """The nvml.h protocol: a size query (array NULL), then nvmlProcessInfo_t entries of 24 bytes each,
        written at their header offsets into whatever array the caller passed.

        A process is ``(pid, bytes)`` or ``(pid, bytes, gpu_instance_id, compute_instance_id)``.
        """
        gpu = self._gpu(handle)
        code = self._enter(gpu)
        if code is not None:
            return code
        procs = gpu.data.get(name, gpu.data.get("processes", []) if "Compute" in name else [])
        if isinstance(procs, ERR):
            return procs.code
        if not procs:
            _write(count, 0)
            return SUCCESS
        if array is None or _value_of(count._obj) < len(procs):
            _write(count, len(procs))
            return ERROR_CODES["INSUFFICIENT_SIZE"]
        fmt, size = _PROCESS_INFO
        for i, proc in enumerate(procs):
            pid, mem, gi, ci = (tuple(proc) + (NO_MIG_ID, NO_MIG_ID))[:4]
            _memmove_into(array, struct.pack(fmt, pid, mem, gi, ci), i * size)
        _write(count, len(procs))
        return SUCCESS

    def _c_nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._processes(handle, count, array, "nvmlDeviceGetComputeRunningProcesses")

    _c_nvmlDeviceGetComputeRunningProcesses_v2 = _c_nvmlDeviceGetComputeRunningProcesses_v3

    def _c_nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._processes(handle, count, array, "nvmlDeviceGetGraphicsRunningProcesses")

    _c_nvmlDeviceGetGraphicsRunningProcesses_v2 = _c_nvmlDeviceGetGraphicsRunningProcesses_v3

    # ------------------------------------------------------------------ GPU fabric info, as nvml.h lays it out
    def _fabric(self, handle: Any, out: Any, symbol: str, versioned: bool) -> int:
        gpu = self._gpu(handle)
        code = self._enter(gpu)
        if code is not None:
            return code
        value = gpu.data.get(symbol, ERR("NOT_SUPPORTED"))
        if isinstance(value, ERR):
            return value.code
        version = None
        if versioned:
            # the caller sets .version = NVML_STRUCT_VERSION(GpuFabricInfo, v) = sizeof | v << 24; a
            # version (or size) this driver does not know is ARGUMENT_VERSION_MISMATCH
            raw = struct.unpack("<I", ctypes.string_at(ctypes.addressof(out._obj), 4))[0]
            version = raw >> 24
            if version not in self.fabric_versions or (raw & 0xFFFFFF) != _FABRIC_IMAGES[version][1]:
                return ERROR_CODES["ARGUMENT_VERSION_MISMATCH"]
        fmt, size = _FABRIC_IMAGES[version]
        fields = (value.cluster_uuid, value.status, value.clique, value.state)
        if version is not None:
            fields = (_FABRIC_IMAGES[version][1] | version << 24,) + fields + (value.health_mask,)
            if version == 3:
                fields += (value.health_summary,)
        image = struct.pack(fmt, *fields)
        assert len(image) == size
        self.fabric_writes.append((symbol, version, ctypes.sizeof(getattr(out, "_obj", out)), size))
        _memmove_into(out, image)
        return SUCCESS

    def _c_nvmlDeviceGetGpuFabricInfo(self, handle: Any, out: Any) -> int:
        return self._fabric(handle, out, "nvmlDeviceGetGpuFabricInfo", versioned=False)

    def _c_nvmlDeviceGetGpuFabricInfoV(self, handle: Any, out: Any) -> int:
        return self._fabric(handle, out, "nvmlDeviceGetGpuFabricInfoV", versioned=True)

    def _c_nvmlDeviceGetRetiredPages(self, handle: Any, cause: Any, count: Any, array: Any) -> int:
        gpu = self._gpu(handle)
        code = self._enter(gpu)
        if code is not None:
            return code
        pages = (gpu.data.get("nvmlDeviceGetRetiredPages") or {}).get(_value_of(cause), [])
        if isinstance(pages, ERR):
            return pages.code
        if array is None:
            _write(count, len(pages))
            return ERROR_CODES["INSUFFICIENT_SIZE"] if pages else SUCCESS
        for i, p in enumerate(pages):
            array[i] = p
        _write(count, len(pages))
        return SUCCESS

    def _c_nvmlDeviceGetP2PStatus(self, handle: Any, peer: Any, caps_index: Any, out: Any) -> int:
        """nvmlGpuP2PStatus_t of the pair: the first GPU's ``nvmlDeviceGetP2PStatus`` data, keyed by the peer's
        position in the GPU list (an int status or an ERR); a peer not listed answers NOT_SUPPORTED."""
        gpu = self._gpu(handle)
        code = self._enter(gpu)
        if code is not None:
            return code
        other = self._gpu(peer)
        table = gpu.data.get("nvmlDeviceGetP2PStatus", {})
        value = table.get(self.gpus.index(other)) if isinstance(table, dict) else table
        if value is None:
            return ERROR_CODES["NOT_SUPPORTED"]
        if isinstance(value, ERR):
            return value.code
        _write(out, value)
        return SUCCESS

    def _c_nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: Any, out: Any) -> int:
        gpu = self._gpu(handle)
        code = self._enter(gpu)
        if code is not None:
            return code
        i = _value_of(index)
        if i >= len(gpu.mig):
            return ERROR_CODES["NOT_FOUND"]
        out._obj.contents = self._handle_for(gpu.mig[i])
        return SUCCESS

    # ------------------------------------------------------------------ event sets (Xid events)
    # nvml.h: nvmlEventSetCreate(nvmlEventSet_t*), nvmlDeviceRegisterEvents(device, unsigned long long types,
    # set), nvmlEventSetWait_v2(set, nvmlEventData_t*, unsigned int timeoutms) -> NVML_ERROR_TIMEOUT when
    # nothing is queued. A test queues an event with xid_event(gpu_index, xid) while the set exists.
    def _c_nvmlEventSetCreate(self, out: Any) -> int:
        s = self._pynvml.struct_c_nvmlEventSet_t()
        self._keep.append(s)
        out._obj.contents = s
        self.event_sets += 1
        return SUCCESS

    def _c_nvmlDeviceRegisterEvents(self, handle: Any, types: Any, event_set: Any) -> int:
        gpu = self._gpu(handle)
        code = self._enter(gpu)
        if code is not None:
            return code
        answer = gpu.data.get("nvmlDeviceRegisterEvents")
        if isinstance(answer, ERR):
            return answer.code
        self._registered[id(gpu)] = (handle.contents, _value_of(types))
        return SUCCESS

    def xid_event(self, index: int, xid: int) -> None:
        self._queued.append((self.gpus[index], xid))

    def _c_nvmlEventSetWait_v2(self, event_set: Any, data: Any, timeout_ms: Any) -> int:
        queued = [(g, x) for g, x in self._queued if id(g) in self._registered]
        if not queued:
            return ERROR_CODES["TIMEOUT"]
        gpu, xid = queued[0]
        self._queued.remove((gpu, xid))
        struct_, _types = self._registered[id(gpu)]
        target = data._obj
        target.device = ctypes.pointer(struct_)
        target.eventType = 0x8  # nvmlEventTypeXidCriticalError
        target.eventData = xid
        return SUCCESS

    def _c_nvmlEventSetFree(self, event_set: Any) -> int:
        self.event_sets -= 1
        return SUCCESS

    # ------------------------------------------------------------------ every other device function
    def _device_call(self, name: str, args: Any) -> int:
        gpu = self._gpu(args[0])
        code = self._enter(gpu)
        if code is not None:
            return code
        if name not in gpu.data:
            return ERROR_CODES["NOT_SUPPORTED"]
        value = gpu.data[name]
        if callable(value) and not isinstance(value, ERR):
            return value(gpu, args)
        inputs: List[Any] = []
        outs: List[Any] = []
        rest = list(args[1:])
        i = 0
        while i < len(rest):
            a = rest[i]
            target = getattr(a, "_obj", None)
            if target is not None:  # byref(): an output
                outs.append(a)
            elif isinstance(a, ctypes.Array):  # a string buffer, then its size
                outs.append(a)
                i += 1
            else:
                inputs.append(_value_of(a))
            i += 1
        if isinstance(value, dict) and not (outs and isinstance(getattr(outs[0], "_obj", None), ctypes.Structure)
                                            and not inputs):
            key = inputs[0] if len(inputs) == 1 else tuple(inputs)
            if key not in value:
                return ERROR_CODES["NOT_SUPPORTED"]
            value = value[key]
        if isinstance(value, ERR):
            return value.code
        if not outs:
            return SUCCESS
        if len(outs) == 1:
            _write(outs[0], value)
        else:
            for out, v in zip(outs, value):
                _write(out, v)
        return SUCCESS


@contextmanager
def installed(lib: FakeNvmlLib) -> Iterator[Any]:
    """Put ``lib`` where pynvml looks for libnvidia-ml; yields the real pynvml module, restored afterwards."""
    import pynvml

    saved = pynvml.nvmlLib
    pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml.nvmlLib = lib  # _LoadNvmlLibrary loads the .so only while nvmlLib is None
    try:
        yield pynvml
    finally:
        pynvml.nvmlLib = saved
        pynvml._nvmlGetFunctionPointer_cache.clear()


# --------------------------------------------------------------------------- GPUs, by the data NVML gives

NVML_FEATURE_ENABLED = 1


def _pci(bus: str, device_id: int) -> Dict[str, Any]:
    return {"busId": bus, "busIdLegacy": bus[4:], "pciDeviceId": device_id, "domain": 0,
            "bus": int(bus.split(":")[1], 16), "device": 0}


def pci_info(bus: str, device_id: int) -> Dict[str, Any]:
    """nvmlDeviceGetPciInfo_v3's answer for a GPU at ``bus`` ("00000000:19:00.0")."""
    return _pci(bus, device_id)


def base_gpu(name: str, bus: str, device_id: int, arch: int, cc: tuple, **extra: Any) -> Dict[str, Any]:
    """A healthy data-center GPU; ``extra`` adds or replaces C functions' answers."""
    data: Dict[str, Any] = {
        "nvmlDeviceGetName": name,
        "nvmlDeviceGetUUID": "GPU-" + bus.replace(":", "").replace(".", "") + "-0000-0000-0000-000000000000",
        "nvmlDeviceGetSerial": "1650124031592",
        "nvmlDeviceGetPciInfo_v3": _pci(bus, device_id),
        "nvmlDeviceGetArchitecture": arch,
        "nvmlDeviceGetCudaComputeCapability": cc,
        "nvmlDeviceGetVbiosVersion": "96.00.74.00.0D",
        "nvmlDeviceGetMemoryInfo": {"total": 85520809984, "used": 524288000, "free": 84996521984},
        "nvmlDeviceGetCurrPcieLinkGeneration": 5,
        "nvmlDeviceGetMaxPcieLinkGeneration": 5,
        "nvmlDeviceGetGpuMaxPcieLinkGeneration": 5,
        "nvmlDeviceGetCurrPcieLinkWidth": 16,
        "nvmlDeviceGetMaxPcieLinkWidth": 16,
        "nvmlDeviceGetPcieReplayCounter": 0,
        "nvmlDeviceGetPersistenceMode": 1,
        "nvmlDeviceGetMigMode": ERR("NOT_SUPPORTED"),
        "nvmlDeviceGetComputeMode": 0,
        "nvmlDeviceGetEccMode": (1, 1),
        "nvmlDeviceGetTotalEccErrors": {(0, 0): 0, (1, 0): 0, (0, 1): 3, (1, 1): 0},
        "nvmlDeviceGetRetiredPagesPendingStatus": 0,
        "nvmlDeviceGetRemappedRows": (0, 0, 0, 0),
        "nvmlDeviceValidateInforom": None,
        "nvmlDeviceGetClockInfo": {1: 1980, 2: 2619},
        "nvmlDeviceGetMaxClockInfo": {1: 1980, 2: 2619},
        "nvmlDeviceGetApplicationsClock": {0: 1755, 1: 1755},
        "nvmlDeviceGetDefaultApplicationsClock": {0: 1755, 1: 1755},
        "nvmlDeviceGetCurrentClocksEventReasons": 0x1,
        "nvmlDeviceGetCurrentClocksThrottleReasons": 0x1,
        "nvmlDeviceGetPowerUsage": 71970,
        "nvmlDeviceGetPowerManagementLimit": 700000,
        "nvmlDeviceGetEnforcedPowerLimit": 700000,
        "nvmlDeviceGetPowerManagementDefaultLimit": 700000,
        "nvmlDeviceGetPowerManagementLimitConstraints": (200000, 700000),
        "nvmlDeviceGetTemperature": {0: 31},
        "nvmlDeviceGetTemperatureThreshold": {0: 92, 1: 89},
        "nvmlDeviceGetUtilizationRates": {"gpu": 0, "memory": 0},
        "nvmlDeviceGetPerformanceState": 0,
        "nvmlDeviceGetNvLinkState": {},
        "nvmlDeviceGetNvLinkRemoteDeviceType": {},
        "nvmlDeviceGetNvLinkRemotePciInfo_v2": {},
        "nvmlDeviceGetNvLinkCapability": {},
    }
    data.update(extra)
    return data


def nvlinks(n: int, active: bool = True, remote_type: int = 2, total: int = 18) -> Dict[str, Any]:
    """NVLink answers for links 0..total-1: ``n`` of them exist (active or not), the rest NOT_SUPPORTED."""
    state: Dict[Any, Any] = {}
    rtype: Dict[Any, Any] = {}
    for link in range(total):
        if link < n:
            state[link] = 1 if active else 0
            rtype[link] = remote_type if active else ERR("NOT_SUPPORTED")
        else:
            state[link] = ERR("NOT_SUPPORTED")
            rtype[link] = ERR("NOT_SUPPORTED")
    return {"nvmlDeviceGetNvLinkState": state, "nvmlDeviceGetNvLinkRemoteDeviceType": rtype}


def fabric(state: int, status: int = 0, **extra: Any) -> Dict[str, Any]:
    """nvmlDeviceGetGpuFabricInfo(V) writing ``state`` (NVML_GPU_FABRIC_STATE_*) and ``status`` (nvmlReturn_t)
    at the nvml.h offsets of the struct version the caller asked for."""
    value = FABRIC(state, status, **extra)
    return {"nvmlDeviceGetGpuFabricInfo": value, "nvmlDeviceGetGpuFabricInfoV": value}


def h100_sxm(i: int, **extra: Any) -> FakeGpu:
    data = base_gpu("NVIDIA H100 80GB HBM3", f"00000000:{0x18 + 0x10 * i:02X}:00.0", 0x233010DE, 9, (9, 0))
    data.update(nvlinks(18, remote_type=2))
    data.update(fabric(3))
    data.update(extra)
    return FakeGpu(data)


def a100_pcie(i: int, bridge: Optional[str] = None, **extra: Any) -> FakeGpu:
    """An A100 PCIe: 12 NVLink links that stay inactive without a bridge (``bridge`` "full" or "partial")."""
    data = base_gpu("NVIDIA A100 80GB PCIe", f"00000000:{0x17 + 0x10 * i:02X}:00.0", 0x20B510DE, 7, (8, 0),
                    nvmlDeviceGetCurrPcieLinkGeneration=4, nvmlDeviceGetMaxPcieLinkGeneration=4,
                    nvmlDeviceGetGpuMaxPcieLinkGeneration=4, nvmlDeviceGetPowerManagementLimit=300000,
                    nvmlDeviceGetEnforcedPowerLimit=300000, nvmlDeviceGetPowerManagementDefaultLimit=300000,
                    nvmlDeviceGetPowerManagementLimitConstraints=(150000, 300000),
                    nvmlDeviceGetMigMode=(0, 0))
    if bridge is None:
        data.update(nvlinks(12, active=False))
    elif bridge == "full":
        data.update(nvlinks(12, remote_type=0))
    else:  # one bridge of three seated badly: links 4-7 down
        links = nvlinks(12, remote_type=0)
        for link in (4, 5, 6, 7):
            links["nvmlDeviceGetNvLinkState"][link] = 0
            links["nvmlDeviceGetNvLinkRemoteDeviceType"][link] = ERR("NOT_SUPPORTED")
        data.update(links)
    data["nvmlDeviceGetGpuFabricInfo"] = ERR("NOT_SUPPORTED")
    data["nvmlDeviceGetGpuFabricInfoV"] = ERR("NOT_SUPPORTED")
    data.update(extra)
    return FakeGpu(data)


def rtx4090(i: int, **extra: Any) -> FakeGpu:
    """A consumer GPU: no ECC, no row remapping, no NVLink, no MIG, no fabric; everything NOT_SUPPORTED."""
    data = base_gpu("NVIDIA GeForce RTX 4090", f"00000000:{0x01 + i:02X}:00.0", 0x268410DE, 8, (8, 9),
                    nvmlDeviceGetEccMode=ERR("NOT_SUPPORTED"), nvmlDeviceGetRemappedRows=ERR("NOT_SUPPORTED"),
                    nvmlDeviceValidateInforom=ERR("NOT_SUPPORTED"), nvmlDeviceGetSerial=ERR("NOT_SUPPORTED"),
                    nvmlDeviceGetRetiredPagesPendingStatus=ERR("NOT_SUPPORTED"),
                    nvmlDeviceGetPowerManagementLimit=450000, nvmlDeviceGetEnforcedPowerLimit=450000,
                    nvmlDeviceGetPowerManagementDefaultLimit=450000,
                    nvmlDeviceGetPowerManagementLimitConstraints=(150000, 600000),
                    nvmlDeviceGetCurrentClocksEventReasons=0x1, nvmlDeviceGetFanSpeed=30)
    data.update(nvlinks(0, total=18))
    data["nvmlDeviceGetGpuFabricInfo"] = ERR("NOT_SUPPORTED")
    data["nvmlDeviceGetGpuFabricInfoV"] = ERR("NOT_SUPPORTED")
    for k in list(data):
        if k.startswith("nvmlDeviceGetRetiredPages"):
            data[k] = ERR("NOT_SUPPORTED")
    data.update(extra)
    return FakeGpu(data)


def a100_sxm(i: int, **extra: Any) -> FakeGpu:
    """An A100 SXM4 on an HGX board: 12 NVLinks to NVSwitches; Ampere has no NVML GPU fabric info."""
    data = base_gpu("NVIDIA A100-SXM4-80GB", f"00000000:{0x07 + 0x10 * i:02X}:00.0", 0x20B210DE, 7, (8, 0),
                    nvmlDeviceGetCurrPcieLinkGeneration=4, nvmlDeviceGetMaxPcieLinkGeneration=4,
                    nvmlDeviceGetGpuMaxPcieLinkGeneration=4, nvmlDeviceGetPowerManagementLimit=400000,
                    nvmlDeviceGetEnforcedPowerLimit=400000, nvmlDeviceGetPowerManagementDefaultLimit=400000,
                    nvmlDeviceGetPowerManagementLimitConstraints=(100000, 400000), nvmlDeviceGetMigMode=(0, 0),
                    nvmlDeviceGetMaxClockInfo={1: 1410, 2: 1593}, nvmlDeviceGetClockInfo={1: 1410, 2: 1593},
                    nvmlDeviceGetApplicationsClock={0: 1410}, nvmlDeviceGetDefaultApplicationsClock={0: 1410})
    data.update(nvlinks(12, remote_type=2))
    data["nvmlDeviceGetGpuFabricInfo"] = ERR("NOT_SUPPORTED")
    data["nvmlDeviceGetGpuFabricInfoV"] = ERR("NOT_SUPPORTED")
    data.update(extra)
    return FakeGpu(data)


def sxm_alone(name: str, device_id: int, arch: int, cc: tuple, links: int = 18, **extra: Any) -> FakeGpu:
    """An SXM GPU with every NVLink inactive and no fabric info: one GPU of an HGX board in a VM of its own
    (NVML reports its links inactive, fabric info NOT_SUPPORTED). ``extra`` replaces answers (fabric(...))."""
    data = base_gpu(name, "00000000:00:07.0", device_id, arch, cc)
    data.update(nvlinks(links, active=False))
    data["nvmlDeviceGetGpuFabricInfo"] = ERR("NOT_SUPPORTED")
    data["nvmlDeviceGetGpuFabricInfoV"] = ERR("NOT_SUPPORTED")
    data.update(extra)
    return FakeGpu(data)
