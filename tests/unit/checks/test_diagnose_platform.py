"""diagnose_platform's checks on pastes: the Windows build and WSL version (diagnose.wsl-gpu), the WSL kernel
(diagnose.wsl-kernel), driver packages changed under the loaded module (diagnose.driver-packages), what an extension
was built for (diagnose.extension-build), collectives hanging behind one PCIe switch (diagnose.p2p-hang)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES
from tests.unit.diagnose.test_mechanisms import _serious

PASTES = FIXTURES / "pastes"
TOPO_SYS_NODE = (FIXTURES / "topo" / "rtx-6000-ada-x4_pcie-sys-node-pix_nics.txt").read_text()


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _codes(report) -> set:
    return {f.code for f in report.findings}


def _check(text: str, compat, check_id: str):
    return next(c for c in diagnose_report([text], compat).checks if c.id == check_id)


def _paste(name: str) -> str:
    return (PASTES / name).read_text()


def test_hang_behind_one_pcie_switch_is_p2p(compat) -> None:
    report = diagnose_report([(PASTES / "nccl-p2p-hang-pxb.txt").read_text()], compat)
    f = next(f for f in report.findings if f.code == "diagnose.p2p-hang/pcie-p2p-broken")
    assert f.severity == "error" and f.category == "INTERCONNECT"
    assert "NCCL_P2P_DISABLE=1" in " ".join(f.fix.commands) and "iommu=pt" in f.fix.summary


def test_hang_only_across_the_cpu_is_not_p2p(compat) -> None:
    # a real 4-GPU matrix with no GPU pair behind one switch (SYS/NODE only): ACS is not the story
    text = TOPO_SYS_NODE + "\nall_reduce hangs between GPU0 and GPU2 every time\n"
    assert "diagnose.p2p-hang/pcie-p2p-broken" not in _codes(diagnose_report([text], compat))


def test_hang_without_topology_says_what_to_paste(compat) -> None:
    report = diagnose_report(["torchrun --nproc_per_node 4 train.py hangs at the first all_reduce\n"], compat)
    f = next(f for f in report.findings if f.code == "diagnose.p2p-hang/topology-unknown")
    assert f.severity == "info" and "nvidia-smi topo -m" in f.summary


FLASH = ("$ pip install flash_attn-2.7.4.post1+cu124torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl\n"
         "$ python -c \"import torch; print(torch.__version__)\"\n2.6.0+cu126\n")


def test_extension_wheel_for_another_variant_is_both(compat) -> None:
    serious = _serious(diagnose_report([FLASH], compat))
    assert serious.get("CUDA_VARIANT_MIXED") == {"error"} and "THIRD_PARTY_EXTENSION_MISMATCH" in serious
    same = _serious(diagnose_report([FLASH.replace("+cu124torch2.6", "+cu126torch2.6")], compat))
    assert "CUDA_VARIANT_MIXED" not in same


def test_wsl_kernel_below_the_gpu_minimum(compat) -> None:
    # vllm-project/vllm#6184: kernel 5.10.16.3, GPU compute needs 5.10.43.3 (Microsoft's and NVIDIA's WSL guides)
    text = ('Found no NVIDIA driver on your system.\n\nand I get "Linux version 5.10.16.3-microsoft-standard-WSL2 '
            '(oe-user@oe-host)"\n')
    report = diagnose_report([text], compat)
    f = next(f for f in report.findings if f.code == "diagnose.wsl-kernel/too-old")
    assert f.severity == "error" and "wsl --update" in " ".join(f.fix.commands)
    assert "NO_NVIDIA_DRIVER" not in _serious(report)  # never Linux-driver advice inside WSL
    new = text.replace("5.10.16.3", "5.15.153.1")
    assert "diagnose.wsl-kernel/too-old" not in _codes(diagnose_report([new], compat))


def test_driver_packages_hold_uses_the_distributions_tool(compat) -> None:
    log = ("Fedora 39 here, after dnf upgrade:\n"
           "Upgraded: kmod-nvidia-6.5.6-300.fc39.x86_64-545.29.02-1.fc39.x86_64\n"
           "Upgraded: nvidia-driver-3:545.29.02-1.fc39.x86_64\n"
           "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n")
    report = diagnose_report([log], compat)
    fixes = [f.fix.commands for f in report.findings if f.code == "diagnose.driver-packages/changed-under-module"]
    assert fixes, [f.code for f in report.findings]
    (cmds,) = fixes
    assert cmds[0] == "sudo reboot" and cmds[1].startswith("sudo dnf versionlock add '*nvidia*'")
    assert not any("apt" in c for c in cmds)


# --------------------------------------------------------------------------- each check: passing, failing, skipped


def test_wsl_gpu_old_windows_build_whole_findings_a_current_one_passes_and_not_wsl_skips(compat) -> None:
    c = _check(_paste("wsl-old-build.txt"), compat, "diagnose.wsl-gpu")
    got = [(f.code, f.category, f.severity) for f in c.findings]
    assert (c.status, got) == ("failed", [("diagnose.wsl-gpu/unsupported-build", "WSL_SPECIFIC", "error"),
                                          ("diagnose.wsl-gpu/no-gpu", "NO_GPU_VISIBLE", "error")])
    assert c.findings[0].summary.startswith("WSL: Windows build 18363 predates GPU compute in WSL")
    assert [(e.path, e.value) for e in c.findings[0].evidence] == [("host.wsl", True),
                                                                   ("paste.provenance.host.windows_build", 18363)]
    assert _check(_paste("wsl.txt"), compat, "diagnose.wsl-gpu").status == "passed"
    skipped = _check(_paste("dpkg-driver-upgrade.txt"), compat, "diagnose.wsl-gpu")
    assert (skipped.status, skipped.reason) == ("skipped", "not WSL (or not known to be)")


WSL_OLD_KERNEL = ('Found no NVIDIA driver on your system.\n\nand I get "Linux version '
                  '5.10.16.3-microsoft-standard-WSL2 (oe-user@oe-host)"\n')


def test_wsl_kernel_whole_finding_a_new_kernel_passes_and_no_kernel_skips(compat) -> None:
    (f,) = _check(WSL_OLD_KERNEL, compat, "diagnose.wsl-kernel").findings
    assert (f.code, f.category, f.severity) == ("diagnose.wsl-kernel/too-old", "WSL_SPECIFIC", "error")
    assert f.summary == "WSL kernel 5.10.16.3 is older than 5.10.43.3, the minimum for GPU compute in WSL 2"
    assert (f.evidence[0].path, f.evidence[0].value) == ("host.kernel", "5.10.16.3-microsoft-standard-WSL2")
    assert _check(_paste("wsl.txt"), compat, "diagnose.wsl-kernel").status == "passed"
    skipped = _check(_paste("wsl-old-build.txt"), compat, "diagnose.wsl-kernel")
    assert (skipped.status, skipped.reason) == ("skipped", "no WSL kernel version in the paste")


def test_driver_packages_whole_finding_a_working_driver_passes_and_no_log_skips(compat) -> None:
    (f,) = _check(_paste("dpkg-driver-upgrade.txt"), compat, "diagnose.driver-packages").findings
    assert (f.code, f.category, f.severity) == ("diagnose.driver-packages/changed-under-module",
                                                "DRIVER_LIBRARY_MISMATCH", "error")
    assert f.summary.startswith("NVIDIA driver packages changed (upgrade nvidia-utils-535 "
                                "535.171.04-0ubuntu0.22.04.1 -> 535.183.01-0ubuntu0.22.04.1")
    assert [e.path for e in f.evidence] == ["paste.provenance.driver.packages_changed", "driver.status",
                                            "paste.messages[0]", "paste.settle"]
    working = ("$ nvidia-smi\n| NVIDIA-SMI 535.183.01             Driver Version: 535.183.01   CUDA Version: 12.2"
               "     |\n$ grep nvidia /var/log/dpkg.log\n2024-07-02 06:12:40 upgrade nvidia-utils-535:amd64 "
               "535.171.04-0ubuntu0.22.04.1 535.183.01-0ubuntu0.22.04.1\n")
    assert _check(working, compat, "diagnose.driver-packages").status == "passed"
    skipped = _check(_paste("wsl.txt"), compat, "diagnose.driver-packages")
    assert (skipped.status, skipped.reason) == ("skipped", "no package-manager log with NVIDIA driver packages in "
                                                           "the paste")


def test_extension_build_whole_finding_a_matching_wheel_passes_and_no_extension_skips(compat) -> None:
    c = _check(_paste("xformers-variant.txt"), compat, "diagnose.extension-build")
    (f,) = c.findings
    assert (c.status, f.code, f.category, f.severity) == ("failed", "diagnose.extension-build/other-variant",
                                                          "CUDA_VARIANT_MIXED", "error")
    assert f.summary == ("The extension was built for torch 2.4.1+cu121, the same release as torch 2.4.1+cu124 but "
                         "another CUDA variant")
    assert f.evidence[0].path == "paste.messages[1]" and "you have 2.4.1+cu124" in f.evidence[0].value
    assert _check(FLASH.replace("2.6.0+cu126", "2.6.0+cu124"), compat, "diagnose.extension-build").status == "passed"
    skipped = _check(_paste("wsl.txt"), compat, "diagnose.extension-build")
    assert skipped.status == "skipped" and skipped.reason.startswith('no "built for torch X (you have Y)" message')


def test_p2p_hang_whole_finding_across_the_cpu_passes_and_no_hang_skips(compat) -> None:
    (f,) = _check(_paste("nccl-p2p-hang-pxb.txt"), compat, "diagnose.p2p-hang").findings
    assert (f.code, f.category, f.severity) == ("diagnose.p2p-hang/pcie-p2p-broken", "INTERCONNECT", "error")
    assert f.summary.startswith("Collectives hang between GPUs behind one PCIe switch (GPU0-GPU1 PXB, GPU2-GPU3 PIX)")
    assert [(e.path, e.value) for e in f.evidence][0] == ("topology.gpu_matrix", "GPU0-GPU1 PXB, GPU2-GPU3 PIX")
    across = TOPO_SYS_NODE + "\nall_reduce hangs between GPU0 and GPU2 every time\n"
    assert _check(across, compat, "diagnose.p2p-hang").status == "passed"
    skipped = _check(_paste("wsl.txt"), compat, "diagnose.p2p-hang")
    assert (skipped.status, skipped.reason) == ("skipped", "no report of a collective hanging between GPUs in the "
                                                           "paste")


TWO_GPUS_NODE = """\
        GPU0    GPU1    CPU Affinity    NUMA Affinity
