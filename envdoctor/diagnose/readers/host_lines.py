"""Reader for host hints in a paste: the kernel, the distribution, Windows/WSL builds, `docker run` lines."""

from __future__ import annotations

import re

from .base import BARE, LOOSE, STRUCTURED, Acc, Paste

_KERNEL = re.compile(r"(?:Linux version|^Linux \S+)\s+(\d+\.\d+\.\d+[\w.+-]*)", re.M)
_WIN_VER = re.compile(r"Microsoft Windows \[Version (\d+\.\d+\.\d+(?:\.\d+)?)\]")
# the Windows build in prose or `winver`: "OS build 18363.1556", "Windows build 22000.51", "Version 10.0.19045"
# the platform in a sentence: "My system is Windows 11", "my pc is windows10", "I am running windows 11"
_OS_SAID = re.compile(r"\b(?:my|the) (?:system|os|operating system|machine|pc|laptop|computer) is (?:running )?(?:on )?"
                      r"(?:Microsoft )?Windows ?(?:\d\d)?\b|\bI(?:'m| am) (?:on|using|running) (?:Microsoft )?Windows ?"
                      r"(?:\d\d)?\b", re.I)
_WIN_BUILD = re.compile(r"\b(?:OS|Windows(?: \d+)?(?: \w+)?|Insider)[ ,]*(?:build|Build|版本)\s*[:#]?\s*(\d{5}(?:\.\d+)?)"
                        r"|\bWindows[^\n]{0,40}?\b10\.0\.(\d{5})|\bwindows\s*[:：]\s*(\d{5}\.\d+)", re.I)
# `cat /etc/os-release` (os-release(5)): the ID picks the package tool of the fixes, VERSION_ID its release
_OS_RELEASE = re.compile(r"^\s*(ID|ID_LIKE|VERSION_ID|PRETTY_NAME)=([\"']?)([^\"'\n]*)\2\s*$", re.M)
_HOSTNAMECTL = re.compile(r"^\s*Operating System:\s*(\S.*?)\s*$", re.M)  # `hostnamectl`
# a distribution named with its release in prose: "I'm on Fedora 30", "CentOS 7.9", "RHEL 8", "Rocky Linux 9.3"
_DISTRO_PROSE = re.compile(
    r"\b(Ubuntu|Debian(?: GNU/Linux)?|Fedora(?: Linux)?|CentOS(?: Stream| Linux)?|Red Hat Enterprise Linux|RHEL|"
    r"Rocky Linux|AlmaLinux|Oracle Linux|Amazon Linux|openSUSE(?: Leap)?|SLES|Linux Mint|Pop!_OS)[ -]"
    r"(\d{1,4}(?:\.\d{1,2})*)(?![\w.-])")
_DISTRO_WORDS = ["ubuntu", "debian", "fedora", "centos", "red hat", "rhel", "rocky", "almalinux", "oracle linux",
                 "amazon linux", "opensuse", "sles", "mint", "pop!_os", "id=", "operating system:"]
# not a wrapper script named like it (DeepLabCut's `dlc-docker run`, which passes the GPU itself), and not the
# command named in a sentence ("(`docker run` without `--pid=host` flag)", "docker run with the same image"): the
# word after `run` is then a word of the sentence, never an image or an option
_DOCKER_RUN = re.compile(r"(?<![\w.-])(?:docker|podman|nvidia-docker)\s+(?:container\s+)?run\b"
                         r"(?![`'\"\u2019]|\s+(?:without|with|and|or|is|was|command|commands|works|worked|fails|"
                         r"failed|to|on|in|of|for|the|a|an)\b)[^\n]*")
# Docker Compose's own progress lines (v1 "Creating proj_svc_run ... done", v2 "Container proj-svc-1  Started") and
# its commands: the program ran inside a container Compose started
_COMPOSE = re.compile(r"^\s*(?:(?:Creating|Starting|Recreating|Attaching to) [\w.-]+(?:_run(?:_\w+)?|_\d+|-\d+)?"
                      r" \.\.\. (?:done|error)\b|[✔ ]*Container [\w.-]+\s+(?:Created|Started|Running)\b)|"
                      r"\bdocker[- ]compose\s+(?:\S+\s+)*?(?:run|up|exec)\b", re.M)


