"""What each benchmark result should have reached, from compat_data/bench.json and the run's own facts (pure).

One place computes the expectation; the bench checks turn it into verdicts and the results table prints it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from ..compat.bench import bench_table
from ..domain.fastclass import dataclass
from ..domain.gpus import mig_board, mig_profile
from ..domain.pci import bus_key
from ..model.facts import LIMITING_THROTTLE_REASONS, BenchResult, DataPath, Facts, Gpu, MigDevice, ProbeStatus
from .links import gpu_index, link_kind, min_link, pcie_path_off, platform_link, topology_kind
from .links import peer_access as links_peer_access

if TYPE_CHECKING:
    from ..compat.queries import Compat

MATMUL_DTYPE = {"matmul_fp32": "fp32", "matmul_tf32": "tf32", "matmul_bf16": "bf16", "matmul_fp16": "fp16",
                "matmul_fp8": "fp8"}


@dataclass(frozen=True)
class Expectation:
    expected: Optional[float]  # None: no reference
    unit: Optional[str]
    ratio: Optional[float]
    verdict: str  # "ok", "warning", "error", "no reference", "skipped", "failed"
    basis: str  # "80.3% of H100 SXM5 80GB's 989.5 dense bf16 TFLOP/s (mamf-finder)", or why there is none
    source: Optional[str] = None


def gpu_for(facts: Facts, r: BenchResult) -> Tuple[Optional[int], Optional[Gpu]]:
    """The driver's GPU that a result ran on: by PCI bus (CUDA and NVML may number GPUs differently)."""
    key = bus_key(r.params.get("pci_bus_id")) if isinstance(r.params, dict) else None
    for i, g in enumerate(facts.driver.gpus):
        if key and bus_key(g.pci_bus_id) == key:
            return i, g
    name = r.params.get("gpu_name") if isinstance(r.params, dict) else None
    same = [(i, g) for i, g in enumerate(facts.driver.gpus) if name and g.name == name]
    if len(same) == 1:
        return same[0]
    return None, None


def storage_for(facts: Facts, r: BenchResult) -> Tuple[Optional[int], Optional[DataPath]]:
    path = r.params.get("path") if isinstance(r.params, dict) else None
    path = path or r.device
    for i, p in enumerate(facts.storage.paths):
        if p.path == path:
            return i, p
    return None, None


# transports of virtual disks: their `rotational` flag is whatever the hypervisor says (virtio-blk reports 1 by
# default), so it says nothing about the medium (Linux virtio_blk sets no QUEUE_FLAG_NONROT unless told)
VIRTUAL_TRANSPORTS = ("virtio", "xen", "vmbus", "hyperv", "loop", "nbd", "rbd")


def network_volume_model(p: Optional[DataPath], models: Any = ()) -> Optional[str]:
    """The device model of a network block volume (EBS, GCP Persistent Disk, Azure), or None."""
    model = ((p.device_model if p is not None else None) or "").strip()
    if not model:
        return None
    low = model.lower()
    for m in models or NETWORK_VOLUME_MODELS:
        if low.startswith(m.lower()) or m.lower() in low:
            return model
    return None


# sysfs / lsblk models of cloud network volumes; a bare "Virtual Disk" is left out (VMware's local disks say it too)
NETWORK_VOLUME_MODELS = ("Amazon Elastic Block Store", "nvme_card-pd", "PersistentDisk", "Msft Virtual Disk",
                         "Microsoft NVMe Direct Disk")


def disk_kind(p: Optional[DataPath], models: Any = ()) -> Optional[str]:
    """hdd, sata_ssd, nvme, network (a network filesystem), network_block (a network volume by model), or None
    (unknown: a virtual disk is measured, never blamed). The transport is read before `rotational`."""
    if p is None:
        return None
    fstype = (p.fstype or "").lower()
    if (p.kind or "").lower() == "network" or fstype.startswith(("nfs", "cifs", "smb", "fuse.s3", "fuse.gcs")):
        return "network"
    if network_volume_model(p, models):
        return "network_block"
    transport = (p.transport or "").lower()
    if transport in VIRTUAL_TRANSPORTS or (p.block_device or "").startswith(("vd", "xvd", "loop")):
        return None
    if transport == "nvme" or (p.block_device or "").startswith("nvme"):
        return "nvme"
    if p.rotational is True:
        return "hdd"  # a physical transport (sata, sas, usb, md/dm over spinning members) or none reported
    if p.rotational is False and transport in ("sata", "sas", "ata"):
        return "sata_ssd"
    return None


