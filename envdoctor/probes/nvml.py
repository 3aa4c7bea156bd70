"""NVML probe: the driver and its GPUs through pynvml (the only module that imports pynvml, lazily)."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from envdoctor.facts import Driver, Gpu, GpuProcess, NvlinkLink, ProbeStatus
from envdoctor.parsers.nvidia_smi_xml import cuda_version_from_int

DEFAULT_TIMEOUT_S = 30.0

# NVML clock-event reason bits (nvml.h nvmlClocksEventReason*), in facts.Gpu.throttle_reasons names
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
_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
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


class _Reader:
    """Calls NVML functions by name; an error becomes ``None`` (and a note unless NotSupported)."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.notes: List[str] = []
        self.lost: Optional[str] = None

    def error_name(self, err: BaseException) -> str:
        return error_name(self.nvml, err)

    def call(self, field: str, fn_name: str, *args: Any) -> Any:
        if self.lost:
            return None  # a lost GPU answers nothing more; do not wait on it field after field
        fn = getattr(self.nvml, fn_name, None)
        if fn is None:
            return None  # an older pynvml without this function
        try:
            return fn(*args)
        except self.nvml.NVMLError as e:
            name = self.error_name(e)
            if name in ("GPU_IS_LOST", "GPU_NOT_FOUND"):
                self.lost = name
                self.notes.append(f"{field}: NVML {name}")
            elif name not in ("NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "NOT_FOUND", "NO_DATA"):
                self.notes.append(f"{field}: NVML {name}")
            return None
        except (TypeError, ValueError, AttributeError) as e:
            # a binding whose signature or return differs from the one this code was written for
            self.notes.append(f"{field}: {type(e).__name__}: {e}")
            return None


def error_name(nvml: Any, err: BaseException) -> str:
    """NVML's name for an NVMLError ("NOT_SUPPORTED", "GPU_IS_LOST" ...), "UNKNOWN" if not known."""
    value = getattr(err, "value", None)
    if value is not None:
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


def _nvlinks(r: _Reader, handle: Any) -> Optional[List[NvlinkLink]]:
    nvml = r.nvml
    fn = getattr(nvml, "nvmlDeviceGetNvLinkState", None)
    if fn is None:
        return None
    links: List[NvlinkLink] = []
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            state = fn(handle, link)
        except nvml.NVMLError as e:
            name = r.error_name(e)
            if link == 0 and name not in ("NOT_SUPPORTED", "INVALID_ARGUMENT"):
                r.notes.append(f"nvlinks: NVML {name}")
                return None
            break  # past the last link, or a GPU without NVLink ([] then)
        remote = r.call(f"nvlink{link}.remote", "nvmlDeviceGetNvLinkRemotePciInfo", handle, link) if state else None
        links.append(
            NvlinkLink(
                link=link,
                active=bool(state),
                remote_pci_bus_id=_s(getattr(remote, "busId", None)) if remote is not None else None,
            )
        )
    return links


def _inforom_valid(r: _Reader, handle: Any) -> Optional[bool]:
    fn = getattr(r.nvml, "nvmlDeviceValidateInforom", None)
    if fn is None:
        return None
    try:
        fn(handle)
        return True
    except r.nvml.NVMLError as e:
        name = r.error_name(e)
        if name == "CORRUPTED_INFOROM":
            return False
        if name in ("GPU_IS_LOST", "GPU_NOT_FOUND"):
            r.lost = name
        return None


def _processes(r: _Reader, handle: Any) -> Optional[List[GpuProcess]]:
    procs = r.call("processes", "nvmlDeviceGetComputeRunningProcesses", handle)
    if procs is None:
        return None
    out = []
    for p in procs:
        pid = getattr(p, "pid", None)
        mem = getattr(p, "usedGpuMemory", None)
        name = r.call("process_name", "nvmlSystemGetProcessName", pid) if pid is not None else None
        out.append(GpuProcess(pid=pid, name=_s(name), used_memory_bytes=mem if isinstance(mem, int) else None, type="C"))
    return out


def read_gpu(nvml: Any, index: int) -> Gpu:
    """Everything NVML tells about GPU ``index``; each field on its own, so one failure loses one field."""
    r = _Reader(nvml)
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as e:
        name = error_name(nvml, e)
        return Gpu(index=index, nvml_error=name, notes=[f"handle: NVML {name}"])
    c = r.call
    k = nvml
    pci = c("pci", "nvmlDeviceGetPciInfo", handle)
    mem = c("memory", "nvmlDeviceGetMemoryInfo", handle)
    cc_major, cc_minor = _pair(c("compute_capability", "nvmlDeviceGetCudaComputeCapability", handle))
    mig_cur, mig_pend = _pair(c("mig_mode", "nvmlDeviceGetMigMode", handle))
    ecc_cur, ecc_pend = _pair(c("ecc_mode", "nvmlDeviceGetEccMode", handle))
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
    sm, memclk, gr = getattr(k, "NVML_CLOCK_SM", 1), getattr(k, "NVML_CLOCK_MEM", 2), getattr(k, "NVML_CLOCK_GRAPHICS", 0)
    reasons = c("throttle_reasons", "nvmlDeviceGetCurrentClocksEventReasons", handle)
    if reasons is None and not r.lost:
        reasons = c("throttle_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons", handle)  # bindings < 12.535
    pmin, pmax = _pair(c("power_limits", "nvmlDeviceGetPowerManagementLimitConstraints", handle))
    util = c("utilization", "nvmlDeviceGetUtilizationRates", handle)
    pstate = c("performance_state", "nvmlDeviceGetPerformanceState", handle)
    compute_mode = c("compute_mode", "nvmlDeviceGetComputeMode", handle)
    persistence = c("persistence_mode", "nvmlDeviceGetPersistenceMode", handle)
    device_id = getattr(pci, "pciDeviceId", None)

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
        clocks_sm_mhz=c("clocks", "nvmlDeviceGetClockInfo", handle, sm),
        clocks_mem_mhz=c("clocks", "nvmlDeviceGetClockInfo", handle, memclk),
        clocks_sm_max_mhz=c("clocks_max", "nvmlDeviceGetMaxClockInfo", handle, sm),
        clocks_mem_max_mhz=c("clocks_max", "nvmlDeviceGetMaxClockInfo", handle, memclk),
        clocks_sm_app_mhz=c("clocks_app", "nvmlDeviceGetApplicationsClock", handle, gr),
        throttle_reasons=[n for bit, n in _REASON_BITS if reasons & bit] if isinstance(reasons, int) else None,
        power_draw_w=_w(c("power_draw", "nvmlDeviceGetPowerUsage", handle)),
        power_limit_w=_w(c("power_limit", "nvmlDeviceGetPowerManagementLimit", handle)),
        power_default_limit_w=_w(c("power_default_limit", "nvmlDeviceGetPowerManagementDefaultLimit", handle)),
        power_min_limit_w=_w(pmin),
        power_max_limit_w=_w(pmax),
        temperature_c=c("temperature", "nvmlDeviceGetTemperature", handle, getattr(k, "NVML_TEMPERATURE_GPU", 0)),
        temperature_slowdown_c=c("temperature_slowdown", "nvmlDeviceGetTemperatureThreshold", handle,
                                 getattr(k, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
        temperature_shutdown_c=c("temperature_shutdown", "nvmlDeviceGetTemperatureThreshold", handle,
                                 getattr(k, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0)),
        fan_speed_pct=c("fan_speed", "nvmlDeviceGetFanSpeed", handle),
        utilization_gpu_pct=getattr(util, "gpu", None),
        utilization_memory_pct=getattr(util, "memory", None),
        # NVML_PSTATE_UNKNOWN is 32
        performance_state=f"P{pstate}" if isinstance(pstate, int) and 0 <= pstate < 16 else None,
        processes=_processes(r, handle),
        nvlinks=_nvlinks(r, handle) if not r.lost else None,
        virtualization_mode=_VIRT_MODES.get(c("virtualization_mode", "nvmlDeviceGetVirtualizationMode", handle)),
    )
    return _finish(gpu, r)


def _finish(gpu: Gpu, r: _Reader) -> Gpu:
    return dataclasses.replace(gpu, notes=r.notes or None, nvml_error=r.lost)


def _probe(nvml: Any) -> Driver:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        name = error_name(nvml, e)
        status, reason = _INIT_ERRORS.get(name, (ProbeStatus.FAILED, f"NVML init failed: {name} ({e})"))
        return Driver(status=status, reason=reason, source="nvml", nvml_error=name)
    try:
        r = _Reader(nvml)
        version = _s(r.call("driver_version", "nvmlSystemGetDriverVersion"))
        cuda_int = r.call("cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2")
        if cuda_int is None:
            cuda_int = r.call("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")
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
        gpus = [read_gpu(nvml, i) for i in range(int(count))]
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass  # nothing to undo: the facts are already read
    lost = [g.index for g in gpus if g.nvml_error]
    reason = f"NVML: driver {version}, {len(gpus)} GPU(s)"
    if lost:
        reason += f"; GPU(s) {', '.join(map(str, lost))} did not answer ({gpus[lost[0]].nvml_error})"
    return Driver(
        status=ProbeStatus.OK,
        reason=reason,
        source="nvml",
        version=version,
        cuda_driver_version=cuda_version_from_int(cuda_int) if isinstance(cuda_int, int) else None,
        nvml_version=nvml_version,
        gpus=gpus,
    )


def _import_pynvml() -> Any:
    # lazy: importing envdoctor must not load libnvidia-ml, and pynvml is optional
    import pynvml

    return pynvml


def probe_nvml(nvml: Any = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Driver:
    """The driver as NVML sees it. ``nvml`` is the pynvml module or a fake with the same names.

    Runs in a daemon thread so that a hung driver call (a GPU fallen off the bus) costs at most
    ``timeout_s`` and a ``failed`` fact, never a hang.
    """
    if nvml is None:
        try:
            nvml = _import_pynvml()
        except ImportError:
            return Driver(
                status=ProbeStatus.UNSUPPORTED,
                reason="pynvml (nvidia-ml-py) is not installed: NVML cannot be asked",
                source="nvml",
            )
    result: List[Driver] = []
    crash: List[str] = []

    def target() -> None:
        try:
            result.append(_probe(nvml))
        except Exception as e:  # the per-probe guard: a bug here must not hide the other facts
            crash.append(f"{type(e).__name__}: {e}")

    run_with_timeout(target, timeout_s)
    if result:
        return result[0]
    if crash:
        return Driver(status=ProbeStatus.FAILED, reason=f"NVML probe crashed: {crash[0]}", source="nvml")
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
        for i in range(int(nvml.nvmlDeviceGetCount())):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            bus = _s(getattr(nvml.nvmlDeviceGetPciInfo(h), "busId", None)) or f"index:{i}"
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
    return best, samples, None


def import_pynvml() -> Any:
    """pynvml for callers outside this module (which must not import it themselves); ImportError if absent."""
    return _import_pynvml()
