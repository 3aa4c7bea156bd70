"""Reader for package-manager logs in a paste (apt/dnf/pacman lines installing or removing NVIDIA packages)."""

from __future__ import annotations

import re

from .base import LOOSE, STRUCTURED, Acc, Paste

# NVIDIA driver packages as apt/dpkg, dnf/yum and pacman name them
_NV_PKG = r"(?:nvidia-(?:driver|utils|dkms|kernel-common|kernel-source|compute-utils|fabricmanager|open|settings)[\w.+-]*|" \
          r"libnvidia-[\w.+-]+|kmod-nvidia[\w.+-]*|xserver-xorg-video-nvidia[\w.+-]*|nvidia(?=\s+\())"
_PKG_EVENT = re.compile(
    rf"(?:^(?P<date>\d{{4}}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?)\s+(?P<dpkg>upgrade|install|remove|purge|configure)\s+"
    rf"(?P<dpkg_pkg>{_NV_PKG})(?::\w+)?\s+(?P<old>\S+)\s+(?P<new>\S+))"
    rf"|(?:\[(?P<pdate>\d{{4}}-\d\d-\d\dT[\d:]+)[^\]]*\]\s+\[ALPM\]\s+(?P<pac>upgraded|installed|removed|downgraded)\s+"
    rf"(?P<pac_pkg>{_NV_PKG}|nvidia)\s+\((?P<pold>[^)]*?)(?:\s+->\s+(?P<pnew>[^)]*))?\))"
    rf"|(?:^\s*(?P<apt>Upgrade|Install|Remove|Purge|Upgraded|Upgrading|Installed|Removed|Downgraded)\s*:?\s+"
    rf"(?P<apt_pkg>{_NV_PKG})(?::\w+)?(?:\s+\((?P<aold>[^,)]+)(?:,\s*(?P<anew>[^)]+))?\)|[-\s](?P<rpmver>\d[\w.:-]*))?)",
    re.M)


def read_package_logs(paste: Paste, acc: Acc) -> None:
    """apt history / dpkg.log / dnf history / pacman.log lines that changed NVIDIA driver packages: after a
    userspace upgrade without a reboot the loaded kernel module is another version (Driver/library mismatch)."""
    events = []
    for i in paste.distinct(paste.with_any(["nvidia"]), head=2000, tail=500):
        line = paste.lines[i]
        if not re.search(r"upgrad|install|remov|purge|downgrad|configure", line, re.I):
            continue
        # apt history puts several packages on one "Upgrade:" line: read each
        for chunk in re.split(r"\),\s+", line) if line.lstrip().startswith(("Upgrade:", "Install:", "Remove:")) \
                else [line]:
            if chunk is not line and not chunk.rstrip().endswith(")"):
                chunk = chunk + ")"
            if not re.match(r"^\s*(?:Upgrade|Install|Remove|Purge)", chunk) and events and chunk is not line:
                chunk = "Upgrade: " + chunk.strip()
            m = _PKG_EVENT.search(chunk)
            if not m:
                continue
            pkg = m.group("dpkg_pkg") or m.group("pac_pkg") or m.group("apt_pkg")
            action = (m.group("dpkg") or m.group("pac") or m.group("apt") or "").lower()
            old = m.group("old") or m.group("pold") or m.group("aold")
            new = m.group("new") or m.group("pnew") or m.group("anew") or m.group("rpmver")
            if m.group("dpkg") == "configure":
                continue
            events.append(f"{action} {pkg} {old or ''}{' -> ' + new if new else ''}".strip())
    if events:
        acc.put("driver.packages_changed", "; ".join(dict.fromkeys(events))[:500], STRUCTURED,
                "package-manager log (apt/dpkg/dnf/pacman)")
        acc.add_found("package-manager log with NVIDIA driver packages")


# pip's own install log: the packages it collected, and an installed torch it uninstalled to make room for another
# (pip's resolver output: "Installing collected packages: torch, xformers", "Attempting uninstall: torch",
# "Found existing installation: torch 2.4.1", "Successfully uninstalled torch-2.4.1", "Successfully installed ...")
_PIP_COLLECTED = re.compile(r"^\s*Installing collected packages:\s*(?P<names>[\w.-]+(?:\s*,\s*[\w.-]+)*)")
_PIP_REPLACED = re.compile(r"^\s*(?:Found existing installation:\s*torch\s+(?P<found>\d[\w.+]*)|"
                           r"Successfully uninstalled\s+torch-(?P<gone>\d[\w.+]*))\s*$")
_PIP_INSTALLED = re.compile(r"^\s*Successfully installed\s.*?(?<![\w-])torch-(?P<new>\d[\w.+]*)")


