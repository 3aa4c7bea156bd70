"""Tests for the lspci, lsblk and mounts parsers on real captured output."""

from __future__ import annotations

import pytest

from envdoctor.domain.pci import bdf_key
from envdoctor.parsers.lsblk import (
    flatten,
    parse_lsblk,
    parse_lsblk_json,
    parse_lsblk_pairs,
    parse_lsblk_text,
)
from envdoctor.parsers.lspci import nvidia_gpu_links, parse_lspci, parse_lspci_vv
from envdoctor.parsers.mounts import (
    classify_fstype,
    find_mount,
    parse_mountinfo,
    parse_mounts,
    parse_proc_mounts,
)
from tests.paths import FIXTURES

FIX = FIXTURES


def _text(kind: str, name: str) -> str:
    return (FIX / kind / name).read_text()


# --------------------------------------------------------------------------- lspci


def test_lspci_h100_vvv_gpus_at_gen5_x16_with_switch_chain():
    text = _text("lspci", "h100-x8_lspci-vvv.txt")
    devices = parse_lspci(text)
    assert len(devices) == 517
    gpus = [d for d in devices if d.is_nvidia_gpu]
    assert [g.bdf for g in gpus] == [
        "0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0",
        "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0",
    ]
    g0 = gpus[0]
    assert (g0.cap_speed_gts, g0.cap_width, g0.sta_speed_gts, g0.sta_width) == (32.0, 16, 32.0, 16)
    assert g0.downgraded is False
    assert g0.description == "NVIDIA Corporation Device 2330"
    # 19:00.0 sits behind bridge 17:01.0 (Bus: secondary=19) of the PEX890xx switch
    assert g0.upstream_bdf == "0000:17:01.0"
    assert [d.bdf for d in devices if d.is_nvswitch] == ["0000:83:00.0", "0000:84:00.0", "0000:85:00.0", "0000:86:00.0"]

    links = nvidia_gpu_links(text)
    by_bdf = {link.bdf: link for link in links}
    assert by_bdf["0000:17:01.0"].upstream_bdf == "0000:16:00.0"
    assert by_bdf["0000:16:00.0"].upstream_bdf == "0000:15:01.0"
    assert by_bdf["0000:15:01.0"].description == "PCI bridge: Intel Corporation Device 352a"


def test_lspci_h100_vvv_downgraded_nvme_and_width():
    links = {link.bdf: link for link in parse_lspci_vv(_text("lspci", "h100-x8_lspci-vvv.txt"))}
    assert len(links) == 102
    downgraded = [link for link in links.values() if link.downgraded]
    assert downgraded, "the capture shows several '(downgraded)' LnkSta lines"
    # 01:00.0 Broadcom BCM5720: "LnkSta: Speed 5GT/s (ok), Width x1 (downgraded)"
    nic = links["0000:01:00.0"]
    assert (nic.sta_speed_gts, nic.sta_width, nic.downgraded) == (5.0, 1, True)


def test_lspci_rtx6000_ada_speed_downgraded_to_2_5():
    (link,) = parse_lspci_vv(_text("lspci", "rtx-6000-ada_lspci-vvv_link-downgraded-2.5GT.txt"))
    assert link.bdf == "0000:01:00.0"
    assert link.description == "VGA compatible controller: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]"
    assert (link.cap_speed_gts, link.cap_width, link.sta_speed_gts, link.sta_width) == (16.0, 16, 2.5, 16)
    assert link.downgraded is True
    (dev,) = parse_lspci(_text("lspci", "rtx-6000-ada_lspci-vvv_link-downgraded-2.5GT.txt"))
    assert dev.is_nvidia_gpu and dev.kernel_driver == "nvidia"


def test_lspci_wrx90_and_highpoint_width_downgrade():
    (gpu,) = parse_lspci_vv(_text("lspci", "rtx-6000-ada_wrx90_lspci-vvv_link-downgraded.txt"))
    assert gpu.bdf == "0000:c1:00.0" and gpu.sta_speed_gts == 2.5 and gpu.downgraded is True
    (raid,) = parse_lspci_vv(_text("lspci", "highpoint-ssd7540_lspci-vvv_width-downgraded.txt"))
    assert (raid.cap_width, raid.sta_width, raid.downgraded) == (2, 1, True)


