"""The facts snapshot: frozen, JSON-serialisable records of everything the probes saw.

Conventions (see README "Facts"):
- units live in field names (``memory_total_bytes``, ``power_limit_w``, ``duration_s``);
- ``None`` means unknown (serialised as ``null``), never "N/A";
- every section carries ``status`` (one of ``ProbeStatus``) and a one-line ``reason`` so that
  "there is no driver" (absent) and "nvidia-smi timed out" (failed) stay different facts;
- ``from_dict`` ignores unknown keys (a newer envdoctor's snapshot still loads) and fills missing
  ones with defaults; a wrong type raises ``FactsError`` naming the dotted path.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import field
from typing import Any, Dict, List, Optional

from envdoctor.domain.fastclass import dataclass

SCHEMA_VERSION = 1

# the metadata key of a field a paste can carry (see ``pasted``)
PASTED = "envdoctor.pasted"


def pasted(*keys: str, label: Optional[str] = None, cite: str = "field") -> Any:
    """Default ``None``, and the declaration that ``envdoctor diagnose`` can read this fact from a paste.

    ``keys``: the reader keys that fill it (``acc.put("host.kernel", ...)`` in envdoctor/diagnose/readers/); the
    first key holding a value wins, each key keeping the value of the most trusted source that showed it.
    ``label``: how the fact is named when two reports in one paste disagree on it (single-valued facts compared
    across reports have one). ``cite``: where ``paste.provenance`` records the first key: ``"field"``, under the
    fact's path ("pythons[0].torch.cuda"), or ``"key"``, under the reader key (kept for facts whose provenance
    already used it); further keys are always recorded under their own name. envdoctor/diagnose/fields.py
    derives the paste's Facts and its provenance from these declarations."""
    return field(default=None, metadata={PASTED: (tuple(keys), label, cite)})


class ProbeStatus:
    """String constants for the ``status`` of a probed section."""

    OK = "ok"  # the facts were read
    ABSENT = "absent"  # the thing is not there (no driver, no nvcc): itself a fact
    UNSUPPORTED = "unsupported"  # the platform cannot tell (no sysfs on macOS, NVML NotSupported)
    FAILED = "failed"  # we tried and could not read it (timeout, parse error, permission)
    SKIPPED = "skipped"  # not attempted (not asked for, or judging a snapshot / a paste)

    ALL = (OK, ABSENT, UNSUPPORTED, FAILED, SKIPPED)


class FactsError(ValueError):
    """A snapshot that cannot be read: the message names the dotted path and the problem."""


# --------------------------------------------------------------------------- GPUs and driver


@dataclass(frozen=True)
class GpuProcess:
    pid: Optional[int] = None
    name: Optional[str] = None
    used_memory_bytes: Optional[int] = None
    type: Optional[str] = None  # "C" compute, "G" graphics, "C+G"
    # the MIG slice the process runs on (nvmlProcessInfo_t gpuInstanceId / computeInstanceId, nvidia-smi's
    # "GI ID" / "CI ID" columns); None off MIG (NVML reports 0xFFFFFFFF there) or when not read
    gpu_instance_id: Optional[int] = None
    compute_instance_id: Optional[int] = None


@dataclass(frozen=True)
class NvlinkLink:
    link: int
    active: Optional[bool] = None
    speed_gbps: Optional[float] = None  # per-link, one direction, as nvidia-smi reports "GB/s"
    remote_pci_bus_id: Optional[str] = None
    # what the link's far end is (NVML nvmlDeviceGetNvLinkRemoteDeviceType): "gpu", "switch", "ibmnpu", "unknown"
    remote_device_type: Optional[str] = None


@dataclass(frozen=True)
class MigDevice:
    """One MIG device (a GPU instance's compute instance) of a GPU in MIG mode: what CUDA sees as a device.

    NVML nvmlDeviceGetMigDeviceHandleByIndex + the handle's attributes; `nvidia-smi` "MIG devices" table and
    `nvidia-smi -L` ("MIG 1g.10gb Device 0: (UUID: MIG-...)"). A slice has its own SMs and its own share of
    the memory (NVIDIA MIG User Guide, "Supported MIG Profiles": fraction of SMs, fraction of memory).
    """

    index: int  # the MIG device index under its parent (nvidia-smi "MIG Dev", -L "Device N")
    gpu_instance_id: Optional[int] = None
    compute_instance_id: Optional[int] = None
    profile: Optional[str] = None  # "1g.10gb", "3g.40gb", "1g.10gb+me"
    uuid: Optional[str] = None  # "MIG-..."
    sm_count: Optional[int] = None  # streaming multiprocessors of this slice (nvidia-smi "SM", NVML attributes)
    memory_total_bytes: Optional[int] = None
    memory_used_bytes: Optional[int] = None


