"""nvidia-smi probes: the driver from `nvidia-smi -q -x` (its --query-gpu CSV as fallback), NVLink, `topo -m`."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from envdoctor.model.facts import Driver, NvlinkLink, ProbeStatus, Topology
from envdoctor.parsers.nvidia_smi_csv import QUERY_GPU_FIELDS, driver_from_query_csv
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from envdoctor.parsers.nvlink import parse_nvlink_status
from envdoctor.parsers.topo import parse_topo
from envdoctor.probes.runner import RunResult

NVIDIA_SMI_TIMEOUT_S = 10.0
XML_ARGV = ("nvidia-smi", "-q", "-x")
CSV_ARGV = ("nvidia-smi", "--query-gpu=" + ",".join(QUERY_GPU_FIELDS), "--format=csv")
NVLINK_ARGV = ("nvidia-smi", "nvlink", "--status")
TOPO_ARGV = ("nvidia-smi", "topo", "-m")


def _failure(res: RunResult) -> Optional[Tuple[str, str, Optional[str]]]:
    """(status, reason, nvidia-smi's own message) when the command did not give usable output."""
    if res.not_found:
        return ProbeStatus.ABSENT, "nvidia-smi not found on PATH", None
    if res.error:
        return ProbeStatus.FAILED, res.describe(), None
    if res.returncode != 0:
        # e.g. "Failed to initialize NVML: Driver/library version mismatch" or "NVIDIA-SMI has failed
        # because it couldn't communicate with the NVIDIA driver": kept verbatim for the checks
        message = (res.stdout.strip() + "\n" + res.stderr.strip()).strip() or None
        return ProbeStatus.FAILED, res.describe(), message
    return None


def _failed_driver(res: RunResult, source: str) -> Optional[Driver]:
    """The Driver section for a run of nvidia-smi that gave no usable output, else None."""
    failed = _failure(res)
    if not failed:
        return None
    status, reason, message = failed
    return Driver(status=status, reason=reason, source=source, nvidia_smi_error=message)


def probe_nvidia_smi_xml(runner, timeout: float = NVIDIA_SMI_TIMEOUT_S) -> Driver:
    """The driver and GPUs from `nvidia-smi -q -x` (source "nvidia-smi-xml")."""
    res = runner.run(list(XML_ARGV), timeout=timeout)
    failed = _failed_driver(res, "nvidia-smi-xml")
    if failed:
        return failed
    xml = parse_nvidia_smi_xml(res.stdout)
    if xml.status == ProbeStatus.OK:
        return xml
    # nvidia-smi answered but not with XML it can parse (a truncated or odd -q -x): the CSV query reads the
    # same driver through another code path of nvidia-smi
    csv = probe_nvidia_smi_csv(runner, timeout)
    if csv.status == ProbeStatus.OK:
        return dataclasses.replace(csv, reason=f"{csv.reason} ({xml.reason})")
    return dataclasses.replace(xml, reason=f"{xml.reason}; CSV fallback: {csv.reason}")


def probe_nvidia_smi_csv(runner, timeout: float = NVIDIA_SMI_TIMEOUT_S) -> Driver:
    """The driver and GPUs from `nvidia-smi --query-gpu=... --format=csv` (source "nvidia-smi-csv")."""
    res = runner.run(list(CSV_ARGV), timeout=timeout)
    failed = _failed_driver(res, "nvidia-smi-csv")
    if failed:
        return failed
    return driver_from_query_csv(res.stdout)


def probe_nvlink_status(runner, timeout: float = NVIDIA_SMI_TIMEOUT_S) -> Optional[Dict[int, List[NvlinkLink]]]:
    """GPU index -> links from `nvidia-smi nvlink --status`; ``None`` when it could not be run."""
    res = runner.run(list(NVLINK_ARGV), timeout=timeout)
    if _failure(res):
        return None
    return parse_nvlink_status(res.stdout)


def probe_topology_smi(runner, timeout: float = NVIDIA_SMI_TIMEOUT_S) -> Topology:
    """The GPU-to-GPU connection matrix from `nvidia-smi topo -m`."""
    res = runner.run(list(TOPO_ARGV), timeout=timeout)
    failed = _failure(res)
    if failed:
        status, reason, message = failed
        if message and message.splitlines()[-1][:200] not in reason:  # describe() may already quote it
            reason = f"{reason}: {message.splitlines()[-1][:200]}"
        return Topology(status=status, reason=reason)
    topo = parse_topo(res.stdout)
    if not topo.gpus:
        return Topology(status=ProbeStatus.FAILED, reason="`nvidia-smi topo -m` printed no GPU matrix")
    return Topology(
        status=ProbeStatus.OK,
        reason=f"nvidia-smi topo -m: {len(topo.gpus)} GPU(s)",
        gpu_matrix=topo.matrix,
    )
