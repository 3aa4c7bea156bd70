"""Reader for what a report says in words about the NVIDIA driver and the GPU (issue 42, round 10).

Two signals, for a paste that shows no driver version of its own (no nvidia-smi table, no collect_env):

- ``paste.driver_branches``: the driver branches the report names ("470 535", highest last): a package ("nvidia-driver-535",
  "nvidia-580-open", "nvidia-470-server"), a branch ("R535", "the 535 driver", "NVIDIA 535", "470xx") or a full
  driver version ("driver 535.104.05"). A branch is a three-digit number from 180 (the oldest Linux branches
  envdoctor's tables know are far newer) to 999.
- ``paste.driver_refuses_gpu``: the reporter says the driver does not drive the GPU: it "does not work", "ignored
  the GPU", is "incompatible with" the card, "no longer supports" it, or the desktop fell back to the
  modesetting / VESA / nouveau / llvmpipe driver, or lshw shows the display UNCLAIMED.
- ``paste.module_not_loaded_said`` (round 15): the reporter says the driver's kernel module had to be built or its
  signing key enrolled by hand, the ways a module ends up not loaded for the running kernel: DKMS run by hand
  "after a kernel upgrade" (DKMS builds the module for each new kernel itself, https://github.com/dell/dkms), the
  driver stopping "after a kernel upgrade", the Machine Owner Key (MOK) enrolled again for Secure Boot (a module
  signed with a key the firmware does not trust is refused: https://wiki.ubuntu.com/UEFI/SecureBoot). Read only
  where the paste names NVIDIA.

Neither of the first two says which driver is installed; the check that reads them (checks/diagnose_driver_gpu.py) sets them
beside the GPU's own last branch (compat_data/driver_gpu_support.json).
"""

from __future__ import annotations

import re
from typing import List

from .base import LOOSE, Acc, Paste

_BRANCH = re.compile(
    r"(?i)\bnvidia[-_ ](?:(?:graphics[-_ ])?drivers?[-_ ]|dkms[-_ ]|utils[-_ ]|kernel[-_ ](?:source|common)[-_ ])?"
    r"(?:legacy[-_ ])?(\d{3})(?:xx)?(?:[-_ ](?:open|server|dkms))?(?![\d.])"
    r"|\b(?:driver|branch|drivers)(?: version)?\s+(?-i:R)?(\d{3})(?:\.\d{1,3}){0,2}(?![\d.]*\d)"
    r"|(?<![\w.])(?-i:R)?(\d{3})(?:xx|\.\d{1,3}(?:\.\d{1,3})?)?\s+(?:NVIDIA\s+|nvidia\s+|proprietary\s+|legacy\s+)?"
    r"(?:drivers?|branch|series)\b"
    r"|(?<![\w.])(?-i:R)(\d{3})\b|(?<![\w.])(\d{3})xx\b")
_REFUSES = re.compile(
    r"(?i)\bignor(?:e|es|ed|ing) (?:the |my |this |that )?(?:GPU|card|device|graphics)"
    r"|\bincompatible with (?:the |my |this )?(?:GPU|card|GTX|GT\b|GeForce|Quadro|Tesla|NVIDIA)"
    r"|\b(?:driver|drivers|branch|nvidia-\S+)\b[^.\n]{0,40}\bno long(?:er)? (?:supports?|drives?)\b(?! CUDA)"
    r"|\b(?:nvidia|the|proprietary)(?: nvidia)? drivers? (?:does not|doesn'?t|did not|didn'?t|won'?t|will not|cannot|can'?t)"
    r" (?:work|load|support|recogni[sz]e|detect)"
    r"|\b(?:fallback|fall(?:s|ing)? back to|falling back to) (?:the )?(?:modesetting|VESA|nouveau|llvmpipe)"
    r"|\*-display UNCLAIMED|\bdisplay\b[^\n]{0,20}\bUNCLAIMED\b")
