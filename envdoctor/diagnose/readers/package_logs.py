"""Reader for package-manager logs in a paste (apt/dnf/pacman lines installing or removing NVIDIA packages)."""

from __future__ import annotations

import re

from .base import STRUCTURED, Acc, Paste

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