@dataclass(frozen=True)
class Gpu:
    index: int
    name: Optional[str] = pasted("gpu.loose_name")
    uuid: Optional[str] = None
    serial: Optional[str] = None
    pci_bus_id: Optional[str] = None  # "00000000:01:00.0"
    pci_device_id: Optional[str] = None  # "0x233010DE"
    architecture: Optional[str] = None
    compute_capability: Optional[str] = pasted("gpu.capability")  # "9.0"
    vbios_version: Optional[str] = None
    memory_total_bytes: Optional[int] = None
    memory_used_bytes: Optional[int] = None
    # PCIe: *_max is what the GPU and the slot negotiate at best (NVML "max link" is min(GPU, slot))
    pcie_gen_current: Optional[int] = None
    pcie_gen_max: Optional[int] = None
    pcie_gen_device_max: Optional[int] = None  # the GPU's own maximum (NVML GpuMaxPcieLinkGeneration)
    pcie_width_current: Optional[int] = None
    pcie_width_max: Optional[int] = None
    pcie_replay_counter: Optional[int] = None
    persistence_mode: Optional[bool] = None
    mig_mode_current: Optional[bool] = None
    mig_mode_pending: Optional[bool] = None
    mig_device_count: Optional[int] = None
    mig_devices: Optional[List[MigDevice]] = None  # None: not read (or MIG off); the slices CUDA can use
    compute_mode: Optional[str] = None  # "Default", "Exclusive_Process", "Prohibited"
    ecc_mode_current: Optional[bool] = None
    ecc_mode_pending: Optional[bool] = None
    ecc_volatile_uncorrected: Optional[int] = None
    ecc_volatile_corrected: Optional[int] = None
    ecc_aggregate_uncorrected: Optional[int] = None
    ecc_aggregate_corrected: Optional[int] = None
    retired_pages_single_bit: Optional[int] = None
    retired_pages_double_bit: Optional[int] = None
    retired_pages_pending: Optional[bool] = None
    remapped_rows_correctable: Optional[int] = None
    remapped_rows_uncorrectable: Optional[int] = None
    remapped_rows_pending: Optional[bool] = None
    remapped_rows_failure: Optional[bool] = None
    inforom_valid: Optional[bool] = None  # False when nvidia-smi says "infoROM is corrupted"
    # what the driver says the GPU needs before new work (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, nvml.h API 13):
    # "none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset", "recover_imex_domain"; None where the
    # driver does not answer the field (before R565)
    recovery_action: Optional[str] = None
    clocks_sm_mhz: Optional[int] = None
    clocks_mem_mhz: Optional[int] = None
    clocks_sm_max_mhz: Optional[int] = None
    clocks_mem_max_mhz: Optional[int] = None
    clocks_sm_app_mhz: Optional[int] = None
    clocks_sm_locked_max_mhz: Optional[int] = None
    clocks_sm_app_default_mhz: Optional[int] = None  # NVML default application clock (graphics)
    # active clock-event ("throttle") reasons, NVML names without prefix: gpu_idle,
    # applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost, sw_thermal_slowdown,
    # hw_thermal_slowdown, hw_power_brake_slowdown, display_clocks_setting
    throttle_reasons: Optional[List[str]] = None
    power_draw_w: Optional[float] = None
    power_limit_w: Optional[float] = None
    power_default_limit_w: Optional[float] = None
    power_min_limit_w: Optional[float] = None
    power_max_limit_w: Optional[float] = None
    temperature_c: Optional[float] = None
    temperature_slowdown_c: Optional[float] = None
    temperature_shutdown_c: Optional[float] = None
    fan_speed_pct: Optional[float] = None
    utilization_gpu_pct: Optional[float] = None
    utilization_memory_pct: Optional[float] = None
    performance_state: Optional[str] = None  # "P0"
    processes: Optional[List[GpuProcess]] = None
    nvlinks: Optional[List[NvlinkLink]] = None  # None: not read; []: the GPU has no NVLink
    under_load: Optional[bool] = None  # True when these readings were taken while a load ran
    # the best PCIe link seen while `--load-pcie` copied host->device (links drop to Gen1 at idle)
    pcie_gen_under_load: Optional[int] = None
    pcie_width_under_load: Optional[int] = None
    notes: Optional[List[str]] = None  # anything odd the source said ("[Unknown Error]" fields)
    nvml_error: Optional[str] = None  # NVML error that stopped reading this GPU ("GPU_IS_LOST")
    # NVML GPU fabric info (Hopper and later, nvmlDeviceGetGpuFabricInfo/V): the NVSwitch fabric registration
    # state ("not_supported", "not_started", "in_progress", "completed") and its status (an NVML return name,
    # "SUCCESS" when registration worked); None when NVML does not report it
    fabric_state: Optional[str] = None
    fabric_status: Optional[str] = None
    # the fabric's health (nvmlGpuFabricInfo_v2/v3 healthMask, healthSummary; NVML 12.550+): the conditions its
    # mask reports true ("degraded_bandwidth", "route_recovery", "route_unhealthy", "access_timeout_recovery",
    # "incorrect_configuration:<why>"; [] when none) and the summary ("healthy", "unhealthy", "limited_capacity");
    # None when the driver does not report them. Also read from `nvidia-smi -q -x` (<fabric><health>)
    fabric_health: Optional[List[str]] = None
    fabric_health_summary: Optional[str] = None
    # NVML nvmlDeviceGetVirtualizationMode: "none", "passthrough", "vgpu", "host_vgpu", "host_vsga"
    virtualization_mode: Optional[str] = None
    # vGPU software license of a vGPU guest: "licensed", "unlicensed"; None when not a vGPU or not reported
    vgpu_license: Optional[str] = None
    # Windows only: the driver model the GPU runs under now and after the next reboot, "WDDM" (a display device),
    # "TCC" (NVML's WDM: a compute device, deprecated) or "MCDM" (Microsoft's compute model); None on Linux
    driver_model_current: Optional[str] = None
    driver_model_pending: Optional[str] = None


# throttle reasons that mean heat or power held the clocks back (not idling, not a clock setting)
LIMITING_THROTTLE_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                             "hw_power_brake_slowdown")


@dataclass(frozen=True)
class XidEvent:
    """One NVRM Xid line from the kernel log ("NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.")."""

    code: int
    pci_bus_id: Optional[str] = None  # as the driver logged it: "0000:3b:00"
    message: Optional[str] = None  # the text after the code
    timestamp: Optional[str] = None  # as the log printed it: "Sun Feb 23 16:24:18 2025", "1843.308145"


@dataclass(frozen=True)
class P2pStatus:
    """Whether GPU ``a`` can read GPU ``b``'s memory peer-to-peer, as NVML says (nvmlDeviceGetP2PStatus with
    NVML_P2P_CAPS_INDEX_READ, what CUDA peer access needs); ``a`` and ``b`` are driver (NVML) GPU indices."""

    a: int
    b: int
    # nvmlGpuP2PStatus_t in words: "ok", "chipset_not_supported", "gpu_not_supported", "topology_not_supported",
    # "disabled_by_regkey", "not_supported", "unknown"; None when NVML did not answer
    read: Optional[str] = None


@dataclass(frozen=True)
class Driver:
    """The NVIDIA driver and the GPUs it sees."""

    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    source: Optional[str] = None  # "nvml", "nvidia-smi-xml", "nvidia-smi-csv", "proc", "paste"
    version: Optional[str] = pasted("driver.version", label="driver version")  # "550.54.14"
    cuda_driver_version: Optional[str] = pasted("driver.cuda")  # the CUDA version the driver supports at most: "12.4"
    kernel_module_version: Optional[str] = None  # /proc/driver/nvidia/version
    # the open kernel module ("NVIDIA UNIX Open Kernel Module" in /proc/driver/nvidia/version) or the proprietary one
    kernel_module_open: Optional[bool] = None
    nvml_version: Optional[str] = pasted("driver.nvml_library_version", cite="key")
    # NVML init error, by NVML's name: LIBRARY_NOT_FOUND, DRIVER_NOT_LOADED, LIB_RM_VERSION_MISMATCH,
    # NO_PERMISSION, GPU_IS_LOST, UNKNOWN ... (None when init worked)
    nvml_error: Optional[str] = pasted("driver.nvml_error")
    nvidia_smi_error: Optional[str] = pasted("driver.smi_error", cite="key")  # the text nvidia-smi printed when it failed
    device_nodes: Optional[List[str]] = None  # /dev/nvidia* present
    gpus: List[Gpu] = field(default_factory=list)
    fabric_manager_running: Optional[bool] = None
    nvswitch_count: Optional[int] = None
    # Xid events from the kernel log (dmesg / journalctl -k); None when the log was not read
    xid_events: Optional[List[XidEvent]] = None
    kernel_log_readable: Optional[bool] = None
    kernel_log_source: Optional[str] = None  # "dmesg --ctime", "dmesg", "journalctl -k -b"
    kernel_log_reason: Optional[str] = None  # why it could not be read ("dmesg: Operation not permitted")
    # NVML's P2P read status of every ordered pair of GPUs (None: not read; [] with fewer than two GPUs)
    p2p: Optional[List[P2pStatus]] = None


