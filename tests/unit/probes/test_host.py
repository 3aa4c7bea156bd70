"""Tests for the host, container, storage and PCIe probes against temp root trees, a FakeRunner, and this machine."""

from __future__ import annotations

import os
from pathlib import Path

from envdoctor.model.facts import ProbeStatus
from envdoctor.probes.container import probe_container
from envdoctor.probes.host import parse_clang_version, probe_host
from envdoctor.probes.pcie import parse_sysfs_speed, probe_pcie, probe_pcie_links
from envdoctor.probes.runner import Runner
from envdoctor.probes.storage import probe_storage
from envdoctor.probes.sysroot import SysRoot
from tests.fakes.runner import FakeRunner
from tests.paths import FIXTURES

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu vme sse hypervisor avx

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu vme sse hypervisor avx

processor\t: 2
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu vme sse hypervisor avx
"""
MEMINFO = "MemTotal:       16384 kB\nMemFree:         1024 kB\nMemAvailable:    8192 kB\n"


def _w(root: Path, rel: str, text: str = "") -> Path:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _link(root: Path, rel: str, target: str) -> None:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, p)


def _base_host(root: Path) -> None:
    _w(root, "/etc/os-release", 'ID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    _w(root, "/etc/hostname", "gpu-node-7\n")
    _w(root, "/proc/sys/kernel/osrelease", "5.15.0-101-generic\n")
    _w(root, "/proc/cpuinfo", CPUINFO)
    _w(root, "/proc/meminfo", MEMINFO)
    _w(root, "/proc/modules", "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\nmlx5_core 0 0 - Live 0\n")
    (root / "dev/shm").mkdir(parents=True)
    for n in ("node0", "node1", "possible"):
        (root / "sys/devices/system/node" / n).mkdir(parents=True)
    (root / "sys/class/infiniband/mlx5_0").mkdir(parents=True)
    _w(root, "/sys/class/dmi/id/sys_vendor", "Dell Inc.\n")
    _w(root, "/sys/class/dmi/id/product_name", "PowerEdge XE9680\n")


# --------------------------------------------------------------------------- host


def test_host_cgroup_v2_docker(tmp_path):
    _base_host(tmp_path)
    _w(tmp_path, "/sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    _w(tmp_path, "/proc/self/cgroup", "0::/\n")
    _w(tmp_path, "/sys/fs/cgroup/cpu.max", "400000 100000\n")
    _w(tmp_path, "/sys/fs/cgroup/memory.max", "34359738368\n")
    _w(tmp_path, "/.dockerenv")
    _w(tmp_path, "/dev/nvidia0")
    _w(tmp_path, "/dev/nvidiactl")
    runner = FakeRunner({("gcc", "-dumpfullversion"): "11.4.0\n",
                         ("clang", "--version"): "Ubuntu clang version 14.0.0-1ubuntu1.1\nTarget: x86_64\n"},
                        which={"gcc": "/usr/bin/gcc", "clang": "/usr/bin/clang"})
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_P2P_DISABLE": "1", "NVIDIA_VISIBLE_DEVICES": "all"}
    h = probe_host(runner, root=str(tmp_path), env=env)
    assert h.status == ProbeStatus.OK and h.reason is None
    assert (h.distro_id, h.distro_version, h.distro_name) == ("ubuntu", "22.04", "Ubuntu 22.04.4 LTS")
    assert h.distro_like == "debian"  # ID_LIKE: picks the package tool for distributions envdoctor does not name
    assert h.hostname == "gpu-node-7" and h.kernel == "5.15.0-101-generic"
    assert h.cpu_model == "Intel(R) Xeon(R) Platinum 8480+"
    assert (h.cpu_logical_count, h.cpu_physical_count) == (3, 2)
    assert (h.cgroup_version, h.cgroup_cpu_quota, h.cgroup_memory_limit_bytes) == (2, 4.0, 34359738368)
    assert (h.memory_total_bytes, h.memory_available_bytes) == (16384 * 1024, 8192 * 1024)
    assert h.shm_total_bytes is not None and h.shm_total_bytes > 0
    assert h.numa_node_count == 2
    # DMI names no hypervisor vendor, but the CPUID hypervisor flag in cpuinfo says "a VM"
    assert h.wsl is False and h.virtualization == "vm"
    assert h.gcc_version == "11.4.0" and h.clang_version == "14.0.0"
    assert h.env["CUDA_VISIBLE_DEVICES"] == "0,1" and h.env["NCCL_P2P_DISABLE"] == "1"
    assert h.env["LD_LIBRARY_PATH"] is None
    assert h.kernel_modules == ["nvidia", "nvidia_uvm", "mlx5_core"]
    assert h.infiniband_devices == ["mlx5_0"]
    assert h.container.runtime == "docker" and "/.dockerenv" in h.container.evidence
    assert h.container.gpu_device_nodes == ["/dev/nvidia0", "/dev/nvidiactl"]
    assert h.container.nvidia_visible_devices == "all"


class _LiveUnder(SysRoot):
    """This machine as the host probe sees it (``live``: distro, os.cpu_count), its files read under ``root``."""

    @property
    def live(self) -> bool:
        return True

    def host(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))


def test_a_non_utf8_byte_in_os_release_keeps_the_host_facts(tmp_path):
    # one Latin-1 byte in PRETTY_NAME made distro raise UnicodeDecodeError, which lost the whole host section
    # (CPU, memory, /dev/shm, cgroups, container) on a live run; the file is read with replacement instead
    _base_host(tmp_path)
    (tmp_path / "etc/os-release").write_bytes(b'ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04 caf\xe9"\n')
    for root in (str(tmp_path), _LiveUnder(str(tmp_path))):
        h = probe_host(FakeRunner({}), root=root, env={})
        assert h.status == ProbeStatus.OK, h.reason
        assert (h.distro_id, h.distro_version, h.distro_name) == ("ubuntu", "22.04", "Ubuntu 22.04 caf\ufffd")
        assert h.memory_total_bytes == 16384 * 1024 and h.shm_total_bytes is not None
        assert h.cpu_model == "Intel(R) Xeon(R) Platinum 8480+"


def test_host_cgroup_v2_nested_limit_is_tightest(tmp_path):
    _base_host(tmp_path)
    _w(tmp_path, "/sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    _w(tmp_path, "/proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
    _w(tmp_path, "/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n")
    _w(tmp_path, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n")
    _w(tmp_path, "/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n")
    h = probe_host(FakeRunner(), root=str(tmp_path), env={})
    assert h.cgroup_cpu_quota == 1.5 and h.cgroup_memory_limit_bytes is None


def test_host_cgroup_v1_limits_and_unlimited(tmp_path):
    _base_host(tmp_path)
    _w(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "200000\n")
    _w(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    _w(tmp_path, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
    h = probe_host(FakeRunner(), root=str(tmp_path), env={})
    assert (h.cgroup_version, h.cgroup_cpu_quota, h.cgroup_memory_limit_bytes) == (1, 2.0, None)

    _w(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    _w(tmp_path, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "8589934592\n")
    h = probe_host(FakeRunner(), root=str(tmp_path), env={})
    assert (h.cgroup_cpu_quota, h.cgroup_memory_limit_bytes) == (None, 8589934592)


def test_host_wsl2_no_shm_and_vm_from_dmi(tmp_path):
    _w(tmp_path, "/proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    _w(tmp_path, "/proc/cpuinfo", CPUINFO)
    _w(tmp_path, "/sys/class/dmi/id/sys_vendor", "QEMU\n")
    (tmp_path / "usr/lib/wsl").mkdir(parents=True)
    h = probe_host(FakeRunner(), root=str(tmp_path), env={})
    assert h.status == ProbeStatus.OK
    assert h.wsl is True and h.wsl_version == 2
    assert h.shm_total_bytes is None and h.shm_free_bytes is None
    assert "/dev/shm" in h.reason and "/proc/meminfo" in h.reason
    assert h.virtualization == "qemu"
    assert h.cgroup_version is None and h.numa_node_count is None and h.kernel_modules is None
    assert h.gcc_version is None  # no gcc on PATH: not run
    assert h.container.runtime is None and h.container.gpu_device_nodes is None


def test_host_hypervisor_flag_only(tmp_path):
    _w(tmp_path, "/proc/cpuinfo", CPUINFO)
    h = probe_host(FakeRunner(), root=str(tmp_path), env={})
    assert h.virtualization == "vm"


def test_host_gcc_timeout_is_not_fatal(tmp_path):
    _w(tmp_path, "/proc/cpuinfo", CPUINFO)
    runner = FakeRunner({("gcc", "-dumpfullversion"): FakeRunner.TIMEOUT, ("gcc", "-dumpversion"): FakeRunner.TIMEOUT},
                        which={"gcc": "/usr/bin/gcc"})
    h = probe_host(runner, root=str(tmp_path), env={})
    assert h.status == ProbeStatus.OK and h.gcc_version is None


def test_parse_clang_version():
    assert parse_clang_version("Apple clang version 15.0.0 (clang-1500.3.9.4)\n") == "15.0.0"
    assert parse_clang_version("clang version 17.0.6\n") == "17.0.6"
    assert parse_clang_version("nothing") is None


def test_host_real_machine():
    h = probe_host(Runner())
    assert h.status == ProbeStatus.OK
    assert h.cpu_logical_count and h.cpu_logical_count > 0
    assert h.kernel and h.os
    assert h.memory_total_bytes and h.memory_total_bytes > 0
    assert set(h.env) >= {"CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"}


# --------------------------------------------------------------------------- container


def test_container_kubernetes_wins_over_containerd(tmp_path):
    (tmp_path / "var/run/secrets/kubernetes.io/serviceaccount").mkdir(parents=True)
    _w(tmp_path, "/proc/1/cgroup", "0::/kubepods.slice/cri-containerd-abc.scope\n")
    c = probe_container(str(tmp_path), env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert c.runtime == "kubernetes"
    assert "KUBERNETES_SERVICE_HOST" in c.evidence and "containerd" in c.evidence


def test_container_podman_and_lxc(tmp_path):
    _w(tmp_path, "/run/.containerenv")
    assert probe_container(str(tmp_path), env={}).runtime == "podman"
    lxc = tmp_path / "lxc"
    _w(lxc, "/proc/1/environ", "PATH=/bin\0container=lxc\0")
    mountinfo = (FIXTURES / "mounts/lxc-gpu-container_mountinfo.txt").read_text()
    _w(lxc, "/proc/self/mountinfo", mountinfo)
    c = probe_container(str(lxc), env={})
    assert c.runtime == "lxc" and "container=lxc" in c.evidence and "lxcfs" in c.evidence


def test_container_none(tmp_path):
    (tmp_path / "dev").mkdir()
    c = probe_container(str(tmp_path), env={})
    assert c.runtime is None and c.evidence is None and c.gpu_device_nodes == []


# --------------------------------------------------------------------------- PCIe (sysfs)


def _pci_dev(root: Path, chain: str, bdf: str, vendor: str, cls: str, cur: str, mx: str, cw: int, mw: int) -> None:
    d = root / "sys/devices" / chain
    d.mkdir(parents=True, exist_ok=True)
    for name, val in (("vendor", vendor), ("device", "0x2330"), ("class", cls), ("current_link_speed", cur),
                      ("max_link_speed", mx), ("current_link_width", str(cw)), ("max_link_width", str(mw))):
        (d / name).write_text(val + "\n")
    depth = "../" * 3
    _link(root, f"/sys/bus/pci/devices/{bdf}", depth + "devices/" + chain)


def test_pcie_sysfs_gpu_and_bridge_chain(tmp_path):
    root_port = "pci0000:15/0000:15:01.0"
    switch = root_port + "/0000:16:00.0"
    down = switch + "/0000:17:01.0"
    _pci_dev(tmp_path, root_port, "0000:15:01.0", "0x8086", "0x060400", "32.0 GT/s PCIe", "32.0 GT/s PCIe", 16, 16)
    _pci_dev(tmp_path, switch, "0000:16:00.0", "0x1000", "0x060400", "32.0 GT/s PCIe", "32.0 GT/s PCIe", 16, 16)
    _pci_dev(tmp_path, down, "0000:17:01.0", "0x1000", "0x060400", "16.0 GT/s PCIe", "32.0 GT/s PCIe", 16, 16)
    _pci_dev(tmp_path, down + "/0000:19:00.0", "0000:19:00.0", "0x10de", "0x030200", "2.5 GT/s PCIe",
             "32.0 GT/s PCIe", 8, 16)
    # a non-NVIDIA device is ignored
    _pci_dev(tmp_path, "pci0000:00/0000:00:02.0", "0000:00:02.0", "0x1af4", "0x018000", "Unknown", "Unknown", 0, 0)
    status, reason, links = probe_pcie(FakeRunner(), root=str(tmp_path))
    assert status == ProbeStatus.OK and reason.startswith("1 NVIDIA GPU(s) and 3 upstream")
    assert [link.bdf for link in links] == ["0000:19:00.0", "0000:17:01.0", "0000:16:00.0", "0000:15:01.0"]
    gpu = links[0]
    assert (gpu.cap_speed_gts, gpu.cap_width, gpu.sta_speed_gts, gpu.sta_width) == (32.0, 16, 2.5, 8)
    assert gpu.downgraded is True and gpu.upstream_bdf == "0000:17:01.0"
    assert gpu.description == "3D controller: [10de:2330]"
    assert links[1].downgraded is True and links[2].downgraded is False
    assert links[3].upstream_bdf is None


def test_pcie_falls_back_to_lspci_when_no_sysfs(tmp_path):
    text = (FIXTURES / "lspci/rtx-6000-ada_lspci-vvv_link-downgraded-2.5GT.txt").read_text()
    runner = FakeRunner({("lspci", "-vv", "-D"): text}, which={"lspci": "/usr/bin/lspci"})
    (link,) = probe_pcie_links(runner, root=str(tmp_path))
    assert link.bdf == "0000:01:00.0" and link.sta_speed_gts == 2.5 and link.downgraded is True
    status, reason, _ = probe_pcie(FakeRunner({("lspci", "-vv", "-D"): FakeRunner.TIMEOUT},
                                              which={"lspci": "/usr/bin/lspci"}), root=str(tmp_path))
    assert status == ProbeStatus.FAILED and "timed out" in reason
    assert probe_pcie(FakeRunner(), root=str(tmp_path))[0] == ProbeStatus.UNSUPPORTED


def test_parse_sysfs_speed():
    assert parse_sysfs_speed("16.0 GT/s PCIe") == 16.0
    assert parse_sysfs_speed("8 GT/s") == 8.0
    assert parse_sysfs_speed("Unknown") is None


def test_pcie_real_machine():
    status, reason, links = probe_pcie(Runner())
    assert status in (ProbeStatus.OK, ProbeStatus.ABSENT, ProbeStatus.UNSUPPORTED)
    assert reason
    if status == ProbeStatus.OK:
        assert links and all(link.bdf for link in links)


# --------------------------------------------------------------------------- storage

MOUNTINFO = """\
20 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
30 20 8:16 / /data rw,relatime shared:2 - xfs /dev/sdb rw
31 20 0:50 / /mnt/nfs rw,relatime shared:3 - nfs4 server:/export rw,vers=4.2
32 20 9:0 / /md rw,relatime shared:4 - ext4 /dev/md0 rw
33 20 0:60 / /mnt/s3 rw,nosuid,nodev shared:5 - fuse.s3fs s3fs rw,user_id=0
34 20 252:1 / /vm rw,relatime shared:6 - ext4 /dev/vda1 rw
"""


def _block(root: Path, devpath: str, name: str, rota: str, model: str = "", parts: tuple = ()) -> None:
    d = root / "sys/devices" / devpath / name
    (d / "queue").mkdir(parents=True)
    (d / "queue/rotational").write_text(rota + "\n")
    if model:
        (d / "device").mkdir()
        (d / "device/model").write_text(model + "   \n")
    _link(root, f"/sys/block/{name}", f"../devices/{devpath}/{name}")
    _link(root, f"/sys/class/block/{name}", f"../../devices/{devpath}/{name}")
    for p in parts:
        (d / p).mkdir()
        (d / p / "partition").write_text("2\n")
        _link(root, f"/sys/class/block/{p}", f"../../devices/{devpath}/{name}/{p}")


def _storage_root(root: Path) -> None:
    _w(root, "/proc/self/mountinfo", MOUNTINFO)
    nvme = "pci0000:00/0000:00:1d.0/nvme/nvme0"
    _block(root, nvme, "nvme0n1", "0", "Samsung SSD 990 PRO 2TB", parts=("nvme0n1p2",))
    _link(root, "/sys/dev/block/259:2", f"../../devices/{nvme}/nvme0n1/nvme0n1p2")
    sata = "pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block"
    _block(root, sata, "sdb", "1", "ST8000NM000A-2KE1")
    _link(root, "/sys/dev/block/8:16", f"../../devices/{sata}/sdb")
    for n in ("nvme1n1", "nvme2n1"):
        _block(root, f"pci0000:00/0000:00:1c.0/nvme/{n}", n, "0", "INTEL SSDPE2KE032T8")
    _block(root, "virtual/block", "md0", "")
    (root / "sys/devices/virtual/block/md0/queue/rotational").write_text("x\n")  # unknown: derived from slaves
    for n in ("nvme1n1", "nvme2n1"):
        (root / "sys/devices/virtual/block/md0/slaves" / n).mkdir(parents=True)
    _link(root, "/sys/dev/block/9:0", "../../devices/virtual/block/md0")
    virtio = "pci0000:00/0000:00:04.0/virtio2/block"
    _block(root, virtio, "vda", "1", parts=("vda1",))
    _link(root, "/sys/dev/block/252:1", f"../../devices/{virtio}/vda/vda1")
    for d in ("data/train", "mnt/nfs", "md", "mnt/s3", "vm", "home/me"):
        (root / d).mkdir(parents=True)


LSBLK_TRAN = '{"blockdevices": [{"name": "sdb", "tran": "sata", "rota": true, "model": "ST8000NM000A-2KE1"}]}'


def test_storage_probe_tree(tmp_path):
    _storage_root(tmp_path)
    runner = FakeRunner({("lsblk", "-J", "-o", "NAME,TRAN,ROTA,MODEL"): LSBLK_TRAN}, which={"lsblk": "/usr/bin/lsblk"})
    st = probe_storage(["/home/me", "/data/train", "/mnt/nfs", "/md", "/mnt/s3", "/vm", "/missing"], runner,
                       root=str(tmp_path))
    assert st.status == ProbeStatus.OK
    by = {p.path: p for p in st.paths}

    home = by["/home/me"]
    assert (home.status, home.exists, home.mount_point, home.fstype, home.kind) == ("ok", True, "/", "ext4", "local")
    assert (home.block_device, home.transport, home.rotational) == ("nvme0n1p2", "nvme", False)
    assert home.device_model == "Samsung SSD 990 PRO 2TB"
    assert home.size_bytes and home.free_bytes is not None

    data = by["/data/train"]
    assert (data.mount_point, data.fstype, data.block_device) == ("/data", "xfs", "sdb")
    assert (data.rotational, data.transport, data.device_model) == (True, "sata", "ST8000NM000A-2KE1")

    nfs = by["/mnt/nfs"]
    assert (nfs.kind, nfs.mount_source, nfs.block_device, nfs.rotational) == ("network", "server:/export", None, None)

    md = by["/md"]
    assert (md.block_device, md.transport, md.rotational, md.device_model) == ("md0", "md", False, "INTEL SSDPE2KE032T8")
    assert "md0 over nvme1n1, nvme2n1" in md.reason

    assert by["/mnt/s3"].kind == "fuse" and by["/mnt/s3"].fstype == "fuse.s3fs"

    vm = by["/vm"]  # virtio reports rotational: kept as the fact, judged elsewhere
    assert (vm.block_device, vm.transport, vm.rotational) == ("vda1", "virtio", True)

    missing = by["/missing"]
    assert (missing.status, missing.exists, missing.fstype) == (ProbeStatus.ABSENT, False, None)
    # lsblk ran once, for sdb only (nvme / md / virtio come from names and sysfs)
    assert runner.calls == [("lsblk", "-J", "-o", "NAME,TRAN,ROTA,MODEL")]


def test_storage_lsblk_timeout_and_no_mount_table(tmp_path):
    _storage_root(tmp_path)
    runner = FakeRunner({("lsblk", "-J", "-o", "NAME,TRAN,ROTA,MODEL"): FakeRunner.TIMEOUT},
                        which={"lsblk": "/usr/bin/lsblk"})
    (p,) = probe_storage(["/data"], runner, root=str(tmp_path)).paths
    assert p.status == ProbeStatus.OK and p.rotational is True and p.transport is None

    (tmp_path / "proc/self/mountinfo").unlink()
    st = probe_storage(["/data"], FakeRunner(), root=str(tmp_path))
    assert st.status == ProbeStatus.OK and "unreadable" in st.reason
    assert st.paths[0].exists is True and st.paths[0].fstype is None and st.paths[0].size_bytes


def test_storage_no_paths_is_skipped():
    assert probe_storage([], FakeRunner()).status == ProbeStatus.SKIPPED


def test_storage_real_machine():
    st = probe_storage([".", "/definitely/not/here"], Runner())
    assert st.status == ProbeStatus.OK
    here, missing = st.paths
    assert here.status == ProbeStatus.OK and here.exists and here.fstype and here.mount_point
    assert here.size_bytes and here.size_bytes > 0
    assert missing.status == ProbeStatus.ABSENT and missing.exists is False
