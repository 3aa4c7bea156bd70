"""Storage probe: for each data path, its mount, file system kind, size/free and the disk behind it (sysfs first)."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import functools
import os
import re
from typing import Any, Dict, List, Optional, Tuple, Union

from envdoctor.model.facts import DataPath, ProbeStatus, Storage
from envdoctor.parsers.lsblk import BlockDevice, flatten, parse_lsblk_json
from envdoctor.parsers.mounts import MountEntry, classify_fstype, find_mount, parse_mounts
from envdoctor.probes.registry import ProbeContext, guard, probe
from envdoctor.probes.sysroot import SysRoot

LSBLK_TIMEOUT_S = 10.0


def _read_mounts(fs: SysRoot) -> Tuple[Optional[List[MountEntry]], Optional[str]]:
    for src in ("/proc/self/mountinfo", "/proc/mounts"):
        text = fs.read_attr(src)
        if text:
            return parse_mounts(text), src
    return None, None


class _Disks:
    """Block-device facts from sysfs, with one `lsblk -J` as a lazy fallback for the transport."""

    def __init__(self, runner, fs: SysRoot):
        self.runner = runner
        self.fs = fs
        self._lsblk: Optional[Dict[str, BlockDevice]] = None

    def name_for(self, major_minor: str) -> Tuple[Optional[str], Optional[str]]:
        """(device, whole disk) for "259:2": ("nvme0n1p2", "nvme0n1"), following a partition to its disk."""
        link = f"/sys/dev/block/{major_minor}"
        if not self.fs.exists(link):
            return None, None
        real = self.fs.realpath(link)
        name = os.path.basename(real)
        if self.fs.exists(f"{real}/partition"):
            return name, os.path.basename(os.path.dirname(real))
        return name, name

    def slaves(self, disk: str) -> List[str]:
        try:
            return sorted(self.fs.listdir(f"/sys/block/{disk}/slaves"))
        except OSError:
            return []

    def _members(self, disk: str, depth: int = 0) -> List[str]:
        """The physical disks under md/dm stacks (LVM on md on NVMe...), partitions mapped to disks."""
        subs = self.slaves(disk)
        if not subs or depth > 8:
            return [disk]
        out: List[str] = []
        for s in subs:
            part_dir = self.fs.realpath(f"/sys/class/block/{s}")
            if self.fs.exists(f"{part_dir}/partition"):
                s = os.path.basename(os.path.dirname(part_dir))
            out.extend(self._members(s, depth + 1))
        return list(dict.fromkeys(out))

    def rotational(self, disk: str) -> Optional[bool]:
        v = self.fs.read_attr(f"/sys/block/{disk}/queue/rotational")
        return None if v not in ("0", "1") else v == "1"

    def model(self, disk: str) -> Optional[str]:
        return self.fs.read_attr(f"/sys/block/{disk}/device/model") or None

    def transport(self, disk: str) -> Optional[str]:
        if disk.startswith("nvme"):
            return "nvme"
        if disk.startswith("md"):
            return "md"
        if disk.startswith("dm-"):
            return "dm"
        if disk.startswith("loop"):
            return "loop"
        driver = self.fs.realpath(f"/sys/block/{disk}/device/driver")
        if "virtio" in os.path.basename(driver) or re.match(r"^vd[a-z]+$", disk):
            return "virtio"
        if re.match(r"^xvd[a-z]+$", disk):
            return "xen"
        dev = self._lsblk_devices().get(disk)
        return dev.transport if dev is not None else None

    def _lsblk_devices(self) -> Dict[str, BlockDevice]:
        # sata / sas / usb are not in one sysfs file; lsblk works them out from the device path
        if self._lsblk is None:
            self._lsblk = {}
            if self.runner is not None and self.runner.which("lsblk"):
                res = self.runner.run(["lsblk", "-J", "-o", "NAME,TRAN,ROTA,MODEL"], timeout=LSBLK_TIMEOUT_S)
                if res.ok:
                    try:
                        self._lsblk = {d.kname: d for d in flatten(parse_lsblk_json(res.stdout))}
                    except ValueError:
                        pass
        return self._lsblk


def _probe_path(path: str, runner, root: Union[str, SysRoot], mounts: Optional[List[MountEntry]],
                disks: _Disks) -> DataPath:
    fs = SysRoot.of(root)
    live = fs.live
    abs_path = os.path.abspath(path) if live else "/" + path.lstrip("/")
    try:
        fs.stat(abs_path)
    except PermissionError:  # a directory on the way is not ours to search: not "does not exist"
        return DataPath(path=path, status=ProbeStatus.FAILED, reason=f"{abs_path}: permission denied")
    except OSError:
        return DataPath(path=path, status=ProbeStatus.ABSENT, reason=f"{abs_path} does not exist", exists=False)
    # resolve symlinks so /data -> /mnt/nvme/data is judged on the disk that holds it
    resolved = fs.realpath(abs_path)

    size = free = None
    try:
        st = fs.statvfs(abs_path)
        size, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    except OSError:
        pass

    mount = find_mount(mounts, resolved) if mounts else None
    notes: List[str] = []
    if mounts is None:
        notes.append("mount table unreadable")
    major_minor = mount.major_minor if mount is not None else None
    if major_minor is None and live:
        # /proc/mounts has no device numbers: the path's own st_dev says the same thing
        try:
            dev = fs.stat(abs_path).st_dev
            major_minor = f"{os.major(dev)}:{os.minor(dev)}"
        except OSError:
            major_minor = None

    device = _device_of(disks, major_minor, notes)
    fstype = mount.fstype if mount is not None else None
    summary = f"{fstype or 'unknown fs'} at {mount.mount_point if mount else '?'}"
    if device["block_device"]:
        summary += f" on {device['block_device']}"
    return DataPath(
        path=path,
        status=ProbeStatus.OK,
        reason="; ".join([summary] + notes),
        exists=True,
        mount_point=mount.mount_point if mount is not None else None,
        fstype=fstype,
        mount_source=mount.source if mount is not None else None,
        kind=classify_fstype(fstype) if fstype else "unknown",
        size_bytes=size,
        free_bytes=free,
        **device,
    )


def _device_of(disks: _Disks, major_minor: Optional[str], notes: List[str]) -> Dict[str, Any]:
    """The block device behind a mount's major:minor and the disk under it: rotational, transport, model.

    A RAID (md) or device-mapper disk is judged on its members: rotational when any member spins, the
    members' model when they share one; the members are noted."""
    block = disk = None
    rotational = None
    transport = model = None
    if major_minor and not major_minor.startswith("0:"):  # major 0: no block device (tmpfs, nfs, overlay)
        block, disk = disks.name_for(major_minor)
    if disk:
        rotational = disks.rotational(disk)
        transport = disks.transport(disk)
        model = disks.model(disk)
        if transport in ("md", "dm"):
            members = disks._members(disk)
            member_rota = [disks.rotational(m) for m in members if m != disk]
            if rotational is None and member_rota and None not in member_rota:
                rotational = any(member_rota)
            models = {disks.model(m) for m in members if m != disk} - {None}
            if model is None and len(models) == 1:
                model = models.pop()
            if members and members != [disk]:
                notes.append(f"{disk} over {', '.join(members)}")
    return dict(block_device=block, rotational=rotational, transport=transport, device_model=model)


@probe("storage", failed=lambda reason: Storage(status=ProbeStatus.FAILED, reason=reason))
def collect_storage(ctx: ProbeContext) -> Storage:
    return probe_storage(ctx.options.data_paths or [os.getcwd()], ctx.runner, root=ctx.fs)


def _failed_path(path: str, reason: str) -> DataPath:
    return DataPath(path=path, status=ProbeStatus.FAILED, reason=reason)


def probe_storage(paths: List[str], runner, root: Union[str, SysRoot] = "/") -> Storage:
    """One DataPath per asked path; a missing path is "absent", never an exception."""
    if not paths:
        return Storage(status=ProbeStatus.SKIPPED, reason="no data paths to check")
    fs = SysRoot.of(root)
    mounts, src = _read_mounts(fs)
    disks = _Disks(runner, fs)
    # each path under the probe guard: one odd path must not hide the others
    out: List[DataPath] = [guard(path, functools.partial(_probe_path, path, runner, fs, mounts, disks),
                                 functools.partial(_failed_path, path))[0] for path in paths]
    reason = f"{len(out)} path(s) from {src}" if src else "mount table unreadable; sizes only"
    return Storage(status=ProbeStatus.OK, reason=reason, paths=out)
