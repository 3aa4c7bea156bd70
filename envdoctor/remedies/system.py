"""Commands that name paths, devices and environment values from the facts: copies, disk tests, variables."""

from __future__ import annotations

from typing import List, Optional

from ..model.facts import Facts
from .platform import platform_of
from .shell import Placeholder, Raw, command, export, unset

LOCAL_DATA = "/local_nvme/data/"  # an example destination, shown as such


def copy_to_local(path: str) -> str:
    """rsync a data directory's contents to local NVMe (the trailing slash copies the contents)."""
    src = path if path.endswith("/") else path + "/"
    return command("rsync", "-a", src, LOCAL_DATA, what="the data path")


def random_read_test(path: str) -> str:
    """fio random reads in ``path``: an HDD manages a few hundred IOPS, an SSD tens of thousands."""
    return command("fio", "--name=probe", f"--directory={path}", "--rw=randread", "--bs=128k", "--size=1G",
                   "--direct=1", "--runtime=20", "--time_based", "--group_reporting", "--unlink=1", what="the data path")


def largest_dirs(path: str) -> str:
    return command("du", "-xh", "--max-depth=1", path, Raw("|"), "sort", "-h", Raw("|"), "tail",
                   what="the mount point")


def pcie_link_status(bdf: str) -> str:
    return command("sudo", "lspci", "-vv", "-s", bdf, Raw("|"), "grep", "-E", "LnkCap|LnkSta",
                   what="the PCI address")


def kernel_log_xid(bus: Optional[str]) -> str:
    return command("sudo", "dmesg", "-T", Raw("|"), "grep", f"Xid (PCI:{bus}" if bus else "Xid (",
                   what="the PCI address")


def set_env(facts: Optional[Facts], name: str, value: str, comment: Optional[str] = None) -> str:
    shell = platform_of(facts).shell if facts is not None else "posix"
    return export(name, value, shell=shell, comment=comment)


def unset_env(facts: Optional[Facts], name: str, comment: Optional[str] = None) -> str:
    shell = platform_of(facts).shell if facts is not None else "posix"
    return unset(name, shell=shell, comment=comment)


def drop_path_entry(facts: Optional[Facts], name: str, value: str, entry: str, sep: str = ":") -> str:
    """``export NAME=<value without entry>``, or ``unset NAME`` when nothing else is left."""
    keep = sep.join(d for d in value.split(sep) if d and d != entry)
    return set_env(facts, name, keep) if keep else unset_env(facts, name)


def pth_line_removal(file: str, line_no: int, file_lines: Optional[int]) -> str:
    """``rm FILE`` when the .pth line is all the file holds, else the sed line that deletes exactly that line."""
    if file_lines == 1:
        return command("rm", "--", file, what="the .pth path")
    return command("sed", "-i", f"{line_no}d", "--", file, what="the .pth path")


def placeholder(text: str) -> Placeholder:
    """A value for the user to fill in, e.g. placeholder("<n>")."""
    return Placeholder(text)


def placeholder_flag(flag: str, text: str) -> Placeholder:
    """``--cpus=<n>`` as one quoted word, so pasting it unfilled redirects nothing."""
    return Placeholder(f"{flag}={text}")


__all__: List[str] = ["copy_to_local", "random_read_test", "largest_dirs", "pcie_link_status", "kernel_log_xid",
                      "set_env", "unset_env", "drop_path_entry", "pth_line_removal", "placeholder", "placeholder_flag"]
