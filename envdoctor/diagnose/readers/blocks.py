"""Find nvidia-smi -q / -q -x, nvlink, topo -m, lspci -vv, df/mount, nproc and free blocks in a paste."""

from __future__ import annotations

import dataclasses
import re
from typing import Optional, Tuple

from ...model.facts import ProbeStatus
from ...parsers.kernel_log import parse_xid_events
from ...parsers.lspci import nvidia_gpu_links
from ...parsers.nvidia_smi_q import parse_nvidia_smi_q
from ...parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from ...parsers.nvlink import parse_nvlink_status
from ...parsers.topo import parse_topo
from .base import BARE, LOOSE, STRUCTURED, Acc, Paste

# A block detector finds a format's marker line, slices the block out of the paste, and hands the slice to
# the parser the live probes use (envdoctor/parsers): one parser per format, tested on real captures.
MAX_BLOCK = 20000  # lines; -q of 8 GPUs is ~2000

_Q_LINE = re.compile(r"^(?:\s+\S|\S.*?\s:\s?|GPU [0-9A-Fa-f]{4,8}:|Attached GPUs|Timestamp|Driver Version|=+NVSMI)")
_NVLINK_GPU = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\(UUID:[^)]*\))?\s*$")
_NVLINK_LINE = re.compile(r"^\s*Link\s+\d+:|all links are inactive|does not have or support|^GPU\s+\d+:")
_TOPO_ROW = re.compile(r"^\s*(?:GPU|NIC|NVS|CPU)\d+\b")
_BDF = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]\s")
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4, "p": 1024 ** 5}
_SIZE = r"(\d+(?:[.,]\d+)?)([KMGTP]?)(?:i?B)?"
# df -h: "shm  64M  0  64M  0% /dev/shm"; df (1K blocks): "shm 65536 0 65536 0% /dev/shm"
_DF_SHM = re.compile(rf"^\S+\s+{_SIZE}\s+{_SIZE}\s+{_SIZE}\s+\d+%\s+/dev/shm\s*$", re.I)
# mount / /proc/mounts: "shm on /dev/shm type tmpfs (rw,...,size=65536k)", "shm /dev/shm tmpfs rw,size=65536k 0 0"
_MOUNT_SHM = re.compile(r"\s/dev/shm\s(?:type\s+)?tmpfs\b.*?\bsize=(\d+)([kmgt]?)", re.I)
_FREE_MEM = re.compile(r"^Mem:\s+(\d+(?:[.,]\d+)?)([KMGTP]?)(?:i)?\s", re.I)


def read(paste: Paste, acc: Acc) -> None:
    _read_q(paste, acc)
    _read_xml(paste, acc)
    _read_nvlink(paste, acc)
    _read_topo(paste, acc)
    _read_lspci(paste, acc)
    _read_host(paste, acc)
    _read_platform(paste, acc)
    _read_kernel_log(paste, acc)


def _run(paste: Paste, start: int, ok: re.Pattern[str], blank_ok: int = 2) -> Tuple[int, int]:
    """[start, end): the lines from ``start`` while they match ``ok`` (a few blank lines allowed)."""
    lines = paste.lines
    j, blanks, end = start + 1, 0, start + 1
    while j < len(lines) and j < start + MAX_BLOCK:
        s = lines[j]
        if not s.strip():
            blanks += 1
            if blanks > blank_ok:
                break
        elif ok.search(s):
            blanks = 0
            end = j + 1
        else:
            break
        j += 1
    return start, end


def _slice(paste: Paste, span: Tuple[int, int]) -> str:
    return "\n".join(paste.lines[span[0]:span[1]])


def _put_driver(acc: Acc, driver, how: str) -> None:
    if driver.status != ProbeStatus.OK:
        return
    acc.put("driver.version", driver.version, STRUCTURED, how)
    acc.put("driver.cuda", driver.cuda_driver_version, STRUCTURED, how)
    acc.put("driver.seen", True, STRUCTURED, how)
    # -q and the XML carry throttle reasons, ECC, remapped rows, MIG, persistence and PCIe: they win over a
    # table's few columns
    acc.set_gpus(driver.gpus, STRUCTURED + 1)
    acc.add_found(how)


def _read_q(paste: Paste, acc: Acc) -> None:
    hits = paste.with_any(["nvsmi log"])
    if not hits:
        _read_q_excerpt(paste, acc)
        return
    span = _run(paste, hits[0], _Q_LINE)
    _put_driver(acc, parse_nvidia_smi_q(_slice(paste, span)), "nvidia-smi -q")


