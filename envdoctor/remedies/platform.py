"""Which platform a fix is for (Linux distribution family, Windows, WSL, container), read from the facts."""

from __future__ import annotations

import re
from typing import Optional

from ..domain.fastclass import dataclass
from ..model.facts import Facts, PythonEnv
from .shell import POSIX, POWERSHELL

# os-release ID (and ID_LIKE words) -> the family whose package tool and driver packages apply.
# ID values: https://www.freedesktop.org/software/systemd/man/latest/os-release.html and each distribution's file.
_FAMILIES = {
    "ubuntu": "ubuntu", "pop": "ubuntu", "linuxmint": "ubuntu", "elementary": "ubuntu", "zorin": "ubuntu",
    "debian": "debian", "raspbian": "debian",
    "rhel": "rhel", "centos": "rhel", "rocky": "rhel", "almalinux": "rhel", "ol": "rhel", "amzn": "rhel",
    "fedora": "fedora",
    "opensuse": "suse", "opensuse-leap": "suse", "opensuse-tumbleweed": "suse", "sles": "suse", "sled": "suse",
    "suse": "suse",
    "arch": "arch", "manjaro": "arch", "endeavouros": "arch", "garuda": "arch",
}
PACKAGE_TOOL = {"ubuntu": "apt", "debian": "apt", "rhel": "dnf", "fedora": "dnf", "suse": "zypper", "arch": "pacman"}


@dataclass(frozen=True)
class Platform:
    os: Optional[str]  # "linux", "windows", "macos", or None when the facts do not say
    family: Optional[str]  # "ubuntu", "debian", "rhel", "fedora", "suse", "arch"; None when unknown
    distro_version: Optional[str]
    wsl: bool
    container: Optional[str]  # the runtime ("docker", "kubernetes") when inside one
    shell: str  # POSIX or POWERSHELL: how commands are quoted

    @property
    def package_tool(self) -> Optional[str]:
        return PACKAGE_TOOL.get(self.family or "")

    @property
    def windows(self) -> bool:
        return self.os == "windows"


# PRETTY_NAME / collect_env "OS:" prefixes -> family, for pastes that name the distribution but not its ID
_NAME_PREFIXES = (
    ("ubuntu", "ubuntu"), ("pop!_os", "ubuntu"), ("linux mint", "ubuntu"), ("debian", "debian"),
    ("red hat enterprise linux", "rhel"), ("rhel", "rhel"), ("centos", "rhel"), ("rocky linux", "rhel"),
    ("almalinux", "rhel"), ("oracle linux", "rhel"), ("amazon linux", "rhel"), ("fedora", "fedora"),
    ("opensuse", "suse"), ("suse linux enterprise", "suse"), ("sles", "suse"), ("arch linux", "arch"),
    ("manjaro", "arch"), ("endeavouros", "arch"),
)


def family_of(distro_id: Optional[str], distro_like: Optional[str] = None,
              distro_name: Optional[str] = None) -> Optional[str]:
    """The family of an os-release ID, else of the first ID_LIKE word that names one, else of the
    distribution's name ("Rocky Linux 9.3 (Blue Onyx)")."""
    for word in [distro_id or ""] + (distro_like or "").split():
        fam = _FAMILIES.get(word.strip().lower())
        if fam:
            return fam
    name = (distro_name or "").strip().lower()
    for prefix, fam in _NAME_PREFIXES:
        if name.startswith(prefix):
            return fam
    return None


def _version_from_name(name: Optional[str]) -> Optional[str]:
    m = re.search(r"\b(\d+(?:\.\d+)?)\b", name or "")
    return m.group(1) if m else None


def platform_of(facts: Facts, py: Optional[PythonEnv] = None) -> Platform:
    host = facts.host
    os_name = (host.os or "").lower() or None
    if py is not None and py.platform and py.platform.lower().startswith("win"):
        os_name = "windows"  # the interpreter's own tag wins: a Windows Python judged from a paste
    if os_name == "darwin":
        os_name = "macos"
    family = family_of(host.distro_id, host.distro_like, host.distro_name) if os_name in (None, "linux") else None
    version = host.distro_version or (_version_from_name(host.distro_name) if not host.distro_id else None)
    runtime = host.container.runtime if host.container and host.container.runtime else None
    return Platform(os=os_name, family=family, distro_version=version, wsl=bool(host.wsl),
                    container=runtime, shell=POWERSHELL if os_name == "windows" else POSIX)


def fix_shell(facts: Facts, subject: Optional[str] = None) -> str:
    """The shell a finding's fix commands were quoted for: the rule the remedies use (``platform_of``, with
    the interpreter the finding is about, named by ``subject``, when the facts hold it)."""
    py = next((p for p in facts.pythons if subject and subject in (p.executable, p.requested_as)), None)
    return platform_of(facts, py).shell