def unknown_disk_why(p: Optional[DataPath]) -> str:
    if p is None:
        return "the kind of disk under this path is unknown"
    transport = (p.transport or "").lower()
    if transport in VIRTUAL_TRANSPORTS or (p.block_device or "").startswith(("vd", "xvd")):
        return (f"unknown kind: a virtual disk ({p.transport or p.block_device}); its rotational flag comes from the "
                "hypervisor, so it is measured, not judged")
    return "the kind of disk under this path is unknown"


def _verdict(ratio: float, band: Any) -> str:
    if ratio <= band.error_below + 1e-9:  # at or below the error line (60% of achievable by default)
        return "error"
    if ratio < band.warning_below:
        return "warning"
    return "ok"


def _table(compat: Compat) -> Any:
    try:
        return bench_table(compat)
    except LookupError:
        return None


GPU_KERNELS = tuple(MATMUL_DTYPE) + ("membw_device",)
# TF32 overrides that change what a "fp32" or "tf32" matmul measures (PyTorch CUDA semantics notes; NVIDIA
# cuBLAS docs, NVIDIA_TF32_OVERRIDE): the payload records them in params["env_overrides"]
TF32_ON = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"
TF32_OFF = "NVIDIA_TF32_OVERRIDE"


def effective_dtype(r: BenchResult) -> Optional[str]:
    """What a matmul result really measured when an environment override changed it; None when as named."""
    env = r.params.get("env_overrides") if isinstance(r.params, dict) else None
    if not isinstance(env, dict):
        return None
    if r.name == "matmul_tf32" and str(env.get(TF32_OFF, "")).strip() == "0":
        return f"fp32 ({TF32_OFF}=0 turns TF32 off in cuBLAS)"
    if r.name == "matmul_fp32" and str(env.get(TF32_OFF, "")).strip() != "0" and \
            str(env.get(TF32_ON, "")).strip() not in ("", "0"):
        return f"tf32 ({TF32_ON}={env.get(TF32_ON)} lets cuBLAS use TF32 for float32 matmuls)"
    return None


def expect(facts: Facts, compat: Compat, r: BenchResult) -> Expectation:
    """The expectation for one result; never raises for missing facts (says "no reference" and why)."""
    if r.status != ProbeStatus.OK or r.value is None:
        return Expectation(None, r.unit, None, r.status, r.reason or r.status)
    table = _table(compat)
    if table is None:
        return Expectation(None, r.unit, None, "no reference", "compat_data/bench.json is not available")
    if r.name in GPU_KERNELS:
        return _gpu_kernel(facts, compat, table, r)
    if r.name in ("h2d_pinned", "d2h_pinned"):
        return _host_copy(facts, compat, table, r)
    if r.name == "p2p":
        return _p2p(facts, compat, table, r)
    if r.name == "allreduce":
        return _allreduce(facts, compat, table, r)
    if r.name == "disk_seq_read":
        return _disk(facts, table, r)
    return Expectation(None, r.unit, None, "no reference", _no_reference_why(r))


def _no_reference_why(r: BenchResult) -> str:
    return {
        "membw_host": "host memory bandwidth depends on the DIMMs and channels populated: no reference",
        "h2d_pageable": "pageable copies go through a CPU staging copy: compared with h2d_pinned, not a table",
        "disk_rand_read": "published IOPS are at deep queues; this reads at queue depth 1: no reference",
        "sustained": "judged over time (throttling, slowest GPU) and against the GPU's bf16 expectation",
    }.get(r.name, "no reference")


def _judge(table: Any, r: BenchResult, row: Any, expected: float, basis: str, band_table: Optional[str] = None
           ) -> Expectation:
    ratio = r.value / expected
    band = table.band(band_table or row.band_table)
    basis += (f" ({'derived' if row.derived else 'measured'}: {row.method}; confidence {row.confidence}; "
              f"warning below {band.warning_below:.0%}, error below {band.error_below:.0%})")
    return Expectation(round(expected, 2), r.unit, round(ratio, 3), _verdict(ratio, band), basis, row.source)