# a section of `nvidia-smi -q` pasted without the report's header (`nvidia-smi -q | grep -A 12 "GPU Link Info"`,
# `nvidia-smi -q -d PERFORMANCE` cut to its reasons): the section header alone on its line, then its "key : value"
# lines; the parent each sits under in the full report (-q's tree: GPU > PCI > GPU Link Info)
_Q_SECTION = re.compile(r"^(\s*)(GPU Link Info|Clocks (?:Event|Throttle) Reasons|ECC Errors|Remapped Rows)\s*$")
_Q_PARENT = {"gpu link info": "PCI"}
_Q_GPU = re.compile(r"^\s*GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


def _read_q_excerpt(paste: Paste, acc: Acc) -> None:
    """Sections of -q without its header, re-nested under a GPU so that the -q parser reads them (one GPU: the
    excerpt's own `GPU <bus id>` line names it, else it is the paste's only GPU by assumption, said in `how`)."""
    hits = [(i, m) for i in paste.with_any(["gpu link info", "reasons", "ecc errors", "remapped rows"])[:8]
            if (m := _Q_SECTION.match(paste.lines[i]))]
    if not hits:
        return
    bus = next((g.group(1) for g in map(_Q_GPU.match, paste.lines[:hits[0][0]][-40:]) if g), None)
    body, seen = [], set()
    for i, m in hits:
        if m.group(2).lower() in seen:
            continue  # the same section of another GPU (`grep -A` over several): read as one GPU, the first
        seen.add(m.group(2).lower())
        cut = len(m.group(1))
        parent = _Q_PARENT.get(m.group(2).lower())
        pad = "        " if parent else "    "
        if parent:
            body.append(f"    {parent}")
        span = _run(paste, i, _Q_LINE, blank_ok=0)
        body.extend(pad + line[cut:] if line[:cut].strip() == "" else pad + line.strip()
                    for line in paste.lines[span[0]:span[1]])
    text = "==============NVSMI LOG==============\n" + f"GPU {bus or '00000000:00:00.0'}\n" + "\n".join(body)
    how = "an nvidia-smi -q excerpt" + ("" if bus else " (no GPU line: read as one GPU)")
    driver = parse_nvidia_smi_q(text)
    if bus is None and driver.gpus:  # the placeholder header is no bus id the paste showed
        driver = dataclasses.replace(driver, gpus=[dataclasses.replace(g, pci_bus_id=None) for g in driver.gpus])
    _put_driver(acc, driver, how)


def _read_xml(paste: Paste, acc: Acc) -> None:
    low = paste.low
    a = low.find("<nvidia_smi_log")
    if a == -1:
        return
    b = low.find("</nvidia_smi_log>", a)
    if b == -1:
        return  # a truncated XML paste: nothing reliable in it
    try:
        driver = parse_nvidia_smi_xml(paste.text[a:b + len("</nvidia_smi_log>")])
    except Exception:  # noqa: BLE001 - a pasted XML mangled by an issue tracker must not stop the rest
        return
    _put_driver(acc, driver, "nvidia-smi -q -x (XML)")


def _read_nvlink(paste: Paste, acc: Acc) -> None:
    hits = [i for i in paste.with_any(["link 0:", "all links are inactive"]) if _NVLINK_LINE.search(paste.lines[i])]
    if not hits:
        return
    first = hits[0]
    start = first
    while start > 0 and first - start < 3 and not _NVLINK_GPU.match(paste.lines[start]):
        start -= 1
    if not _NVLINK_GPU.match(paste.lines[start]):
        return
    span = _run(paste, start, _NVLINK_LINE, blank_ok=1)
    links = parse_nvlink_status(_slice(paste, span))
    if not links:
        return
    names = {}
    for line in paste.lines[span[0]:span[1]]:
        m = _NVLINK_GPU.match(line)
        if m:
            names[int(m.group(1))] = m.group(2) or None
    acc.nvlinks = links
    acc.nvlink_names = names
    acc.add_found("nvidia-smi nvlink --status")


def _read_topo(paste: Paste, acc: Acc) -> None:
    for i in paste.with_any(["cpu affinity"])[:5]:
        header = paste.lines[i]
        if "GPU0" not in header:
            continue
        span = _run(paste, i, _TOPO_ROW, blank_ok=0)
        topo = parse_topo(_slice(paste, span))
        if topo.gpus and topo.matrix and all(topo.matrix):
            acc.topology_matrix = topo.matrix
            acc.add_found("nvidia-smi topo -m")
            return


def _read_lspci(paste: Paste, acc: Acc) -> None:
    hits = paste.with_any(["lnksta:", "lnkcap:"])
    if not hits:
        return
    lines = paste.lines
    start = hits[0]
    while start > 0 and not _BDF.match(lines[start]) and hits[0] - start < 200:
        start -= 1
    end = min(len(lines), hits[-1] + 200)
    keep = [ln for ln in lines[start:end] if _BDF.match(ln) or ln[:1] in (" ", "\t")]
    links = nvidia_gpu_links("\n".join(keep))
    if links and any(lk.sta_width or lk.sta_speed_gts for lk in links):
        acc.pcie_links = links
        acc.add_found("lspci -vv")


def _bytes(num: str, unit: str, default_unit: str = "") -> Optional[int]:
    try:
        value = float(num.replace(",", "."))
    except ValueError:
        return None
    return int(value * _UNITS[(unit or default_unit).lower()])


def _read_host(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    for i in paste.distinct(paste.with_any(["/dev/shm"]), head=200, tail=50):
        line = lines[i]
        m = _DF_SHM.match(line.strip())
        if m:
            # df -h prints powers of 1024 with a unit; plain df prints 1K blocks (its header says "1K-blocks")
            size = _bytes(m.group(1), m.group(2), default_unit="k")
            acc.put("host.shm_total", size, STRUCTURED, f"df: {line.strip()}")
            acc.add_found("df output for /dev/shm")
            continue
        m = _MOUNT_SHM.search(line)
        if m:
            acc.put("host.shm_total", _bytes(m.group(1), m.group(2)), STRUCTURED - 1, f"mount: {line.strip()}")
            acc.add_found("mount line for /dev/shm")
    for i in paste.with_any(["mem:"], case=False)[:20]:
        m = _FREE_MEM.match(lines[i])
        if not m or i == 0 or "total" not in lines[i - 1]:
            continue
        # `free` prints KiB by default; -m MiB, -g GiB; -h adds a unit ("251Gi"). Which flag was used shows
        # only in the command line, so a bare number needs it.
        cmd = " ".join(lines[max(0, i - 3):i])
        unit = m.group(2) or ("g" if "free -g" in cmd else "m" if "free -m" in cmd else
                              "k" if re.search(r"\bfree\b(?! -)", cmd) else "")
        if unit:
            acc.put("host.memory_total", _bytes(m.group(1), unit), STRUCTURED, f"free: {lines[i].strip()}")
            acc.add_found("free output")
        break
    for i in paste.with_any(["nproc"], case=True)[:20]:
        if not re.search(r"(?:^|[$#]\s*)nproc\s*$", lines[i]) or i + 1 >= len(lines):
            continue
        m = re.match(r"^\s*(\d{1,4})\s*$", lines[i + 1])
        if m:
            acc.put("host.cpu_affinity_count", int(m.group(1)), STRUCTURED, "nproc")  # CPUs this process may use
            acc.add_found("nproc output")
            break


# Wheel file names carry the platform tag (PEP 425): "torch-2.3.0-cp310-cp310-manylinux1_x86_64.whl"
_WHEEL = re.compile(r"-(?:cp|py)\d+\w*-[\w.]+-((?:many|musl)?linux\w*?_(?:x86_64|aarch64|ppc64le|s390x)|"
                    r"win_amd64|win_arm64|win32|macosx_[\w.]+)\.whl", re.I)
_POSIX_SITE = re.compile(r"/(?:lib|lib64)/python\d\.\d+/(?:site|dist)-packages\b")
_WIN_SITE = re.compile(r"[A-Za-z]:\\[^\s]*?\\(?:Lib\\site-packages|Users\\)", re.I)


def _read_platform(paste: Paste, acc: Acc) -> None:
    """PythonEnv.platform from wheel names and paths, so a companion's PyPI variant can be certain."""
    lines = paste.lines
    for i in paste.distinct(paste.with_any([".whl"]), head=200, tail=50):
        m = _WHEEL.search(lines[i])
        if m:
            tag = m.group(1).lower()
            arch = next((a for a in ("x86_64", "aarch64", "ppc64le", "s390x") if tag.endswith(a)), None)
            plat = (f"linux-{arch}" if "linux" in tag else tag.replace("_", "-", 1) if tag.startswith("win")
                    else "macosx")
            acc.put("python.platform", plat, LOOSE, f"wheel file name ...-{m.group(1)}.whl")
            return
    posix = next((i for i in paste.with_any(["-packages"])[:500] if _POSIX_SITE.search(lines[i])), None)
    windows = next((i for i in paste.with_any([":\\"])[:500] if _WIN_SITE.search(lines[i])), None)
    if posix is not None and windows is None:
        # a POSIX site-packages path; the machine word comes from a multiarch path or a uname line
        arch = next((a for a in ("x86_64", "aarch64") if paste.with_any([a])), None)
        if arch and "darwin" not in paste.low and "macos" not in paste.low:
            acc.put("python.platform", f"linux-{arch}", BARE, f"POSIX path {lines[posix].strip()[:120]} and {arch}")
    elif windows is not None and posix is None:
        acc.put("python.platform", "win-amd64" if "amd64" in paste.low or "x64" in paste.low else "win",
                BARE, f"Windows path {lines[windows].strip()[:120]}")


def _read_kernel_log(paste: Paste, acc: Acc) -> None:
    """NVRM Xid lines (dmesg, journalctl -k) through the kernel-log probe's parser."""
    hits = paste.with_any(["nvrm: xid"])
    if hits:
        events = parse_xid_events("\n".join(paste.lines[i] for i in hits))
        if events:
            acc.xid_events = events
            acc.add_found("kernel log Xid lines")