GPU0     X      NODE    0-63            0
GPU1    NODE     X      0-63            0

ncclCommInitRank completes, but the first ncclAllReduce spins at 100% SM utilization indefinitely, no forward
progress.
"""


@pytest.mark.parametrize("cpu, severity, confidence", [
    ("", "warning", "low"),  # the paste does not name the CPU: hedged, with lscpu to settle it
    ("Model name: AMD EPYC 9354 32-Core Processor\n", "warning", "medium"),
    ("Vendor ID: GenuineIntel\n", None, None),  # NCCL keeps P2P off across the CPU on Intel: not the story
])
def test_two_gpus_across_the_cpu_hang_is_p2p_only_where_nccl_uses_p2p_there(compat, cpu, severity,
                                                                             confidence) -> None:
    # NCCL's ncclTopoCheckP2p: P2P level PXB by default, SYS on AMD x86 hosts with at most two GPUs
    check = _check(cpu + TWO_GPUS_NODE, compat, "diagnose.p2p-hang")
    if severity is None:
        assert check.status == "passed" and not check.findings
        return
    (f,) = check.findings
    assert (f.code, f.category, f.severity, f.confidence) == ("diagnose.p2p-hang/pcie-p2p-broken", "INTERCONNECT",
                                                              severity, confidence)
    assert "GPU0-GPU1 NODE" in f.summary and "NCCL_P2P_DISABLE=1" in " ".join(f.fix.commands)
    assert ("the paste does not name the CPU" in f.summary) == (not cpu)


def test_a_hang_across_the_cpu_between_more_than_two_gpus_is_not_p2p(compat) -> None:
    # four GPUs: NCCL's AMD exception is for two GPUs only, so SYS/NODE pairs do not use P2P
    text = "Model name: AMD EPYC 7763 64-Core Processor\n" + TOPO_SYS_NODE.replace("PIX", "SYS") + \
        "\nall_reduce spins forever between GPU0 and GPU2\n"
    assert _check(text, compat, "diagnose.p2p-hang").findings == []