_KERNEL_UPGRADE = r"\bafter (?:a |an |the |every |each |any )?(?:new )?kernel (?:upgrade|update)s?\b"
_MODULE_SAID = re.compile(
    rf"(?i)\bdkms (?:install|build|autoinstall)\b[^\n]{{0,80}}?{_KERNEL_UPGRADE}"
    rf"|{_KERNEL_UPGRADE}[^.\n]{{0,30}}?\b(?:I have to|I need to|I must|I had to)\b[^.\n]{{0,30}}?\bdkms\b"
    rf"|{_KERNEL_UPGRADE}[^.\n]{{0,60}}?\b(?:nvidia|driver)\b[^.\n]{{0,40}}?\b(?:stops?|stopped|may stop|no longer|"
    r"does ?n'?t|does not|won'?t|fails?|failed|breaks?|broke)\b"
    r"|\b(?:re-?)?enrol(?:l|ls|led|ling)?\b[^.\n]{0,20}?\bMOK\b|\bMOK\b[^.\n]{0,30}?\benrol")
# a new kernel said to break the driver, or the driver said not to work on it (issue 42, round 23: pop-os-004,
# cachyos-002/-003/-004 beside round 12's elementary-001 and round 16's negativo17-006): the module is built per
# kernel (DKMS, akmods), and a driver release without the patches for a new kernel fails to build there
_NEG = r"(?:do(?:es)?n'?t|dont|does not|do not|won'?t|wont|will not|can'?t|cannot|fails? to|not)"
_KERNEL_BREAKS = re.compile(
    r"(?i)\bkernel\s+v?\d+\.\d+(?:\.\d+)?\b[^.\n]{0,40}?\b(?:breaks?|broke)\b[^.\n]{0,20}?\bnvidia"
    rf"|\bnvidia(?:[- ]drivers?)?\b[^.\n]{{0,30}}?\b{_NEG} (?:work|load|build|compile)\b[^.\n]{{0,20}}?"
    r"\b(?:on|with|for|against|under) (?:the )?(?:newest|latest|new|newer|current) kernels?\b"
    rf"|\bkernels?\b[^.\n]{{0,60}}?\b{_NEG} (?:work|load|build|compile)\b(?: with)?(?: the)? nvidia(?:[- ]drivers?)?\b"
    # a kernel release on a line that speaks of the kernel ("the version 6.13 and 6.13.1 doesn't work with nvidia
    # drivers ... kernel headers"): only lines holding "kernel" are read
    rf"|\b[3-7]\.\d{{1,2}}(?:\.\d{{1,3}})?(?:-[\w.]+)?\s+{_NEG} (?:work|load|build|compile)\b(?: with)?(?: the)? nvidia"
    r"(?:[- ]drivers?)?\b")
_MODULE_WORDS = ["dkms", "kernel upgrade", "kernel update", "mok", "kernel"]
_WORDS = ["driver", "nvidia", "branch", "xx", " r"]
_REFUSE_WORDS = ["ignor", "incompatible", "no long", "driver", "fallback", "fall back", "falls back",
                 "falling back", "unclaimed"]


def read_driver_words(paste: Paste, acc: Acc) -> None:
    branches: List[int] = []
    where = ""
    for i in paste.distinct(paste.with_any(_WORDS), head=1500, tail=300):
        line = paste.lines[i]
        for m in _BRANCH.finditer(line):
            b = int(next(g for g in m.groups() if g))
            if 180 <= b <= 999 and b not in branches:
                branches.append(b)
                where = where or line.strip()[:160]
    if branches:
        acc.put("paste.driver_branches", " ".join(str(b) for b in sorted(branches)), LOOSE, where)
    if "nvidia" in paste.low:
        for i in paste.distinct(paste.with_any(_MODULE_WORDS), head=1500, tail=300):
            m = _MODULE_SAID.search(paste.lines[i]) or _KERNEL_BREAKS.search(paste.lines[i])
            if m:
                acc.put("paste.module_not_loaded_said", paste.lines[i].strip()[:200], LOOSE, m.group(0))
                break
    for i in paste.distinct(paste.with_any(_REFUSE_WORDS), head=1500, tail=300):
        m = _REFUSES.search(paste.lines[i])
        if m:
            acc.put("paste.driver_refuses_gpu", paste.lines[i].strip()[:200], LOOSE, m.group(0))
            break
