"""Reader for a pasted `nvidia-smi` table: the driver, CUDA version and GPUs it shows."""

from __future__ import annotations

import re
from typing import List

from ...parsers.nvidia_smi_table import parse_nvidia_smi_table
from .base import BARE, LOOSE, STRUCTURED, Acc, Paste

# literal pieces of what parse_nvidia_smi_table reads: the header, the GPU rows' box lines, its failures
_SMI_KEYS = ["nvidia-smi", "no devices were found", "couldn't communicate", "couldnt communicate",
             "failed to initiali", "nvml library version", "inforom is corrupted"]


def smi_slice(paste: Paste) -> str:
    """The lines of the (first few) nvidia-smi tables and failure lines, not the whole paste."""
    lines = paste.lines
    keep: List[int] = []
    for i in paste.distinct(paste.with_any(_SMI_KEYS), head=40, tail=10):
        keep.append(i)
        if "NVIDIA-SMI" in lines[i]:
            # the table: box-drawing lines (and a blank line before the processes box) after the header
            j, blanks = i + 1, 0
            while j < len(lines) and j < i + 2000:
                s = lines[j].strip()
                if not s:
                    blanks += 1
                    if blanks > 2:
                        break
                elif s[0] in "|+=-" or s.startswith("No running processes"):
                    blanks = 0
                else:
                    break
                keep.append(j)
                j += 1
    return "\n".join(lines[i] for i in sorted(set(keep)))


# a MIG device the paste names (issue 42): `nvidia-smi -L`'s "  MIG 1g.5gb Device 0: (UUID: MIG-...)", a MIG UUID
# in CUDA_VISIBLE_DEVICES, a device name with its MIG profile ("NVIDIA A100-SXM4-80GB MIG 3g.40gb")
_MIG = re.compile(r"^\s*MIG \d+g\.\d+gb\s+Device\s+\d+:|\bMIG-(?:GPU-)?[0-9a-f]{8}-|[\s-]MIG[\s-]\d+g\.\d+gb\b")


# MIG said in words, the acronym with what it configures ("the configuration for MIG", "MIG is enabled", "7 MIG
# instances"): below a MIG device shown (issue 42, round 10)
_MIG_SAID = re.compile(r"\b(?:configur\w*|enabled|partitioned|split|sliced) (?:\w+ ){0,3}?(?:with |for |into |in )?MIG\b"
                       r"|\bMIG\b (?:is |was )?(?:enabled|on|mode|instances?|slices?|partitions?|profiles?|configuration)\b")


def read_mig(paste: Paste, acc: Acc) -> None:
    said = None
    for i in paste.with_any(["mig"]):
        m = _MIG.search(paste.lines[i])
        if m:
            acc.put("paste.mig_device", True, STRUCTURED if m.group(0).lstrip().startswith("MIG") else LOOSE,
                    paste.lines[i].strip()[:160])
            return
        said = said or _MIG_SAID.search(paste.lines[i])
    if said:
        acc.put("paste.mig_device", True, BARE, f"MIG said in the text: {said.group(0)}")


# a vGPU the paste names (issue 42): the word itself, NVIDIA's GRID/vGPU driver, a vGPU profile name (GRID A100-4C,
# NVIDIA A40-48C, A100-3-20C, L4-3Q: board, optional GPU-instance size, frame buffer in GB, series letter), or
# nvidia-smi -q's "Virtualization Mode : VGPU". NVIDIA's profile naming: https://docs.nvidia.com/vgpu/latest/
# grid-vgpu-user-guide/index.html (virtual GPU types: "-<frame buffer><series>", series A/B/C/Q)
_VGPU = re.compile(r"\bv-?GPUs?\b|\bGRID (?:driver|vGPU|[A-Z]\d{1,3})|Virtualization Mode\s*:\s*VGPU\b|"
                   r"\b(?:NVIDIA |GRID )[A-Z]{1,2}\d{1,3}[A-Za-z]*(?:-\d{1,2})?-\d{1,3}[ABCQ]\b")


def read_vgpu(paste: Paste, acc: Acc) -> None:
    for i in paste.distinct(paste.with_any(["vgpu", "v-gpu", "grid ", "virtualization mode", "nvidia "]),
                            head=400, tail=100):
        m = _VGPU.search(paste.lines[i])
        if m:
            acc.put("paste.vgpu", True, LOOSE, paste.lines[i].strip()[:160])
            return


