"""Install commands into the judged interpreter: pip or uv, the interpreter named by its path, pins and index."""

from __future__ import annotations

from typing import List, Optional, Sequence

from ..domain.fastclass import dataclass
from ..domain.versions import major_minor, parse_version
from ..model.facts import Facts, PythonEnv, VenvConfig
from .platform import platform_of
from .shell import POSIX, POWERSHELL, Arg, Raw, command

GET_STARTED = "https://pytorch.org/get-started/locally/"  # PyTorch's install selector

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
# Before torch 1.13 the per-variant index did not exist: `torch==1.12.1+cu113 -f .../torch_stable.html`
# (https://pytorch.org/get-started/previous-versions/).
LEGACY_FIND_LINKS = "https://download.pytorch.org/whl/torch_stable.html"


def index_url_for(variant: str) -> str:
    return f"https://download.pytorch.org/whl/{variant}"


@dataclass(frozen=True)
class Installer:
    """How to install into one interpreter."""

    tool: str  # "pip" (python -m pip) or "uv" (uv pip --python)
    python: Optional[str]  # the judged interpreter's path; None when the facts do not name it (a paste)
    shell: str
    conda: bool = False
    # False: `python -m pip` fails there (a venv made --without-pip, Debian's python without python3-pip):
    # every pip command is preceded by `python -m ensurepip --upgrade` (pip_command); None: unknown (a paste)
    has_pip: Optional[bool] = None
    venv: bool = False  # a venv: ensurepip also writes its `pip` script (--default-pip), as `python -m venv` does
    # issue 38: what else decides whether a printed pip line runs there. PEP 668's EXTERNALLY-MANAGED marker
    # (pip >= 23.0 refuses to install or uninstall without --break-system-packages, which pip 23.0.1 added:
    # pip's changelog, 23.0 and 23.0.1; uv since 0.1.16), the installed pip's version (manylinux_x_y wheel tags,
    # PEP 600, need pip >= 20.3: pip's changelog 20.3), whether ensurepip is there (Debian and Ubuntu split it
    # into python3-venv / python3.X-venv, and ensurepip has no --break-system-packages: cpython#118384), and the
    # distribution family whose package gives pip when ensurepip cannot
    externally_managed: Optional[bool] = None
    pip_version: Optional[str] = None
    has_ensurepip: Optional[bool] = None
    family: Optional[str] = None
    python_mm: Optional[str] = None  # "3.11": the python3.X-venv package's name

    @property
    def python_word(self) -> str:
        return self.python or "python"


def installer_for(facts: Optional[Facts], py: Optional[PythonEnv]) -> Installer:
    """pip of the judged interpreter, named by its absolute path so a paste never installs into whatever
    `python` is first on PATH; uv when uv installed torch there (uv venvs carry no pip of their own:
    https://docs.astral.sh/uv/pip/environments/). A conda env gets its own interpreter's pip, which is how
    PyTorch ships CUDA builds since it stopped publishing conda packages (2.5 was the last,
    https://github.com/pytorch/pytorch/issues/138506)."""
    plat = platform_of(facts, py) if facts is not None else None
    shell = plat.shell if plat is not None else POSIX
    if py is None:
        return Installer("pip", None, shell)
    installers = [p.installer for p in py.packages if p.name == "torch" and p.installer]
    if not installers:
        installers = [p.installer for p in py.packages if p.installer]
    uv = bool(installers) and installers[0].strip().lower() == "uv"
    if not installers and py.has_pip is False and py.venv is not None and "uv" in py.venv.cfg:
        uv = True  # a venv `uv venv` made (pyvenv.cfg names uv's version): no pip in it, nothing installed yet
    pip = py.package("pip")
    mm = major_minor(py.python_version, strict=False) if py.python_version else None
    return Installer("uv" if uv else "pip", py.executable or None, shell, bool(py.is_conda), py.has_pip,
                     bool(py.is_venv), py.externally_managed, pip.version if pip is not None else None,
                     py.has_ensurepip, plat.family if plat is not None else None,
                     f"{mm[0]}.{mm[1]}" if mm else None)


PEP668_NOTE = ("PEP 668: this Python is EXTERNALLY-MANAGED and pip refuses without --break-system-packages; a venv "
               "(python3 -m venv) keeps the distribution's packages apart")
CHANGES = ("install", "uninstall")  # the pip subcommands PEP 668 refuses and the tags matter to


