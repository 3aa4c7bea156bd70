"""Parse the default `nvidia-smi` table (every era, Linux and Windows) and its failure messages."""

from __future__ import annotations

import re
from dataclasses import field
from typing import List, Optional

from ..domain.fastclass import dataclass
from ..model.facts import Gpu, GpuProcess, MigDevice

_MIB = 1024 * 1024

# Header of every era: "| NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0 |".
# Before driver 410 the "CUDA Version" field did not exist. Windows drivers from the 6xx branch print
# "KMD Version: 610.62  CUDA UMD Version: 13.3" instead (the kernel-mode driver and the user-mode CUDA
# driver's ceiling). The CUDA field is the newest CUDA the *driver* supports, never a toolkit:
# https://docs.nvidia.com/deploy/cuda-compatibility/ ("CUDA Version" reported by nvidia-smi).
_HEADER = re.compile(r"NVIDIA-SMI\s+(\d+(?:\.\d+)+)")
_DRIVER = re.compile(r"(?:Driver|KMD)\s+Version\s*:\s*(\d+(?:\.\d+)+)")
_CUDA = re.compile(r"CUDA(?:\s+UMD)?\s+Version\s*:\s*(\d+\.\d+|N/A)")
# First GPU row: index, name (possibly truncated "..."), persistence / driver model, bus id, display, ECC.
_GPU1 = re.compile(
    r"^\|\s*(\d+)\s+(.*?)\s+(On|Off|WDDM|TCC|MCDM|N/A)\s*\|\s*"
    r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+(\S+)\s*\|\s*(.*?)\s*\|"
)
# Second GPU row: fan, temp, perf, power usage / cap | used / total | util, compute mode.
_GPU2 = re.compile(
    r"^\|\s*(\S+?)\s+(\S+)\s+(\S+)\s+(\S+)\s*/\s*(\S+)\s*\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\S+)\s+(.*?)\s*\|"
)
_GPU3 = re.compile(r"^\|\s*\|\s*\|\s*(\S+)\s*\|$")
# Process rows: "|    0   N/A  N/A   11327   C   /root/tools/memhog   2566MiB |" (GI/CI columns since 450);
# older tables have no GI/CI columns: "|    0     12345      C   python    1234MiB |".
_PROC = re.compile(
    r"^\|\s*(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|C|G|M\+C|M)\s+(.+?)\s+(\d+MiB|N/A)\s*\|"
)
# "MIG devices" table (driver 450+): "|  0    9   0   2  |   9MiB /  9984MiB    | 16      0 |  1   0    1    0    1 |":
# GPU, GPU instance, compute instance, MIG device | memory used / total | SMs, volatile uncorrected ECC | engines
_MIG = re.compile(
    r"^\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+|N/A)\b"
)
_NUM = re.compile(r"^(\d+(?:\.\d+)?)")
# "WARNING: infoROM is corrupted at gpu 0008:00:00.0" (printed after the table)
_INFOROM = re.compile(r"infoROM is corrupted at gpu\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")

NO_DEVICES = re.compile(r"No devices were found", re.I)
# https://github.com/microsoft/WSL/issues/6772 shows this exact line where the driver is unreachable.
COULD_NOT_COMMUNICATE = re.compile(
    r"NVIDIA-SMI has failed because it couldn'?t communicate with the NVIDIA driver[^\n]*", re.I
)
NVML_FAILED = re.compile(r"Failed to initiali[sz]e NVML:\s*([^\n]+)", re.I)
NVML_LIB_VERSION = re.compile(r"NVML library version:\s*(\d+(?:\.\d+)+)", re.I)


@dataclass
class NvidiaSmiTable:
    """What one `nvidia-smi` default output held."""

    smi_version: Optional[str] = None
    driver_version: Optional[str] = None
    cuda_version: Optional[str] = None  # the driver's CUDA ceiling (None if the header had none / N/A)
    windows: bool = False  # "KMD Version" header or a WDDM/TCC driver model column
    gpus: List[Gpu] = field(default_factory=list)
    no_devices: bool = False
    error: Optional[str] = None  # what nvidia-smi printed when it failed, verbatim
    nvml_error: Optional[str] = None  # NVML's name: DRIVER_NOT_LOADED, LIB_RM_VERSION_MISMATCH, UNKNOWN
    nvml_library_version: Optional[str] = None


def _num(text: str) -> Optional[float]:
    m = _NUM.match(text.strip())
    return float(m.group(1)) if m else None


def _int(text: str) -> Optional[int]:
    v = _num(text)
    return int(v) if v is not None else None


def _nvml_error_name(message: str) -> str:
    low = message.lower()
    if "version mismatch" in low:
        return "LIB_RM_VERSION_MISMATCH"
    if "driver not loaded" in low:
        return "DRIVER_NOT_LOADED"
    if "insufficient permissions" in low or "no permission" in low:
        return "NO_PERMISSION"
    if "not found" in low:
        return "LIBRARY_NOT_FOUND"
    return "UNKNOWN"