# the CPU: lscpu's (collect_env's "CPU:" section) "Model name: AMD EPYC 7763 64-Core Processor" or "Vendor ID:
# AuthenticAMD", or a report's "CPU: Intel Xeon ..." line; only a line that names a vendor or family
_CPU_MODEL = re.compile(r"^[ \t*•-]*(?:Model name|CPU(?: model)?|Processor)\**[ \t]*[:=]\**[ \t]*(\S[^\n]*?(?:AMD|Intel|EPYC|Xeon|"
                        r"Ryzen|Threadripper|Core\(TM\)|Neoverse|Grace|Ampere\(R\)|Altra)[^\n]*?)[ \t]*$", re.M | re.I)
_CPU_VENDOR = re.compile(r"^[ \t]*Vendor ID:[ \t]*(AuthenticAMD|GenuineIntel)[ \t]*$", re.M)


def _cpu(paste: Paste, acc: Acc) -> None:
    text = "\n".join(paste.lines[i] for i in paste.distinct(paste.with_any(
        ["model name", "cpu", "processor", "vendor id"]), head=400, tail=50))
    m = _CPU_MODEL.search(text)
    if m:
        acc.put("host.cpu_model", m.group(1), STRUCTURED if m.group(0).lstrip().startswith("Model name") else LOOSE,
                m.group(0).strip()[:160])
        return
    v = _CPU_VENDOR.search(text)
    if v:
        acc.put("host.cpu_model", "AMD" if v.group(1) == "AuthenticAMD" else "Intel", LOOSE, v.group(0).strip())


# WSL 1's synthetic kernel version (https://learn.microsoft.com/en-us/windows/wsl/compare-versions: WSL 2 runs a
# real Linux kernel; WSL 1 translates system calls and names itself 4.4.0-<Windows build>-Microsoft)
_WSL1_KERNEL = re.compile(r"\b4\.4\.0-\d{5}-Microsoft\b")


