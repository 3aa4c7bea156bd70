"""Parse /proc/self/mountinfo and /proc/mounts; find the mount holding a path; classify file system types."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import re
from typing import List, Optional

from envdoctor.domain.fastclass import dataclass


@dataclass(frozen=True)
class MountEntry:
    mount_point: str
    fstype: str
    source: Optional[str] = None  # "/dev/nvme0n1p2", "server:/export", "overlay"
    options: Optional[str] = None
    super_options: Optional[str] = None  # mountinfo only
    root: Optional[str] = None  # mountinfo only: the path inside the file system that is mounted (bind mounts)
    major_minor: Optional[str] = None  # mountinfo only: "259:2" (st_dev of files on it)
    mount_id: Optional[int] = None
    parent_id: Optional[int] = None

    @property
    def kind(self) -> str:
        return classify_fstype(self.fstype)


_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(s: str) -> str:
    # the kernel escapes space, tab, newline and backslash as \040 \011 \012 \134 (fs/proc_namespace.c)
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), s)


def parse_mountinfo(text: str) -> List[MountEntry]:
    """/proc/<pid>/mountinfo: ``id parent maj:min root mountpoint opts [optional...] - fstype source superopts``."""
    out: List[MountEntry] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 7 or "-" not in parts[6:]:
            continue
        sep = parts.index("-", 6)
        tail = parts[sep + 1:]
        if not tail:
            continue
        try:
            mount_id, parent_id = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        out.append(
            MountEntry(
                mount_point=_unescape(parts[4]),
                fstype=tail[0],
                source=_unescape(tail[1]) if len(tail) > 1 else None,
                options=parts[5],
                super_options=tail[2] if len(tail) > 2 else None,
                root=_unescape(parts[3]),
                major_minor=parts[2],
                mount_id=mount_id,
                parent_id=parent_id,
            )
        )
    return out


def parse_proc_mounts(text: str) -> List[MountEntry]:
    """/proc/mounts (fstab format): ``source mountpoint fstype options dump pass``."""
    out: List[MountEntry] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[0].startswith("#"):
            continue
        out.append(MountEntry(mount_point=_unescape(parts[1]), fstype=parts[2], source=_unescape(parts[0]),
                              options=parts[3]))
    return out


def parse_mounts(text: str) -> List[MountEntry]:
    """Either format, told apart by the first line (mountinfo starts with two integers)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    parts = first.split()
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return parse_mountinfo(text)
    return parse_proc_mounts(text)


def _is_under(path: str, mount_point: str) -> bool:
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def find_mount(mounts: List[MountEntry], path: str) -> Optional[MountEntry]:
    """The mount that holds absolute ``path``: the longest matching mount point; among equals the
    last listed, since a later mount on the same point hides the earlier ones."""
    best: Optional[MountEntry] = None
    best_len = -1
    for m in mounts:
        if _is_under(path, m.mount_point):
            n = len(m.mount_point.rstrip("/"))
            if n >= best_len:
                best, best_len = m, n
    return best


LOCAL = {
    "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "jfs", "reiserfs", "bcachefs", "vfat", "exfat",
    "ntfs", "ntfs3", "hfsplus", "apfs", "iso9660", "squashfs", "erofs", "udf",
}
NETWORK = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p", "afs",
    "pvfs2", "orangefs", "ocfs2", "gfs2", "wekafs", "virtiofs", "davfs", "panfs", "quobyte",
}
TMPFS = {"tmpfs", "ramfs", "devtmpfs"}
OVERLAY = {"overlay", "overlayfs", "aufs", "unionfs"}


def classify_fstype(fstype: Optional[str]) -> str:
    """"local", "network", "fuse", "overlay", "tmpfs" or "unknown" (proc, sysfs and the like too)."""
    if not fstype:
        return "unknown"
    t = fstype.lower()
    if t.startswith("fuse.") or t in ("fuse", "fuseblk"):
        # fuse.ceph / fuse.glusterfs / fuse.lustre are network file systems wearing FUSE
        sub = t.split(".", 1)[1] if "." in t else ""
        if sub in NETWORK:
            return "network"
        return "fuse"
    if t in LOCAL:
        return "local"
    if t in NETWORK or t.startswith("nfs"):
        return "network"
    if t in TMPFS:
        return "tmpfs"
    if t in OVERLAY:
        return "overlay"
    return "unknown"