def spec_for(facts: Facts, compat: Compat, r: BenchResult) -> Tuple[Optional[str], Any]:
    """(the GPU's name as reported, its gpus.json row or None)."""
    _i, g = gpu_for(facts, r)
    name = (g.name if g is not None else None) or (r.params.get("gpu_name") if isinstance(r.params, dict) else None)
    try:
        spec = compat.gpu(name) if name else None
    except Exception:
        spec = None
    return name, spec


def _gpu_kernel(facts: Facts, compat: Compat, table: Any, r: BenchResult) -> Expectation:
    if not (r.device or "").startswith("cuda"):
        return Expectation(None, r.unit, None, "no reference", "CPU: no reference (depends on the CPU)")
    relabel = effective_dtype(r)
    if relabel:
        return Expectation(None, r.unit, None, "no reference", f"not judged as {r.name}: it measured {relabel}")
    name, spec = spec_for(facts, compat, r)
    if spec is None:
        return Expectation(None, r.unit, None, "no reference",
                           f"no reference for this GPU ({name or 'unknown name'})")
    row = table.gpu_row(spec.name, r.name)
    if row is None:
        why = table.gap(spec.name, r.name)
        return Expectation(None, r.unit, None, "no reference",
                           f"no reference for this GPU: no {r.name} figure for {spec.name}"
                           + (f" ({why})" if why else ""))
    share = mig_share(facts, compat, r, spec)
    if share is not None:
        fraction, words = share
        if fraction is None:
            return Expectation(None, r.unit, None, "no reference", words)
        expected = row.expected * fraction
        # the slice's share is an estimate on top of the board's figure: judged in the derived band
        return _judge(table, r, row, expected, f"{expected:g} {row.unit} for {words} of {spec.name}'s "
                      f"{row.expected:g}", band_table="gpu_derived")
    if row.best_shape and _shape_of(r) == row.best_shape:
        # the sweep picked the shape the source's best figure was measured at: judged against that figure
        return _judge(table, r, row, row.best_shape_expected,
                      f"{row.best_shape_expected:g} {row.unit} for {spec.name} at {row.best_shape}")
    return _judge(table, r, row, row.expected, f"{row.expected:g} {row.unit} for {spec.name}"
                  + (f" at {row.shape}" if row.shape and "x" in row.shape else ""))


def _shape_of(r: BenchResult) -> Optional[str]:
    shape = r.params.get("shape") if isinstance(r.params, dict) else None
    if isinstance(shape, (list, tuple)) and len(shape) == 3 and all(isinstance(x, int) for x in shape):
        return "x".join(str(x) for x in shape)
    return None


def _on_mig(facts: Facts, r: BenchResult) -> Tuple[bool, Optional[Gpu]]:
    """(the result ran on a MIG slice, the parent GPU's facts): by the device name CUDA gives a MIG device
    ("... MIG 1g.10gb"), by the slice's own SM count, or by its GPU being in MIG mode (CUDA sees only slices)."""
    _i, g = gpu_for(facts, r)
    name = r.params.get("gpu_name") if isinstance(r.params, dict) else None
    return bool(mig_profile(name) or (g is not None and g.mig_mode_current)), g


def _slice_of(g: Optional[Gpu], r: BenchResult) -> Optional[MigDevice]:
    """The parent's MIG device this result ran on: by UUID, else by profile or SM count when only one fits."""
    devs = list((g.mig_devices or []) if g is not None else [])
    p = r.params if isinstance(r.params, dict) else {}
    uuid = str(p.get("uuid") or "").lower()
    for d in devs:
        if uuid and d.uuid and d.uuid.lower().endswith(uuid.replace("mig-", "")):
            return d
    profile = mig_profile(p.get("gpu_name"))
    sms = p.get("sm_count")
    fits = [d for d in devs if (profile is None or d.profile in (None, profile))
            and (not isinstance(sms, int) or d.sm_count in (None, sms))]
    shapes = {(d.sm_count, d.memory_total_bytes) for d in fits}
    return fits[0] if fits and len(shapes) == 1 else None


def slice_of(g: Optional[Gpu], r: BenchResult) -> Optional[MigDevice]:
    """The MIG device of ``g`` that result ``r`` ran on, when it can be told (``_slice_of``)."""
    return _slice_of(g, r)