def read_host(paste: Paste, acc: Acc) -> None:
    low = paste.low
    _cpu(paste, acc)
    # the regexes below run on the few lines holding their literal words, never on the whole paste
    text = "\n".join(paste.lines[i] for i in paste.distinct(paste.with_any(
        ["linux", "wsl", "microsoft", "\\users\\", "\\program files\\", "\\python", "\\programdata\\",
         "docker", "podman", "inside", "windows", "os build", "insider", "compose", " ... done", "container "]
        + _DISTRO_WORDS), head=2000, tail=200))
    _distro(text, acc)
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
    if _WSL1_KERNEL.search(text):
        # WSL 1 has no Linux kernel: it reports a fixed "4.4.0-<Windows build>-Microsoft" (uname -r, DKMS), and
        # it has no GPU access at all; CUDA on WSL needs WSL 2 (issue 42, round 20: wsl-014). The kernel's own name
        # outranks a "WSL2" the reporter writes (the priority, not the order, decides)
        acc.put("host.wsl", True, STRUCTURED, "WSL 1 kernel name")
        acc.put("host.wsl_version", 1, STRUCTURED, "WSL 1 kernel name")
    if m and "microsoft" not in m.group(1).lower():
        # a real Linux kernel string that is not WSL's outranks "WSL" said in prose
        acc.put("host.wsl", False, STRUCTURED - 1, "Linux kernel that is not WSL's")
    # "WSL", "WSL2", and the reporter's lower case ("my Ubuntu-20 wsl instance", round 27: rapids-007); not a
    # path or a host name that holds the letters (wsl.localhost, /mnt/wsl/)
    wm = re.search(r"(?<![\w./-])(?i:WSL) ?([12])?\b(?![./-]\w)", text)
    if wm:
        acc.put("host.wsl", True, BARE, f"WSL mentioned in the paste: {wm.group(0)}")
        if wm.group(1):
            acc.put("host.wsl_version", int(wm.group(1)), LOOSE, f"WSL mentioned in the paste: {wm.group(0)}")
    om = re.search(r"^[\s*•-]*(?:OS|Operating system|Platform)\s*[:=]\s*(?:Microsoft )?Windows\b", text, re.I | re.M) \
        or _OS_SAID.search(text)
    if om and not acc.get("host.wsl") and not (acc.get("host.kernel") or ""):
        acc.put("host.os", "Windows", LOOSE, om.group(0).strip())
    bm = _WIN_BUILD.search(text)
    if bm:
        acc.put("host.windows_build", bm.group(1) or bm.group(2) or bm.group(3), LOOSE, bm.group(0).strip())
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
        cmd = _whole_command(text, dm)
        gpus = bool(re.search(r"--gpus\b|--runtime[= ]nvidia|--device[= ]nvidia\.com/gpu|^nvidia-docker", cmd)
                    or cmd.startswith("nvidia-docker"))
        acc.put("container.runtime", "podman" if cmd.startswith("podman") else "docker", LOOSE, cmd.strip())
        acc.put("container.gpus_requested", gpus, LOOSE, cmd.strip())
        acc.add_found("a docker run command")
        # Docker gives a container 64 MB of /dev/shm unless the command says otherwise: NCCL's and Ray's shared
        # segments need more (a qualifier of the NCCL system-error signature)
        acc.put("container.shm_given", bool(_SHM_FLAG.search(cmd)), LOOSE, cmd.strip()[:200])
    _distro_from_kernel(acc)
    _platform_from_host(acc)
    cm = _COMPOSE.search(text)
    if cm and not acc.get("container.runtime"):
        # a compose file may reserve GPUs (deploy.resources.reservations.devices): whether it did is unknown
        acc.put("container.runtime", "docker", LOOSE, f"Docker Compose: {cm.group(0).strip()[:120]}")
        acc.add_found("Docker Compose output")
    _kubernetes(paste, acc)
    if ("dockerenv" in low or "container" in low or "docker" in low) and re.search(
            r"/\.dockerenv|inside (?:the |a )?(?:docker )?container|"
            # the program said to run in Docker ("run faster-whisper in a docker on my unraid server", "inside docker")
            r"\b(?:run(?:s|ning)?|install(?:ed|ing)?|start(?:ed|ing)?)\b[^.\n]{0,60}?\b(?:in|inside|within) "
            r"(?:a |the |my |an )?docker\b", text, re.I):
        acc.put("container.runtime", "docker", BARE, "container mentioned")
    if ("singularity" in low or "apptainer" in low) and not acc.get("container.runtime"):
        # the program said to run in a Singularity/Apptainer container, its command not pasted (round 27:
        # dorado-003 "using a singularity container (handled by nextflow)"): the GPU comes only with --nv/--nvccli
        sm = re.search(r"\b(?:singularity|apptainer)\s+(?:containers?|images?|sif)\b", text, re.I)
        if sm:
            acc.put("container.runtime", "apptainer", BARE, f"Apptainer/Singularity said: {sm.group(0)}")


# a Kubernetes pod or cluster named in the paste (issue 42): the program ran in a container the kubelet started,
# whose GPU comes from the device plugin and the container runtime (runtimeClassName, CDI, NVIDIA_VISIBLE_DEVICES)
_K8S = re.compile(r"\b(?:GKE|EKS|AKS)\b|(?i:\b(?:kubernetes|k8s|kubectl|openshift|runtimeClassName)\b|"
                  r"nvidia\.com/gpu\b|\bhelm (?:charts?|install|upgrade|values)\b|"
                  r"\b(?:in|inside|from|of) (?:a|the|my|this|our) (?:k8s |kubernetes |gpu )?pods?\b)")
_K8S_WORDS = ["kube", "k8s", "gke", "eks", "aks", "openshift", "nvidia.com/gpu", "helm", "pod", "runtimeclass"]


def _kubernetes(paste: Paste, acc: Acc) -> None:
    """container.runtime = kubernetes when the paste names a cluster, a pod or a Kubernetes GPU resource; a
    `docker run` or Compose line (read before) says more and keeps its runtime."""
    if acc.get("container.runtime"):
        return
    for i in paste.distinct(paste.with_any(_K8S_WORDS), head=400, tail=100):
        m = _K8S.search(paste.lines[i])
        if m:
            acc.put("container.runtime", "kubernetes", LOOSE, f"Kubernetes named in the paste: {m.group(0)}")
            return