# --------------------------------------------------------------------------- CUDA toolkit, cuDNN


@dataclass(frozen=True)
class CudaToolkit:
    path: Optional[str] = None  # the toolkit root (/usr/local/cuda-13.0)
    nvcc_path: Optional[str] = None
    version: Optional[str] = pasted("toolkit.version", label="nvcc version")  # "13.0"
    version_full: Optional[str] = pasted("toolkit.version_full", cite="key")  # "13.0.88" (from "V13.0.88")
    found_via: Optional[str] = None  # "PATH", "CUDA_HOME", "CUDA_PATH", "/usr/local", "paste"


@dataclass(frozen=True)
class Toolkits:
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    on_path: Optional[CudaToolkit] = None  # what `nvcc` on PATH is: what builds extensions
    installed: List[CudaToolkit] = field(default_factory=list)
    cuda_home_env: Optional[str] = None
    cuda_path_env: Optional[str] = None
    # CUDA_HOME / CUDA_PATH values that name no usable toolkit -> why ("no such directory", "no bin/nvcc ...");
    # None: not read (older facts); {} : each one set names a toolkit
    env_problems: Optional[Dict[str, str]] = None


@dataclass(frozen=True)
class LibraryCopy:
    name: str  # "cudnn", "cublas", "nccl", "nvjitlink", "cudart", "cuda" (libcuda)
    path: Optional[str] = None
    version: Optional[str] = None
    origin: Optional[str] = None  # "wheel" (site-packages/nvidia), "torch" (torch/lib), "system", "conda"
    # where the version came from: "metadata of the nvidia-nccl-cu13 wheel", "text inside the file",
    # "full file name of libcublas.so.12.4.5.8" (never the SONAME's major alone)
    version_source: Optional[str] = None
    soname: Optional[str] = None  # DT_SONAME: what the loader matches DT_NEEDED against
    via: Optional[str] = None  # how the loader would find it: "LD_PRELOAD", "/etc/ld.so.preload", "LD_LIBRARY_PATH", "conda"


@dataclass(frozen=True)
class SystemLibraries:
    """CUDA libraries installed system-wide (outside any Python environment)."""

    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    cudnn_version: Optional[str] = None  # "9.1.0"
    cudnn_path: Optional[str] = None
    libraries: List[LibraryCopy] = field(default_factory=list)


# --------------------------------------------------------------------------- the target interpreter


@dataclass(frozen=True)
class Package:
    name: str  # normalised distribution name: "torch", "torchvision", "nvidia-cudnn-cu12"
    version: str  # full version with local tag: "2.5.1+cu124"
    location: Optional[str] = None
    requires: Optional[List[str]] = None  # Requires-Dist lines, as written
    installer: Optional[str] = None  # "pip", "conda", "uv"
    # CUDA variant built into the package when it can be told without importing it: "cu124",
    # "cpu", "rocm6.2"; read from the local tag, else from linked libraries / nvidia-* requirements
    variant: Optional[str] = None
    variant_evidence: Optional[str] = None
    # later copies of the same distribution on sys.path, which the first (``location``) shadows: a venv with
    # include-system-site-packages sees the base's copies after its own; None: none, or not read (older facts)
    shadowed: Optional[List[PackageCopy]] = None
    # its metadata directory ("torch-2.13.0.dist-info"), named when another one of the same distribution sits in
    # the same site-packages (then that copy is in ``shadowed`` with the same location); None: not named
    dist_info: Optional[str] = None
    # compiled files on disk in the folders its RECORD puts its compiled files in, that no RECORD claims: files
    # of another build left in the package directory; None: none found, or not read
    unrecorded_files: Optional[List[str]] = None


@dataclass(frozen=True)
class PackageCopy:
    """Another installed copy of a distribution, later on sys.path than the one imported."""

    location: Optional[str] = None  # the sys.path entry holding its dist-info
    version: Optional[str] = None
    requires: Optional[List[str]] = None  # its Requires-Dist lines (which torch a companion pairs with)
    dist_info: Optional[str] = None  # its metadata directory, named when it shares ``location`` with the first


@dataclass(frozen=True)
class InterpreterLink:
    """A venv's bin/python* entry that is a symbolic link, read without running it."""

    path: str
    target: Optional[str] = None  # os.readlink: what the link names
    resolves: Optional[bool] = None  # whether it leads to an existing file (False: a dangling link)


@dataclass(frozen=True)
class VenvConfig:
    """A venv's pyvenv.cfg and interpreter links (PEP 405), read by the probe from the files: what is left to
    judge when the venv's python no longer starts."""

    root: str  # the venv directory (holding pyvenv.cfg)
    cfg: Dict[str, str] = field(default_factory=dict)  # every ``key = value`` line of pyvenv.cfg
    home: Optional[str] = None  # the base interpreter's directory
    home_exists: Optional[bool] = None
    version: Optional[str] = None  # ``version`` (venv) or ``version_info`` (uv, virtualenv): "3.12.3"
    include_system_site_packages: Optional[bool] = None
    links: List[InterpreterLink] = field(default_factory=list)  # bin/python* symlinks
    # python3.X (the venv's minor version) on PATH: a base to rebuild the venv with; None: none found
    same_minor_python: Optional[str] = None
    # the python3.X PATH gave when another user can change it ("PATH: why", probes/trust.py): it is never named in a
    # fix, and neither is its bare name (the user's shell would find the same file); None: none such, or not read
    same_minor_untrusted: Optional[str] = None
    # the lib/pythonX.Y/site-packages folders under the venv: ["3.11"]; one that is not the running Python's minor
    # holds packages that interpreter never reads; None: not read (older facts)
    site_minors: Optional[List[str]] = None


@dataclass(frozen=True)
class PathPip:
    """The ``pip`` command on PATH and the interpreter its script runs, read from its first lines (not run)."""

    path: str
    interpreter: Optional[str] = None  # the shebang's interpreter (or distlib's /bin/sh exec line)
    # whether that is the judged interpreter: the same directory and the same file once links are resolved
    same_interpreter: Optional[bool] = None
    error: Optional[str] = None  # why the script could not be read


@dataclass(frozen=True)
class PthPathEntry:
    """A sys.path entry an executable .pth line added."""

    path: str
    index: Optional[int] = None  # its position in sys.path after start-up
    before_own_site: Optional[bool] = None  # ahead of this interpreter's own site-packages
    site_packages: Optional[bool] = None  # a site-packages/dist-packages directory, or one holding *.dist-info
    holds_torch: Optional[bool] = None  # holds torch/__init__.py


@dataclass(frozen=True)
class PthExecLine:
    """One executable line (``import ...``) of a .pth file, re-run as site.py runs it at start-up, with what it
    did to sys.path."""

    file: str
    line_no: int
    line: str
    file_lines: Optional[int] = None  # the file's non-blank, non-comment lines (1: the file is only this line)
    added: List[PthPathEntry] = field(default_factory=list)
    error: Optional[str] = None  # what the line raised, if it did