def _pip_older(inst: Installer, release: tuple) -> Optional[bool]:
    mm = parse_version(inst.pip_version or "", strict=False)
    return None if mm is None else mm.release[:len(release)] < release


def pip_command(inst: Installer, subcommand: str, *args: Arg, comment: Optional[str] = None) -> str:
    """``<python> -m pip <subcommand> ...`` or ``uv pip <subcommand> --python <python> ...``, made to run on the
    target (issue 38): pip first where there is none, pip upgraded first where it is too old for today's wheel
    tags, and --break-system-packages (said in a comment) where PEP 668 marks the interpreter."""
    changes = subcommand in CHANGES
    managed = bool(inst.externally_managed) and changes
    extra: List[Arg] = []
    if inst.tool == "uv":  # uv installs into the interpreter from outside: it needs no pip there
        head: List[Arg] = ["uv", "pip", subcommand] + (["--python", inst.python] if inst.python else [])
        if managed:
            extra.append("--break-system-packages")
    else:
        head = [inst.python_word, "-m", "pip", subcommand]
        # pip 23.0 refuses on the marker but has no override yet (23.0.1 added it); older pips ignore the marker
        if managed and inst.has_pip is not False and _pip_older(inst, (23, 0, 1)) is not True:
            extra.append("--break-system-packages")
    line = command(head, list(args) + extra, comment=comment or (PEP668_NOTE if extra else None), shell=inst.shell,
                   what="the interpreter path")
    if line.startswith("#") or inst.tool == "uv":
        return line
    sep = ";" if inst.shell == POWERSHELL else "&&"  # each half its own line (PowerShell's call operator)
    if inst.has_pip is False:
        # ensurepip installs the pip bundled with the interpreter, offline
        # (https://docs.python.org/3/library/ensurepip.html); where it cannot, the distribution's package does
        first = pip_bootstrap(inst)
        if inst.externally_managed and changes:  # the distribution's pip is >= 23.0.1 wherever it sets the marker
            line = command(head, list(args) + ["--break-system-packages"], comment=PEP668_NOTE, shell=inst.shell,
                           what="the interpreter path")
        return f"{first} {sep} {line}"
    if changes and subcommand == "install" and _pip_older(inst, (20, 3)):
        # manylinux_2_28 (torch >= 2.6) and other PEP 600 tags are unknown to pip < 20.3, which then finds no wheel
        up = command(inst.python_word, "-m", "pip", "install", "--upgrade", "pip", shell=inst.shell,
                     what="the interpreter path")
        return f"{up} {sep} {line}"
    return line


def pip_bootstrap(inst: Installer) -> Raw:
    """pip into an interpreter that has none: ensurepip where it is there and may run (not on an
    EXTERNALLY-MANAGED Python: it has no --break-system-packages), else the distribution's package (python3-pip
    for the system Python, python3.X-venv for a venv whose base lacks ensurepip, which Debian and Ubuntu split
    off)."""
    if inst.has_ensurepip is not False and not inst.externally_managed:
        return ensurepip_command(inst)
    tool = {"rhel": ["sudo", "dnf", "install", "-y"], "fedora": ["sudo", "dnf", "install", "-y"],
            "suse": ["sudo", "zypper", "install", "-y"], "arch": ["sudo", "pacman", "-S", "--needed"]}.get(
        inst.family or "", ["sudo", "apt-get", "install", "-y"])
    if inst.venv and inst.family in (None, "ubuntu", "debian"):
        venv_pkg = f"python{inst.python_mm}-venv" if inst.python_mm else "python3-venv"
        return Raw(f"{command(*tool, venv_pkg)} && {ensurepip_command(inst)}")
    pkg = "python-pip" if inst.family == "arch" else "python3-pip"
    return Raw(command(*tool, pkg))


def ensurepip_command(inst: Installer) -> Raw:
    """``<python> -m ensurepip --upgrade``: pip into an interpreter that has none. In a venv also ``--default-pip``,
    as `python -m venv` runs it: without it only pip3 and pip3.X are written, and an activated venv's `pip` stays
    another interpreter's."""
    default = ["--default-pip"] if inst.venv else []
    return Raw(command(inst.python_word, "-m", "ensurepip", "--upgrade", *default, shell=inst.shell,
                       what="the interpreter path"))


