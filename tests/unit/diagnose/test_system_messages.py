"""The system layer's own environment-cause messages, taken from its source before anyone pastes them (issue 42,
kbsys): NVIDIA's kernel module (NVRM), nvidia-installer, nvidia-smi, libnvidia-container, NVIDIA's Kubernetes
device plugin and Apptainer's --nv. Each case is the message as its source formats it, with realistic values
(the source's printf filled in), and a near-miss that must not be read as that cause."""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import assert_names_its_cause, by_row, serious

# (row id, the source's message with realistic values, the category, the severity)
CASES = [
    ("nvrm-probe-not-called",
     "[    5.812345] NVRM: The NVIDIA probe routine was not called for 1 device(s).\n"
     "[    5.812350] NVRM: This can occur when another driver was loaded and \n"
     "               NVRM: obtained ownership of the NVIDIA device(s).\n"
     "[    5.812352] NVRM: Try unloading the conflicting kernel module (and/or\n"
     "               NVRM: reconfigure your kernel without the conflicting\n"
     "               NVRM: driver(s)), then try loading the NVIDIA kernel module\n"
     "               NVRM: again.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("nvrm-no-gpu-found",
     "[    4.107021] nvidia: loading out-of-tree module taints kernel.\n"
     "[    4.118230] NVRM: No NVIDIA GPU found.\n",
     "NO_GPU_VISIBLE", "warning"),
    ("nvrm-gpu-not-probed",
     "[    6.001200] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
     "[    6.001210] NVRM: None of the NVIDIA devices were initialized.\n",
     "NO_NVIDIA_DRIVER", "warning"),
    ("nvrm-gpu-not-supported-by-release",
     "[    7.250101] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)\n"
     "               NVRM: installed in this system is not supported by the\n"
     "               NVRM: NVIDIA 550.144.03 driver release.\n"
     "               NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'\n"
     "               NVRM: in this release's README, available on the operating system\n"
     "               NVRM: specific graphics driver download page at www.nvidia.com.\n",
     "DRIVER_DROPPED_GPU", "warning"),
    ("nvrm-gsp-firmware-missing",
     "[   12.401873] nvidia 0000:01:00.0: Direct firmware load for nvidia/580.95.05/gsp_ga10x.bin failed with error -2\n"
     "[   12.401880] NVRM: RmFetchGspRmImages: No firmware image found\n"
     "[   12.401911] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x61:0x56:1927)\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("installer-kernel-source-missing",
     "ERROR: Unable to find the kernel source tree for the currently running kernel.  Please make sure you have "
     "installed the kernel source files for your kernel and that they are properly configured; on Red Hat Linux "
     "systems, for example, be sure you have the 'kernel-source' or 'kernel-devel' RPM installed.  If you know the "
     "correct kernel source files are installed, you may specify the kernel source path with the "
     "'--kernel-source-path' command line option.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("installer-nouveau-in-use",
     "WARNING: The Nouveau kernel driver is currently in use by your system.  This driver is incompatible with the "
     "NVIDIA driver, and must be disabled before proceeding.  Please consult the NVIDIA driver README and your Linux "
     "distribution's documentation for details on how to correctly disable the Nouveau kernel driver.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("installer-module-not-signed",
     "ERROR: The kernel module failed to load. Secure boot is enabled on this system, so this is likely because it "
     "was not signed by a key that is trusted by the kernel. Please try installing the driver again, and sign the "
     "kernel module when prompted to do so.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("installer-dev-tool-missing",
     "ERROR: Unable to find the development tool `cc` in your path; please make sure that you have the package "
     "'gcc' installed.  If gcc is installed on your system, then please check that `cc` is in your PATH.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("container-cli-unknown-device",
     "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
     "runtime create failed: runc create failed: unable to start container process: error during container init: "
     "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
     "nvidia-container-cli: device error: 1: unknown device: unknown.\n",
     "CONTAINER_NO_GPU_RUNTIME", "error"),
    ("nvidia-smi-nvml-library-missing",
     "$ nvidia-smi\n"
     "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display "
     "Driver is properly installed and present in your system.\n"
     "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("k8s-plugin-incompatible-strategy",
     "I0512 10:01:02.123456       1 main.go:317] Retrieving plugins.\n"
     "E0512 10:01:02.123501       1 factory.go:118] Incompatible strategy detected auto\n"
     "E0512 10:01:02.123510       1 factory.go:119] If this is a GPU node, did you configure the NVIDIA Container "
     "Toolkit?\n",
     "CONTAINER_NO_GPU_RUNTIME", "error"),
    ("k8s-plugin-no-devices",
     "I0512 10:01:02.223456       1 main.go:416] No devices found. Waiting indefinitely.\n",
     "CONTAINER_NO_GPU_RUNTIME", "warning"),
    ("apptainer-nv-files-not-found",
     "$ apptainer exec --nv pytorch_24.01.sif python -c 'import torch; print(torch.cuda.is_available())'\n"
     "WARNING: Could not find any nv files on this host!\n"
     "False\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("nvrm-register-region-claimed",
     "[    4.902311] NVRM: request_mem_region failed for 16M @ 0xfb000000. This can\n"
     "               NVRM: occur when a driver such as rivatv is loaded and claims\n"
     "               NVRM: ownership of the device's registers.\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("enroot-nvidia-cli-missing",
     "$ srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 nvidia-smi\n"
     "[ERROR] Command not found: nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container\n"
     "[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1\n",
     "CONTAINER_NO_GPU_RUNTIME", "error"),
    ("go-nvml-library-not-found",
     "$ sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml\n"
     "ERRO[0000] failed to generate CDI spec: failed to create device CDI specs: failed to initialize NVML: "
     "ERROR_LIBRARY_NOT_FOUND\n",
     "NO_NVIDIA_DRIVER", "error"),
    ("kernel-lockdown-unsigned-module",
     "$ sudo dmesg | grep -i lockdown\n"
     "[  231.442170] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n",
     "NO_NVIDIA_DRIVER", "warning"),
    ("slurm-gres-gpu-count-low",
     "$ scontrol show node gpu01 | grep -e State -e Reason\n"
     "   State=IDLE+DRAIN+INVALID_REG ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
     "   Reason=gres/gpu count reported lower than configured (0 < 4) [slurm@2026-11-02T09:14:51]\n",
     "NO_GPU_VISIBLE", "warning"),
]