@dataclass(frozen=True)
class TorchDevice:
    index: int
    name: Optional[str] = None
    capability: Optional[str] = None  # "9.0"
    total_memory_bytes: Optional[int] = None
    pci_bus_id: Optional[str] = None  # "0000:3b:00" (the device properties' PCI domain, bus and device)
    # the CUDA devices (their indices) this one can access peer-to-peer: torch.cuda.can_device_access_peer, i.e.
    # cudaDeviceCanAccessPeer; None when not asked
    peer_access: Optional[List[int]] = None


@dataclass(frozen=True)
class TorchBuildFiles:
    """torch's build as its files say, read without importing it (survives a failed or skipped import)."""

    location: Optional[str] = None  # the torch package directory
    version: Optional[str] = None  # torch/version.py __version__: "2.14.1+cu130"
    cuda: Optional[str] = None  # torch/version.py cuda: "13.0"
    hip: Optional[str] = None
    git_version: Optional[str] = None
    dist_version: Optional[str] = None  # the installed distribution's metadata Version
    requires_pins: List[str] = field(default_factory=list)  # Requires-Dist of nvidia-*/cuda-*: "nvidia-nccl-cu13==2.30.7"
    native_library: Optional[str] = None  # torch/lib/libtorch_cuda.so (or libtorch_hip.so)
    native_library_error: Optional[str] = None
    needed: Optional[List[str]] = None  # its DT_NEEDED entries
    rpath: Optional[str] = None  # DT_RPATH: searched before LD_LIBRARY_PATH (ld.so(8))
    runpath: Optional[str] = None  # DT_RUNPATH: searched after LD_LIBRARY_PATH
    arch_list: Optional[List[str]] = None  # from the .nv_fatbin section: what most kernels carry
    arch_list_partial: Optional[List[str]] = None  # architectures only some kernels carry
    arch_list_error: Optional[str] = None
    fatbin_count: Optional[int] = None
    read_seconds: Optional[float] = None


@dataclass(frozen=True)
class ExtensionLibrary:
    """One compiled library of a torch CUDA extension (flash-attn, xformers, torchvision's _C ...), read from
    its file's .nv_fatbin entry headers without importing it."""

    distribution: str  # normalised name of the distribution that installed it: "flash-attn"
    version: Optional[str] = None
    path: Optional[str] = None
    sass: Optional[List[str]] = None  # cubins any kernel carries: ["sm_80", "sm_90"]
    ptx: Optional[List[str]] = None  # PTX the driver can JIT-compile: ["compute_90"]
    partial: Optional[List[str]] = None  # of those, the ones fewer than half of its fat binaries carry
    fatbins: Optional[int] = None  # 0: no .nv_fatbin section, no CUDA kernels
    skipped: Optional[str] = None  # why it was not read (a budget, not an ELF file, a read error)
    # what the binary says it was built for (None: not read, an older payload or snapshot)
    needed: Optional[List[str]] = None  # DT_NEEDED: ["libc10.so", "libtorch_cpu.so", "libcudart.so.12"]
    torch_symbols: Optional[int] = None  # undefined dynamic symbols in torch's C++ namespaces (c10::, at::, torch::)
    unresolved_count: Optional[int] = None  # of those, how many the installed torch's libraries do not define
    unresolved_symbols: Optional[List[str]] = None  # the first of them, mangled: ["_ZN3c106detail14torchCheckFailE..."]
    symbols_checked_against: Optional[List[str]] = None  # the torch libraries read: ["libc10.so", "libtorch_cpu.so"]
    loaded: Optional[bool] = None  # loaded next to the imported torch (ctypes.CDLL, as torch.ops.load_library); None: not tried
    load_error: Optional[str] = None  # the loader's exact error when it did not load
    load_skipped: Optional[str] = None  # why it was not loaded (the load budget)


@dataclass(frozen=True)
class ExtensionBuild:
    """The build metadata an extension ships (xformers/cpp_lib.json, deepspeed's git_version_info_installed.py)."""

    distribution: str
    file: Optional[str] = None
    torch: Optional[str] = None  # the torch it was built against: "2.10.0+cu128"
    cuda: Optional[str] = None  # as the file writes it: "1208" (xformers) or "12.1" (deepspeed)
    hip: Optional[str] = None
    python: Optional[str] = None
    # what the build compiled ahead of time (deepspeed's installed_ops that are true); []: nothing, every op is
    # JIT-compiled against the running torch; None: the file does not say
    compiled: Optional[List[str]] = None
    error: Optional[str] = None  # the file could not be read


@dataclass(frozen=True)
class ExtensionScan:
    """What the inspect payload read of the extensions' libraries, within its budgets."""

    libraries: List[ExtensionLibrary] = field(default_factory=list)
    builds: Optional[List[ExtensionBuild]] = None  # None: not read (older facts)
    symbols_unresolved_reason: Optional[str] = None  # why torch's symbols could not be resolved, when they were not
    truncated: Optional[str] = None  # the budget that stopped the reading, when one did
    read_libraries: Optional[int] = None
    read_mb: Optional[float] = None
    read_seconds: Optional[float] = None


@dataclass(frozen=True)
class TorchInfo:
    version: Optional[str] = pasted("torch.version", label="torch version")  # torch.__version__: "2.5.1+cu124"
    cuda: Optional[str] = pasted("torch.cuda", label="torch CUDA version (torch.version.cuda)")  # torch.version.cuda: "12.4" or None for CPU builds
    hip: Optional[str] = pasted("torch.hip", cite="key")
    git_version: Optional[str] = None
    debug: Optional[bool] = pasted("torch.debug", cite="key")
    cudnn_version: Optional[int] = pasted("torch.cudnn")  # torch.backends.cudnn.version(): 90100
    nccl_version: Optional[str] = None  # "2.21.5"
    arch_list: Optional[List[str]] = pasted("torch.arch_list")  # torch.cuda.get_arch_list(): ["sm_80", "sm_90", "compute_90"]
    cuda_available: Optional[bool] = pasted("torch.cuda_available")
    device_count: Optional[int] = pasted("torch.device_count")
    cuda_init_error: Optional[str] = None  # exact text of the error or warning behind is_available() False
    warnings: List[str] = field(default_factory=list)  # warnings torch raised on import / CUDA init
    devices: List[TorchDevice] = field(default_factory=list)
    cxx11_abi: Optional[bool] = None
    import_error: Optional[str] = None  # when `import torch` itself failed
    import_seconds: Optional[float] = None
    imported: Optional[bool] = None  # True: `import torch` worked; False: it failed or was skipped (--no-torch)
    arch_list_source: Optional[str] = None  # "torch" (the import) or "fatbin" (read from libtorch_cuda.so)
    build_files: Optional[TorchBuildFiles] = None