# a reporter's own sentence that the machine has no NVIDIA GPU ("no GPU to speak of", "I don't have a GPU", "a
# CPU-only server"), or a Mac named (Apple silicon has no CUDA at all): said of the machine, by a subject, so that
# an error's "No CUDA GPUs are available" or "no GPU found" (a GPU machine that lost it) is not read as one
_NO_GPU = re.compile(
    r"\b(?:(?:i|we|it|machine|server|laptop|computer|pc|system|box|host|node|mac|vm)\s+(?:do(?:es)?n['\u2019]?t|"
    r"does\s+not|do\s+not)\s+have\s+(?:a|an|any)|(?:i|we)\s+have\s+no|but\s+no|"
    r"(?:i|we)\s+haven['\u2019]?t(?:\s+got)?(?:\s+(?:a|an|any))?|"
    # a failure put down to the missing GPU ("it fails due to no Nvidia GPU", round 25: ai-dock-001)
    r"(?:due\s+to|because(?:\s+of)?|since|as)\s+(?:there\s+is\s+|(?:i|we)\s+have\s+)?no)\s+(?:nvidia\s+|cuda[- ]capable\s+|"
    r"dedicated\s+|discrete\s+)?(?:gpus?|graphics\s+card|video\s+card)\b"
    r"(?!\s+(?:(?:is|was|are|were|gets?|got|being)\s+)?(?:detected|found|visible|available|recogni[sz]ed|listed|shown|used))"
    r"|\bcpu[- ]only\s+(?:machine|server|laptop|computer|pc|system|box|host|node|vm|instance)\b"
    r"|\b(?:i|we)\s+only\s+have\s+an?\s+(?:(?:intel|amd)(?:\s+(?:arc|radeon|iris(?:\s+xe)?))?|radeon)\s+(?:i?gpu|graphics)\b"
    r"|\b(?:macbook|mac\s+mini|mac\s+studio|imac|apple\s+(?:m[1-5]|silicon))\b"
    # the same said in Chinese: "我没有使用gpu" (I use no GPU), "没有显卡" (no graphics card), "不使用GPU" (issue 42,
    # round 15: paddle-012)
    r"|\u6ca1\u6709(?:\u4f7f\u7528|\u7528)?\s*(?:nvidia\s*)?(?:gpu|\u663e\u5361)|\u4e0d(?:\u4f7f\u7528|\u7528)\s*(?:gpu|\u663e\u5361)", re.I)


def read_no_gpu_said(paste: Paste, acc: Acc) -> None:
    for i in paste.distinct(paste.with_any(["gpu", "graphics card", "video card", "cpu only", "cpu-only", "mac",
                                            "apple", "\u663e\u5361"]), head=400, tail=100):
        m = _NO_GPU.search(paste.lines[i])
        if m:
            acc.put("paste.no_nvidia_gpu", True, LOOSE, paste.lines[i].strip()[:160])
            return


def read_nvidia_smi(paste: Paste, acc: Acc) -> None:
    read_mig(paste, acc)
    read_vgpu(paste, acc)
    read_no_gpu_said(paste, acc)
    t = parse_nvidia_smi_table(smi_slice(paste))
    if t is None:
        return
    if t.driver_version:
        acc.put("driver.version", t.driver_version, STRUCTURED, "nvidia-smi table")
        # the header's "CUDA Version" is the newest CUDA this driver supports, not an installed toolkit
        acc.put("driver.cuda", t.cuda_version, STRUCTURED, "nvidia-smi table header")
        acc.set_gpus(t.gpus, STRUCTURED)
        acc.put("driver.seen", True, STRUCTURED, "nvidia-smi table")
        acc.add_found("an nvidia-smi table (Windows)" if t.windows else "an nvidia-smi table")
        if t.windows:
            acc.put("host.os_hint", "Windows", LOOSE, "nvidia-smi table with a Windows driver model")
    if t.no_devices:
        acc.put("driver.no_devices", True, STRUCTURED, "nvidia-smi: No devices were found")
        acc.put("driver.seen", True, STRUCTURED, "nvidia-smi")
        acc.add_found("nvidia-smi output (No devices were found)")
    if t.error:
        acc.put("driver.smi_error", t.error, STRUCTURED, "nvidia-smi")
        acc.put("driver.nvml_error", t.nvml_error, STRUCTURED, "nvidia-smi")
        acc.put("driver.nvml_library_version", t.nvml_library_version, STRUCTURED, "nvidia-smi")
        acc.add_found("nvidia-smi failure message")
