"""Fix planning apart from detection: the one builder of every command a finding's fix shows.

Pure: it takes facts and returns text. Every value from the facts is quoted for the target shell
(shlex.quote for POSIX shells, PowerShell's single quotes on Windows); a value that would break the
line is refused with a comment rather than embedded. Commands know the platform (apt, dnf, zypper,
pacman; Windows and WSL, where the driver is the Windows one), the package tool (pip or uv) and the
judged interpreter, named by its path.
"""

from .driver import (
    COMPAT_DOC,
    GUIDE,
    WINDOWS_DRIVER,
    DriverPlan,
    datacenter_gpus,
    driver_install,
    hold_driver_packages,
    remove_linux_driver,
)
from .platform import Platform, family_of, platform_of
from .python import (
    GET_STARTED,
    LEGACY_FIND_LINKS,
    TORCH_FAMILY,
    Installer,
    conda_cuda_note,
    index_url_for,
    installer_for,
    new_venv,
    pip_check,
    pip_command,
    pip_install,
    repair_venv,
    untrusted_note,
    venv_python_word,
)
from .shell import (
    POSIX,
    POWERSHELL,
    Placeholder,
    Raw,
    UnsafeValue,
    command,
    comment_line,
    export,
    quote,
    rename_local,
    unset,
)
from .system import (
    copy_to_local,
    drop_path_entry,
    kernel_log_xid,
    largest_dirs,
    pcie_link_status,
    placeholder,
    placeholder_flag,
    pth_line_removal,
    random_read_test,
    set_env,
    unset_env,
)
from .toolchain import cuda_toolkit_first, host_compiler_install

__all__ = [
    "COMPAT_DOC", "GUIDE", "WINDOWS_DRIVER", "DriverPlan", "datacenter_gpus", "driver_install", "hold_driver_packages", "remove_linux_driver", "cuda_toolkit_first",
    "host_compiler_install", "Platform", "family_of", "platform_of",
    "GET_STARTED", "LEGACY_FIND_LINKS", "TORCH_FAMILY", "Installer", "conda_cuda_note", "index_url_for", "installer_for",
    "new_venv", "pip_check", "pip_command", "pip_install", "repair_venv", "untrusted_note", "venv_python_word", "rename_local", "POSIX", "POWERSHELL", "Placeholder", "Raw",
    "UnsafeValue", "command", "comment_line", "export", "quote", "unset", "copy_to_local", "drop_path_entry",
    "kernel_log_xid", "largest_dirs", "pcie_link_status", "placeholder", "placeholder_flag", "pth_line_removal", "random_read_test",
    "set_env", "unset_env",
]
