"""Host probe: OS, kernel, CPUs and cgroup limits, memory, /dev/shm, NUMA, WSL, virtualisation, compilers, env."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import os
import platform
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from envdoctor.model.facts import Host, ProbeStatus
from envdoctor.probes.container import probe_container
from envdoctor.probes.registry import ProbeContext, probe
from envdoctor.probes.sysroot import SysRoot, root_and_env

# recorded besides every variable of compat_data/env_vars.json (env_names): what other checks read
ENV_OF_INTEREST = (
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE",
    "NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
    "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS",
)
MODULES_OF_INTEREST = (
    "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia_peermem", "nv_peer_mem", "ib_core",
    "mlx5_core", "nouveau",
)
# cgroup v1 reports "no limit" as the largest page-aligned signed 64-bit value (9223372036854771712)
_V1_UNLIMITED = 1 << 60
_COMPILER_TIMEOUT_S = 10.0


def parse_os_release(text: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().strip("'\"")
    return out


_OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")


def _undecodable(fs: SysRoot, paths: Tuple[str, ...]) -> bool:
    """Whether one of ``paths`` holds bytes that are not UTF-8. distro reads os-release strictly, and one
    Latin-1 byte in a PRETTY_NAME raised UnicodeDecodeError there, which lost the whole host probe (CPU, memory,
    /dev/shm, cgroups, container: issue 40); such a file is read here with replacement instead."""
    for path in paths:
        try:
            with open(fs.host(path), "rb") as fh:
                fh.read(65536).decode("utf-8")
        except OSError:
            continue
        except UnicodeDecodeError:
            return True
    return False


def _distro(fs: SysRoot) -> Tuple[Optional[str], Optional[str], Optional[str], Optional[str]]:
    """(ID, VERSION_ID, pretty name, ID_LIKE) of the distribution."""
    path, text = next(((p, t) for p in _OS_RELEASE for t in [fs.read_text(p)] if t), (None, None))
    rel = parse_os_release(text) if text is not None else {}
    if fs.live and not _undecodable(fs, _OS_RELEASE):
        try:
            import distro  # a declared dependency; imported here so the module import has no cost

            # an os-release with ID, VERSION_ID and PRETTY_NAME answers all four first (distro's own order), so
            # lsb_release (a shell script and four children: 50 ms of two cores) adds nothing there
            plain = all(rel.get(k) for k in ("ID", "VERSION_ID", "PRETTY_NAME"))
            # (include_uname is there from distro 1.6 on, the version pyproject.toml requires)
            # distro reads the file read above (the probed machine's)
            d: Any = distro.LinuxDistribution(include_lsb=False, include_uname=False, os_release_file=fs.host(path)) \
                if plain and path else distro
            return (d.id() or None, d.version() or None, d.name(pretty=True) or None, d.like() or None)
        except (ImportError, UnicodeError):  # UnicodeError: another release file distro reads strictly
            pass
    if text is None:
        return None, None, None, None
    return (rel.get("ID"), rel.get("VERSION_ID"), rel.get("PRETTY_NAME") or rel.get("NAME"),
            rel.get("ID_LIKE") or None)


def parse_cpuinfo(text: str) -> Tuple[Optional[str], int, Optional[int], bool]:
    """(model, logical processors, physical cores or None, hypervisor flag) from /proc/cpuinfo."""
    model: Optional[str] = None
    logical = 0
    cores = set()
    phys: Optional[str] = None
    hypervisor = False
    for line in text.splitlines():
        if ":" not in line:
            continue
        k, v = (s.strip() for s in line.split(":", 1))
        if k == "processor":
            logical += 1
        elif k in ("model name", "Model", "cpu model") and model is None and v:
            model = v
        elif k == "physical id":
            phys = v
        elif k == "core id":
            cores.add((phys, v))
        elif k == "flags" and "hypervisor" in v.split():
            hypervisor = True
    return model, logical, (len(cores) or None), hypervisor


def _physical_from_sysfs(fs: SysRoot) -> Optional[int]:
    # ARM cpuinfo has no "core id": count (package, core) pairs from the topology directory instead
    pairs = set()
    for d in fs.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
        core = fs.read_text(f"{d}/core_id")
        pkg = fs.read_text(f"{d}/physical_package_id")
        if core is not None:
            pairs.add(((pkg or "").strip(), core.strip()))
    return len(pairs) or None


def _cgroup_paths(fs: SysRoot, controller: Optional[str]) -> List[str]:
    """The process's cgroup path for a controller (v1) or the unified one (v2, controller None)."""
    text = fs.read_text("/proc/self/cgroup") or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, path = parts
        if (controller is None and ctrls == "") or (controller is not None and controller in ctrls.split(",")):
            return [path]
    return []