def pip_install(facts: Optional[Facts], py: Optional[PythonEnv], packages: Sequence[str],
                variant: Optional[str] = None, force: bool = False, no_deps: bool = False,
                no_build_isolation: bool = False) -> str:
    """The install line for ``packages`` (pins such as ``torch==2.5.1``) from ``variant``'s index."""
    inst = installer_for(facts, py)
    args: List[Arg] = []
    if force:
        # uv spells pip's --force-reinstall as --reinstall (https://docs.astral.sh/uv/reference/cli/#uv-pip-install)
        args.append("--reinstall" if inst.tool == "uv" else "--force-reinstall")
    if no_deps:
        args.append("--no-deps")
    if no_build_isolation:
        args.append("--no-build-isolation")
    torch_pin = next((p.split("==", 1)[1] for p in packages if p.startswith("torch==")), None)
    mm = major_minor(torch_pin, strict=True)
    legacy = bool(variant and mm and mm < (1, 13))
    pkgs = list(packages)
    if legacy:
        pkgs = [f"{p}+{variant}" if p.split("==")[0] in TORCH_FAMILY and "==" in p and "+" not in p else p
                for p in pkgs]
    args += pkgs
    if legacy:
        args += ["-f", LEGACY_FIND_LINKS]
    elif variant:
        args += ["--index-url", index_url_for(variant)]
    return pip_command(inst, "install", *args)


def pip_check(facts: Optional[Facts], py: Optional[PythonEnv]) -> str:
    return pip_command(installer_for(facts, py), "check")


def new_venv(facts: Optional[Facts], py: Optional[PythonEnv], python_version: str) -> str:
    """A fresh environment on Python ``python_version`` ("3.12"), activated."""
    inst = installer_for(facts, py)
    if inst.tool == "uv":
        return command("uv", "venv", "--python", python_version, ".venv", shell=inst.shell)
    if inst.shell == POWERSHELL:
        # the Windows launcher picks the version (https://docs.python.org/3/using/windows.html#launcher)
        return command("py", f"-{python_version}", "-m", "venv", ".venv", Raw(";"), Raw(r".venv\Scripts\Activate.ps1"),
                       shell=inst.shell)
    return command(f"python{python_version}", "-m", "venv", ".venv", Raw("&&"), Raw("."), ".venv/bin/activate")


def conda_cuda_note() -> str:
    # the pytorch conda channel stopped at 2.5 (https://github.com/pytorch/pytorch/issues/138506)
    return ("# conda env: run the pip line above with this env's python (the pytorch channel stopped at "
            "torch 2.5), or install conda-forge's pytorch with a CUDA build")


def venv_python_word(venv: VenvConfig) -> str:
    """The interpreter to rebuild ``venv`` with: python3.X found on PATH, else the name ``python3.X`` (its
    site-packages is lib/python3.X: only the same minor version can use it), else ``python3``."""
    if venv.same_minor_python:
        return venv.same_minor_python
    mm = major_minor(venv.version, strict=False) if venv.version else None
    return f"python{mm[0]}.{mm[1]}" if mm else "python3"


def untrusted_note(venv: VenvConfig) -> str:
    """Why no rebuild command is printed, when the only python3.X on PATH can be changed by another user; ""
    otherwise."""
    if not venv.same_minor_untrusted:
        return ""
    return (f" The {venv_python_word(venv)} on PATH ({venv.same_minor_untrusted}) can be changed by another user, "
            "so no command here runs it: install that Python from your distribution or python.org and run "
            f"`<its full path> -m venv --upgrade {venv.root}`.")


def repair_venv(venv: VenvConfig, shell: str = POSIX) -> List[str]:
    """Remove the venv's dangling interpreter links, then let venv re-create them for a live base of the same
    minor version: ``venv --upgrade`` keeps an existing link (venv's symlink_or_copy skips a path that is already
    a link, even a dangling one), so the dead ones go first. site-packages and the installed packages stay."""
    if venv.same_minor_untrusted:
        return []  # the python3.X PATH gives can be changed by another user: no command names it (untrusted_note)
    dead = [link.path for link in venv.links if link.resolves is False]
    cmds = []
    if dead:
        cmds.append(command("rm", "-f", "--", *dead, shell=shell, what="a link path"))
    # venv rewrites pyvenv.cfg: without the flag an include-system-site-packages venv would lose the base's packages
    system = ["--system-site-packages"] if venv.include_system_site_packages else []
    cmds.append(command(venv_python_word(venv), "-m", "venv", "--upgrade", *system, venv.root, shell=shell,
                        what="the venv path"))
    return cmds