@dataclass(frozen=True)
class FileClaim:
    name: str  # the distribution whose RECORD lists the file: "nvidia-cudnn-cu12"
    version: Optional[str] = None
    size: Optional[int] = None  # the size RECORD gives it


@dataclass(frozen=True)
class SharedLibraryFile:
    """A library file two or more NVIDIA wheels claim (they unpack into the same site-packages/nvidia/<lib>/lib)."""

    path: str
    size: Optional[int] = None  # on disk
    claimants: List[FileClaim] = field(default_factory=list)
    owner: Optional[str] = None  # the claimant whose recorded size the file has (the one installed last)


@dataclass(frozen=True)
class ModuleCopy:
    """One copy of a package on the interpreter's sys.path (the first one is what `import` takes)."""

    entry: str  # the sys.path entry holding it
    index: Optional[int] = None  # its position in sys.path
    via: Optional[str] = None  # why the entry is there: see ModuleOrigin.via
    version: Optional[str] = None  # <package>/version.py __version__, else its dist-info Version
    pth_file: Optional[str] = None  # the .pth file that adds the entry (via "pth")
    pth_dirs: Optional[int] = None  # how many directories that .pth file adds


@dataclass(frozen=True)
class ModuleOrigin:
    """Where `import torch` finds torch in the judged interpreter, and why that sys.path entry comes first."""

    name: str = "torch"
    location: Optional[str] = None  # the package directory imported
    entry: Optional[str] = None  # the sys.path entry that holds it
    entry_index: Optional[int] = None
    # "site-packages" (the interpreter's own), "PYTHONPATH", "user-site" (~/.local, PEP 370), "pth" (a directory
    # a .pth file adds), "current-directory", "other" (sitecustomize, a sys.path edit)
    via: Optional[str] = None
    pth_file: Optional[str] = None
    pth_dirs: Optional[int] = None
    site_packages: List[str] = field(default_factory=list)  # the interpreter's own (site.getsitepackages())
    user_site: Optional[str] = None  # the user site when it is enabled
    pythonpath: List[str] = field(default_factory=list)  # PYTHONPATH's entries, normalised
    copies: List[ModuleCopy] = field(default_factory=list)  # every copy on sys.path, in sys.path order


@dataclass(frozen=True)
class ShadowFile:
    """A file or package in the working directory named like a module the judged interpreter's ``import torch``
    loaded from elsewhere: a run started there (its directory first on sys.path) loads this one instead."""

    module: str = ""  # "numbers"
    path: str = ""  # "/home/u/proj/numbers.py"
    hides: Optional[str] = None  # the file the payload's import loaded: "/usr/lib/python3.11/numbers.py"


@dataclass(frozen=True)
class CwdShadows:
    cwd: Optional[str] = None
    shadows: List[ShadowFile] = field(default_factory=list)


@dataclass(frozen=True)
class SmokeStep:
    """One step of the smoke tier (envdoctor/_payload/smoke.py), tried in its own bounded child."""

    name: str = ""  # "compile", "dataloader", "import:torchvision", "cublas" ...
    status: str = ""  # "ok", "failed", "timed-out", "skipped"
    duration_s: Optional[float] = None
    error_type: Optional[str] = None  # "OSError", "RuntimeError", "Crash" (the child died), "Timeout"
    error: Optional[str] = None  # the exception's message, as raised
    traceback: List[str] = field(default_factory=list)  # its last lines (or faulthandler's, for a crash)
    reason: Optional[str] = None  # why a skipped step did not apply (no CUDA)
    signal: Optional[str] = None  # the signal that ended a crashed child: "SIGSEGV"
    detail: Dict[str, Any] = field(default_factory=dict)  # what the step found (compiler, directories, modules)


@dataclass(frozen=True)
class Smoke:
    """The smoke tier's run in one interpreter: which tier, every step tried, and what was not tried."""

    tier: Optional[str] = None  # "quick", "thorough", "off"
    steps: List[SmokeStep] = field(default_factory=list)
    not_tried: List[str] = field(default_factory=list)  # what this tier leaves out, in words
    open_files_limit: Optional[List[Optional[int]]] = None  # RLIMIT_NOFILE (soft, hard); None: unlimited
    errors: List[str] = field(default_factory=list)  # the tier's own trouble (a step runner that did not start)
    duration_s: Optional[float] = None

    def step(self, name: str) -> Optional[SmokeStep]:
        return next((s for s in self.steps if s.name == name), None)


@dataclass(frozen=True)
class PythonEnv:
    """One interpreter being diagnosed (``--python``), inspected in its own subprocess."""

    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    executable: Optional[str] = None
    requested_as: Optional[str] = None  # what the user passed (or how the default was chosen)
    python_version: Optional[str] = pasted("python.version", label="Python version")  # "3.11.7"
    implementation: Optional[str] = None
    platform: Optional[str] = pasted("python.platform", cite="key")  # sysconfig platform tag: "linux-x86_64"
    prefix: Optional[str] = None
    is_venv: Optional[bool] = None
    is_conda: Optional[bool] = None
    packages: List[Package] = field(default_factory=list)
    torch: Optional[TorchInfo] = None  # None: torch is not installed (or not inspected)
    loaded_libraries: List[LibraryCopy] = field(default_factory=list)  # /proc/self/maps after import torch
    # CUDA libraries the loader could take before torch's wheels: LD_PRELOAD, /etc/ld.so.preload,
    # LD_LIBRARY_PATH and conda copies (read whether or not torch imports)
    library_candidates: List[LibraryCopy] = field(default_factory=list)
    torch_inspected: Optional[bool] = None  # False under --no-torch
    extensions: Optional[ExtensionScan] = None  # None: not read (an older payload or snapshot)
    torch_origin: Optional[ModuleOrigin] = None  # where torch is imported from; None: not read (older facts)
    # files in the working directory named like modules `import torch` loaded (issue 38); None: not read
    cwd_shadows: Optional[CwdShadows] = None
    # library files two NVIDIA wheels claim, with the wheel the file on disk belongs to; None: not read
    shared_library_files: Optional[List[SharedLibraryFile]] = None
    # why the interpreter could not be (fully) inspected: "not_found", "not_python", "crashed", "timeout",
    # "exited", "payload_error"; None when the payload answered
    failure: Optional[str] = None
    failure_stage: Optional[str] = None  # what it was doing then: "importing torch"
    env: Dict[str, Optional[str]] = field(default_factory=dict)  # LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES ...
    import_errors: Dict[str, str] = field(default_factory=dict)  # package -> error text (companions)
    # non-fatal errors met while inspecting ("torch.backends.cudnn.version(): RuntimeError: ...")
    notes: Optional[List[str]] = None
    duration_s: Optional[float] = None
    # who is being judged: envdoctor's own environment (its sys.prefix), a Python that PEP 668 marks
    # EXTERNALLY-MANAGED (a distribution's system Python), and, when this one has no torch, the interpreters
    # with torch that envdoctor saw elsewhere (conda envs, venvs under the cwd and home, python3 on PATH)
    own_environment: Optional[bool] = None
    externally_managed: Optional[bool] = None
    torch_elsewhere: Optional[List[str]] = None
    # interpreters seen there but never suggested, with why: a path another user owns or can write to (a venv
    # planted in /tmp, a world-writable PATH entry): running one would run their code (probes/trust.py)
    torch_elsewhere_refused: Optional[Dict[str, str]] = None
    # the interpreter itself (issue 30): its pyvenv.cfg and links (read by the probe, also when it does not
    # start), its own site-packages, whether pip and ensurepip are importable, the `pip` on PATH, and the
    # executable lines of its .pth files with what each did to sys.path; None: not read (older facts)
    venv: Optional[VenvConfig] = None
    site_packages: Optional[List[str]] = None  # site.getsitepackages()
    has_pip: Optional[bool] = None  # importlib.util.find_spec("pip")
    has_ensurepip: Optional[bool] = None
    path_pip: Optional[PathPip] = None
    pth_exec: Optional[List[PthExecLine]] = None
    # the smoke tier (issue 38): steps a run does, tried for real in the interpreter; None: not run (older facts)
    smoke: Optional[Smoke] = None

    def package(self, name: str) -> Optional[Package]:
        key = normalize_name(name)
        for p in self.packages:
            if normalize_name(p.name) == key:
                return p
        return None