_SHM_FLAG = re.compile(r"--shm-size\b|--ipc[= ]+host\b|/dev/shm\b")


def _whole_command(text: str, m: re.Match) -> str:
    """A `docker run` command with its backslash-continued lines (a shell's "> " prompts already stripped)."""
    cmd = m.group(0)
    end = m.end()
    for _ in range(40):  # a long command: a few dozen lines at most
        if not cmd.rstrip().endswith("\\"):
            break
        nl = text.find("\n", end + 1)
        line = text[end + 1:nl if nl != -1 else len(text)]
        cmd = cmd.rstrip()[:-1] + " " + line.strip()
        if nl == -1:
            break
        end = nl
    return cmd


def _platform_from_host(acc: Acc) -> None:
    """The interpreter's platform from the paste's own OS: collect_env's "OS: Microsoft Windows 10 Pro", a WSL or
    Linux kernel string with its machine word. Wheel names and paths (blocks.py) set it first when present; this
    only fills a gap, below them, so wheel-variant rules and fixes judge the platform the paste shows rather
    than assume Linux x86_64."""
    if acc.get("python.platform"):
        return
    os_name = acc.get("host.os") or ""
    machine = (acc.get("host.machine") or "").lower()
    kernel = acc.get("host.kernel") or ""
    how = f"the paste's OS ({acc.how('host.os') or acc.how('host.kernel')})"
    if os_name == "Windows" and not acc.get("host.wsl"):
        acc.put("python.platform", "win-arm64" if machine in ("arm64", "aarch64") else "win-amd64", BARE, how)
    elif os_name == "Darwin":
        acc.put("python.platform", "macosx", BARE, how)
    elif (os_name == "Linux" or kernel) and machine in ("x86_64", "amd64", "aarch64", "arm64"):
        arch = "x86_64" if machine in ("x86_64", "amd64") else "aarch64"
        acc.put("python.platform", f"linux-{arch}", BARE, how)


_KERNEL_DISTRO = re.compile(r"^\d+\.\d+[\w.-]*?\.(fc|el)(\d+)(?:_\d+)?(?:\.|$)")


def _distro_from_kernel(acc: Acc) -> None:
    """A distribution kernel's release names its distribution: Fedora's "6.19.14-300.fc44.x86_64", Red Hat's (and
    its rebuilds') "5.14.0-427.el9.x86_64"; below every tool output that names the distribution."""
    kernel = acc.get("host.kernel") or ""
    k = _KERNEL_DISTRO.search(kernel)
    if k:
        acc.put("host.distro_id", "fedora" if k.group(1) == "fc" else "rhel", BARE, f"the kernel release {kernel}")
        acc.put("host.distro_version", k.group(2), BARE, f"the kernel release {kernel}")


def _distro(text: str, acc: Acc) -> None:
    """The distribution: a pasted /etc/os-release (ID and VERSION_ID, or PRETTY_NAME, with another of its keys),
    `hostnamectl`'s "Operating System:", else a distribution named with its release in prose ("Fedora 30"), kept
    under its own key below every tool output (a collect_env "OS:" line wins)."""
    found = {k: v.strip() for k, _q, v in _OS_RELEASE.findall(text) if v.strip()}
    if len(found) >= 2 and ("ID" in found or "PRETTY_NAME" in found):
        for key, fact in (("ID", "host.distro_id"), ("VERSION_ID", "host.distro_version"),
                          ("ID_LIKE", "host.distro_like"), ("PRETTY_NAME", "host.distro_name")):
            if key in found:
                acc.put(fact, found[key].lower() if key in ("ID", "ID_LIKE") else found[key], STRUCTURED,
                        "/etc/os-release")
        acc.put("host.os", "Linux", STRUCTURED, "/etc/os-release")
        acc.add_found("/etc/os-release")
    m = _HOSTNAMECTL.search(text)
    if m and not m.group(1).lower().startswith(("windows", "macos", "mac os")):
        acc.put("host.distro_name", m.group(1), STRUCTURED - 1, "hostnamectl")
    m = _DISTRO_PROSE.search(text)
    if m:
        acc.put("host.distro_hint", f"{m.group(1)} {m.group(2)}", LOOSE, f"named in the text: {m.group(0)}")
