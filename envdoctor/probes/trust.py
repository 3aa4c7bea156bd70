"""Whether a program on disk could hold another user's code: a directory on its path that another user owns or
can write to (issue 40).

envdoctor looks for interpreters the user did not name (venvs under the current directory and the home
directory, ``python3`` on PATH) to suggest ``envdoctor --python THAT`` when the judged one has no torch. Run from
a world-writable directory (``/tmp``, a shared scratch space), that found an interpreter another user planted
there, and the printed fix, pasted as root, ran their code. A program is trusted here only when every component
of its path, from ``/`` down to the file itself, and of the path its links resolve to, is owned by this user or
root, and no directory on the way can be written by another user:

- a file writable by every user (``o+w``) can be rewritten by anyone;
- a directory writable by every user (``o+w``) lets anyone replace what is in it, unless it is sticky
  (``+t``, as ``/tmp``): then only an entry's owner can rename or remove it, so an entry this user or root owns
  stays ours (one that another user owns fails the owner rule);
- a group-writable file or directory (``g+w``, not a sticky directory) counts the same when the group is not this user's own
  (its primary group, with no other member): another member could write there;
- a component that cannot be read (missing, no permission) is no reason to distrust: nothing is run or suggested
  that does not exist, and an unreadable ancestor is the system's.

``untrusted_because`` reads only metadata (lstat, the user and group databases), never the file.
"""

from __future__ import annotations

import os
import stat
from typing import List, Optional


def _components(path: str) -> List[str]:
    """"/a/b/c" -> ["/", "/a", "/a/b", "/a/b/c"]."""
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    out = [os.sep]
    for part in parts:
        out.append(os.path.join(out[-1], part))
    return out


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _own_group(gid: int, uid: int) -> bool:
    """The group is this user's alone: its primary group, with no member but this user."""
    try:
        import grp
        import pwd

        me = pwd.getpwuid(uid)
        members = [m for m in grp.getgrgid(gid).gr_mem if m != me.pw_name]
        return gid == me.pw_gid and not members
    except (ImportError, KeyError):
        return False


def _chain_because(path: str, uid: int) -> Optional[str]:
    for component in _components(path):
        try:
            st = os.lstat(component)
        except OSError:
            return None
        if st.st_uid not in (uid, 0):
            return f"{component} is owned by {_user(st.st_uid)}"
        if stat.S_ISLNK(st.st_mode) or (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
            continue  # a link's own mode means nothing; a sticky directory keeps our entries ours
        if st.st_mode & stat.S_IWOTH:
            return f"{component} is writable by every user"
        if st.st_mode & stat.S_IWGRP and st.st_gid != 0 and not _own_group(st.st_gid, uid):
            return f"{component} is writable by its group (gid {st.st_gid})"
    return None


def untrusted_because(path: str, uid: Optional[int] = None) -> Optional[str]:
    """Why running ``path`` could run code another user can change (the component and the reason), or None when
    only this user (``uid``, default: ours) and root can change it. Checks the path as given and, when it is a
    link, the path it resolves to."""
    if os.name != "posix":
        return None  # owners and modes as here are POSIX's; Windows ACLs are not read
    uid = os.geteuid() if uid is None else uid
    why = _chain_because(path, uid)
    if why is None:
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return None
        if real != os.path.abspath(path):
            why = _chain_because(real, uid)
    return why