def test_lspci_nn_a100_roles_and_ids():
    devices = parse_lspci(_text("lspci", "a100-x8_lspci-nn.txt"))
    assert len(devices) == 31
    gpus = [d for d in devices if d.is_nvidia_gpu]
    assert len(gpus) == 8
    assert gpus[0].bdf == "0001:00:00.0"
    assert (gpus[0].class_code, gpus[0].vendor_id, gpus[0].device_id) == ("0302", "10de", "20b2")
    assert gpus[0].description == "NVIDIA Corporation GA100 [A100 SXM4 80GB]"
    switches = [d for d in devices if d.is_nvswitch]
    assert len(switches) == 6 and switches[0].device_id == "1af1"
    ib = [d for d in devices if d.is_infiniband]
    assert len(ib) == 8 and all(d.is_mellanox for d in ib)
    # a plain listing has no link information
    assert parse_lspci_vv(_text("lspci", "a100-x8_lspci-nn.txt")) == []


def test_lspci_gb200_plain_listing():
    devices = parse_lspci(_text("lspci", "gb200_lspci.txt"))
    gpus = [d for d in devices if d.is_nvidia_gpu]
    assert [g.bdf for g in gpus] == ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    # Grace root ports are "PCI bridge", not NVSwitches
    assert not any(d.is_nvswitch for d in devices)
    assert sum(d.is_infiniband for d in devices) == 4


@pytest.mark.parametrize("raw,expected", [
    ("19:00.0", "0000:19:00.0"), ("00000000:1B:00.0", "0000:1b:00.0"), ("0001:00:00.0", "0001:00:00.0"),
])
def test_lspci_addresses_take_the_domain_key(raw, expected):
    assert bdf_key(raw) == expected


# --------------------------------------------------------------------------- lsblk


def test_lsblk_json_cloud_virtio_reports_rotational():
    devices = parse_lsblk_json(_text("lsblk", "cloud-vm-virtio_lsblk.json"))
    vda = next(d for d in devices if d.name == "/dev/vda")
    assert vda.type == "disk" and vda.kname == "vda"
    assert vda.rotational is True  # the misleading virtio ROTA=1 is kept as a fact
    assert vda.vendor == "0x1af4"
    assert vda.size_bytes == 24189255811072
    assert [c.name for c in vda.children] == ["/dev/vda1", "/dev/vda14", "/dev/vda15"]
    assert vda.children[0].mountpoints == ["/"] and vda.children[0].fstype == "ext4"
    assert vda.children[0].parent == "/dev/vda"
    loops = [d for d in devices if d.type == "loop"]
    assert loops and loops[0].mountpoints == ["/snap/core20/2379"]


def test_lsblk_pairs_inspur_tree_via_pkname():
    top = parse_lsblk_pairs(_text("lsblk", "inspur-sata-nvme_lsblk-P.txt"))
    assert [d.name for d in top] == ["/dev/sda", "/dev/nvme0n1", "/dev/nvme1n1"]
    sda = top[0]
    assert sda.rotational is False and sda.model == "INSPUR" and sda.vendor == "AVAGO"
    assert [c.name for c in sda.children] == ["/dev/sda1", "/dev/sda2", "/dev/sda3"]
    root_lv = next(d for d in flatten(top) if d.name == "/dev/mapper/centos-root")
    assert root_lv.type == "lvm" and root_lv.mountpoints == ["/"] and root_lv.parent == "/dev/sda3"
    nvme = top[1]
    assert nvme.model == "INTEL SSDPE2KE032T8" and nvme.mountpoints == ["/data1"] and nvme.fstype == "xfs"


