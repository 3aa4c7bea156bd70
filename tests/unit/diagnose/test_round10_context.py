"""Issue 42, round 10, helper context: where the GPU is lost depends on where the program ran.

The same failure names different causes by context. nvidia-container-cli runs on the host and loads the host's
driver before it sets up any container: its initialisation failing because that driver is missing (a kernel
module not loaded, no libnvidia-ml on the host) is NO_NVIDIA_DRIVER, under WSL 2 it is WSL_SPECIFIC, and its driver
timing out is the GPUs' persistence mode (PERSISTENCE_MODE_OFF). A missing driver library or device node inside a
container, a pod (a Kubernetes GPU component), an Apptainer/Singularity or enroot/pyxis container, is the
container's runtime (CONTAINER_NO_GPU_RUNTIME); on a bare host it is the driver. The readers
(diagnose/readers/contexts.py) find those contexts from their own signs, not from one report's sentence."""

from __future__ import annotations

from tests.unit.diagnose.pastes import serious as _serious

CLI_PROCESS = "nvidia-container-cli: initialization error: driver error: failed to process request: unknown."

# docker-desktop-001 (docker/for-win): a Linux shell on a Windows-named machine, Docker Desktop's WSL backend
WSL_PROMPT = ("root@DESKTOP-5A67SBM:/home/anurag# docker run --rm -it --gpus=all nvcr.io/nvidia/k8s/cuda-sample:nbody\n"
              "docker: Error response from daemon: OCI runtime create failed: container_linux.go:370: Running hook "
              "#0:: error running hook: exit status 1, stdout: , stderr: " + CLI_PROCESS + "\n")
# the same failure said beside a WSL kernel string (microsoft/WSL reports print uname -r)
WSL_KERNEL = ("$ uname -r\n5.10.16.3-microsoft-standard-WSL2\n"
              "$ docker run --rm --gpus all nvidia/cuda:11.0-base nvidia-smi\n"
              "docker: Error response from daemon: OCI runtime create failed: stderr: " + CLI_PROCESS + "\n")


def test_the_container_clis_failure_under_wsl_is_wsls(compat) -> None:
    for text in (WSL_PROMPT, WSL_KERNEL):
        got = _serious(text, compat)
        assert "WSL_SPECIFIC" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)


def test_near_miss_the_same_failure_on_a_linux_host_stays_the_container_runtime(compat) -> None:
    text = ("root@gpu-box:~# docker run --rm --gpus all nvidia/cuda:11.0-base nvidia-smi\n"
            "docker: Error response from daemon: OCI runtime create failed: stderr: " + CLI_PROCESS + "\n")
    got = _serious(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got and "WSL_SPECIFIC" not in got, sorted(got)


# enroot-001 (NVIDIA/enroot): enroot's NVIDIA hook on a machine without the driver
ENROOT_HOOK = (" [WARN] Kernel module nvidia_uvm is not loaded. Make sure the NVIDIA device driver is installed and loaded\n"
               " nvidia-container-cli: initialization error: driver error: failed to process request\n"
               " [ERROR] /usr/local/etc/enroot/hooks.d/98-nvidia.sh exited with return code 1\n")
# nvidia-docker: the module that would not load named by Docker's hook (NVIDIA/nvidia-docker reports)
DOCKER_MODULE = ("docker: Error response from daemon: OCI runtime create failed: stderr: nvidia-container-cli: "
                 "initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file\n"
                 "modprobe: ERROR: could not insert 'nvidia': Unable to load the kernel module 'nvidia.ko'\n")
# hami-004 (Project-HAMi/HAMi): a pod scheduled onto a node without the driver
NODE_WITHOUT_NVML = ("vgpu-scheduler 有概率创建在未设置该label的node中，导致报错nvidia-container-cli: initialization error: "
                     "load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: "
                     "unknown\n")


def test_the_container_clis_failure_with_the_hosts_driver_missing_is_the_driver(compat) -> None:
    for text in (ENROOT_HOOK, DOCKER_MODULE, NODE_WITHOUT_NVML):
        got = _serious(text, compat)
        assert "NO_NVIDIA_DRIVER" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, (text[:60], sorted(got))


def test_near_miss_no_host_nvml_from_the_docker_snap_stays_the_container_runtime(compat) -> None:
    # canonical/docker-snap: the snap's confinement hides the host's libraries from the hook (the host driver works)
    text = ("snap install docker\ndocker run -it --gpus all d916bd2c64a8\n"
            "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: stderr: "
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared "
            "object file: no such file or directory: unknown.\n")
    got = _serious(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got and "NO_NVIDIA_DRIVER" not in got, sorted(got)


def test_the_container_clis_driver_timing_out_is_persistence_mode(compat) -> None:
    azure = ("[root@RH74NV yum.repos.d]# docker run --runtime=nvidia --rm nvidia/cuda nvidia-smi\n"
             "docker: Error response from daemon: OCI runtime create failed: running prestart hook 1 caused "
             "\"error running hook: exit status 1, stdout: , stderr: exec command: [/usr/bin/nvidia-container-cli "
             "--load-kmods configure]\\\\nnvidia-container-cli: initialization error: driver error: timed out\\\\n\"\": unknown.\n")
    toolkit = ("docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create "
               "failed: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode "
               "as 'legacy'\nnvidia-container-cli: initialization error: driver rpc error: timed out: unknown.\n")
    for text in (azure, toolkit):
        got = _serious(text, compat)
        assert "PERSISTENCE_MODE_OFF" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)
        assert got["PERSISTENCE_MODE_OFF"].severity == "warning"


def test_near_miss_other_container_cli_failures_say_nothing_of_persistence(compat) -> None:
    got = _serious("nvidia-container-cli: initialization error: nvml error: driver not loaded\n", compat)
    assert "PERSISTENCE_MODE_OFF" not in got and got, sorted(got)


def test_a_driver_tool_missing_inside_a_pods_gpu_component_is_the_runtime(compat) -> None:
    # dcgm-exporter-001 (NVIDIA/gpu-monitoring-tools) and k8s-device-plugin-002: components that only run as pods
    dcgm = "\"/usr/local/bin/dcgm-exporter: line 55: nvidia-smi: command not found\" in DCGM exporter\n"
    plugin = "loading NVML\nFailed to start nvml with error:  could not load NVML library\n"
    for text in (dcgm, plugin):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" in got and "NO_NVIDIA_DRIVER" not in got, sorted(got)


def test_near_miss_the_same_failures_on_a_bare_host_are_the_driver(compat) -> None:
    for text in ("$ nvidia-smi\nbash: nvidia-smi: command not found\n",
                 "./my-go-tool\nFailed to initialize NVML: could not load NVML library\n"):
        got = _serious(text, compat)
        assert "NO_NVIDIA_DRIVER" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)


