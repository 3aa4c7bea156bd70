"""Issue 42, round 15, helper words: what a report says of the GPU in its context, when no error line says it.

- A container said not to reach the GPU, with no GPU request shown: CONTAINER_NO_GPU_RUNTIME (low), quiet where
  the paste shows the runtime asked for (--runtime=nvidia, --gpus): jellyfin-001, kubeflow-001; debian-001 is the
  near miss (the runtime was asked for; its cause was the host's driver install).
- Kubernetes shows no nvidia.com/gpu on a node (`kubectl get nodes` with the capacity column, or `kubectl describe
  node`'s Capacity block beside a working GPU): k8s-device-plugin-006, NVIDIA/k8s-device-plugin#834; the same
  mechanism as minikube-001's "Insufficient nvidia.com/gpu".
- WSL said not to reach the GPU: WSL_SPECIFIC (low): wsl-008, wsl-012, microsoft/WSL#9134's title.
- The driver's kernel module said to need a hand after a kernel upgrade (DKMS by hand) or its Secure Boot key
  enrolled again: NO_NVIDIA_DRIVER (low): negativo17-005, linux-mint-002 (gcp-002 says it beside nvidia-smi's own
  message, whose finding stays the one shown).
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import corpus_row
from tests.unit.diagnose.pastes import serious as _serious
from tests.unit.diagnose.pastes import serious_by_code as _by_code

# ---- a container said not to reach the GPU (CONTAINER_NO_GPU_RUNTIME, diagnose.container-gpu-said/words)


@pytest.mark.parametrize("text", [
    # jellyfin-001 (jellyfin/jellyfin#2722)
    "Not sure if Jellyfin container problem:\n\nAfter updating host and nvidia driver, transcoding fail cause "
    "container cant access GPU\n\n - OS: Linux\n - Virtualization: Proxmox / Docker\n",
    # kubeflow-001 (kubeflow/notebooks#68): the words alone, without the nvidia-smi message below them
    "no nvidia-smi in container (`kubectl -n kubeflow-user-example-com exec -it test-gpu-0 -- bash`)\n",
])
def test_a_container_said_not_to_reach_the_gpu_is_the_container_runtime(text, compat) -> None:
    f = _by_code(text, compat).get("diagnose.container-gpu-said/words")
    assert f is not None, sorted(_by_code(text, compat))
    assert f.category == "CONTAINER_NO_GPU_RUNTIME" and f.severity == "warning" and f.confidence == "low"


def test_near_miss_the_runtime_was_asked_for(compat) -> None:
    # debian-001 (NVIDIA/nvidia-docker#736): --runtime=nvidia given; the host's driver install lacked nvidia-smi
    text = corpus_row("debian", "debian-001")
    assert "diagnose.container-gpu-said/words" not in _by_code(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(text, compat)


def test_near_miss_a_container_that_reaches_the_gpu(compat) -> None:
    text = "The container can access the GPU fine, but transcoding is slow.\n"
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(text, compat)


# ---- no nvidia.com/gpu on a Kubernetes node (diagnose.container-gpu-said/node-capacity)

K8S_834_SMI = (
    "+---------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 535.183.01             Driver Version: 535.183.01   CUDA Version: 12.2     |\n"
    "|-----------------------------------------+----------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                      |               MIG M. |\n"
    "|=========================================+======================+======================|\n"
    "|   0  Tesla P4                       Off | 00000000:86:00.0 Off |                    0 |\n"
    "| N/A   28C    P8               6W /  75W |      4MiB /  7680MiB |      0%      Default |\n"
    "+-----------------------------------------+----------------------+----------------------+\n")
CAPACITY = ("Capacity:\n  cpu:                48\n  ephemeral-storage:  574137520Ki\n  hugepages-1Gi:      0\n"
            "  memory:             263603720Ki\n  pods:               110\nAllocatable:\n  cpu:                48\n")


@pytest.mark.parametrize("text", [
    # k8s-device-plugin-006 (NVIDIA/k8s-device-plugin#57): minikube's none driver on a Docker without the runtime
    "```bash\nsudo minikube start --vm-driver=none --feature-gates=Accelerators=true \n"
    "kubectl get nodes -o=custom-columns=NAME:.metadata.name,GPUs:.status.capacity.'nvidia\\.com/gpu' \n```\n"
    "Getting:\n\n> NAME       GPUs\n> minikube   \\<none\\>\n",
    # NVIDIA/k8s-device-plugin#834: the node's description beside the host's nvidia-smi
    "when i describe node, there is no gpu resource, why?\n\n```\n" + CAPACITY + "```\n(this is the node "
    "description)\n\n1. I have installed nvidia driver\n\n```\n" + K8S_834_SMI + "```\n",
])
def test_a_node_without_nvidia_gpu_is_the_nodes_runtime(text, compat) -> None:
    f = _by_code(text, compat).get("diagnose.container-gpu-said/node-capacity")
    assert f is not None, sorted(_by_code(text, compat))
    assert f.category == "CONTAINER_NO_GPU_RUNTIME" and f.confidence == "low"


@pytest.mark.parametrize("text", [
    # a CPU node's description: no GPU anywhere in the paste
    "kubectl describe node worker-1\n" + CAPACITY,
    # a node that advertises its GPU
    "kubectl get nodes -o=custom-columns=NAME:.metadata.name,GPUs:.status.capacity.'nvidia\\.com/gpu'\n"
    "NAME       GPUs\nminikube   1\n",
])
def test_near_miss_a_cpu_node_or_a_node_with_its_gpu(text, compat) -> None:
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(text, compat)


# ---- WSL said not to reach the GPU (WSL_SPECIFIC, diagnose.wsl-gpu-said)


@pytest.mark.parametrize("text", [
    # wsl-008 (microsoft/WSL#12835)
    "### WSL Version\n\n2.4.13.0\n\n### Other Software\n\nGPU: NV Tesla p4\n\nI want to use the Nvidia GPU feature "
    "of WSL2 for development.\nhowever when i first update wsl.exe and NV driver. i find i can not use nvidia-smi in "
    "wsl2 linux os\n",
    # wsl-012 (microsoft/WSL#4846)
    "Intel UHD 630 integrated/NVIDIA GTX 10xx hybrid (\"Optimus\") setup as I can't get WSL to recognise I have an "
    "NVIDIA card installed at all\n",
    # microsoft/WSL#9134's title
    "nvidia-smi on WSL doesn't work but nvidia-smi.exe on windows works\n",
])
def test_wsl_said_not_to_reach_the_gpu_is_wsl_specific(text, compat) -> None:
    f = _by_code(text, compat).get("diagnose.wsl-gpu-said/words")
    assert f is not None, sorted(_by_code(text, compat))
    assert f.category == "WSL_SPECIFIC" and f.confidence == "low"


@pytest.mark.parametrize("text", [
    # ollama-010 (HEALTHY): WSL named, nothing said about the GPU not being reached
    "the model isn't fully loaded into vram by default?\n\n### OS\n\nWSL2, Docker\n\n### GPU\n\nNvidia\n",
    "I use WSL2 and nvidia-smi works, but training is slower than on Windows.\n",
])
def test_near_miss_wsl_named_without_the_gpu_unreached(text, compat) -> None:
    assert "WSL_SPECIFIC" not in _serious(text, compat)


# ---- the driver's kernel module after a kernel upgrade, or its Secure Boot key (diagnose.module-said)


@pytest.mark.parametrize("text", [
    # negativo17-005 (negativo17/nvidia-driver#56)
    "For a while now, I have to manually do `sudo dkms install nvidia/xxx.xx` after a kernel upgrade (Fedora 28). "
    "Why is this not happening automatically anymore?\n",
    # linux-mint-002 (linuxmint/mintdrivers#100)
    "I just had to re-enroll the MOK key to use the Nvidia driver with secure boot enabled. When I did this in Linux "
    "Mint 21, I was asked for a password at the end of the installation and could enroll it in reboot.\n",
])
def test_a_module_said_to_need_a_hand_is_no_loaded_driver(text, compat) -> None:
    f = _by_code(text, compat).get("diagnose.module-said/not-loaded")
    assert f is not None, sorted(_by_code(text, compat))
    assert f.category == "NO_NVIDIA_DRIVER" and f.confidence == "low"


@pytest.mark.parametrize("text", [
    # nobara-001 (Nobara-Project/rpm-sources#525): Secure Boot named, off, and no module words
    "- GPU: NVIDIA GeForce RTX 3060 (GA106), KDE / Wayland, Secure Boot OFF\n",
    # the module rebuilt after a kernel update and the driver answering
    "After a kernel update I ran dkms install and now it works:\n" + K8S_834_SMI,
])
def test_near_miss_secure_boot_off_or_a_driver_that_answers(text, compat) -> None:
    assert "diagnose.module-said/not-loaded" not in _by_code(text, compat)
    assert "NO_NVIDIA_DRIVER" not in _serious(text, compat)


def test_a_message_that_says_it_stays_the_finding_shown(compat) -> None:
    # gcp-002: the words beside nvidia-smi's own message: the message's finding is the one shown
    got = _by_code(corpus_row("gcp", "gcp-002"), compat)
    assert "messages.signature/nvidia-smi-could-not-communicate" in got
    assert "diagnose.module-said/not-loaded" not in got