def mig_share(facts: Facts, compat: Compat, r: BenchResult, spec: Any) -> Optional[Tuple[Optional[float], str]]:
    """None when the result ran on a whole GPU; else (the slice's fraction of the board, its words), or
    (None, why) when the slice's size is unknown: a slice is never judged against the whole board.

    A MIG slice has its own SMs and its own share of the memory controllers (NVIDIA MIG User Guide, "Supported
    MIG Profiles": fraction of SMs and of memory per profile; a 1g.10gb of an H100 has 16 of its 132 SMs):
    matmul throughput scales with the slice's SMs, device memory bandwidth with its memory share.
    """
    on, g = _on_mig(facts, r)
    if not on:
        return None
    p = r.params if isinstance(r.params, dict) else {}
    d = _slice_of(g, r)
    profile = mig_profile(p.get("gpu_name")) or (d.profile if d is not None else None)
    what = f"a MIG {profile} slice" if profile else "a MIG slice"
    if r.name == "membw_device":
        mem = p.get("memory_total_bytes") if isinstance(p.get("memory_total_bytes"), int) else (
            d.memory_total_bytes if d is not None else None)
        board = None
        if g is not None and g.memory_total_bytes and (mem is None or g.memory_total_bytes > mem):
            board = g.memory_total_bytes
        else:
            whole = compat.gpu(mig_board(p.get("gpu_name")) or spec.name) if spec is not None else None
            board = whole.memory_bytes if whole is not None else None
        if not mem or not board or mem >= board:
            return None, (f"ran on {what} whose share of the board's memory is unknown: not judged against the "
                          "whole board")
        f = mem / board
        return f, f"{what} ({mem >> 20} of {board >> 20} MiB: {f:.1%} of the memory bandwidth)"
    sms = p.get("sm_count") if isinstance(p.get("sm_count"), int) else (d.sm_count if d is not None else None)
    board_sms = getattr(spec, "sm_count", None)
    if not sms or not board_sms or sms >= board_sms:
        why = ("the slice's SM count is unknown" if not sms else
               f"{spec.name}'s SM count is not in gpus.json" if not board_sms else
               f"the slice reports {sms} SMs, not fewer than the board's {board_sms}")
        return None, f"ran on {what}: {why}, so it is not judged against the whole board"
    f = sms / board_sms
    return f, f"{what} ({sms} of {board_sms} SMs: {f:.1%})"


# GPUs whose host memory is reached over NVLink-C2C, not PCIe (Grace Hopper / Grace Blackwell superchips)
C2C_GPU = re.compile(r"^(?:NVIDIA\s+)?(GH|GB)\d{3}", re.IGNORECASE)


def c2c_link(family: str) -> str:
    """The host_copy link row of a superchip family: "GH" (Grace Hopper: one GPU per C2C) -> "c2c", "GB"
    (Grace Blackwell: one Grace's C2C serves two GPUs) -> "c2c_gb200"."""
    return "c2c_gb200" if family.upper() == "GB" else "c2c"


def pcie_link_words(gen: Optional[int], width: Optional[int]) -> str:
    """"a Gen4 x16 link", and what is not known said so: "a x16 link of unknown generation"."""
    if gen and width:
        return f"a Gen{gen} x{width} link"
    if gen:
        return f"a Gen{gen} link of unknown width"
    if width:
        return f"a x{width} link of unknown generation"
    return "a PCIe link of unknown generation and width"


def _host_copy(facts: Facts, compat: Compat, table: Any, r: BenchResult) -> Expectation:
    if _on_mig(facts, r)[0]:
        # a slice has its share of the copy engines (MIG User Guide: 1 of them on a 1g profile): the link's
        # figure is not what one slice's engines reach, and no per-profile measurement was found
        return Expectation(None, r.unit, None, "no reference",
                           "ran on a MIG slice (its share of the copy engines): no per-slice host-copy reference")
    _i, g = gpu_for(facts, r)
    name, spec = spec_for(facts, compat, r)
    model = spec.name if spec is not None else (name or "")
    direction = "d2h" if r.name.startswith("d2h") else "h2d"
    c2c = C2C_GPU.match(model) or C2C_GPU.match(name or "")
    if c2c:
        # Grace Blackwell shares one Grace's NVLink-C2C between two GPUs: its own figures, never GH200's
        link = c2c_link(c2c.group(1))
        got = table.host_copy(link, direction=direction)
        if got is None:
            return Expectation(None, r.unit, None, "no reference", f"no NVLink-C2C reference for {model}")
        expected, row = got
        return _judge(table, r, row, expected, f"NVLink-C2C ({model}): {expected:g} GB/s one way")
    if g is None:
        return Expectation(None, r.unit, None, "no reference", "the GPU's PCIe link is unknown")
    gen, width = g.pcie_gen_max, g.pcie_width_max
    # fewer lanes than the card where the platform gives fewer (an x8 slot, a VM's wiring): judged at those
    plat = platform_link(facts, _i)
    what = "the link's maximum"
    if plat is not None and (width is None or plat.width < width):
        width, what = plat.width, f"what the platform gives: {plat.why}"
    got = table.host_copy("pcie", gen, width)
    if got is None:
        return Expectation(None, r.unit, None, "no reference",
                           f"no reference for {pcie_link_words(gen, width)}")
    expected, row = got
    basis = f"Gen{gen} x{width} ({what}): {expected:.1f} GB/s one way"
    if width != row.width:
        basis += f" (x{row.width} figure scaled by lanes)"
    return _judge(table, r, row, expected, basis)


