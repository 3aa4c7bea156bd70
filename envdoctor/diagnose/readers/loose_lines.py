"""Reader for loose "key: value" lines a user typed: driver, CUDA, Python and torch versions, GPU names."""

from __future__ import annotations

import re
from typing import Optional

from .base import BARE, LOOSE, REPL, VERSION, Acc, Paste

# "Driver Version: 460.80" (nvidia-smi / -q), "Display Driver: 440.31", "Nvidia driver 465.89"
_DRIVER_SMI = re.compile(r"Driver Version\s*:\s*(\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
_DRIVER_LOOSE = re.compile(r"\bdriver(?:\s+version)?\b[^\d\n]{0,24}?(\d{3}\.\d{2,3}(?:\.\d{2,3})?)\b", re.I)
_DRIVER_BARE = re.compile(r"^\s*(\d{3}\.\d{2,3}(?:\.\d{2,3})?)\s*[,;.]*\s*$")
_CUDA_SMI = re.compile(r"CUDA Version\s*:\s*(\d+\.\d+)\b")
_PYTHON = re.compile(r"\bpython\s*(?:version)?\s*[:=]?\s*v?(3\.\d{1,2}(?:\.\d+)?|2\.7(?:\.\d+)?)\b", re.I)
_REPL_BANNER = re.compile(r"^Python (\d+\.\d+\.\d+)\s+\(")
# an item of a typed setting list that names torch's build CUDA beside its version ("2. Pytorch: ver 1.9, with
# cuda 11.1", "- torch: 2.1.0 with CUDA 12.1"): a "key: value" item, so a sentence ("the README says to install
# Torch 1.13 with CUDA 11.8") is not the reporter's torch (issue 42, round 13: pointnet2-pytorch-001)
_TORCH_ITEM_CUDA = re.compile(r"^\W*(?:\d{1,2}[.)]\s*)?(?:py)?torch(?:\s+version)?\s*[:=]\s*(?:ver(?:sion)?\.?\s*|v)?"
                              r"(\d+\.\d+(?:\.\d+)?)\s*,?\s*(?:with|w/|built with)\s+cuda[ -]?(\d{1,2}\.\d)\b(?![.\d])", re.I)
# the driver's CUDA said as a setting ("Cuda driver in my Ubuntu machine: 11.3", "CUDA driver version: 12.2"): a
# CUDA release (not a 3-digit driver branch, not the driver API's integer "CUDA Driver Version: 13000")
_DRIVER_CUDA_ITEM = re.compile(r"\bcuda driver\b(?:\s+version)?[^:=\d\n]{0,30}[:=]\s*(\d{1,2}\.\d)\s*$", re.I)
_TORCH_LABEL = re.compile(r"\b(?:py)?torch(?:\s+version)?\s*[:=]?\s*$", re.I)
_GPU_NAME = re.compile(
    r"\b((?:NVIDIA\s+)?(?:GeForce\s+(?:RTX|GTX|GT|MX)?\s*\w+(?:\s+(?:Ti|SUPER|D|Laptop GPU))*|"
    r"Tesla\s+[A-Z]\d+\w*(?:-\w+)*|Quadro\s+\w+(?:\s+\w+)?|TITAN\s+\w+|"
    r"RTX\s+(?:A?\d{4}|PRO\s+\d{4})(?:\s+Ada(?:\s+Generation)?)?|[AHBL]\d{1,3}[SX]?(?:\s+\d+GB)?(?:\s+PCIe|\s+SXM\d?)?))\b")


_LOOSE_WORDS = ["driver", "cuda version", "python", "torch", "gpu", "显卡", "graphics", "card", "nvidia", "geforce",
                "tesla", "quadro"]


def read_loose(paste: Paste, acc: Acc) -> None:
    # only lines holding a hint word (or starting with a number) are looked at: multi-MB logs stay fast
    lines = paste.lines
    idx = sorted(set(paste.with_any(_LOOSE_WORDS)) | {
        i for i, ln in enumerate(lines) if ln[:1].isdigit() and len(ln) < 20 and _DRIVER_BARE.match(ln)})
    n = len(lines)
    for i in paste.distinct(idx):  # bounded: facts come once; a log repeating a line adds nothing
        line = lines[i]
        m = _DRIVER_SMI.search(line)
        if m:
            acc.put("driver.version", m.group(1), REPL, line.strip())
        else:
            m = _DRIVER_LOOSE.search(line)
            if m:
                acc.put("driver.version", m.group(1), LOOSE, line.strip())
            else:
                m = _DRIVER_BARE.match(line)
                if m and 180 <= int(m.group(1).split(".")[0]) <= 999:
                    acc.put("driver.version", m.group(1), BARE, "a driver-like version on a line of its own")
        m = _CUDA_SMI.search(line)
        if m:
            # "CUDA Version: X" is nvidia-smi's header field (or nvidia-smi -q): the driver's ceiling
            acc.put("driver.cuda", m.group(1), REPL, line.strip())
        m = _REPL_BANNER.match(line)
        if m:
            acc.put("python.version", m.group(1), REPL, "Python REPL banner")
        else:
            have = re.search(r"\(you have (3\.\d{1,2}(?:\.\d+)?)\)", line)
            m = _PYTHON.search(line)
            if have and "python" in line.lower():
                # "Python 3.11.9 (you have 3.11.10)": the first is what an extension was built for
                acc.put("python.version", have.group(1), LOOSE, line.strip())
            elif m and "site-packages" not in line and "lib/python" not in line:
                acc.put("python.version", m.group(1), LOOSE, line.strip())
        m = _TORCH_ITEM_CUDA.search(line)
        if m:
            acc.put("torch.version", m.group(1), LOOSE, line.strip())
            acc.put("torch.cuda", m.group(2), LOOSE, line.strip())
        m = _DRIVER_CUDA_ITEM.search(line)
        if m:
            acc.put("driver.cuda", m.group(1), LOOSE, line.strip())
        if _TORCH_LABEL.search(line.replace("5. ", "")) and i + 1 < n:
            nxt = lines[i + 1].strip()
            if re.match(rf"^{VERSION}(?:[a-z]+\d*)?(?:\+[\w.]+)?$", nxt):
                acc.put("torch.version", nxt, LOOSE, f"{line.strip()} / {nxt}")
        if re.search(r"GPU|显卡|Graphics|Card|NVIDIA|GeForce|Tesla|Quadro", line):
            g = _GPU_NAME.search(line)
            if g and not line.lstrip().startswith("|"):
                acc.put("gpu.loose_name", g.group(1).strip(), LOOSE, line.strip())


def torch_version_from_packages(acc: Acc) -> Optional[str]:
    hit = acc.packages.get("torch")
    return hit[1].version if hit else None