def _ancestors(path: str) -> List[str]:
    """"/a/b" -> ["/a/b", "/a", "/"]: a limit anywhere up the tree applies."""
    out = []
    p = path or "/"
    while True:
        out.append(p)
        if p in ("/", ""):
            break
        p = os.path.dirname(p.rstrip("/")) or "/"
    return out


def read_cgroup_limits(root: Union[str, SysRoot] = "/") -> Tuple[Optional[int], Optional[float], Optional[int]]:
    """(cgroup version, CPU quota in CPUs or None, memory limit in bytes or None); tightest along the path."""
    fs = SysRoot.of(root)
    base = "/sys/fs/cgroup"
    if fs.exists(f"{base}/cgroup.controllers"):
        cpu: Optional[float] = None
        mem: Optional[int] = None
        # Inside a cgroup namespace /proc/self/cgroup says "0::/" and the files sit at the mount's top
        for rel in _ancestors(next(iter(_cgroup_paths(fs, None)), "/")):
            d = f"{base}{rel}".rstrip("/")
            cpu_max = fs.read_text(f"{d}/cpu.max")
            if cpu_max:
                parts = cpu_max.split()
                if len(parts) == 2 and parts[0] != "max":
                    try:
                        q = int(parts[0]) / int(parts[1])
                        cpu = q if cpu is None else min(cpu, q)
                    except (ValueError, ZeroDivisionError):
                        pass
            mem_max = fs.read_text(f"{d}/memory.max")
            if mem_max and mem_max.strip() != "max":
                try:
                    m = int(mem_max.strip())
                    mem = m if mem is None else min(mem, m)
                except ValueError:
                    pass
        return 2, cpu, mem
    cpu_dirs = [d for d in (f"{base}/cpu,cpuacct", f"{base}/cpu", f"{base}/cpuacct,cpu") if fs.isdir(d)]
    mem_dir = f"{base}/memory" if fs.isdir(f"{base}/memory") else None
    if not cpu_dirs and mem_dir is None:
        return None, None, None
    cpu = None
    mem = None
    if cpu_dirs:
        for rel in dict.fromkeys(_cgroup_paths(fs, "cpu") + ["/"]):
            d = f"{cpu_dirs[0]}{rel}".rstrip("/")
            quota = fs.read_int(f"{d}/cpu.cfs_quota_us")
            period = fs.read_int(f"{d}/cpu.cfs_period_us")
            if quota is not None and quota > 0 and period:
                q = quota / period
                cpu = q if cpu is None else min(cpu, q)
    if mem_dir:
        for rel in dict.fromkeys(_cgroup_paths(fs, "memory") + ["/"]):
            limit = fs.read_int(f"{mem_dir}{rel}".rstrip("/") + "/memory.limit_in_bytes")
            if limit is not None and limit < _V1_UNLIMITED:
                mem = limit if mem is None else min(mem, limit)
    return 1, cpu, mem


def parse_meminfo(text: str) -> Dict[str, int]:
    """/proc/meminfo in bytes (its "kB" are KiB)."""
    out: Dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if "kB" in line else 1)
    return out


def _wsl(fs: SysRoot, kernel: Optional[str]) -> Tuple[bool, Optional[int]]:
    k = (kernel or "").lower()
    if "microsoft" in k or "wsl" in k:
        # WSL2 kernels: "5.15.153.1-microsoft-standard-WSL2"; WSL1: "4.4.0-19041-Microsoft"
        return True, 2 if ("wsl2" in k or "microsoft-standard" in k) else 1
    if fs.isdir("/usr/lib/wsl"):
        return True, None
    return False, None


# DMI sys_vendor / product_name -> the names systemd-detect-virt uses
_DMI_VIRT = (
    ("qemu", "qemu"), ("kvm", "kvm"), ("amazon ec2", "amazon"), ("vmware", "vmware"), ("xen", "xen"),
    ("virtualbox", "oracle"), ("innotek", "oracle"), ("google compute engine", "google"),
    ("parallels", "parallels"), ("bochs", "bochs"), ("openstack", "kvm"),
)


def _virtualization(runner, fs: SysRoot, hypervisor_flag: bool) -> Optional[str]:
    if fs.live and runner.which("systemd-detect-virt"):
        # --vm: containers are reported by the container probe, not here
        res = runner.run(["systemd-detect-virt", "--vm"], timeout=5.0)
        out = res.stdout.strip()
        if res.error is None and out:
            return None if out == "none" else out
    vendor = (fs.read_text("/sys/class/dmi/id/sys_vendor") or "").strip()
    product = (fs.read_text("/sys/class/dmi/id/product_name") or "").strip()
    dmi = f"{vendor} {product}".lower()
    if "microsoft" in dmi and "virtual" in dmi:
        return "microsoft"
    for needle, name in _DMI_VIRT:
        if needle in dmi:
            return name
    # The CPUID hypervisor bit says "a VM" without saying whose
    return "vm" if hypervisor_flag else None