@pytest.mark.parametrize("row,text,category,severity", CASES, ids=[c[0] for c in CASES])
def test_the_sources_message_names_its_cause(row, text, category, severity, compat):
    f = assert_names_its_cause(text, compat, row, category, severity)
    assert f.caused_by is None
    assert "UNRECOGNISED_ERROR" not in serious(text, compat)


def test_the_gsp_firmware_explains_the_rm_init_adapter_failure_beside_it(compat):
    """RmInitAdapter alone is a low BIOS lead; with the missing GSP firmware before it, it is that firmware."""
    text = CASES[4][1]
    cats = set(serious(text, compat))
    assert "NO_NVIDIA_DRIVER" in cats and "BIOS_PCIE_BAR_DISABLED" not in cats
    alone = "[   12.401911] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x61:0x56:1927)\n"
    assert "BIOS_PCIE_BAR_DISABLED" in serious(alone, compat)


def test_nvidia_smi_without_nvml_inside_a_container_is_the_runtime(compat):
    text = ("$ docker run --rm --gpus all nvidia/cuda:11.8.0-base-ubuntu22.04 nvidia-smi\n"
            "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA "
            "Display Driver is properly installed and present in your system.\n")
    f = by_row(text, compat)["nvidia-smi-nvml-library-missing"]
    assert f.category == "CONTAINER_NO_GPU_RUNTIME" and f.confidence == "high"


NEAR_MISSES = [
    # the module loaded and drives its GPU: the probe lines of a healthy boot
    ("nvrm-probe-not-called", "[    5.9] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"),
    # a library's own words, not NVRM's refusal
    ("nvrm-no-gpu-found", "RuntimeError: No NVIDIA GPU found, falling back to CPU for this run\n"),
    ("nvrm-gpu-not-probed", "[    6.0] NVRM: GPU 0000:01:00.0: probe routine succeeded for 1 device(s)\n"),
    ("nvrm-gpu-not-supported-by-release", "NOTE: this feature is not supported by the NVIDIA 550.54.14 driver yet\n"),
    ("nvrm-gsp-firmware-missing", "[   12.4] NVRM: RmFetchGspRmImages: loaded firmware image gsp_ga10x.bin\n"),
    ("installer-kernel-source-missing", "ERROR: Unable to find the kernel module source for the nvidia-fs module\n"),
    ("installer-nouveau-in-use", "The Nouveau kernel driver was disabled; the NVIDIA driver is in use.\n"),
    # another module refused by Secure Boot is not the NVIDIA module of nvidia-installer
    ("installer-module-not-signed", "ERROR: The kernel module failed to load because of an unknown symbol\n"),
    ("installer-dev-tool-missing", "ERROR: Unable to find the development tool headers for CUDA in /usr/local\n"),
    ("container-cli-unknown-device", "nvidia-container-cli: device error: failed to get the device: unknown.\n"),
    ("nvidia-smi-nvml-library-missing", "NVIDIA-SMI has found libnvidia-ml.so library in /usr/lib/x86_64-linux-gnu\n"),
    ("k8s-plugin-incompatible-strategy", "I0512 10:01:02.1 main.go:110] Detected NVML platform: found NVML library\n"),
    ("k8s-plugin-no-devices", "I0512 10:01:02.2 server.go:250] Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"),
    ("apptainer-nv-files-not-found", "WARNING: Could not find any rocm files on this host!\n"),
    ("nvrm-register-region-claimed", "[    4.9] NVRM: request_mem_region succeeded for the GPU's registers\n"),
    ("enroot-nvidia-cli-missing", "[ERROR] Command not found: nvidia-smi, see the NVIDIA driver's README\n"),
    # the library loaded (its own error string): a driver not loaded, another cause
    ("go-nvml-library-not-found", "E0512 10:01:02.1 factory.go:99] Failed to initialize NVML: Driver Not Loaded.\n"),
    ("slurm-gres-gpu-count-low", "   Reason=gres/gpu count changed and jobs are using them (4 != 3)\n"),
    ("kernel-lockdown-unsigned-module", "[    3.2] Lockdown: bpf: use of bpf to read kernel RAM is restricted; see man kernel_lockdown.7\n"),
]


@pytest.mark.parametrize("row,text", NEAR_MISSES, ids=[c[0] for c in NEAR_MISSES])
def test_a_near_miss_is_not_read_as_that_cause(row, text, compat):
    assert row not in by_row(text, compat)  # nothing recognisable at all counts as not the row either


def test_every_case_names_a_row_of_the_catalogue(compat):
    ids = {s.id for s in compat.signatures}
    assert {c[0] for c in CASES} <= ids and {c[0] for c in NEAR_MISSES} <= ids