# --------------------------------------------------------------------------- host, container, storage


@dataclass(frozen=True)
class Container:
    runtime: Optional[str] = pasted("container.runtime", cite="key")  # "docker", "podman", "kubernetes", "lxc", "containerd", None (none)
    evidence: Optional[str] = None
    gpu_device_nodes: Optional[List[str]] = None  # /dev/nvidia* visible inside
    nvidia_visible_devices: Optional[str] = None  # NVIDIA_VISIBLE_DEVICES as the runtime set it


@dataclass(frozen=True)
class Host:
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    hostname: Optional[str] = None
    os: Optional[str] = pasted("host.os", "host.os_hint", label="operating system")  # platform.system(): "Linux", "Windows"
    distro_id: Optional[str] = pasted("host.distro_id")  # "ubuntu"
    distro_version: Optional[str] = pasted("host.distro_version")  # "22.04"
    distro_name: Optional[str] = pasted("host.distro_name", "host.distro_hint", label="OS release")  # "Ubuntu 22.04.4 LTS"
    distro_like: Optional[str] = pasted("host.distro_like")  # os-release ID_LIKE: "rhel centos fedora" (picks the package tool)
    kernel: Optional[str] = pasted("host.kernel")
    machine: Optional[str] = pasted("host.machine")  # "x86_64"
    glibc_version: Optional[str] = pasted("host.glibc_version")
    cpu_model: Optional[str] = pasted("host.cpu_model")  # lscpu's "Model name", or the vendor alone
    cpu_logical_count: Optional[int] = None  # os.cpu_count(): what DataLoader code sees
    cpu_physical_count: Optional[int] = None
    cpu_affinity_count: Optional[int] = pasted("host.cpu_affinity_count")  # len(os.sched_getaffinity(0))
    cpu_affinity_list: Optional[str] = None  # the same CPUs in kernel cpulist form: "0-27,56-83"
    cgroup_version: Optional[int] = None
    cgroup_cpu_quota: Optional[float] = None  # CPUs the cgroup allows (quota / period); None = unlimited
    cgroup_memory_limit_bytes: Optional[int] = None  # None = unlimited
    memory_total_bytes: Optional[int] = pasted("host.memory_total", cite="key")
    memory_available_bytes: Optional[int] = None
    shm_total_bytes: Optional[int] = pasted("host.shm_total", cite="key")
    shm_free_bytes: Optional[int] = None
    numa_node_count: Optional[int] = None
    container: Optional[Container] = None
    wsl: Optional[bool] = pasted("host.wsl")
    wsl_version: Optional[int] = pasted("host.wsl_version")
    virtualization: Optional[str] = None  # "kvm", "xen", "microsoft", None when bare metal or unknown
    gcc_version: Optional[str] = pasted("host.gcc_version")  # "12.2.0"
    clang_version: Optional[str] = pasted("host.clang_version")
    # the environment envdoctor runs in, which the judged interpreter inherits: every variable of
    # compat_data/env_vars.json and a few more (probes/host.py env_names); a recorded variable that is unset is
    # None, a variable not recorded (an older snapshot) is absent
    env: Dict[str, Optional[str]] = field(default_factory=dict)
    kernel_modules: Optional[List[str]] = None  # loaded modules of interest (nvidia, nvidia_peermem ...)
    kernel_modules_source: Optional[str] = None  # "/proc/modules" or "/sys/module" (containers lack the first)
    infiniband_devices: Optional[List[str]] = None
    network_interfaces: Optional[List[str]] = None  # /sys/class/net names ("eth0", "ib0", "lo"); None: not read


@dataclass(frozen=True)
class DataPath:
    path: str
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    exists: Optional[bool] = None
    mount_point: Optional[str] = None
    fstype: Optional[str] = None  # "ext4", "xfs", "nfs4", "fuse.s3fs", "overlay"
    mount_source: Optional[str] = None
    kind: Optional[str] = None  # "local", "network", "fuse", "overlay", "tmpfs", "unknown"
    block_device: Optional[str] = None  # "nvme0n1"
    rotational: Optional[bool] = None
    transport: Optional[str] = None  # "nvme", "sata", "sas", "virtio", "usb", "md", "dm"
    device_model: Optional[str] = None
    size_bytes: Optional[int] = None
    free_bytes: Optional[int] = None


@dataclass(frozen=True)
class Storage:
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    paths: List[DataPath] = field(default_factory=list)


# --------------------------------------------------------------------------- topology, bench


@dataclass(frozen=True)
class PcieLink:
    """One PCI device's link as lspci -vv or sysfs reports it (GPU or an upstream bridge)."""

    bdf: str  # "0000:17:00.0"
    description: Optional[str] = None
    cap_speed_gts: Optional[float] = None  # LnkCap speed in GT/s
    cap_width: Optional[int] = None
    sta_speed_gts: Optional[float] = None  # LnkSta
    sta_width: Optional[int] = None
    downgraded: Optional[bool] = None  # lspci printed "(downgraded)"
    upstream_bdf: Optional[str] = None


@dataclass(frozen=True)
class GpuLocality:
    """Which NUMA node and CPUs are local to one NVIDIA GPU (sysfs numa_node, local_cpulist)."""

    pci_bus_id: str  # "0000:17:00.0"
    numa_node: Optional[int] = None  # -1 when the platform reports none
    local_cpulist: Optional[str] = None  # "0-27,56-83"


