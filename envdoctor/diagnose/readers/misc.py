"""Readers for nvidia-smi, REPL/`python -c` output, nvcc/gcc, OS/WSL/Docker hints, env vars and loose lines."""

from __future__ import annotations

import re
from typing import List, Optional

from ...facts import Gpu
from ...parsers.nvcc import parse_nvcc_version
from ...parsers.nvidia_smi_table import parse_nvidia_smi_table
from .base import BARE, LOOSE, REPL, STRUCTURED, VERSION, Acc, Paste

# ----------------------------------------------------------------------------- nvidia-smi


# literal pieces of what parse_nvidia_smi_table reads: the header, the GPU rows' box lines, its failures
_SMI_KEYS = ["nvidia-smi", "no devices were found", "couldn't communicate", "couldnt communicate",
             "failed to initiali", "nvml library version", "inforom is corrupted"]


def smi_slice(paste: Paste) -> str:
    """The lines of the (first few) nvidia-smi tables and failure lines, not the whole paste."""
    lines = paste.lines
    keep: List[int] = []
    for i in paste.distinct(paste.with_any(_SMI_KEYS), head=40, tail=10):
        keep.append(i)
        if "NVIDIA-SMI" in lines[i]:
            # the table: box-drawing lines (and a blank line before the processes box) after the header
            j, blanks = i + 1, 0
            while j < len(lines) and j < i + 2000:
                s = lines[j].strip()
                if not s:
                    blanks += 1
                    if blanks > 2:
                        break
                elif s[0] in "|+=-" or s.startswith("No running processes"):
                    blanks = 0
                else:
                    break
                keep.append(j)
                j += 1
    return "\n".join(lines[i] for i in sorted(set(keep)))


def read_nvidia_smi(paste: Paste, acc: Acc) -> None:
    t = parse_nvidia_smi_table(smi_slice(paste))
    if t is None:
        return
    if t.driver_version:
        acc.put("driver.version", t.driver_version, STRUCTURED, "nvidia-smi table")
        # the header's "CUDA Version" is the newest CUDA this driver supports, not an installed toolkit
        acc.put("driver.cuda", t.cuda_version, STRUCTURED, "nvidia-smi table header")
        acc.set_gpus(t.gpus, STRUCTURED)
        acc.put("driver.seen", True, STRUCTURED, "nvidia-smi table")
        acc.add_found("an nvidia-smi table (Windows)" if t.windows else "an nvidia-smi table")
        if t.windows:
            acc.put("host.os_hint", "Windows", LOOSE, "nvidia-smi table with a Windows driver model")
    if t.no_devices:
        acc.put("driver.no_devices", True, STRUCTURED, "nvidia-smi: No devices were found")
        acc.put("driver.seen", True, STRUCTURED, "nvidia-smi")
        acc.add_found("nvidia-smi output (No devices were found)")
    if t.error:
        acc.put("driver.smi_error", t.error, STRUCTURED, "nvidia-smi")
        acc.put("driver.nvml_error", t.nvml_error, STRUCTURED, "nvidia-smi")
        acc.put("driver.nvml_library_version", t.nvml_library_version, STRUCTURED, "nvidia-smi")
        acc.add_found("nvidia-smi failure message")


# ----------------------------------------------------------------------------- REPL / python -c

# The torch queries people print, in the order they appear in one statement
_EXPRS = [
    ("torch.version", re.compile(r"torch\.__version__")),
    ("torch.cuda", re.compile(r"torch\.version\.cuda")),
    ("torch.hip", re.compile(r"torch\.version\.hip")),
    ("torch.cuda_available", re.compile(r"torch\.cuda\.is_available\(\)")),
    ("torch.arch_list", re.compile(r"torch\.cuda\.get_arch_list\(\)")),
    ("torch.cudnn", re.compile(r"torch\.backends\.cudnn\.version\(\)")),
    ("torch.device_count", re.compile(r"torch\.cuda\.device_count\(\)")),
    ("torch.device_name", re.compile(r"torch\.cuda\.get_device_name\([^)]*\)")),
    ("torch.capability", re.compile(r"torch\.cuda\.get_device_capability\([^)]*\)")),
]
_ANY_EXPR = re.compile("|".join(p.pattern for _, p in _EXPRS))
_TOKEN = re.compile(r"\[[^\]]*\]|\([^)]*\)|'[^']*'|\"[^\"]*\"|\S+")
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.|In \[\d+\]:|\$|#|\(\S+\)\s*\S*[$#]|PS [A-Z]:)")
_OUT = re.compile(r"^\s*Out\[\d+\]:\s*")
_GPUISH = re.compile(r"NVIDIA|GeForce|Tesla|Quadro|RTX|GTX|TITAN|Radeon|Instinct|\b[AHBLT]\d{1,3}\b", re.I)