def read_pip_replaced(paste: Paste, acc: Acc) -> None:
    """pip uninstalling an installed torch during an install (``paste.pip_replaced``: "2.4.1", or "2.4.1 -> 2.5.0"
    when the log shows what it installed) and the packages that install collected (``paste.pip_collected``), so a
    check can tell an extension's install that swapped torch (its release pins another torch) from a torch
    upgrade asked for."""
    old = new = where = None
    collected = ""
    for i in paste.distinct(paste.with_any(["installing collected", "existing installation: torch",
                                            "uninstalled torch-", "successfully installed"])):
        line = paste.lines[i]
        m = _PIP_COLLECTED.match(line)
        if m and not collected:
            collected = ",".join(n.strip().lower() for n in m.group("names").split(","))
            continue
        m = _PIP_REPLACED.match(line)
        if m and old is None:
            old, where = m.group("found") or m.group("gone"), line.strip()
            continue
        m = _PIP_INSTALLED.match(line)
        if m and new is None:
            new = m.group("new")
    if old is None or not collected:
        return
    acc.put("paste.pip_replaced", f"{old} -> {new}" if new else old, STRUCTURED, f"pip: {where}")
    acc.put("paste.pip_collected", collected, STRUCTURED, "pip: Installing collected packages")


# an extension's own wheel index named by the torch release its wheels are built for: PyG's
# https://data.pyg.org/whl/torch-2.1.0+cu121.html, DGL's https://data.dgl.ai/wheels/torch-2.1/cu121/repo.html,
# OpenMMLab's https://download.openmmlab.com/mmcv/dist/cu117/torch1.13/index.html, FlashInfer's
# https://flashinfer.ai/whl/cu124/torch2.5/ (torch's own index, download.pytorch.org, is not one)
_PIP_LINE = re.compile(r"\b(?:pip3?|uv\s+pip|mim)\s+install\s+(?P<args>.*)$")
_EXT_INDEX = re.compile(r"(?P<url>https?://(?!download\.pytorch\.org)[\w.-]+/[^\s'\"`]*?(?:^|/)torch-?"
                        r"(?P<torch>\d+\.\d+(?:\.\d+)?)(?:\+\w+)?(?:/|\.html)[^\s'\"`]*)")
_REQ_NAME = re.compile(r"^([A-Za-z][\w.-]*)(?:\[[^\]]*\])?(?:(==)\s*(\d[\w.+!-]*)|[<>=~!].*)?$")


def read_extension_index(paste: Paste, acc: Acc) -> None:
    """The first install line that takes packages from an extension's wheel index named for a torch release:
    ``paste.extension_index`` = "<torch release of the index> <packages asked, space-separated>", and the
    torch the same line pins (``torch==X``) after a "|" when it does, since that torch is the one installed
    beside them."""
    for i in paste.distinct(paste.with_any(["install"])):
        m = _PIP_LINE.search(paste.lines[i])
        u = _EXT_INDEX.search(m.group("args")) if m else None
        if not m or not u:
            continue
        names, pinned, skip = [], "", False
        for a in m.group("args").split():
            a = a.strip("'\"`")
            if skip or a.startswith("-"):
                skip = a in ("-f", "-i", "--find-links", "--index-url", "--extra-index-url", "-c", "-r")
                continue
            r = _REQ_NAME.match(a)
            if not r or a.startswith("http"):
                continue
            if r.group(1).lower() == "torch":
                pinned = r.group(3) or ""
            else:
                names.append(r.group(1))
        if names:
            acc.put("paste.extension_index", f"{u.group('torch')} {' '.join(names)}" + (f"|{pinned}" if pinned else ""),
                    LOOSE, f"pip install from {u.group('url')}")
            return


# pip naming the file it picked for a requirement: "Collecting tensorrt" then "Using cached
# https://pypi.nvidia.com/tensorrt/tensorrt-8.6.1.post1.tar.gz" (or "Downloading ...whl"): the release pip resolved
_PIP_COLLECTING = re.compile(r"^\s*Collecting\s+(?P<name>[A-Za-z][\w.-]*)")
_PIP_FILE = re.compile(r"^\s*(?:Using cached|Downloading)\s+(?:\S*/)?(?P<name>[A-Za-z][\w.]*?)-"
                       r"(?P<ver>\d+(?:\.\d+)*(?:\.?(?:post|dev|rc|a|b)\d+)*)(?:\.tar\b|\.zip\b|\.ta\b|\.t?$|-)")


def read_pip_resolved(paste: Paste, acc: Acc) -> None:
    """The release pip resolved for each requirement it shows collecting (``paste.pip_resolved``:
    "tensorrt==8.6.1.post1"): the file named on the line after "Collecting NAME", when the file is that
    package's (its name normalised the same)."""
    found = []
    lines = paste.lines
    for i in paste.distinct(paste.with_any(["collecting "])):
        m = _PIP_COLLECTING.match(lines[i])
        if not m:
            continue
        want = re.sub(r"[-_.]+", "-", m.group("name")).lower()
        for nxt in lines[i + 1:i + 3]:
            f = _PIP_FILE.match(nxt)
            if f and re.sub(r"[-_.]+", "-", f.group("name")).lower() == want:
                found.append(f"{want}=={f.group('ver')}")
                break
    if found:
        acc.put("paste.pip_resolved", " ".join(dict.fromkeys(found)), STRUCTURED, "pip: Collecting / the file it picked")