FOUND_NO_DRIVER = ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
                   "installed a driver from http://www.nvidia.com/Download/index.aspx\n")


def test_no_driver_inside_an_enroot_or_apptainer_container_is_the_runtime(compat) -> None:
    # slurm-003 (NVIDIA/enroot): pyxis's srun --container-image, the GPU request on a continued line
    pyxis = ("srun \\\n  --nodes=1 --gpus=2 \\\n  --container-workdir=$(pwd) \\\n  --container-image=\"myimage\" \\\n"
             "  --pty bash -i\n\n" + FOUND_NO_DRIVER)
    # apptainer: a container started without --nv
    apptainer = "$ apptainer exec pytorch.sif python train.py\n" + FOUND_NO_DRIVER
    for text in (pyxis, apptainer):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)
        assert "NO_GPU_VISIBLE" not in got and "NO_NVIDIA_DRIVER" not in got, sorted(got)


def test_near_miss_a_slurm_job_without_a_gpu_request_stays_the_request(compat) -> None:
    text = "srun \\\n  --nodes=1 \\\n  --pty bash -i\n\n" + FOUND_NO_DRIVER
    got = _serious(text, compat)
    assert "NO_GPU_VISIBLE" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)


def test_device_nodes_missing_in_a_container_is_the_runtime_on_a_host_the_driver(compat) -> None:
    # apptainer-001 (apptainer/singularity): --nv with -c (contain) left /dev/nvidia* out
    singularity = ("## Version of Singularity:\n\n2.4.2\n\nCUDA error with Chainer and Detectron containers.\n"
                   "`/dev/nvidia*` files are missing when add `-c`\n")
    docker = ("root@098b49afe624:/# ls /dev/nvidia*\nls: cannot access '/dev/nvidia*': No such file or directory\n")
    for text in (singularity, docker):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)
    host = "user@workstation:~$ ls /dev/nvidia*\nls: cannot access '/dev/nvidia*': No such file or directory\n"
    got = _serious(host, compat)
    assert "NO_NVIDIA_DRIVER" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)


def test_apptainers_failed_nvidia_bind_is_the_container_runtime(compat) -> None:
    # apptainer-002 (apptainer/singularity#4702)
    text = ("dave@ythel~> singularity run --nv docker://ubuntu\nINFO:    Creating SIF file...\n"
            "FATAL:   container creation failed: mount /var/run/nvidia-persistenced/socket->/var/run/nvidia-"
            "persistenced/socket error: while mounting /var/run/nvidia-persistenced/socket: destination "
            "/var/run/nvidia-persistenced/socket doesn't exist in container\n")
    got = _serious(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)


def test_flatpaks_missing_gl_extension_is_no_driver_in_the_sandbox(compat) -> None:
    text = ("Runner: [WARNING Nuvola] StartupWindow.vala:205: opengl-driver-message: Graphics driver 'nvidia-390-59' "
            "for Flatpak has not been found on your system.\n")
    got = _serious(text, compat)
    assert "NO_NVIDIA_DRIVER" in got, sorted(got)


