"""The file system a probe reads, injected like the Runner: machine paths ("/proc/cpuinfo") under a root directory."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import glob as _glob
import os
from typing import List, Mapping, Optional, Tuple, Union

_MAX_LINK_HOPS = 40  # the kernel's own limit on symlinks followed in one lookup (MAXSYMLINKS, include/linux/namei.h)


class SysRoot:
    """Every path a probe reads is named as the probed machine names it; ``root`` says where that machine's "/" is.

    ``SysRoot("/")`` is this machine. Tests build a tree under a temporary directory and pass ``SysRoot(tmp)``;
    ``realpath`` resolves absolute symlink targets inside the tree, as they would resolve on the machine it stands
    for; the reads themselves open the path as given (resolve first where a link may be absolute, as sysfs's are).
    Reads never raise for a missing or unreadable file: None (or False) is a fact, not an error.
    """

    def __init__(self, root: str = "/"):
        self.root = os.fspath(root) or "/"

    def __repr__(self) -> str:
        return f"SysRoot({self.root!r})"

    @classmethod
    def of(cls, root: Union[str, SysRoot, None]) -> SysRoot:
        """A SysRoot from what callers pass today (a path string, or already a SysRoot)."""
        if isinstance(root, SysRoot):
            return root
        return cls(root or "/")

    @property
    def live(self) -> bool:
        """This machine itself: process-wide facts (os.cpu_count, sched_getaffinity, platform) may be asked."""
        return self.root == "/"

    def host(self, path: str) -> str:
        """Where the machine path ``path`` lies on this machine (the file to open, the program to run)."""
        if self.live:
            return path
        return os.path.join(self.root, path.lstrip("/"))

    def unroot(self, host_path: str) -> str:
        """A path on this machine (under ``root``) as the probed machine names it."""
        if self.live:
            return host_path
        rel = os.path.relpath(host_path, self.root)
        return "/" if rel == "." else "/" + rel

    def read_text(self, path: str, limit: Optional[int] = None) -> Optional[str]:
        """The content of ``path`` (at most ``limit`` characters), or None when it is missing or unreadable."""
        try:
            with open(self.host(path), encoding="utf-8", errors="replace") as f:
                return f.read(-1 if limit is None else limit)
        except OSError:
            return None

    def read_attr(self, path: str) -> Optional[str]:
        """A one-value file (a sysfs attribute), stripped; None when it cannot be read."""
        text = self.read_text(path)
        return None if text is None else text.strip()

    def read_int(self, path: str) -> Optional[int]:
        text = self.read_text(path)
        if text is None:
            return None
        try:
            return int(text.strip())
        except ValueError:
            return None

    def listdir(self, path: str) -> List[str]:
        """The entries of a directory, as os.listdir (OSError when it cannot be listed: callers say why)."""
        return os.listdir(self.host(path))

    def exists(self, path: str) -> bool:
        return os.path.exists(self.host(path))

    def isdir(self, path: str) -> bool:
        return os.path.isdir(self.host(path))

    def isfile(self, path: str) -> bool:
        return os.path.isfile(self.host(path))

    def readlink(self, path: str) -> str:
        return os.readlink(self.host(path))

    def stat(self, path: str) -> os.stat_result:
        return os.stat(self.host(path))

    def statvfs(self, path: str) -> os.statvfs_result:
        return os.statvfs(self.host(path))

    def glob(self, pattern: str) -> List[str]:
        """Machine paths matching ``pattern`` (a machine path with wildcards), in the order glob gives them."""
        return [self.unroot(p) for p in _glob.glob(self.host(pattern))]

    def realpath(self, path: str) -> str:
        """``path`` with every symlink resolved, as a machine path; absolute targets stay inside ``root``."""
        if self.live:
            return os.path.realpath(path)
        pending = [p for p in path.split("/") if p][::-1]  # a stack: the next component last
        cur = "/"
        hops = 0
        while pending:
            part = pending.pop()
            if part == ".":
                continue
            if part == "..":
                cur = os.path.dirname(cur) or "/"
                continue
            nxt = os.path.join(cur, part)
            host = self.host(nxt)
            if hops < _MAX_LINK_HOPS and os.path.islink(host):
                hops += 1
                target = os.readlink(host)
                if target.startswith("/"):
                    cur = "/"
                pending.extend([p for p in target.split("/") if p][::-1])
                continue
            cur = nxt
        return cur


def root_and_env(root: Union[str, SysRoot, None],
                 env: Optional[Mapping[str, str]]) -> Tuple[SysRoot, Mapping[str, str]]:
    """What a probe reads: the SysRoot for ``root`` and the environment (this process's when ``env`` is None)."""
    return SysRoot.of(root), (os.environ if env is None else env)