def peer_access(facts: Facts, r: BenchResult, a: Optional[int], b: Optional[int]) -> Optional[bool]:
    """Whether the two GPUs of a p2p result can reach each other's memory: CUDA's answer in the run
    (torch.cuda.can_device_access_peer, params["p2p_access"]), else the facts' (bench.links.peer_access: CUDA in
    the inspected interpreter, NVML's P2P status, the topology's P2P matrix); None: unknown."""
    can = r.params.get("p2p_access") if isinstance(r.params, dict) else None
    if isinstance(can, bool):
        return can
    return links_peer_access(facts, a, b).access


def _p2p(facts: Facts, compat: Compat, table: Any, r: BenchResult) -> Expectation:
    a = gpu_index(facts, r.params.get("src_pci_bus_id"))
    b = gpu_index(facts, r.params.get("dst_pci_bus_id"))
    if peer_access(facts, r, a, b) is False:
        # no peer access: the copy is staged through host memory, so a link's peer figure does not apply. GeForce
        # cards have no P2P over PCIe by design; on data-center GPUs interconnect.topology says why it matters
        # (NVML nvmlDeviceGetP2PStatus NOT_SUPPORTED / CUDA cudaDeviceCanAccessPeer 0)
        return Expectation(None, r.unit, None, "no reference",
                           "no peer access between these GPUs (CUDA can_device_access_peer is False): the copy goes "
                           "through host memory, so it is measured, not judged against the link's peer figure")
    kind, why = link_kind(facts, compat, a, b)
    if kind is None:
        return Expectation(None, r.unit, None, "no reference", f"link unknown: {why}")
    if kind == "pcie" and why.endswith("(SYS)"):
        # across CPU sockets the copy crosses the socket interconnect (UPI, xGMI), which sets its rate; the PCIe
        # peer figures are of GPUs under one switch or across one CPU's root ports (nvbandwidth-50)
        return Expectation(None, r.unit, None, "no reference",
                           f"{why}: across CPU sockets the socket interconnect sets the rate; no measured reference")
    if kind == "pcie":
        gen, width = min_link([facts.driver.gpus[a], facts.driver.gpus[b]])  # type: ignore[index]
        got = table.p2p("pcie", gen, width)
        why += f" ({pcie_link_words(gen, width)})"
    else:
        got = table.p2p(kind)
    if got is None:
        return Expectation(None, r.unit, None, "no reference", f"no reference for {why}")
    expected, row = got
    return _judge(table, r, row, expected, f"{why}: {expected:g} GB/s one way")


def _allreduce(facts: Facts, compat: Compat, table: Any, r: BenchResult) -> Expectation:
    buses = r.params.get("pci_bus_ids") or []
    idx = [i for i in (gpu_index(facts, b) for b in buses) if i is not None]
    if len(idx) < 2 or len(idx) != len(buses):
        return Expectation(None, r.unit, None, "no reference",
                           "the GPUs of the all-reduce are not in the driver facts")
    kind, why = topology_kind(facts, compat, idx)
    if kind is None:
        return Expectation(None, r.unit, None, "no reference", why)
    if kind == "pcie":
        off = pcie_path_off(facts, idx)
        if off is not None:
            return Expectation(None, r.unit, None, "no reference", off)
    row = table.topology(kind)
    if row is None:
        return Expectation(None, r.unit, None, "no reference", f"no reference for {why}")
    expected = row.expected
    if kind == "pcie":  # a ring is bounded by its slowest PCIe link
        gen, width = min_link([facts.driver.gpus[i] for i in idx])
        got = table.p2p("pcie", gen, width)
        if got is None:
            return Expectation(None, r.unit, None, "no reference", f"no PCIe Gen{gen} x{width} reference")
        expected = got[0]
        why += f", slowest link Gen{gen} x{width}"
    return _judge(table, r, row, float(expected), f"{why}: busbw {expected:g} GB/s")