def _value_like(order: List[str], out: str) -> bool:
    """Does this line look like what the statement prints (a version, True/False, a count, a GPU name, a list),
    rather than the prose after a code listing?"""
    if len(out) > 200:
        return False
    if len(order) > 1:
        return True  # several values in one line are checked by count below
    key = order[0]
    v = out.strip().strip("'\"")
    if key in ("torch.version", "torch.cuda", "torch.hip"):
        return bool(re.match(r"^\d+\.\d+", v)) or v == "None"
    if key == "torch.cuda_available":
        return v in ("True", "False")
    if key in ("torch.cudnn", "torch.device_count"):
        return v.isdigit()
    if key == "torch.device_name":
        return bool(_GPUISH.search(v)) and len(v.split()) <= 8
    return True


def _parse_value(key: str, raw: str):
    v = raw.strip().strip(",").strip()
    if len(v) >= 2 and v[0] in "'\"" and v[-1] == v[0]:
        v = v[1:-1]
    if v in ("None", ""):
        return None
    if key == "torch.cuda_available":
        return {"True": True, "False": False}.get(v)
    if key == "torch.arch_list":
        return re.findall(r"(?:sm|compute)_\d+[a-z]?", v) if v.startswith("[") else None
    if key in ("torch.cudnn", "torch.device_count"):
        return int(v) if v.isdigit() else None
    if key == "torch.capability":
        m = re.match(r"\((\d+),\s*(\d+)\)", v)
        return f"{m.group(1)}.{m.group(2)}" if m else None
    if key in ("torch.version", "torch.cuda", "torch.hip"):
        return v if re.match(r"^\d+\.\d+", v) else None
    return v


def read_repl(paste: Paste, acc: Acc) -> None:
    seen = False
    lines = paste.lines
    n = len(lines)
    done: set = set()
    # every hit (bounded by with_any), not each distinct line once: the same statement printing two values
    # ("before" and "after" an upgrade) is two observations, and diagnose/machines.py must see both
    for i in paste.with_any(["torch."], case=True):
        line = lines[i]
        pair = (line, lines[i + 1] if i + 1 < n else "")
        if pair in done:
            continue
        done.add(pair)
        if not _ANY_EXPR.search(line):
            continue
        keys = [(m.start(), key) for key, pat in _EXPRS for m in pat.finditer(line)]
        keys.sort()
        order = [k for _, k in keys]
        # the output: a value in a trailing comment (`print(f"{torch.cuda.is_available()}")  # False`), else the
        # next non-empty line that is not another statement (IPython's "Out[3]: False" without its label)
        comment = re.search(r"\)\s*#\s*(\S.*)$", line)
        if comment and len(order) == 1:
            out = comment.group(1).strip()
        else:
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            if j >= n or _PROMPT.match(lines[j]) or _ANY_EXPR.search(lines[j]) or "Traceback" in lines[j]:
                continue
            out = _OUT.sub("", lines[j]).strip()
            if not _PROMPT.match(line) and not _OUT.match(lines[j]) and not _value_like(order, out):
                continue  # a statement in a code listing, then prose: not its output
        if len(order) == 1:
            values = [out]
        else:
            if out.startswith("(") and out.endswith(")"):  # a REPL tuple: ('2.7.1+cu128', '12.8', True)
                out = out[1:-1].replace(", ", " ").replace(",", " ")
            values = _TOKEN.findall(out)
            if len(values) != len(order):
                continue
        for key, raw in zip(order, values):
            val = _parse_value(key, raw)
            if key == "torch.cuda" and raw.strip() == "None":
                acc.put("torch.cpu_build", True, REPL, "torch.version.cuda printed None")
            if key == "torch.device_name" and val:
                acc.set_gpus([Gpu(index=0, name=val)], REPL)
            elif key == "torch.capability" and val:
                acc.put("gpu.capability", val, REPL, "torch.cuda.get_device_capability()")
            else:
                acc.put(key, val, REPL, "python output")
            seen = True
    if seen:
        acc.add_found("Python/REPL output of torch queries")


# ----------------------------------------------------------------------------- toolchain