@dataclass(frozen=True)
class Topology:
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    # matrix[i][j]: nvidia-smi topo -m connection type between GPU i and j ("X", "NV12", "SYS",
    # "NODE", "PHB", "PXB", "PIX")
    gpu_matrix: Optional[List[List[str]]] = None
    p2p_supported: Optional[List[List[Optional[bool]]]] = None
    pcie_links: List[PcieLink] = field(default_factory=list)
    gpu_locality: Optional[List[GpuLocality]] = None  # None: not read
    # every PCI function of vendor 0x10de under /sys/bus/pci/devices (GPUs, their audio functions, NVSwitches):
    # "0000:17:00.0 0x0302"; [] when the bus has none (no NVIDIA hardware), None when sysfs was not read
    nvidia_pci_devices: Optional[List[str]] = None


@dataclass(frozen=True)
class BenchResult:
    """One micro-kernel measurement (``envdoctor bench``): judged by checks like any other fact."""

    name: str  # the contract: "matmul_bf16", "membw_device", "h2d_pinned", "disk_seq_read", "sustained" ...
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    device: Optional[str] = None  # "cuda:0", "cpu", "cuda:0->cuda:1" (p2p), "cuda" (allreduce), a path (disk)
    value: Optional[float] = None
    unit: Optional[str] = None  # "TFLOP/s", "GB/s", "MB/s", "IOPS"
    params: Dict[str, Any] = field(default_factory=dict)  # shape, n, threads, pci_bus_id, sweep, link under load
    duration_s: Optional[float] = None
    samples: Optional[List[Dict[str, Any]]] = None  # time series (sustained: throughput, clocks, power, ...)


@dataclass(frozen=True)
class Bench:
    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    results: List[BenchResult] = field(default_factory=list)
    budget_s: Optional[float] = None  # what the run was allowed (--budget)
    duration_s: Optional[float] = None  # what it took
    device: Optional[str] = None  # --device: "cpu", "cuda", "all"
    python: Optional[str] = None  # the interpreter the kernels ran in