def _gcc_version(runner) -> Optional[str]:
    if not runner.which("gcc"):
        return None
    res = runner.run(["gcc", "-dumpfullversion"], timeout=_COMPILER_TIMEOUT_S)
    out = res.stdout.strip()
    if res.ok and re.match(r"^\d+(\.\d+)*$", out):
        return out
    if res.error:  # hung or could not start: asking again would only double the wait
        return None
    # gcc < 7 has no -dumpfullversion
    res = runner.run(["gcc", "-dumpversion"], timeout=_COMPILER_TIMEOUT_S)
    out = res.stdout.strip()
    return out if res.ok and re.match(r"^\d+(\.\d+)*$", out) else None


def parse_clang_version(text: str) -> Optional[str]:
    m = re.search(r"clang version (\d+(?:\.\d+)*)", text)
    return m.group(1) if m else None


def _clang_version(runner) -> Optional[str]:
    if not runner.which("clang"):
        return None
    res = runner.run(["clang", "--version"], timeout=_COMPILER_TIMEOUT_S)
    return parse_clang_version(res.stdout) if res.ok else None


def _modules(fs: SysRoot) -> Tuple[Optional[List[str]], Optional[str], Optional[str]]:
    """(modules of interest loaded, where that was read, why it could not be)."""
    text = fs.read_text("/proc/modules")
    if text is not None:
        loaded = {line.split()[0] for line in text.splitlines() if line.strip()}
        return [m for m in MODULES_OF_INTEREST if m in loaded], "/proc/modules", None
    # Containers (gVisor, some Firecracker guests) have no /proc/modules, but sysfs still shows
    # /sys/module/<name> for every loaded module (and for built-ins with parameters): Linux
    # Documentation/ABI/testing/sysfs-module
    if fs.isdir("/sys/module"):
        return ([m for m in MODULES_OF_INTEREST if fs.isdir(f"/sys/module/{m}")], "/sys/module",
                "no /proc/modules: kernel modules read from /sys/module")
    return None, None, "kernel modules unknown: neither /proc/modules nor /sys/module is readable"