_GCC = re.compile(r"^\s*(?:gcc|cc|g\+\+|c\+\+)(?:-\d+)?(?:\.exe)?\s+\([^)]*\)\s+(\d+\.\d+(?:\.\d+)?)")
_GCC_LOOSE = re.compile(r"\bgcc(?: version)?\s*[:=]?\s*(?:gcc\s*)?(?:\([^)]*\)\s*)?(\d+\.\d+(?:\.\d+)?)", re.I)
_CUDA_LOOSE = re.compile(r"\bCUDA(?:\s+toolkit)?\s*[:=]?\s*v?(\d+\.\d+\.\d+)\b", re.I)


def read_toolchain(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    nv_lines = paste.with_any(["cuda compilation tools"])
    nv = parse_nvcc_version("\n".join(lines[i] for i in nv_lines[:5])) if nv_lines else None
    if nv:
        acc.put("toolkit.version", nv[0], STRUCTURED, "nvcc --version")
        acc.put("toolkit.version_full", nv[1], STRUCTURED, "nvcc --version")
        acc.add_found("nvcc --version")
    for i in paste.distinct(paste.with_any(["gcc", "cuda", "cc ", "c++"])):
        line = lines[i]
        if "Linux version" in line or "[GCC" in line:
            continue  # the compiler that built the kernel or Python, not the host's
        m = _GCC.match(line)
        if m:
            acc.put("host.gcc_version", m.group(1), STRUCTURED, "gcc --version")
            acc.add_found("gcc --version")
            continue
        m = _GCC_LOOSE.search(line)
        if m:
            acc.put("host.gcc_version", m.group(1), LOOSE, line.strip())
        m = _CUDA_LOOSE.search(line)
        if m and "Version:" not in line:
            acc.put("toolkit.version", ".".join(m.group(1).split(".")[:2]), LOOSE, line.strip())
            acc.put("toolkit.version_full", m.group(1), LOOSE, line.strip())


# ----------------------------------------------------------------------------- host, WSL, containers

_KERNEL = re.compile(r"(?:Linux version|^Linux \S+)\s+(\d+\.\d+\.\d+[\w.+-]*)", re.M)
_WIN_VER = re.compile(r"Microsoft Windows \[Version (\d+\.\d+\.\d+(?:\.\d+)?)\]")
# the Windows build in prose or `winver`: "OS build 18363.1556", "Windows build 22000.51", "Version 10.0.19045"
_WIN_BUILD = re.compile(r"\b(?:OS|Windows(?: \d+)?(?: \w+)?|Insider)[ ,]*(?:build|Build|版本)\s*[:#]?\s*(\d{5}(?:\.\d+)?)"
                        r"|\bWindows[^\n]{0,40}?\b10\.0\.(\d{5})")
_DOCKER_RUN = re.compile(r"\b(?:docker|podman|nvidia-docker)\s+(?:container\s+)?run\b[^\n]*")


def read_host(paste: Paste, acc: Acc) -> None:
    low = paste.low
    # the regexes below run on the few lines holding their literal words, never on the whole paste
    text = "\n".join(paste.lines[i] for i in paste.distinct(paste.with_any(
        ["linux", "wsl", "microsoft", "\\users\\", "\\program files\\", "\\python", "\\programdata\\",
         "docker", "podman", "inside", "windows", "os build", "insider"]), head=2000, tail=200))
    m = _KERNEL.search(text)
    if m:
        acc.put("host.kernel", m.group(1), STRUCTURED, "kernel version line")
        acc.put("host.os", "Linux", STRUCTURED, "kernel version line")
    plat = acc.get("python.platform") or ""
    kernel = acc.get("host.kernel") or ""
    hay = " ".join([kernel, plat])
    if re.search(r"microsoft-standard-WSL2|-microsoft-standard|Microsoft@Microsoft\.com|WSL2", hay):
        acc.put("host.wsl", True, STRUCTURED, "WSL kernel name")
        acc.put("host.wsl_version", 2 if "WSL2" in hay or "standard" in hay else 1, STRUCTURED, "WSL kernel")
    elif re.search(r"microsoft-standard-WSL2|/usr/lib/wsl/|\bWSL ?2\b", text):
        acc.put("host.wsl", True, LOOSE, "WSL mentioned in the paste")
    if m and "microsoft" not in m.group(1).lower():
        # a real Linux kernel string that is not WSL's outranks "WSL" said in prose
        acc.put("host.wsl", False, STRUCTURED - 1, "Linux kernel that is not WSL's")
    wm = re.search(r"\bWSL ?([12])?\b", text)
    if wm:
        acc.put("host.wsl", True, BARE, f"WSL mentioned in the paste: {wm.group(0)}")
        if wm.group(1):
            acc.put("host.wsl_version", int(wm.group(1)), LOOSE, f"WSL mentioned in the paste: {wm.group(0)}")
    om = re.search(r"^[\s*•-]*(?:OS|Operating system|Platform)\s*[:=]\s*(?:Microsoft )?Windows\b", text, re.I | re.M)
    if om and not acc.get("host.wsl") and not (acc.get("host.kernel") or ""):
        acc.put("host.os", "Windows", LOOSE, om.group(0).strip())
    bm = _WIN_BUILD.search(text)
    if bm:
        acc.put("host.windows_build", bm.group(1) or bm.group(2), LOOSE, bm.group(0).strip())
    w = _WIN_VER.search(text)
    if w:
        acc.put("host.windows_build", w.group(1), STRUCTURED, "ver")
        if not acc.get("host.wsl"):
            acc.put("host.os", "Windows", LOOSE, "Microsoft Windows [Version ...]")
    if plat:
        if plat.lower().startswith("windows"):
            acc.put("host.os", "Windows", STRUCTURED, "Python platform")
        elif plat.lower().startswith("linux"):
            acc.put("host.os", "Linux", STRUCTURED, "Python platform")
            km = re.match(r"Linux-(\d+\.\d+\.\d+[\w.+-]*?)-(x86_64|aarch64)", plat)
            if km:
                acc.put("host.kernel", km.group(1), STRUCTURED - 1, "Python platform")
                if "microsoft" in km.group(1).lower():
                    acc.put("host.wsl", True, STRUCTURED, "WSL kernel in Python platform")
    elif re.search(r":\\(?:Users|Program Files|Python|ProgramData)\\", text):
        acc.put("host.os", "Windows", LOOSE, "Windows paths")
    for dm in _DOCKER_RUN.finditer(text):
        cmd = dm.group(0)
        gpus = bool(re.search(r"--gpus\b|--runtime[= ]nvidia|--device[= ]nvidia\.com/gpu|^nvidia-docker", cmd)
                    or cmd.startswith("nvidia-docker"))
        acc.put("container.runtime", "podman" if cmd.startswith("podman") else "docker", LOOSE, cmd.strip())
        acc.put("container.gpus_requested", gpus, LOOSE, cmd.strip())
        acc.add_found("a docker run command")
    if ("dockerenv" in low or "container" in low) and re.search(
            r"/\.dockerenv|inside (?:the |a )?(?:docker )?container", text, re.I):
        acc.put("container.runtime", "docker", BARE, "container mentioned")


# ----------------------------------------------------------------------------- environment variables

_ENV_NAMES = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "PATH")


