"""FakeNvml: a stand-in for the pynvml module built from data, NVML error values included."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Dict, List, Optional

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
    "GPU_NOT_FOUND": 28,
    "UNKNOWN": 999,
}


class NVMLError(Exception):
    """Like pynvml.NVMLError: carries the NVML return code in ``value``."""

    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        names = {v: k for k, v in ERROR_CODES.items()}
        return names.get(self.value, f"NVML error {self.value}")


def err(name: str) -> NVMLError:
    """``err("NOT_SUPPORTED")``: an NVMLError to put in the data in place of a value."""
    return NVMLError(ERROR_CODES[name])


NOT_SUPPORTED = "__not_supported__"  # shorthand in GPU data for err("NOT_SUPPORTED")


def h100(**overrides: Any) -> Dict[str, Any]:
    """A healthy H100 SXM as NVML reports it (keys are pynvml function names without nvmlDeviceGet)."""
    data: Dict[str, Any] = {
        "Name": "NVIDIA H100 80GB HBM3",
        "UUID": "GPU-11111111-2222-3333-4444-555555555555",
        "Serial": "1650124031592",
        "PciInfo": SimpleNamespace(busId=b"00000000:19:00.0", pciDeviceId=0x233010DE),
        "Architecture": 9,
        "CudaComputeCapability": (9, 0),
        "VbiosVersion": "96.00.74.00.0D",
        "MemoryInfo": SimpleNamespace(total=85520809984, used=524288000, free=84996521984),
        "CurrPcieLinkGeneration": 5,
        "MaxPcieLinkGeneration": 5,
        "GpuMaxPcieLinkGeneration": 5,
        "CurrPcieLinkWidth": 16,
        "MaxPcieLinkWidth": 16,
        "PcieReplayCounter": 0,
        "PersistenceMode": 1,
        "MigMode": [0, 0],
        "ComputeMode": 0,
        "EccMode": [1, 1],
        "TotalEccErrors": {(0, 0): 0, (1, 0): 0, (0, 1): 3, (1, 1): 0},
        "RetiredPages": {0: [], 1: []},
        "RetiredPagesPendingStatus": 0,
        "RemappedRows": (0, 0, 0, 0),
        "ValidateInforom": None,
        "ClockInfo": {1: 1980, 2: 2619},
        "MaxClockInfo": {1: 1980, 2: 2619},
        "ApplicationsClock": {0: 1980},
        "CurrentClocksEventReasons": 0x1,
        "PowerUsage": 71970,
        "PowerManagementLimit": 700000,
        "PowerManagementDefaultLimit": 700000,
        "PowerManagementLimitConstraints": [200000, 700000],
        "Temperature": {0: 36},
        "TemperatureThreshold": {0: 92, 1: 89},
        "FanSpeed": NOT_SUPPORTED,
        "UtilizationRates": SimpleNamespace(gpu=0, memory=0),
        "PerformanceState": 0,
        "ComputeRunningProcesses": [SimpleNamespace(pid=4242, usedGpuMemory=2566 * 1024 * 1024)],
        "NvLinkState": {i: 1 for i in range(18)},
        "NvLinkRemotePciInfo": SimpleNamespace(busId=b"00000000:05:00.0"),
    }
    data.update(overrides)
    return data


class FakeNvml:
    """``FakeNvml(gpus=[h100(), h100(PowerUsage=err("NOT_SUPPORTED"))], driver_version="550.54.14")``.

    Each GPU is a dict of pynvml function names without the ``nvmlDeviceGet`` prefix -> a value, a
    dict keyed by the call's extra argument(s), an ``NVMLError`` to raise, or ``NOT_SUPPORTED``. A
    function missing from the dict raises NotSupported, as NVML does on hardware without it.
    ``handle_error`` / ``init_error`` / ``count_error`` make those calls fail.
    """

    NVMLError = NVMLError
    NVML_NVLINK_MAX_LINKS = 18
    NVML_CLOCK_GRAPHICS = 0
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    NVML_AGGREGATE_ECC = 1
    NVML_DEVICE_ARCH_VOLTA = 5
    NVML_DEVICE_ARCH_AMPERE = 7
    NVML_DEVICE_ARCH_ADA = 8
    NVML_DEVICE_ARCH_HOPPER = 9

    def __init__(
        self,
        gpus: Optional[List[Dict[str, Any]]] = None,
        driver_version: str = "550.54.14",
        cuda_driver_version: int = 12040,
        nvml_version: str = "12.550.54.14",
        init_error: Optional[str] = None,
        count_error: Optional[str] = None,
        handle_errors: Optional[Dict[int, str]] = None,
    ):
        self.gpus = list(gpus or [])
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.nvml_version = nvml_version
        self.init_error = init_error
        self.count_error = count_error
        self.handle_errors = dict(handle_errors or {})
        self.initialized = False
        self.shutdown_called = False
        self.calls: List[str] = []
        for name, code in ERROR_CODES.items():
            setattr(self, f"NVML_ERROR_{name}", code)

    # ------------------------------------------------------------------ system
    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error:
            raise err(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.shutdown_called = True
        self.initialized = False

    def _need_init(self) -> None:
        if not self.initialized:
            raise err("UNINITIALIZED")

    def nvmlSystemGetDriverVersion(self) -> str:
        self._need_init()
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._need_init()
        return self.cuda_driver_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._need_init()
        return self.nvml_version

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        return {4242: "/usr/bin/python3"}.get(pid, "unknown")

    def nvmlDeviceGetCount(self) -> int:
        self._need_init()
        if self.count_error:
            raise err(self.count_error)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._need_init()
        if index in self.handle_errors:
            raise err(self.handle_errors[index])
        if not 0 <= index < len(self.gpus):
            raise err("INVALID_ARGUMENT")
        return index

    # ------------------------------------------------------------------ per device
    def _answer(self, key: str, handle: int, *args: Any) -> Any:
        self._need_init()
        self.calls.append(key)
        data = self.gpus[handle]
        if key not in data:
            raise err("NOT_SUPPORTED")
        value = data[key]
        if isinstance(value, dict) and args:
            arg = args if len(args) > 1 else args[0]
            if arg not in value:
                raise err("INVALID_ARGUMENT" if key == "NvLinkState" else "NOT_SUPPORTED")
            value = value[arg]
        if value == NOT_SUPPORTED:
            raise err("NOT_SUPPORTED")
        if isinstance(value, NVMLError):
            raise value
        return value

    def __getattr__(self, name: str) -> Any:
        # nvmlDeviceGetX(handle, *args) -> the data under "X"; nvmlDeviceValidateInforom too
        for prefix in ("nvmlDeviceGet", "nvmlDevice"):
            if name.startswith(prefix):
                key = name[len(prefix) :]
                return lambda handle, *args: self._answer(key, handle, *args)
        raise AttributeError(name)