def _affinity_list(fs: SysRoot, live: bool) -> Optional[str]:
    """The CPUs this process may run on, as a cpulist ("0-27,56-83")."""
    if live and hasattr(os, "sched_getaffinity"):
        try:
            from envdoctor.probes.numa import format_cpulist

            return format_cpulist(os.sched_getaffinity(0))
        except OSError:
            pass
    for line in (fs.read_text("/proc/self/status") or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip() or None
    return None


def env_names() -> Tuple[List[str], Optional[str]]:
    """The variables the host section records: ENV_OF_INTEREST and every variable the environment-variable table
    (compat_data/env_vars.json, bundled or an installed update) names, so that a row added there is recorded without
    a second list here; and why the table's names are missing, when they are."""
    from envdoctor.compat.env_vars import recorded_names

    names, problem = recorded_names()
    note = None
    if problem:
        note = f"environment-variable table not read ({problem})" + ("" if names else
                                                                    ": only the built-in list of variables recorded")
    return list(dict.fromkeys([*ENV_OF_INTEREST, *names])), note


def _network_interfaces(fs: SysRoot) -> Optional[List[str]]:
    """The network interfaces' names (/sys/class/net), what NCCL_SOCKET_IFNAME selects among; None when unknown."""
    if fs.isdir("/sys/class/net"):
        try:
            return sorted(fs.listdir("/sys/class/net"))
        except OSError:
            return None
    return None


def _infiniband(fs: SysRoot) -> Optional[List[str]]:
    if fs.isdir("/sys/class/infiniband"):
        try:
            return sorted(fs.listdir("/sys/class/infiniband"))
        except OSError:
            return None
    return [] if fs.isdir("/sys/class") else None


@probe("host", failed=lambda reason: Host(status=ProbeStatus.FAILED, reason=reason))
def collect_host(ctx: ProbeContext) -> Host:
    return probe_host(ctx.runner, root=ctx.fs, env=ctx.env)


def probe_host(runner, root: Union[str, SysRoot] = "/", env: Optional[Mapping[str, str]] = None) -> Host:
    """The host section, its container part included (a crash is turned into a failed section by the guard).

    Each part reads its own files and returns its Host fields; what it could not read goes to ``missing``,
    which becomes the section's reason."""
    fs, env = root_and_env(root, env)
    live = fs.live
    missing: List[str] = []
    system = _system(fs, live)
    cpu = _cpus(fs, live, missing)
    hyper_flag = cpu.pop("_hypervisor_flag")
    memory = _memory_and_cgroup(fs, missing)
    modules, modules_source, modules_note = _modules(fs)
    if modules_note:
        missing.append(modules_note)
    hostname = platform.node() if live else ((fs.read_text("/etc/hostname") or "").strip() or None)
    names, names_note = env_names()
    if names_note:
        missing.append(names_note)
    return Host(
        status=ProbeStatus.OK,
        hostname=hostname or None,
        **system,
        **cpu,
        **memory,
        container=probe_container(fs, env),
        virtualization=_virtualization(runner, fs, hyper_flag),
        gcc_version=_gcc_version(runner),
        clang_version=_clang_version(runner),
        env={k: env.get(k) for k in names},
        kernel_modules=modules,
        kernel_modules_source=modules_source,
        infiniband_devices=_infiniband(fs),
        network_interfaces=_network_interfaces(fs),
        reason="; ".join(missing) if missing else None,
    )


def _system(fs: SysRoot, live: bool) -> Dict[str, Any]:
    """OS, distribution, kernel, machine, glibc and WSL."""
    kernel = (fs.read_text("/proc/sys/kernel/osrelease") or "").strip() or (platform.release() if live else None)
    distro_id, distro_version, distro_name, distro_like = _distro(fs)
    wsl, wsl_version = _wsl(fs, kernel)
    return dict(os=platform.system() if live else "Linux", distro_id=distro_id, distro_version=distro_version,
                distro_name=distro_name, distro_like=distro_like, kernel=kernel,
                machine=platform.machine() if live else None, glibc_version=_glibc(live), wsl=wsl,
                wsl_version=wsl_version)


def _glibc(live: bool) -> Optional[str]:
    if not live:
        return None
    glibc: Optional[str] = None
    try:
        cs = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.35"
        glibc = cs.split()[-1] if cs else None
    except (ValueError, OSError, AttributeError):
        glibc = None
    if glibc is None:
        lib, ver = platform.libc_ver()
        glibc = ver if lib == "glibc" and ver else None
    return glibc


def _cpus(fs: SysRoot, live: bool, missing: List[str]) -> Dict[str, Any]:
    """CPU model and counts (os.cpu_count(), physical cores, the affinity mask), the cgroup CPU quota and NUMA
    nodes; "_hypervisor_flag" (cpuinfo's hypervisor flag) is for the virtualization probe, not a Host field."""
    cpuinfo = fs.read_text("/proc/cpuinfo")
    cpu_model, logical, physical, hyper_flag = parse_cpuinfo(cpuinfo or "")
    if cpuinfo is None:
        missing.append("could not read /proc/cpuinfo")
    if physical is None:
        physical = _physical_from_sysfs(fs)
    affinity: Optional[int] = None
    if live and hasattr(os, "sched_getaffinity"):
        try:
            affinity = len(os.sched_getaffinity(0))
        except OSError:
            affinity = None
    numa: Optional[int] = None
    if fs.isdir("/sys/devices/system/node"):
        numa = len([n for n in fs.listdir("/sys/devices/system/node") if re.match(r"^node\d+$", n)]) or None
    return dict(cpu_model=cpu_model, cpu_logical_count=os.cpu_count() if live else (logical or None),
                cpu_physical_count=physical, cpu_affinity_count=affinity, cpu_affinity_list=_affinity_list(fs, live),
                numa_node_count=numa, _hypervisor_flag=hyper_flag)


def _memory_and_cgroup(fs: SysRoot, missing: List[str]) -> Dict[str, Any]:
    """RAM (meminfo), the cgroup version and limits, and /dev/shm."""
    cg_version, cg_cpu, cg_mem = read_cgroup_limits(fs)
    meminfo_text = fs.read_text("/proc/meminfo")
    meminfo = parse_meminfo(meminfo_text or "")
    if meminfo_text is None:
        missing.append("could not read /proc/meminfo")
    shm_total = shm_free = None
    if fs.isdir("/dev/shm"):
        try:
            st = fs.statvfs("/dev/shm")
            shm_total, shm_free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
        except OSError:
            missing.append("could not read /dev/shm statvfs")
    else:
        missing.append("could not read /dev/shm")
    return dict(cgroup_version=cg_version, cgroup_cpu_quota=cg_cpu, cgroup_memory_limit_bytes=cg_mem,
                memory_total_bytes=meminfo.get("MemTotal"), memory_available_bytes=meminfo.get("MemAvailable"),
                shm_total_bytes=shm_total, shm_free_bytes=shm_free)