@dataclass(frozen=True)
class Watch:
    """A watched run (``envdoctor watch``) or a recording another tool made (``watch --replay``).

    ``samples``: one object per tick, ``{"t_s", "gpus": [{"index", "util_pct", "mem_util_pct", "mem_used_mib",
    "mem_total_mib", "sm_clock_mhz", "power_w", "temperature_c", "throttle_reasons", "pcie_rx_mbps",
    "pcie_tx_mbps", "processes"}], "host": {"cpu_busy_pct", "cpu_iowait_pct", "cgroup_cpu_used",
    "mem_used_pct", "swap_used_pct", "shm_used_bytes", "disks": {dev: {"read_mbps", "write_mbps", "iops",
    "await_ms", "util_pct"}}, "net_rx_mbps"}, "procs": {"count", "trainers", "workers", "cpu_pct",
    "main_cpu_pct", "rss_bytes", "states", "io": {"read_bytes", "write_bytes", "rchar", "wchar"}, "main": {"pid",
    "cpu_pct", "states" (the training process's main thread sampled between ticks, one letter each: R D N F P S),
    "run_ms", "cpu_wait_ms", "rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes"}, "cgroup":
    {"quota_cpus", "throttled_pct"}}}`` (main, io and cgroup since issue 41: older recordings lack them and
    are judged without them); a field nobody measured is absent or null. ``summary`` is
    what envdoctor.domain.recording computes from them plus what the step timer reported (``data_wait_fraction``,
    ``step_count``). Long runs are downsampled (``downsampled_by``), never cut.
    """

    status: str = ProbeStatus.SKIPPED
    reason: Optional[str] = None
    source: Optional[str] = None  # "live", or the formats a replay read: "nvidia-smi dmon, iostat -x"
    command: Optional[List[str]] = None  # what was launched (watch -- cmd)
    pid: Optional[int] = None  # the root of the watched process tree
    exit_code: Optional[int] = None  # the launched command's
    interval_s: Optional[float] = None
    downsampled_by: Optional[int] = None  # each stored sample stands for this many ticks (a long run)
    data_paths: Optional[List[str]] = None  # --data
    cpu_available: Optional[float] = None  # CPUs the watched process may use (affinity, cgroup quota)
    samples: List[Dict[str, Any]] = field(default_factory=list)
    summary: Dict[str, Any] = field(default_factory=dict)
    # what it could not see, one line each: "no NVML: GPU samples unknown (LIBRARY_NOT_FOUND)"
    unseen: List[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the snapshot


@dataclass(frozen=True)
class ProbeRun:
    name: str
    status: str
    reason: Optional[str] = None
    duration_s: Optional[float] = None


@dataclass(frozen=True)
class PasteSource:
    """What a pasted report held (``envdoctor diagnose``): found formats and missing facts."""

    found: List[str] = field(default_factory=list)  # "collect_env output (PyTorch 2.6 format)"
    not_found: List[str] = field(default_factory=list)  # "driver version"
    messages: List[str] = field(default_factory=list)  # error / warning lines seen, verbatim
    text_excerpt: Optional[str] = None
    # several machines' reports in one paste (diagnose/machines.py): "report 1 of 2 (001.txt)", best first
    reports: Optional[List[str]] = None
    conflicts: Optional[List[str]] = None  # "torch version: 2 different values (2.6.0 in 001.txt line 3, ...)"
    machines: Optional[List[Facts]] = None  # each machine's own facts, in the order of ``reports``
    # where each fact came from: fact path -> {"where": "001.txt line 3", "reader", "confidence", "value"}
    provenance: Optional[Dict[str, Dict[str, Any]]] = None
    # one fact shown twice by sources of different authority, the winner kept: {fact, kept, kept_source, other,
    # other_source} (the imported torch over pip metadata)
    disagreements: Optional[List[Dict[str, str]]] = None
    settle: Optional[List[str]] = None  # where facts are thin: the outputs that would settle it ("paste ...")


@dataclass(frozen=True)
class Targets:
    """What `envdoctor assert` / ``preflight()`` were asked to hold: declared, not probed."""

    requirements: List[str] = field(default_factory=list)  # PEP 508 strings as given: "torch>=2.4", "cuda>=12.4"
    target_driver: Optional[str] = None  # the fleet's driver: "535.104.05"
    target_gpus: List[str] = field(default_factory=list)  # as given: "H100", "sm_90"
    source: Optional[str] = None  # where they came from: "command line", "/src/pyproject.toml [tool.envdoctor]"


@dataclass(frozen=True)
class Facts:
    schema_version: int = SCHEMA_VERSION
    envdoctor_version: Optional[str] = None
    collected_at: Optional[str] = None  # ISO 8601 UTC
    origin: str = "live"  # "live" (probed here), "snapshot" (--facts), "paste" (diagnose)
    driver: Driver = field(default_factory=Driver)
    toolkits: Toolkits = field(default_factory=Toolkits)
    system_libraries: SystemLibraries = field(default_factory=SystemLibraries)
    pythons: List[PythonEnv] = field(default_factory=list)
    host: Host = field(default_factory=Host)
    storage: Storage = field(default_factory=Storage)
    topology: Topology = field(default_factory=Topology)
    bench: Bench = field(default_factory=Bench)
    probes: List[ProbeRun] = field(default_factory=list)
    paste: Optional[PasteSource] = None
    targets: Optional[Targets] = None  # declared requirements and fleet (envdoctor assert, preflight)
    watch: Optional[Watch] = None  # a watched run or a replayed recording (envdoctor watch)

    def to_dict(self) -> Dict[str, Any]:
        return to_dict(self)

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> Facts:
        if not isinstance(data, dict):
            raise FactsError(f"a facts snapshot is a JSON object, got {type(data).__name__}")
        version = data.get("schema_version")
        if not isinstance(version, int):
            raise FactsError("not an envdoctor facts snapshot: no integer 'schema_version'")
        if version > SCHEMA_VERSION:
            raise FactsError(
                f"snapshot schema_version {version} is newer than this envdoctor understands "
                f"({SCHEMA_VERSION}); upgrade envdoctor to judge it"
            )
        return from_dict(cls, data)

    @classmethod
    def from_json(cls, text: str) -> Facts:
        """Parse and validate a snapshot (``--facts``): types, then values (``validate_facts``)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise FactsError(f"not valid JSON: {e.msg.rstrip()} (line {e.lineno}, column {e.colno})") from None
        except RecursionError:
            raise FactsError("not a facts snapshot: JSON nested too deeply") from None
        except ValueError:  # Python 3.11+ refuses integers of more than 4300 digits
            raise FactsError("not a facts snapshot: an integer with thousands of digits") from None
        try:
            facts = cls.from_dict(data)
        except RecursionError:
            raise FactsError("not a facts snapshot: nested too deeply") from None
        validate_facts(facts)
        return facts


# --------------------------------------------------------------------------- value validation

# A fact in these units cannot be negative: a snapshot saying so was edited or corrupted, and judging it
# would give a confident wrong answer (negative RAM "is below what 8 GPUs need").
_NON_NEGATIVE_SUFFIXES = ("_bytes", "_count", "_mhz", "_w", "_s", "_seconds", "_pct", "_gbps", "_gts")
_NON_NEGATIVE_PREFIXES = ("ecc_", "remapped_rows_", "retired_pages_", "pcie_gen_", "pcie_width_")
_NON_NEGATIVE_NAMES = frozenset({"cgroup_cpu_quota", "pid", "index", "cgroup_version", "wsl_version",
                                 "cudnn_version", "cap_width", "sta_width", "nvswitch_count", "code"})
_MAX_INT = 2**63 - 1  # what NVML, sysfs and /proc report fits in 64 bits

# version fields the checks parse and compare: they must start like a version ("550.54.14", "2.5.1+cu124")
_VERSION_FIELDS = {("Driver", "version"), ("Driver", "cuda_driver_version"), ("Driver", "kernel_module_version"),
                   ("Driver", "nvml_version"), ("TorchInfo", "version"), ("TorchInfo", "cuda"),
                   ("TorchInfo", "hip"), ("PythonEnv", "python_version"), ("CudaToolkit", "version"),
                   ("CudaToolkit", "version_full"), ("SystemLibraries", "cudnn_version"),
                   ("TorchInfo", "nccl_version")}
_VERSION_RE = None


def _looks_like_version(text: str) -> bool:
    import re

    global _VERSION_RE
    if _VERSION_RE is None:
        _VERSION_RE = re.compile(r"v?\d+(\.\d+)*([.+_-]?[0-9A-Za-z]+)*")
    return bool(_VERSION_RE.fullmatch(text.strip()))


def validate_facts(facts: Facts) -> None:
    """Raise FactsError naming the dotted path of the first impossible value (a negative size, a version "abc",
    a number that is not finite or does not fit in 64 bits)."""
    import math

    def walk(obj: Any, path: str) -> None:
        if dataclasses.is_dataclass(obj):
            cls = type(obj).__name__
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                p = f"{path}.{f.name}"
                if isinstance(value, bool) or value is None:
                    continue
                if isinstance(value, (int, float)):
                    if isinstance(value, float) and not math.isfinite(value):
                        raise FactsError(f"{p}: {value!r} is not a finite number")
                    if abs(value) > _MAX_INT:
                        text = repr(value)
                        text = text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"
                        raise FactsError(f"{p}: {text} is too large to be a real reading")
                    name = f.name
                    if value < 0 and (name.endswith(_NON_NEGATIVE_SUFFIXES) or name.startswith(_NON_NEGATIVE_PREFIXES)
                                      or name in _NON_NEGATIVE_NAMES):
                        raise FactsError(f"{p}: {value!r} cannot be negative")
                elif isinstance(value, str):
                    if (cls, f.name) in _VERSION_FIELDS and not _looks_like_version(value):
                        raise FactsError(f"{p}: {value!r} is not a version number")
                else:
                    walk(value, p)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]")
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{path}.{k}")

    walk(facts, "facts")


# --------------------------------------------------------------------------- helpers


def normalize_name(name: str) -> str:
    """PEP 503 normalisation of a distribution name."""
    out = []
    prev_sep = False
    for ch in name.strip().lower():
        if ch in "-_.":
            if not prev_sep:
                out.append("-")
            prev_sep = True
        else:
            out.append(ch)
            prev_sep = False
    return "".join(out)


def to_dict(obj: Any) -> Any:
    """Recursively turn dataclasses into JSON-ready dicts (lists stay lists, None stays None)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


_HINTS_CACHE: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    if cls not in _HINTS_CACHE:
        _HINTS_CACHE[cls] = typing.get_type_hints(cls)
    return _HINTS_CACHE[cls]


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        if value is None:
            if type(None) in args:
                return None
            raise FactsError(f"{path}: null is not allowed here")
        non_none = [a for a in args if a is not type(None)]
        return _convert(non_none[0], value, path)
    if value is None:
        # tolerate null for a non-optional field that has a default: treated as unknown
        return None
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, path)
    if origin in (list, List):
        if not isinstance(value, list):
            raise FactsError(f"{path}: expected a list, got {type(value).__name__}")
        (item_tp,) = args or (Any,)
        return [_convert(item_tp, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise FactsError(f"{path}: expected an object, got {type(value).__name__}")
        val_tp = args[1] if len(args) == 2 else Any
        return {str(k): _convert(val_tp, v, f"{path}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise FactsError(f"{path}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise FactsError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FactsError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise FactsError(f"{path}: expected a string, got {value!r}")
        return value
    return value


def from_dict(cls: Any, data: Any, path: str = "facts") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys are ignored, missing ones defaulted."""
    if not isinstance(data, dict):
        raise FactsError(f"{path}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                raise FactsError(f"{path}.{f.name}: required field is missing")
            continue
        value = _convert(hints[f.name], data[f.name], f"{path}.{f.name}")
        if value is None and f.default is dataclasses.MISSING:
            if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                value = f.default_factory()  # type: ignore[misc]
            else:
                raise FactsError(f"{path}.{f.name}: required field is null")
        kwargs[f.name] = value
    return cls(**kwargs)
