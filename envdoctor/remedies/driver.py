"""Driver install commands per platform: apt, dnf, zypper, pacman; on WSL and Windows the Windows driver."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, List, Optional

from ..domain.arch import parse_cc
from ..domain.fastclass import dataclass
from ..domain.versions import release
from ..model.facts import Facts
from .platform import Platform, platform_of
from .shell import Raw, command, comment_line

if TYPE_CHECKING:
    from ..compat.queries import Compat

GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"
COMPAT_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/"
WINDOWS_DRIVER = "https://www.nvidia.com/Download/index.aspx"


@dataclass(frozen=True)
class DriverPlan:
    commands: List[str] = field(default_factory=list)
    note: Optional[str] = None  # where the driver must be changed instead (Windows host, container host)


def _pre_turing(facts: Facts) -> bool:
    """Open kernel modules (nvidia-open) run Turing (sm_75) and newer only: NVIDIA Driver Installation
    Guide, "Kernel Modules"."""
    for g in facts.driver.gpus:
        try:
            if g.compute_capability and parse_cc(g.compute_capability) < (7, 5):
                return True
        except ValueError:
            continue
    return False


def _reboot(extra: str = "") -> str:
    return (extra + "; then reboot") if extra else "then reboot"


def _linux_commands(plat: Platform, branch: Optional[int], server: bool, pre_turing: bool) -> List[str]:
    b = str(branch) if branch is not None else None
    # Open kernel modules (nvidia-open, the *-open streams, which start at R515) drive Turing and newer only; older
    # GPUs get the proprietary flavour: the *-dkms streams and cuda-drivers on RHEL-likes, nvidia on Arch (NVIDIA
    # Driver Installation Guide, "Kernel Modules" and "Switching between Driver Module Flavors"; NVIDIA
    # yum-packaging-dkms-nvidia: streams latest-dkms and XXX-dkms)
    fam = plat.family
    if fam == "ubuntu":
        if b is None:
            return [command("sudo", "ubuntu-drivers", "install", comment="Ubuntu: picks the recommended driver; "
                                                                         "then reboot")]
        return [command("sudo", "apt-get", "install", "-y", f"nvidia-driver-{b}" + ("-server" if server else ""),
                        comment=_reboot("Ubuntu"))]
    if fam == "debian":
        # NVIDIA's CUDA repository carries one cuda-drivers-<branch> meta package per branch (guide, "Debian")
        return [command("sudo", "apt-get", "install", "-y", f"cuda-drivers-{b}" if b else "cuda-drivers",
                        comment=_reboot("Debian, NVIDIA's CUDA repository"))]
    if fam == "suse":
        return [command("sudo", "zypper", "install", "-y", f"cuda-drivers-{b}" if b else "cuda-drivers",
                        comment=_reboot("SUSE, NVIDIA's CUDA repository"))]
    if fam in ("rhel", "fedora"):
        major = (release(plat.distro_version) or (None,))[0]
        # Guide "Kernel Modules", Table 5: RHEL/Rocky/Alma/Oracle 8-9 and Amazon Linux 2023 pick a branch with
        # the nvidia-driver module stream; RHEL 10 and Fedora have no module streams and lock the branch with
        # dnf versionlock instead. `dnf install nvidia-driver:580` is no valid package spec.
        streams = fam == "rhel" and (major is None or major < 10 or major == 2023)
        where = "Fedora" if fam == "fedora" else ("RHEL/Rocky 8/9 (CUDA repo)" if streams else "RHEL/Rocky 10 "
                                                                                           "(CUDA repo)")
        package = "cuda-drivers" if pre_turing else "nvidia-open"
        note = where + ("; the proprietary modules: the GPU is older than Turing" if pre_turing else "")
        if streams:
            if pre_turing:
                stream = f"nvidia-driver:{b}-dkms" if b else "nvidia-driver:latest-dkms"
            else:
                stream = f"nvidia-driver:{b}-open" if b else "nvidia-driver:open-dkms"
            return [command("sudo", "dnf", "module", "enable", "-y", stream, Raw("&&"),
                            "sudo", "dnf", "install", "-y", package, comment=_reboot(note))]
        if b is None:
            return [command("sudo", "dnf", "install", "-y", package, comment=_reboot(note))]
        return [command("sudo", "dnf", "versionlock", "add", f"*nvidia*{b}*", Raw("&&"),
                        "sudo", "dnf", "install", "-y", package, comment=_reboot(note))]
    if fam == "arch":
        older = f"; an older branch (R{b}) is in the AUR as nvidia-{b}xx-dkms" if b else ""
        return [command("sudo", "pacman", "-S", "--needed", "nvidia" if pre_turing else "nvidia-open",
                        comment=_reboot("Arch: the newest branch" + older
                                        + ("; the proprietary modules: the GPU is older than Turing"
                                           if pre_turing else "")))]
    # the distribution is not in the facts (a paste, a snapshot without os-release): the two common forms
    ubuntu = Platform("linux", "ubuntu", None, False, None, plat.shell)
    rhel = Platform("linux", "rhel", None, False, None, plat.shell)
    out = _linux_commands(ubuntu, branch, server, pre_turing)
    if b is not None:
        out[0] = out[0].replace("# Ubuntu;", "# Ubuntu/Debian;")
        out += _linux_commands(rhel, branch, server, pre_turing)
    return out


def datacenter_gpus(facts: Facts, compat: Compat) -> bool:
    """Are the GPUs here data-center ones (compat gpus.json)? Ubuntu's fixes then take the -server driver builds;
    a family name ("NVIDIA A100", a declared fleet's "H100") counts when every model it can mean is one."""
    return any((specs := compat.gpu_candidates(g.name)) and all(sp.datacenter for sp in specs)
               for g in facts.driver.gpus if g.name)


def driver_install(facts: Facts, branch: Optional[int], server: bool = False) -> DriverPlan:
    """Commands that install driver ``branch`` (None: the recommended one) where the driver lives.

    Under WSL 2 the driver is the Windows one, mapped in through /usr/lib/wsl/lib; a Linux driver installed
    inside WSL breaks CUDA (https://docs.nvidia.com/cuda/wsl-user-guide/index.html), so no Linux command is
    given. In a container the kernel driver is the host's.
    """
    plat = platform_of(facts)
    want = f"R{branch} or newer" if branch is not None else "the current driver"
    if plat.wsl:
        return DriverPlan([], f"under WSL the driver is the Windows one: install {want} on Windows "
                              f"({WINDOWS_DRIVER}), never a Linux NVIDIA driver inside WSL")
    if plat.windows:
        return DriverPlan([], f"install {want} for Windows from {WINDOWS_DRIVER}")
    if plat.os == "macos":
        return DriverPlan([], "macOS has no NVIDIA CUDA driver: use a Linux or Windows machine")
    pre = _pre_turing(facts)
    if plat.container:
        # the container's distribution says nothing about the host's
        host = Platform("linux", None, None, False, None, plat.shell)
        return DriverPlan(_linux_commands(host, branch, server, pre),
                          "in a container the driver is the host's: upgrade it on the host")
    return DriverPlan(_linux_commands(plat, branch, server, pre))


def hold_driver_packages(facts: Facts) -> List[str]:
    """Keep automatic upgrades off the NVIDIA driver packages (an upgrade under a loaded kernel module breaks NVML
    until a reboot), with the package tool of the facts' distribution (apt when it is unknown)."""
    fam = platform_of(facts).family
    if fam in ("rhel", "fedora"):
        return [command("sudo", "dnf", "versionlock", "add", "*nvidia*",
                        comment="dnf's versionlock plugin; `dnf versionlock delete` before a planned upgrade")]
    if fam == "suse":
        return [command("sudo", "zypper", "addlock", "*nvidia*",
                        comment="`zypper removelock` before a planned upgrade")]
    if fam == "arch":
        return [comment_line("add IgnorePkg = nvidia* lib32-nvidia* to /etc/pacman.conf; remove it before a planned "
                             "upgrade")]
    return ["echo 'Unattended-Upgrade::Package-Blacklist { \"nvidia-\"; \"libnvidia-\"; };' | "
            "sudo tee /etc/apt/apt.conf.d/51nvidia-blacklist"]


def remove_linux_driver(facts: Facts, comment: Optional[str] = None) -> List[str]:
    """Remove a Linux NVIDIA driver (inside WSL, where it overrides the Windows driver's libcuda).

    apt takes the package-name patterns directly; elsewhere the driver's package names vary by repository,
    so the command lists what is installed and the comment says what to remove.
    """
    fam = platform_of(facts).family
    then = f"{comment}: remove the driver packages it lists" if comment else "remove the driver packages it lists"
    if fam == "arch":
        return [command("pacman", "-Qs", "nvidia", comment=then)]
    if fam in ("rhel", "fedora"):
        return [command("dnf", "list", "--installed", "*nvidia*", comment=then)]
    if fam == "suse":
        return [command("zypper", "search", "--installed-only", "nvidia", comment=then)]
    # apt reads arguments with ^ as regular expressions over package names
    return [command("sudo", "apt-get", "remove", "--purge", "^nvidia-driver-.*", "^libnvidia-.*", comment=comment)]