def test_lsblk_text_nvme_raid0_tree():
    top = parse_lsblk_text(_text("lsblk", "asus-esc8000a_nvme-raid0_lsblk.txt"))
    assert len(top) == 19
    nvme2 = next(d for d in top if d.name == "nvme2n1")
    assert nvme2.size == "931.5G" and nvme2.type == "disk" and nvme2.rotational is None
    (md1,) = nvme2.children
    assert (md1.name, md1.type, md1.mountpoints, md1.parent) == ("md1", "raid0", ["/mnt/nvme-raid-1"], "nvme2n1")
    boot = next(d for d in top if d.name == "nvme16n1")
    assert [(c.name, c.mountpoints) for c in boot.children] == [
        ("nvme16n1p1", ["/boot/efi"]), ("nvme16n1p2", ["/"]),
    ]
    assert next(d for d in top if d.name == "sda").mountpoints == []


def test_parse_lsblk_detects_format():
    assert parse_lsblk(_text("lsblk", "cloud-vm-virtio_lsblk.json"))[-1].name == "/dev/vda"
    assert parse_lsblk(_text("lsblk", "inspur-sata-nvme_lsblk-P.txt"))[0].name == "/dev/sda"
    assert parse_lsblk(_text("lsblk", "asus-esc8000a_nvme-raid0_lsblk.txt"))[0].name == "sda"


# --------------------------------------------------------------------------- mounts


def test_mountinfo_lxc_container():
    mounts = parse_mountinfo(_text("mounts", "lxc-gpu-container_mountinfo.txt"))
    assert len(mounts) == 171
    root = find_mount(mounts, "/home/user/data")
    assert (root.mount_point, root.fstype, root.source, root.major_minor) == (
        "/", "ext4", "/dev/mapper/vgroot-lvroot", "253:0")
    assert root.kind == "local" and root.root == "/var/lib/lxc/ny2g2r14hh2-lxc/rootfs"
    nv = find_mount(mounts, "/dev/nvidia0")
    assert (nv.mount_point, nv.fstype, nv.root) == ("/dev/nvidia0", "devtmpfs", "/nvidia0")
    meminfo = find_mount(mounts, "/proc/meminfo")
    assert meminfo.fstype == "fuse.lxcfs" and meminfo.kind == "fuse"
    train = find_mount(mounts, "/mnt/remote-volume/training/shard-0")
    assert train.fstype == "fuse.testfs" and train.kind == "fuse"
    assert find_mount(mounts, "/sys/fs/cgroup/cpu.max").fstype == "cgroup2"
    assert parse_mounts(_text("mounts", "lxc-gpu-container_mountinfo.txt")) == mounts


def test_proc_mounts_and_escapes():
    text = (
        "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
        "server:/export /mnt/my\\040data nfs4 rw,vers=4.2 0 0\n"
        "overlay /mnt/my overlay rw 0 0\n"
    )
    mounts = parse_proc_mounts(text)
    assert parse_mounts(text) == mounts
    m = find_mount(mounts, "/mnt/my data/x")
    assert (m.mount_point, m.fstype, m.kind, m.source) == ("/mnt/my data", "nfs4", "network", "server:/export")
    assert find_mount(mounts, "/mnt/mydata").mount_point == "/"  # prefix match is by path component
    assert find_mount(mounts, "/mnt/my").kind == "overlay"


@pytest.mark.parametrize("fstype,kind", [
    ("ext4", "local"), ("xfs", "local"), ("btrfs", "local"), ("zfs", "local"),
    ("nfs", "network"), ("nfs4", "network"), ("cifs", "network"), ("smb3", "network"), ("lustre", "network"),
    ("gpfs", "network"), ("beegfs", "network"), ("ceph", "network"), ("fuse.ceph", "network"),
    ("fuse.s3fs", "fuse"), ("fuse.gcsfuse", "fuse"), ("fuse.rclone", "fuse"), ("fuse.sshfs", "fuse"),
    ("fuse.juicefs", "fuse"), ("overlay", "overlay"), ("tmpfs", "tmpfs"), ("proc", "unknown"), (None, "unknown"),
])
def test_classify_fstype(fstype, kind):
    assert classify_fstype(fstype) == kind