def parse_nvidia_smi_table(text: str) -> Optional[NvidiaSmiTable]:
    """Parse a default `nvidia-smi` output (possibly inside a larger paste); None when none is there."""
    out = NvidiaSmiTable()
    seen = False
    m = COULD_NOT_COMMUNICATE.search(text)
    if m:
        out.error = m.group(0).strip()
        out.nvml_error = "DRIVER_NOT_LOADED"
        seen = True
    m = NVML_FAILED.search(text)
    if m:
        out.error = m.group(0).strip()
        out.nvml_error = _nvml_error_name(m.group(1))
        seen = True
        v = NVML_LIB_VERSION.search(text)
        if v:
            out.nvml_library_version = v.group(1)
    if NO_DEVICES.search(text):
        out.no_devices = True
        seen = True

    current: Optional[dict] = None
    gpus: List[dict] = []
    in_processes = in_mig = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if out.smi_version is None:
            h = _HEADER.search(line)
            if h:
                seen = True
                out.smi_version = h.group(1)
                d = _DRIVER.search(line)
                if d:
                    out.driver_version = d.group(1)
                    out.windows = "KMD" in line
                c = _CUDA.search(line)
                if c and c.group(1) != "N/A":
                    out.cuda_version = c.group(1)
                continue
        if line.startswith("| Processes"):
            in_processes, in_mig = True, False
            continue
        if line.startswith("| MIG devices"):
            in_mig = True
            continue
        if in_mig:
            m = _MIG.match(line)
            if m:
                for g in gpus:
                    if g["index"] == int(m.group(1)):
                        g.setdefault("mig_devices", []).append(MigDevice(
                            index=int(m.group(4)), gpu_instance_id=int(m.group(2)),
                            compute_instance_id=int(m.group(3)),
                            sm_count=int(m.group(7)) if m.group(7).isdigit() else None,
                            memory_used_bytes=int(m.group(5)) * _MIB, memory_total_bytes=int(m.group(6)) * _MIB))
            continue
        if in_processes:
            p = _PROC.match(line)
            if p:
                idx = int(p.group(1))
                for g in gpus:
                    if g["index"] == idx:
                        mem = p.group(7)
                        g.setdefault("processes", []).append(GpuProcess(
                            pid=int(p.group(4)), name=p.group(6).strip(), type=p.group(5),
                            used_memory_bytes=int(mem[:-3]) * _MIB if mem.endswith("MiB") else None,
                            # the "GI ID" / "CI ID" columns: the MIG slice it runs on ("N/A" off MIG)
                            gpu_instance_id=int(p.group(2)) if (p.group(2) or "").isdigit() else None,
                            compute_instance_id=int(p.group(3)) if (p.group(3) or "").isdigit() else None))
            continue
        g1 = _GPU1.match(line)
        if g1:
            seen = True
            mode = g1.group(3)
            current = {
                "index": int(g1.group(1)), "name": g1.group(2).strip() or None,
                "pci_bus_id": g1.group(4),
            }
            if mode in ("On", "Off"):
                current["persistence_mode"] = mode == "On"
            elif mode in ("WDDM", "TCC", "MCDM"):
                out.windows = True
            ecc = g1.group(6).strip()
            if ecc.isdigit():
                current["ecc_volatile_uncorrected"] = int(ecc)
            if current["name"] and current["name"].endswith("..."):
                current["notes"] = ["name truncated by the nvidia-smi table"]
            gpus.append(current)
            continue
        if current is not None and "memory_total_bytes" not in current:
            g2 = _GPU2.match(line)
            if g2:
                fan, temp, perf, usage, cap = g2.group(1, 2, 3, 4, 5)
                current["fan_speed_pct"] = _num(fan) if fan.endswith("%") else None
                if fan.upper().startswith("ERR"):
                    current.setdefault("notes", []).append("fan speed: ERR!")
                current["temperature_c"] = _num(temp) if temp.endswith("C") else None
                current["performance_state"] = perf if perf.startswith("P") else None
                current["power_draw_w"] = _num(usage) if usage.endswith("W") else None
                current["power_limit_w"] = _num(cap) if cap.endswith("W") else None
                current["memory_used_bytes"] = int(g2.group(6)) * _MIB
                current["memory_total_bytes"] = int(g2.group(7)) * _MIB
                util = g2.group(8)
                current["utilization_gpu_pct"] = _num(util) if util.endswith("%") else None
                cm = g2.group(9).strip()
                current["compute_mode"] = {
                    "Default": "Default", "E. Process": "Exclusive_Process",
                    "E. Thread": "Exclusive_Thread", "Prohibited": "Prohibited",
                }.get(cm, cm or None)
                continue
        if current is not None and "memory_total_bytes" in current and "mig_mode_current" not in current:
            g3 = _GPU3.match(line)
            if g3:
                mig = g3.group(1)
                current["mig_mode_current"] = {"Enabled": True, "Disabled": False}.get(mig)
                continue
    if not seen:
        return None
    for bad in _INFOROM.findall(text):
        for g in gpus:
            # the warning uses the short domain ("0008:00:00.0"), the table the long one
            if g["pci_bus_id"].lower().endswith(bad.lower()[-7:]) and g["pci_bus_id"].lower().lstrip("0").endswith(
                    bad.lower().lstrip("0")):
                g["inforom_valid"] = False
    for g in gpus:
        g.setdefault("processes", [] if in_processes else None)
        if g.get("mig_devices"):
            g["mig_device_count"] = len(g["mig_devices"])
        out.gpus.append(Gpu(**g))
    return out