def test_near_miss_singularity_named_in_a_healthy_report_raises_no_error(compat) -> None:
    # deepvariant-001 is HEALTHY: singularity named, TensorRT's optional warning only
    text = ("I am not running docker, but singularity, version 3.7.0\n"
            "2021-01-01 10:00:00.000000: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: "
            "Could not find TensorRT\n")
    got = _serious(text, compat)
    assert not [f for f in got.values() if f.severity == "error"], sorted(got)


def test_tensorflows_failed_libcuda_dlopen_is_a_missing_driver_lead(compat) -> None:
    # nixos-001 (NixOS/nixpkgs): TensorFlow's dso_loader wording of the failed dlopen
    text = ("2019-07-28 13:45:18.738233: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Could not "
            "dlopen library 'libcuda.so.1'; dlerror: libcuda.so.1: c\n")  # cut there in the report
    got = _serious(text, compat)
    assert "NO_NVIDIA_DRIVER" in got, sorted(got)


def test_nvidia_uvm_not_loaded_said_is_the_missing_driver(compat) -> None:
    # enroot-002 (NVIDIA/enroot#106): the reporter's words for enroot's hook after a reboot left nvidia-uvm unloaded;
    # enroot-001's own line is in ENROOT_HOOK above
    text = ("After the reboot, I started seeing the following errors when I tried to run a Slurm (with Pyxis and "
            "enroot) job. It complained about nvidia-uvm module not being loaded and not being able to find "
            "/dev/nvidia-modeset.\n")
    got = _serious(text, compat)
    assert "NO_NVIDIA_DRIVER" in got, sorted(got)


def test_near_miss_nvidia_uvm_listed_loaded_says_nothing(compat) -> None:
    text = "$ lsmod | grep nvidia\nnvidia_uvm           1437696  0\nnvidia              56201216  1 nvidia_uvm\n"
    got = _serious(text, compat)
    assert "NO_NVIDIA_DRIVER" not in got, sorted(got)


def test_the_nvidia_runtime_not_being_the_default_is_the_container_runtime(compat) -> None:
    # container-toolkit-012 (OpenPAI's check through NVIDIA/nvidia-container-runtime#154) and the device plugin's own
    # hint (k8s-device-plugin-005)
    pai = ("fatal: [pai-worker1]: FAILED! => {\"changed\": false, \"msg\": \"The following requirements are not met: "
           "The default runtime is not set correctly\"}\n")
    plugin = ("2019/09/30 14:46:38 Failed to initialize NVML: could not load NVML library.\n"
              "2019/09/30 14:46:38 If this is a GPU node, did you set the docker default runtime to `nvidia`?\n")
    for text in (pai, plugin):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)


def test_near_miss_docker_info_with_nvidia_as_default_says_nothing(compat) -> None:
    text = "$ docker info | grep -i runtime\n Runtimes: io.containerd.runc.v2 nvidia runc\n Default Runtime: nvidia\n"
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(text, compat)


def test_the_fix_speaks_the_containers_own_options(compat) -> None:
    # an Apptainer container gets the GPU with --nv, an enroot/pyxis one through NVIDIA_VISIBLE_DEVICES: never
    # Docker's --gpus
    apptainer = _serious("$ apptainer exec pytorch.sif python train.py\n" + FOUND_NO_DRIVER, compat)
    fix = apptainer["CONTAINER_NO_GPU_RUNTIME"].fix
    assert "--nv" in fix.summary and not any("docker" in c for c in fix.commands), fix
    pyxis = _serious("srun --gpus=2 --container-image=myimage --pty bash -i\n" + FOUND_NO_DRIVER, compat)
    fix = pyxis["CONTAINER_NO_GPU_RUNTIME"].fix
    assert "NVIDIA_VISIBLE_DEVICES" in fix.summary and "--gpus all" not in fix.summary, fix


def test_inside_a_container_the_hosts_missing_driver_outranks_the_runtime(compat) -> None:
    # a container's nvidia-smi fails, and the paste shows why on the host: the module did not load. The container
    # runtime is not the cause (nvidia-docker issues: nouveau loaded from the initramfs, no nvidia.ko for the kernel)
    text = ("root@3f2a9c0d1b7e:/# nvidia-smi\n"
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.\n\n"
            "On the host:\n$ sudo modprobe nvidia\n"
            "ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most frequently when this kernel module "
            "was built against the wrong or improperly configured kernel sources\n")
    got = _serious(text, compat)
    assert "NO_NVIDIA_DRIVER" in got and "CONTAINER_NO_GPU_RUNTIME" not in got, sorted(got)


def test_near_miss_inside_a_container_alone_the_runtime_stays_the_cause(compat) -> None:
    text = ("root@3f2a9c0d1b7e:/# nvidia-smi\n"
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.\n")
    got = _serious(text, compat)
    assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)