def _disk(facts: Facts, table: Any, r: BenchResult) -> Expectation:
    _i, p = storage_for(facts, r)
    nb = table.disks.get("network_block")
    kind = disk_kind(p, nb.models if nb is not None else ())
    if kind is None:
        return Expectation(None, r.unit, None, "no reference", unknown_disk_why(p))
    band = table.band("disk")
    row = table.disks.get(kind)
    if kind in ("hdd", "network"):
        if table.fast_local_mbs is None:
            return Expectation(None, r.unit, None, "no reference", "no fast-local-storage figure")
        expected, src = table.fast_local_mbs
        what = "a rotational disk" if kind == "hdd" else "a network filesystem"
        basis = f"fast local storage reads {expected:g}+ MB/s; this path is on {what}"
        ratio = r.value / expected
        return Expectation(expected, r.unit, round(ratio, 3), _verdict(ratio, band), basis, src)
    if row is None or not row.seq_read_floor_mbs:
        return Expectation(None, r.unit, None, "no reference", f"no reference for {kind}")
    expected = float(row.seq_read_floor_mbs)
    ratio = r.value / expected
    if kind == "network_block":
        basis = (f"a network block volume{f' ({p.device_model})' if p and p.device_model else ''}: judged against its documented "
                 f"baseline, {expected:g} MB/s at queue depth 1")
    else:
        basis = f"a healthy {kind.replace('_', ' ')} reads over {expected:g} MB/s even at queue depth 1"
    return Expectation(expected, r.unit, round(ratio, 3), _verdict(ratio, band), basis, row.source)


# A clock-event reason read during a kernel is the cause of a slow result only when it held (NVML reference,
# nvmlClocksEventReasons): SW Power Cap "is active when the GPU power draw is at the power limit" -- how an
# H100/H200 at its default limit runs a matmul, so it is no cause by itself (a lowered limit is its own cause);
# HW Slowdown "may be also reported during PState or clock change", so a single sample of it is not throttling.
HELD_MIN_SAMPLES = 2
HELD_MIN_FRACTION = 0.1


def held_throttles(g: Optional[Gpu], r: Optional[BenchResult] = None) -> List[str]:
    """The limiting clock-event reasons that held while ``r`` ran (or in the snapshot's one reading): a reason
    sampled during the kernel counts when seen in >= 2 samples and >= 10% of them (``throttle_reason_samples``);
    HW Slowdown from one reading alone (no sample counts) does not; SW Power Cap never does on its own."""
    counts = r.params.get("throttle_reason_samples") if r is not None and isinstance(r.params, dict) else None
    n = r.params.get("nvml_samples") if r is not None and isinstance(r.params, dict) else None
    held = set()
    if isinstance(counts, dict) and isinstance(n, int) and n > 0:
        held = {x for x, c in counts.items()
                if isinstance(c, int) and c >= HELD_MIN_SAMPLES and c >= HELD_MIN_FRACTION * n}
    else:
        seen = set(r.params.get("throttle_reasons_seen") or []) if r is not None and isinstance(r.params, dict) else set()
        held = {x for x in seen if x != "hw_slowdown"}  # no counts: a HW Slowdown may have been one sample
    if g is not None:
        held.update(x for x in (g.throttle_reasons or []) if x != "hw_slowdown")
    return [x for x in LIMITING_THROTTLE_REASONS if x in held and x != "sw_power_cap"]


def limiting_throttles(g: Optional[Gpu], r: Optional[BenchResult] = None) -> List[str]:
    """Every limiting reason seen in the snapshot or while ``r`` ran, held or not (what the evidence lists)."""
    seen = set((g.throttle_reasons or []) if g is not None else [])
    if r is not None and isinstance(r.params, dict):
        seen.update(r.params.get("throttle_reasons_seen") or [])
    return [x for x in LIMITING_THROTTLE_REASONS if x in seen]