def read_env(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    n = len(lines)
    for i in paste.distinct(paste.with_any(_ENV_NAMES, case=True)):
        line = lines[i]
        for name in _ENV_NAMES:
            if name not in line:
                continue
            m = re.search(rf"(?:export\s+)?\b{name}\s*[=:]\s*(\S+)", line)
            if m and "$" not in m.group(1)[:1] and name != "PATH":
                acc.env.setdefault(name, m.group(1).strip("'\""))
                continue
            if re.search(rf"echo\s+\"?\${{?{name}\b", line):
                j = i + 1
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and not re.match(r"^\s*(?:\$|>>>|#)", lines[j]):
                    acc.env.setdefault(name, lines[j].strip())


# ----------------------------------------------------------------------------- loose key: value lines

# "Driver Version: 460.80" (nvidia-smi / -q), "Display Driver: 440.31", "Nvidia driver 465.89"
_DRIVER_SMI = re.compile(r"Driver Version\s*:\s*(\d{3}\.\d{1,3}(?:\.\d{1,3})?)")
_DRIVER_LOOSE = re.compile(r"\bdriver(?:\s+version)?\b[^\d\n]{0,24}?(\d{3}\.\d{2,3}(?:\.\d{2,3})?)\b", re.I)
_DRIVER_BARE = re.compile(r"^\s*(\d{3}\.\d{2,3}(?:\.\d{2,3})?)\s*[,;.]*\s*$")
_CUDA_SMI = re.compile(r"CUDA Version\s*:\s*(\d+\.\d+)\b")
_PYTHON = re.compile(r"\bpython\s*(?:version)?\s*[:=]?\s*v?(3\.\d{1,2}(?:\.\d+)?|2\.7(?:\.\d+)?)\b", re.I)
_REPL_BANNER = re.compile(r"^Python (\d+\.\d+\.\d+)\s+\(")
_TORCH_LABEL = re.compile(r"\b(?:py)?torch(?:\s+version)?\s*[:=]?\s*$", re.I)
_GPU_NAME = re.compile(
    r"\b((?:NVIDIA\s+)?(?:GeForce\s+(?:RTX|GTX|GT|MX)?\s*\w+(?:\s+(?:Ti|SUPER|D|Laptop GPU))*|"
    r"Tesla\s+[A-Z]\d+\w*(?:-\w+)*|Quadro\s+\w+(?:\s+\w+)?|TITAN\s+\w+|"
    r"RTX\s+(?:A?\d{4}|PRO\s+\d{4})(?:\s+Ada(?:\s+Generation)?)?|[AHBL]\d{1,3}[SX]?(?:\s+\d+GB)?(?:\s+PCIe|\s+SXM\d?)?))\b")


_LOOSE_WORDS = ["driver", "cuda version", "python", "torch", "gpu", "显卡", "graphics", "card", "nvidia", "geforce",
                "tesla", "quadro"]


def read_loose(paste: Paste, acc: Acc) -> None:
    # only lines holding a hint word (or starting with a number) are looked at: multi-MB logs stay fast
    lines = paste.lines
    idx = sorted(set(paste.with_any(_LOOSE_WORDS)) | {
        i for i, ln in enumerate(lines) if ln[:1].isdigit() and len(ln) < 20 and _DRIVER_BARE.match(ln)})
    n = len(lines)
    for i in paste.distinct(idx):  # bounded: facts come once; a log repeating a line adds nothing
        line = lines[i]
        m = _DRIVER_SMI.search(line)
        if m:
            acc.put("driver.version", m.group(1), REPL, line.strip())
        else:
            m = _DRIVER_LOOSE.search(line)
            if m:
                acc.put("driver.version", m.group(1), LOOSE, line.strip())
            else:
                m = _DRIVER_BARE.match(line)
                if m and 180 <= int(m.group(1).split(".")[0]) <= 999:
                    acc.put("driver.version", m.group(1), BARE, "a driver-like version on a line of its own")
        m = _CUDA_SMI.search(line)
        if m:
            # "CUDA Version: X" is nvidia-smi's header field (or nvidia-smi -q): the driver's ceiling
            acc.put("driver.cuda", m.group(1), REPL, line.strip())
        m = _REPL_BANNER.match(line)
        if m:
            acc.put("python.version", m.group(1), REPL, "Python REPL banner")
        else:
            have = re.search(r"\(you have (3\.\d{1,2}(?:\.\d+)?)\)", line)
            m = _PYTHON.search(line)
            if have and "python" in line.lower():
                # "Python 3.11.9 (you have 3.11.10)": the first is what an extension was built for
                acc.put("python.version", have.group(1), LOOSE, line.strip())
            elif m and "site-packages" not in line and "lib/python" not in line:
                acc.put("python.version", m.group(1), LOOSE, line.strip())
        if _TORCH_LABEL.search(line.replace("5. ", "")) and i + 1 < n:
            nxt = lines[i + 1].strip()
            if re.match(rf"^{VERSION}(?:[a-z]+\d*)?(?:\+[\w.]+)?$", nxt):
                acc.put("torch.version", nxt, LOOSE, f"{line.strip()} / {nxt}")
        if re.search(r"GPU|显卡|Graphics|Card|NVIDIA|GeForce|Tesla|Quadro", line):
            g = _GPU_NAME.search(line)
            if g and not line.lstrip().startswith("|"):
                acc.put("gpu.loose_name", g.group(1).strip(), LOOSE, line.strip())


def torch_version_from_packages(acc: Acc) -> Optional[str]:
    hit = acc.packages.get("torch")
    return hit[1].version if hit else None


# ----------------------------------------------------------------------------- package-manager logs

# NVIDIA driver packages as apt/dpkg, dnf/yum and pacman name them
_NV_PKG = r"(?:nvidia-(?:driver|utils|dkms|kernel-common|kernel-source|compute-utils|fabricmanager|open|settings)[\w.+-]*|" \
          r"libnvidia-[\w.+-]+|kmod-nvidia[\w.+-]*|xserver-xorg-video-nvidia[\w.+-]*|nvidia(?=\s+\())"
_PKG_EVENT = re.compile(
    rf"(?:^(?P<date>\d{{4}}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?)\s+(?P<dpkg>upgrade|install|remove|purge|configure)\s+"
    rf"(?P<dpkg_pkg>{_NV_PKG})(?::\w+)?\s+(?P<old>\S+)\s+(?P<new>\S+))"
    rf"|(?:\[(?P<pdate>\d{{4}}-\d\d-\d\dT[\d:]+)[^\]]*\]\s+\[ALPM\]\s+(?P<pac>upgraded|installed|removed|downgraded)\s+"
    rf"(?P<pac_pkg>{_NV_PKG}|nvidia)\s+\((?P<pold>[^)]*?)(?:\s+->\s+(?P<pnew>[^)]*))?\))"
    rf"|(?:^\s*(?P<apt>Upgrade|Install|Remove|Purge|Upgraded|Upgrading|Installed|Removed|Downgraded)\s*:?\s+"
    rf"(?P<apt_pkg>{_NV_PKG})(?::\w+)?(?:\s+\((?P<aold>[^,)]+)(?:,\s*(?P<anew>[^)]+))?\)|[-\s](?P<rpmver>\d[\w.:-]*))?)",
    re.M)


def read_package_logs(paste: Paste, acc: Acc) -> None:
    """apt history / dpkg.log / dnf history / pacman.log lines that changed NVIDIA driver packages: after a
    userspace upgrade without a reboot the loaded kernel module is another version (Driver/library mismatch)."""
    events = []
    for i in paste.distinct(paste.with_any(["nvidia"]), head=2000, tail=500):
        line = paste.lines[i]
        if not re.search(r"upgrad|install|remov|purge|downgrad|configure", line, re.I):
            continue
        # apt history puts several packages on one "Upgrade:" line: read each
        for chunk in re.split(r"\),\s+", line) if line.lstrip().startswith(("Upgrade:", "Install:", "Remove:")) \
                else [line]:
            if chunk is not line and not chunk.rstrip().endswith(")"):
                chunk = chunk + ")"
            if not re.match(r"^\s*(?:Upgrade|Install|Remove|Purge)", chunk) and events and chunk is not line:
                chunk = "Upgrade: " + chunk.strip()
            m = _PKG_EVENT.search(chunk)
            if not m:
                continue
            pkg = m.group("dpkg_pkg") or m.group("pac_pkg") or m.group("apt_pkg")
            action = (m.group("dpkg") or m.group("pac") or m.group("apt") or "").lower()
            old = m.group("old") or m.group("pold") or m.group("aold")
            new = m.group("new") or m.group("pnew") or m.group("anew") or m.group("rpmver")
            if m.group("dpkg") == "configure":
                continue
            events.append(f"{action} {pkg} {old or ''}{' -> ' + new if new else ''}".strip())
    if events:
        acc.put("driver.packages_changed", "; ".join(dict.fromkeys(events))[:500], STRUCTURED,
                "package-manager log (apt/dpkg/dnf/pacman)")
        acc.add_found("package-manager log with NVIDIA driver packages")


# ----------------------------------------------------------------------------- the paste's date

_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_ISO_DATE = re.compile(r"(?<![\d.])(20\d\d)-(0[1-9]|1[0-2])-([0-2]\d|3[01])[ T]+\d\d:\d\d")
_CTIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) "
                    r"\d\d:\d\d:\d\d (?:\w{3,4} )?(20\d\d)\b")
_DATE_SPAN = 200_000  # characters read at each end of a long paste


def read_date(paste: Paste, acc: Acc) -> None:
    """When the paste was made: the latest timestamp it shows (nvidia-smi's header line, `dmesg -T`, log and
    package-manager lines). Age-based verdicts (a driver branch past its end of life) are judged on that day."""
    text = paste.text
    hay = text if len(text) <= 2 * _DATE_SPAN else text[:_DATE_SPAN] + "\n" + text[-_DATE_SPAN:]
    best = None
    for m in _ISO_DATE.finditer(hay):
        best = max(best or "", f"{m.group(1)}-{m.group(2)}-{m.group(3)}")
    for m in _CTIME.finditer(hay):
        day = f"{m.group(3)}-{_MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"
        best = max(best or "", day)
    if best:
        acc.put("paste.date", best, LOOSE, "the latest timestamp in the paste")
