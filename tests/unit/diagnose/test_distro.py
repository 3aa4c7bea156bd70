"""The distribution a paste names picks the package tool of its fixes: "Fedora 30" in a sentence, a pasted
/etc/os-release, `hostnamectl` (apt only when the paste does not say)."""

from __future__ import annotations

from envdoctor.services.diagnose import diagnose_report

NO_DRIVER = """I'm on {distro} and torch can't see my GPU.

$ nvidia-smi
NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.

>>> import torch
>>> torch.__version__
'2.4.1+cu124'
>>> torch.cuda.is_available()
False
"""


def _driver_fix(text: str, compat):
    report = diagnose_report([text], compat)
    (f,) = [f for f in report.findings if f.code == "driver.present/absent"]
    return report.facts.host, f.fix.commands


def test_fedora_named_in_a_sentence_gets_dnf(compat) -> None:
    host, cmds = _driver_fix(NO_DRIVER.format(distro="Fedora 30"), compat)
    assert host.distro_name == "Fedora 30"
    assert cmds[0] == "sudo dnf install -y nvidia-open   # Fedora; then reboot"
    assert not any("apt" in c or "ubuntu-drivers" in c for c in cmds)


def test_rhel_family_named_in_a_sentence_gets_dnf(compat) -> None:
    for distro in ("CentOS 7.9", "Rocky Linux 9.3", "RHEL 8"):
        _, cmds = _driver_fix(NO_DRIVER.format(distro=distro), compat)
        assert cmds[0].startswith("sudo dnf module enable -y nvidia-driver:open-dkms"), (distro, cmds)


def test_an_unnamed_distribution_keeps_the_ubuntu_default(compat) -> None:
    _, cmds = _driver_fix(NO_DRIVER.format(distro="my workstation"), compat)
    assert cmds[0].startswith("sudo ubuntu-drivers install")


def test_a_pasted_os_release_fills_the_distribution_facts(compat) -> None:
    text = NO_DRIVER.format(distro="this box") + (
        '\n$ cat /etc/os-release\nNAME="AlmaLinux"\nVERSION="9.4 (Seafoam Ocelot)"\nID="almalinux"\n'
        'ID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\nPRETTY_NAME="AlmaLinux 9.4 (Seafoam Ocelot)"\n')
    host, cmds = _driver_fix(text, compat)
    assert (host.distro_id, host.distro_version, host.distro_like) == ("almalinux", "9.4", "rhel centos fedora")
    assert host.distro_name == "AlmaLinux 9.4 (Seafoam Ocelot)" and host.os == "Linux"
    assert cmds[0].startswith("sudo dnf module enable")
    prov = diagnose_report([text], compat).facts.paste.provenance
    assert prov["host.distro_id"]["confidence"] == "high" and prov["host.distro_id"]["reader"] == "/etc/os-release"


def test_collect_env_os_line_outranks_a_distribution_in_prose(compat) -> None:
    text = NO_DRIVER.format(distro="Fedora 30") + "\nPyTorch version: 2.4.1+cu124\nIs debug build: False\n" \
        "CUDA used to build PyTorch: 12.4\nROCM used to build PyTorch: N/A\n\nOS: Ubuntu 22.04.4 LTS (x86_64)\n"
    host, _ = _driver_fix(text, compat)
    assert host.distro_name == "Ubuntu 22.04.4 LTS"


def test_a_docker_image_tag_is_no_distribution(compat) -> None:
    text = NO_DRIVER.format(distro="a container") + "\nFROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
    host, cmds = _driver_fix(text, compat)
    assert host.distro_name is None
