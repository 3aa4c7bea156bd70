"""The category catalogue: stable UPPER_SNAKE codes that findings carry and users' scripts rely on.

A category is never renamed or reused. ``envdoctor explain CATEGORY`` prints its entry.
"""

from __future__ import annotations

from typing import Dict

from envdoctor.domain.fastclass import dataclass


@dataclass(frozen=True)
class Category:
    name: str
    title: str
    meaning: str  # what the finding says about the machine
    why: str  # why it matters
    fix: str  # the usual way out


def _c(name: str, title: str, meaning: str, why: str, fix: str) -> Category:
    return Category(name, title, meaning, why, fix)


CATEGORIES: Dict[str, Category] = {c.name: c for c in [
    # --- the core (issue: envdoctor core)
    _c("NO_NVIDIA_DRIVER", "No NVIDIA driver",
       "No NVIDIA kernel driver or user-space library (libnvidia-ml / libcuda) is usable on this machine.",
       "Nothing can run on an NVIDIA GPU without the driver; a CUDA toolkit (nvcc) is not a driver.",
       "Install the NVIDIA driver for your GPU (the distribution's nvidia-driver package, or NVIDIA's "
       "runfile), or run on a machine/container that has one."),
    _c("NO_GPU_VISIBLE", "Driver present, no GPU visible",
       "The driver works but the process sees no GPU.",
       "Typical causes: CUDA_VISIBLE_DEVICES empty or pointing at indices that do not exist, a container "
       "started without GPUs, all GPUs in MIG mode with no instance created.",
       "Unset or correct CUDA_VISIBLE_DEVICES; start containers with --gpus all."),
    _c("DRIVER_LIBRARY_MISMATCH", "Driver/library version mismatch",
       "The loaded kernel module and the user-space driver libraries are different versions.",
       "NVML and CUDA refuse to initialise ('Driver/library version mismatch'); classic after a driver "
       "upgrade without a reboot, or a container whose libcuda does not match the host module.",
       "Reboot (or unload and reload the nvidia kernel modules) so both sides are the same version."),
    _c("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "Driver too old for torch's CUDA",
       "The installed driver is older than the CUDA runtime that torch was built with allows.",
       "torch.cuda.is_available() is False or kernels fail to launch ('The NVIDIA driver on your system "
       "is too old').",
       "Upgrade the driver to a branch that supports that CUDA version, or install a torch build for an "
       "older CUDA."),
    # (named for torch, used since issue 42 for any CUDA build: an extension, llama.cpp, a project's own .cu code)
    _c("GPU_ARCH_NOT_IN_TORCH_BUILD", "GPU architecture not compiled into the build",
       "The build (torch, an extension, or another program's CUDA code) has no kernels (SASS) for this GPU's "
       "compute capability and no PTX it can JIT.",
       "torch warns 'sm_XX is not compatible with the current PyTorch installation' and kernels fail with "
       "'no kernel image is available for execution on the device'.",
       "Install a build whose arch list includes the GPU (for torch: e.g. a cu128+ build for Blackwell, or an "
       "older build for GPUs dropped by new releases; for code built from source: add the GPU's compute "
       "capability to its arch list, e.g. TORCH_CUDA_ARCH_LIST or CMAKE_CUDA_ARCHITECTURES, and rebuild)."),
    _c("TORCH_IMPORT_FAILED", "torch does not import",
       "`import torch` raises (or crashes) in the interpreter being diagnosed.",
       "Nothing that uses torch can start; the error text names the missing module or library.",
       "Install what the error names, or reinstall torch with its dependencies."),
    _c("TARGET_PYTHON_UNUSABLE", "The interpreter to diagnose cannot be inspected",
       "The interpreter given with --python (or chosen by default) is not executable, is not a Python, "
       "crashed, hung or exited before it could say what is installed.",
       "Nothing about its torch, CUDA libraries or packages can be judged, so no verdict about the stack is "
       "possible; if it is the interpreter your jobs use, they fail the same way.",
       "Point --python at the Python 3.8+ interpreter your jobs run (e.g. /path/to/venv/bin/python); run it "
       "by hand to see why it fails."),
    _c("TORCH_NOT_INSTALLED", "torch is not installed",
       "The inspected interpreter has no torch package.",
       "Nothing that imports torch can run there; the torch, CUDA-variant and library checks have nothing to "
       "judge.",
       "Diagnose the interpreter that has torch (--python /path/to/venv/bin/python), or install torch there."),
    _c("TORCH_CPU_ONLY_BUILD", "CPU-only torch on a GPU machine",
       "torch is a CPU build (+cpu, torch.version.cuda is None) while NVIDIA GPUs are present.",
       "Everything runs on the CPU, orders of magnitude slower; 'Torch not compiled with CUDA enabled'.",
       "Reinstall torch from the CUDA index matching the driver."),
    _c("COMPANION_VERSION_MISMATCH", "torchvision/torchaudio/triton built for another torch",
       "A companion package's version pairs with a different torch release.",
       "Import errors, missing operators ('operator torchvision::nms does not exist'), or broken "
       "torch.compile ('cannot import name triton_key').",
       "Install the companion version that pairs with the installed torch, from the same index."),
    _c("CUDA_VARIANT_MIXED", "Packages built for different CUDA variants",
       "torch and its companions (or nvidia-* wheels) were built for different CUDA variants, or a +cpu "
       "package sits next to a CUDA build.",
       "Compiled operators fail to load or load against the wrong runtime.",
       "Reinstall all of them from one index (the same cuXXX or cpu)."),
    _c("SYSTEM_LIB_SHADOWING", "A system library shadows the wheel's copy",
       "A CUDA library (cuDNN, cuBLAS, NCCL, nvJitLink, cudart) is loaded from LD_PRELOAD, /etc/ld.so.preload, "
       "LD_LIBRARY_PATH, a conda prefix or the system instead of the copy torch ships with.",
       "Version errors ('cuDNN version incompatibility'), undefined symbols "
       "('__nvJitLinkAddData_12_1'), or subtle slowdowns.",
       "Remove the library from LD_PRELOAD or /etc/ld.so.preload, or its directory from LD_LIBRARY_PATH (or "
       "match its version to the wheel's); reinstalling torch does not help."),
    # (the title named torch only; since issue 42 the category also carries other frameworks' builds: TensorFlow,
    # JAX, ONNX Runtime, TensorRT, PaddlePaddle wanting a CUDA/cuDNN version the environment lacks)
    _c("CUDA_LIBRARY_VERSION_MISMATCH", "A CUDA library at another version than the build needs",
       "An NVIDIA library (cuDNN, cuBLAS, NCCL, the CUDA runtime ...) is installed at a version other than the one "
       "the build needs -- the version torch (or a companion, or cuda-toolkit) pins in its metadata, or the one "
       "another framework's build was compiled against -- or is missing.",
       "The build was made against that version: an older cuDNN raises 'cuDNN version incompatibility' at "
       "the first convolution, an older cuBLAS or nvJitLink fails with undefined symbols, a library of another "
       "major 'cannot open shared object file'; pip says nothing after a --no-deps install or another package's pin.",
       "Install the version the build needs into the judged environment (for torch: one pinned pip install; torch "
       "stays importable), or install the framework's build for the libraries present."),
    _c("PYTHON_PACKAGE_SHADOWED", "torch is imported from outside the interpreter's own site-packages",
       "The torch that `import torch` finds comes from a PYTHONPATH entry, the user site (~/.local), a "
       "directory a .pth file adds, or a sys.path edit, before (or instead of) the interpreter's own "
       "site-packages.",
       "Every fact about torch is about that other copy: reinstalling torch into the environment changes "
       "nothing while the other entry comes first, and its build may not match the environment's companions "
       "and CUDA libraries.",
       "Unset PYTHONPATH (or remove the .pth file, or set PYTHONNOUSERSITE=1) where it is set, so the "
       "environment's own torch is imported."),
    # --- the interpreter itself (issue 30)
    _c("VENV_SYSTEM_SITE_MIXED", "A venv imports torch from itself and a companion from its base",
       "A venv made with --system-site-packages imports torch from one site-packages and torchvision, torchaudio "
       "or triton from another (the base interpreter's), built for another torch.",
       "The companion's compiled operators are built for the other torch: import errors, missing operators "
       "('operator torchvision::nms does not exist'), or broken torch.compile.",
       "Install the companion that pairs with the imported torch into the venv itself, or uninstall the venv's "
       "copy that hides a matching one, so that one consistent set is imported."),
    _c("PTH_EXEC_SYS_PATH", "A .pth file's code puts another site-packages first",
       "An executable line (`import ...`) of a .pth file in the interpreter's site-packages inserts another "
       "site-packages, or a directory holding torch, ahead of the interpreter's own on sys.path.",
       "That line runs at every start-up: every import prefers the other directory's packages, whatever is "
       "installed into the environment.",
       "Remove the line (or the .pth file when it is all it holds)."),
    _c("PIP_UNAVAILABLE", "pip cannot install into the judged interpreter",
       "The judged interpreter has no pip (`python -m pip` fails: a venv made --without-pip, a distribution's "
       "Python without its pip package), or the `pip` on PATH runs another interpreter.",
       "pip fixes fail, or install into another environment than the one judged.",
       "Run `python -m ensurepip --upgrade` with the judged interpreter (or use uv), and install with "
       "`python -m pip`, never the bare `pip`."),
    _c("DEPENDENCY_UNMET", "A requirement of torch or of a package built on it is not met",
       "A Requires-Dist of torch, or of an installed package that depends on torch (torchvision, deepspeed, "
       "accelerate, ...), names a distribution that is missing or installed at a version outside the range.",
       "Another install that downgraded a shared dependency passes every version check of torch itself, then "
       "fails at `import torch` ('cannot import name ... from typing_extensions') or inside a run.",
       "Install the required range (the fix names it), keeping the installed torch pinned; `pip check` lists "
       "the same."),
    _c("INTERPRETER_METADATA_MISMATCH", "The interpreter and its installed metadata disagree",
       "A venv whose pyvenv.cfg names another Python minor than the one its python now starts (its packages sit "
       "in a lib/pythonX.Y that interpreter never reads), two metadata directories of one distribution in one "
       "site-packages, or compiled files of another build left in a package's directory.",
       "pip, importlib.metadata and envdoctor read one version while other files are imported: packages look "
       "missing, upgrades uninstall the wrong files, and a library of the other build is loaded.",
       "Rebuild the venv's links with the Python it was made with, or remove the stale metadata and files and "
       "reinstall the one version (the fix names the commands)."),
    _c("NVCC_TORCH_CUDA_MISMATCH", "nvcc differs from torch's CUDA",
       "The CUDA toolkit on PATH is a different major (or minor) version than torch was built with.",
       "Building CUDA extensions (flash-attn, apex, custom ops) fails: 'The detected CUDA version (X) "
       "mismatches the version that was used to compile PyTorch (Y)'. Running prebuilt wheels is fine.",
       "Put a toolkit matching torch.version.cuda first on PATH (and CUDA_HOME), or install torch for "
       "your toolkit."),
    _c("HOST_COMPILER_TOO_NEW", "Host compiler too new for nvcc",
       "The host gcc/clang is newer than the CUDA toolkit accepts.",
       "nvcc stops with 'unsupported GNU version! gcc versions later than N are not supported'.",
       "Install an older gcc and point nvcc at it (CC/CXX, NVCC_CCBIN or -ccbin), or a newer toolkit."),
    _c("CONTAINER_NO_GPU_RUNTIME", "Container started without GPU access",
       "This is a container and no NVIDIA device nodes or driver libraries were passed in.",
       "CUDA sees no device; nvidia-smi is missing inside the container.",
       "Install the NVIDIA Container Toolkit on the host and run with --gpus all (Docker) or request "
       "nvidia.com/gpu (Kubernetes)."),
    _c("WSL_SPECIFIC", "WSL-specific GPU setup issue",
       "Running under WSL, where the GPU driver comes from Windows and some Linux rules differ.",
       "Installing a Linux NVIDIA driver inside WSL breaks CUDA; libcuda must come from /usr/lib/wsl/lib; "
       "some Windows builds broke GPU compute.",
       "Install only the Windows NVIDIA driver; do not install a Linux driver inside WSL; keep "
       "/usr/lib/wsl/lib on the library path."),
    _c("PYTHON_VERSION_UNSUPPORTED", "No wheel for this Python",
       "The installed or requested release of torch (or of another package) publishes no wheels for this "
       "Python version.",
       "pip finds no matching distribution or falls back to an old release.",
       "Use a Python version the release supports, or a release that supports your Python."),
    _c("THIRD_PARTY_EXTENSION_MISMATCH", "Extension built against another torch/CUDA",
       "flash-attn, xformers, bitsandbytes, apex or deepspeed ops were built for a different torch or CUDA, or "
       "without kernels (SASS or PTX) for this machine's GPUs.",
       "ImportError with undefined symbols (c10::...), or silent fallbacks to slow paths.",
       "Reinstall the extension for the installed torch (matching wheel, or build from source)."),
    # --- hardware and platform health
    _c("PCIE_LINK_DEGRADED", "PCIe link below its capability",
       "A GPU's PCIe link runs at a lower generation or width than the GPU and slot support.",
       "Host-device copies (data loading, offload) run at a fraction of the expected bandwidth.",
       "Reseat the card / use a CPU-attached x16 slot; check BIOS PCIe settings and risers."),
    _c("GPU_THROTTLED", "GPU clocks throttled",
       "Active clock-event reasons (HW slowdown, power brake, thermal) or a lowered power limit.",
       "The GPU runs slower than its rating.",
       "Check cooling and power delivery; restore the default power limit (nvidia-smi -pl)."),
    _c("GPU_MEMORY_ERRORS", "GPU memory errors",
       "Uncorrectable ECC errors, pending page retirement / row remapping, or a corrupted infoROM.",
       "Jobs crash with Xid errors; results can be wrong; the GPU may need a reset or RMA.",
       "Reset the GPU (or reboot) to apply pending remaps; report persistent errors to the provider."),
    _c("GPU_XID_ERRORS", "GPU faults in the kernel log (Xid)",
       "The NVIDIA driver logged Xid errors that mean the GPU itself failed: it fell off the bus (79), its "
       "GSP firmware stopped answering (119/120), or an engine faulted.",
       "A GPU that fell off the bus or whose GSP times out fails every job on it until it is reset; "
       "repeated faults mean failing hardware.",
       "Drain the GPU and reset it (or reboot); report repeated Xid 79/119/120 to the provider."),
    _c("GPU_BUSY", "GPU already in use",
       "Other processes hold GPU memory or compute before your job starts.",
       "Out-of-memory errors and slower training.",
       "Stop the other processes or pick idle GPUs with CUDA_VISIBLE_DEVICES."),
    _c("MIG_ENABLED", "MIG mode enabled",
       "The GPU is partitioned into MIG instances.",
       "The job sees slices with a fraction of the memory and SMs, not whole GPUs.",
       "Disable MIG (nvidia-smi -mig 0, then reset) if you need whole GPUs."),
    _c("PERSISTENCE_MODE_OFF", "Persistence mode off",
       "The driver unloads GPU state when no client is attached.",
       "Slower CUDA initialisation and reset clocks between jobs.",
       "sudo nvidia-smi -pm 1 (or enable nvidia-persistenced)."),
    _c("COMPUTE_MODE_RESTRICTED", "Compute mode exclusive or prohibited",
       "The GPU's compute mode limits or forbids CUDA contexts.",
       "A second process (or any process) cannot create a CUDA context.",
       "sudo nvidia-smi -c DEFAULT"),
    _c("INTERCONNECT", "GPU interconnect below what the machine has",
       "NVLink links down, GPUs talking over PCIe/host bridges, P2P disabled, NVSwitch without fabric "
       "manager, or NCCL variables forcing slow paths.",
       "Multi-GPU training runs far slower; NVSwitch systems fail CUDA init ('system not yet initialized').",
       "Start nvidia-fabricmanager, unset NCCL_P2P_DISABLE/NCCL_IB_DISABLE, load nvidia_peermem."),
    _c("SLOW_STORAGE", "Training data on slow storage",
       "The data path is on a rotational disk, a network or FUSE filesystem, an overlay, or nearly full.",
       "The GPUs wait for data.",
       "Copy the data set to local NVMe (or a bind-mounted volume) before training."),
    _c("SHM_TOO_SMALL", "/dev/shm too small",
       "Shared memory is below what DataLoader workers need (Docker's default is 64 MB).",
       "DataLoader workers die with 'bus error' or 'unable to write to file </torch_...>'.",
       "docker run --shm-size=16g (or --ipc=host)."),
    _c("CPU_STARVED", "Too few CPUs per GPU",
       "CPU cores available to this process per GPU are below what data loading needs, or a cgroup quota "
       "is far below os.cpu_count().",
       "DataLoader cannot keep the GPUs fed; too many workers thrash.",
       "Ask for more CPUs, or set num_workers to the real quota."),
    _c("HOST_MEMORY_LOW", "Too little RAM per GPU",
       "Host RAM (or the cgroup memory limit) per GPU is below what data loading and pinned buffers need.",
       "Out-of-memory kills of DataLoader workers, swapping.",
       "Ask for more memory or reduce workers / prefetching."),
    _c("DRIVER_OUTDATED", "Driver branch outdated",
       "The driver branch is past its support end or has a known defect.",
       "Missing fixes; newer CUDA builds need newer drivers.",
       "Upgrade to a supported production branch."),
    _c("DRIVER_DROPPED_GPU", "Driver branch too new for the GPU",
       "The driver branch is newer than the last branch that supports the GPU's architecture (Kepler ends at "
       "R470; Maxwell, Pascal and Volta at R580).",
       "That driver does not bind the GPU: nvidia-smi lists no such device and CUDA finds none.",
       "Install the last branch that supports the architecture (its newest release), or move to a newer GPU."),
    _c("REQUIREMENT_UNMET", "Declared requirement not met",
       "A requirement declared for this environment (`envdoctor assert --require`, [tool.envdoctor] require, "
       "preflight(require=...), target GPUs) does not hold: the version installed is outside the specifier, "
       "the package is missing, or a declared GPU is not there.",
       "The project said what it needs; an image or environment that does not meet it fails later, on the "
       "fleet or an hour into training.",
       "Install a version inside the specifier (the fix names the command), or change the requirement."),
    # --- micro-benchmarks and other later issues use the same catalogue
    _c("PERF_BELOW_EXPECTED", "Measured throughput below what this hardware achieves",
       "A benchmark (`envdoctor bench`) measured less than public measurements of the same GPU, link or disk "
       "kind reach: a warning below the achievable band, an error far below it. The finding names the likely "
       "cause from the same run's facts: an active throttle reason, a link below its maximum under load, "
       "another process on the GPU, MIG or a vGPU profile, a rotational or network disk.",
       "Everything works, only slower: a job pays for hardware it does not get, and a data-parallel job runs "
       "at its slowest GPU.",
       "Remove the named cause (cooling, power limit, slot, other processes, data on local NVMe) and re-run "
       "`envdoctor bench`."),
    _c("GPU_VIRTUALIZED", "GPU is a vGPU slice",
       "NVML reports the GPU in vGPU mode, or its name is a vGPU profile (GRID A100-4C, NVIDIA A100-3-20C): a "
       "share of a physical GPU behind a hypervisor.",
       "Memory and time are shared with other virtual machines: benchmark figures below the whole board's are "
       "expected, and this is the likely reason when they are low. Some CUDA features are off on a slice: "
       "stream-ordered memory pools (cudaMallocAsync answers 801, operation not supported) on fractional profiles.",
       "Nothing to fix if the slice is what was bought and the program avoids what it lacks; ask for a "
       "passthrough or bare-metal GPU otherwise."),
    # --- fleets (issue 23: envdoctor fleet, over torch.distributed)
    _c("FLEET_INCONSISTENT", "Nodes or ranks of one job differ",
       "A fact that must match across the nodes (or ranks) of one job does not: torch build or variant, NCCL, "
       "Python, driver, CUDA, cuDNN, GPU models or counts, or the problems each node has.",
       "A job runs at the speed of its worst node; different torch or NCCL builds on the ranks of one job can "
       "hang or crash its collectives, and a node set up differently fails in ways the others do not.",
       "Make the named nodes match the majority (the same image or environment everywhere); `envdoctor fleet` "
       "names each outlier by host and rank with the majority value."),
    _c("FLEET_STRAGGLER", "A rank much slower than the others",
       "One rank's matmul or host-to-device copy runs far below the median of the job's ranks.",
       "Synchronous data-parallel training waits for the slowest rank at every step: one slow GPU slows the "
       "whole job.",
       "Run `envdoctor bench` on that node: clocks, power limit, a degraded PCIe link, a hot GPU or another "
       "process on it are the usual causes; replace or drain the node."),
    _c("FLEET_RANK_UNREACHABLE", "A rank did not answer",
       "A rank of the job exited, crashed, hung or could not reach rank 0 within the timeout, or a collective "
       "across the ranks failed.",
       "Training on these nodes would hang at its first collective or die with a NCCL/gloo error.",
       "Read that rank's own output and the node's kernel log; check the network between the nodes "
       "(MASTER_ADDR reachable, firewalls, NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME on the right interface)."),
    _c("HEALTHY", "No environment problem found",
       "The facts show a working stack; the reported problem is elsewhere (usually the code or data).",
       "Saves chasing the environment for a bug in the program.",
       "Look at the program: the environment is not the cause."),
    _c("NOTE", "Informational note",
       "Something worth knowing about the machine that is not a problem (every info finding carries this "
       "category; its `about` field names the area it relates to).",
       "Scripts that filter findings by category see only problems under the problem categories.",
       "Nothing to fix."),
    # --- envdoctor watch: what limits a training run (verdicts on its samples, envdoctor/checks/watch.py)
    _c("GPU_BOUND", "The GPU is the limit",
       "Over the run's steady state the GPUs were busy nearly all the time (utilisation p50 at or above 85%, few "
       "dips) and steps did not wait for their input.",
       "Only a faster GPU or less work per step speeds it up; a faster disk or more loader workers will not.",
       "Mixed precision (bf16 autocast), torch.compile, TF32 matmuls, or a bigger GPU."),
    _c("GPU_MEMORY_PRESSURE", "GPU memory nearly full during the run",
       "GPU memory in use stayed at or above 97% of the total (p90).",
       "The caching allocator frees and retries (each a synchronisation), fragmentation grows, and a larger batch "
       "fails with out-of-memory.",
       "Mixed precision, activation checkpointing, a smaller batch with gradient accumulation; "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."),
    _c("INPUT_STORAGE_BOUND", "Input-bound on storage",
       "The GPUs were underused (or steps waited for their batch) while the disk under the data was busy or slow "
       "(%util near 100, await above ~10 ms) or the CPUs waited on I/O.",
       "The GPU waits for reads: every step is as slow as the disk, whatever the GPU.",
       "Copy the data set to local NVMe, or pack it into large shards read sequentially."),
    _c("INPUT_CPU_BOUND", "Input-bound on the CPU",
       "The GPUs were underused (or steps waited for their batch) while the CPUs, the container's CPU quota or "
       "the loader's processes were saturated.",
       "Decoding and augmentation cannot keep up; the GPU waits for the CPU.",
       "Use every available core for loading (num_workers sized to the CPUs), lighter or GPU-side augmentation."),
    _c("INPUT_BOUND", "Input-bound",
       "Steps waited for their batch (the step timer), or GPU utilisation jumped between high and low, and no "
       "disk or CPU sample explains it.",
       "The loop blocks on its input: latency (remote storage, one small read at a time, sleeps, locks) or a "
       "host side the recording could not see.",
       "More workers and prefetching to overlap the waits, or a local copy of the data; record the host side "
       "(envdoctor watch, iostat -x, vmstat) to tell disk from CPU."),
    _c("DATALOADER_IN_MAIN_PROCESS", "DataLoader loads in the main process",
       "A torch training process ran with no worker processes in its tree: num_workers=0, so every batch is read, "
       "decoded and augmented by the training loop itself.",
       "The loop stops for each batch; the GPU idles meanwhile.",
       "DataLoader(..., num_workers=<CPUs per GPU minus one>, pin_memory=True, persistent_workers=True)."),
    _c("GPU_UNDERFED", "GPU underused, input not the cause",
       "The GPUs were underused while neither the disk nor the CPUs were busy and steps did not wait for data; or "
       "all GPUs stopped together mid-run with no disk write to show a checkpoint.",
       "Small batches, a host-device synchronisation every step and many small kernel launches leave the GPU "
       "idle between kernels.",
       "A larger batch, no per-step .item()/.cpu(), torch.compile or CUDA graphs; torch.profiler shows the gaps."),
    _c("GPU_STRAGGLER", "One GPU lags behind the others",
       "One GPU stood idle for seconds while the others worked (they wait at the next collective), or it worked "
       "far less than the others over the run.",
       "Data-parallel training runs at the pace of its slowest rank.",
       "Make rank-0-only work (checkpoints, evaluation) asynchronous or shared; DistributedDataParallel rather "
       "than nn.DataParallel; compare the lagging GPU's clocks."),
    _c("GPU_IDLE_UNUSED", "A GPU does no work",
       "A GPU stayed idle through the recording (utilisation p90 under 5%), while others worked or all of them.",
       "A GPU paid for and given to the job that never computes: the code uses one device, or has not started "
       "using the GPU at all.",
       "torchrun --nproc_per_node=<GPUs> with DistributedDataParallel, or hide the GPU with "
       "CUDA_VISIBLE_DEVICES."),
    _c("COMMUNICATION_BOUND", "Waiting in collectives",
       "Several GPUs reported high utilisation at under half their peak power much of the time: kernels spinning "
       "while they wait for the other ranks (NCCL).",
       "Gradient exchange, not compute, sets the step time; more GPUs make it worse.",
       "Overlap communication (DDP bucket_cap_mb), gradient accumulation, NVLink/InfiniBand between ranks."),
    _c("CHECKPOINT_STALL", "All GPUs stop while a checkpoint is written",
       "Every GPU went idle together for seconds mid-run while the disk wrote.",
       "Training time is lost to synchronous saves, each as long as the write.",
       "Save asynchronously (torch.distributed.checkpoint.async_save), less often, or to a faster local disk."),
    # --- envdoctor watch: the training process's own state (issue 41, envdoctor/checks/watch_main.py)
    _c("LOOP_WAITS_ON_WRITES", "The training loop waits on its own writes",
       "The training process wrote to the disk through the run (most samples) with each small write forced out "
       "(bytes reaching the disk well above the bytes written: fsync, O_SYNC) and spent part of its time in "
       "uninterruptible I/O.",
       "Every step waits for the disk: a synced log line per step costs a disk round trip per step.",
       "Buffer logs and metrics and flush them every N steps or from a background thread; keep fsync for "
       "checkpoints."),
    _c("LOOP_PAUSED", "The training loop pauses",
       "The training process slept (time.sleep, a timed wait) a notable share of the time, or the steps stopped "
       "while it neither wrote, read nor computed.",
       "Training time passes with nothing done: a sleep, a lock or a wait on another process in the loop.",
       "Find the wait (py-spy dump --pid PID during a pause) and take it off the training loop."),
    _c("EVALUATION_STALL", "Evaluation passes stop training",
       "The steps stopped while the training process kept computing (no writes, no reads): an evaluation or "
       "another pass run inside the training loop.",
       "Training waits for each pass; frequent or large passes take a share of the run.",
       "Evaluate less often or on a subset, or in another process or GPU; time it apart (timed(val_loader, "
       "name='eval'))."),
    _c("CPU_CONTENDED", "Other processes take the run's CPUs",
       "The training process was ready to run but waited on the run queue for a core a large share of the time, "
       "while the run's own threads fit the CPUs it may use.",
       "Every step waits for a core that another process holds; more workers or threads only queue longer.",
       "Stop or move what holds the CPUs (top -o %CPU), or pin the run to cores of its own (taskset, cpusets)."),
    _c("COLD_FIRST_EPOCH", "The first epoch is slower than the rest",
       "The first epoch's steps took markedly longer than the later epochs' (or the run read from the disk at its "
       "start and hardly after): the data came from the disk the first time and from the page cache after.",
       "A measurement over the first epoch alone misjudges the run's speed; a data set larger than RAM reads "
       "from the disk every epoch.",
       "Judge the speed on the later epochs; warm the cache (or copy the data to local NVMe) before timing."),
    # --- environment variables as cited data (compat_data/env_vars.json)
    _c("ENV_VAR_HARMFUL", "An environment variable breaks or slows the run",
       "A variable that CUDA, NCCL, cuDNN, PyTorch or OpenMP document is set to a value that makes the run fail or "
       "run slower here: debugging switches left on (CUDA_LAUNCH_BLOCKING=1), more threads than usable CPUs, an "
       "allocator configuration torch rejects, a build arch list for no GPU of this machine.",
       "The variable is inherited by every process started from this shell, job script or image, so the harm "
       "repeats on every run while the code and the installation look fine.",
       "Unset the variable (or set the value the finding gives) where it is set: the job script, ~/.bashrc, the "
       "container image's ENV, the scheduler's environment."),
    # --- verdicts from trying (issue 38: the smoke tier, envdoctor/_payload/smoke.py)
    _c("TORCH_COMPILE_UNUSABLE", "torch.compile and JIT extensions cannot build or load code",
       "A one-line C++ module could not be built with the compiler torch would use (none on PATH, no Python.h) "
       "or, once built, could not be loaded from the directory torch builds into (a mount that forbids executing "
       "files: noexec).",
       "torch.compile (inductor builds C++ on the CPU and triton launchers on a GPU) and "
       "torch.utils.cpp_extension.load build and load native code at run time: the first compiled call fails "
       "although `import torch` works.",
       "Install the compiler and the Python headers, or point TMPDIR / TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR "
       "/ TORCH_EXTENSIONS_DIR at a directory on a mount that allows executing files."),
    _c("OPEN_FILES_LIMIT_LOW", "The open-files limit is low for DataLoader workers",
       "The soft limit on open file descriptors (RLIMIT_NOFILE, `ulimit -n`) is 1,024 or lower.",
       "DataLoader workers pass each tensor to the main process as a file descriptor (torch's default "
       "file_descriptor sharing strategy on Linux); samples that carry many tensors exhaust the limit: "
       "'Too many open files'.",
       "Raise the soft limit (`ulimit -n` up to the hard limit, `nofile` in /etc/security/limits.conf), or "
       "torch.multiprocessing.set_sharing_strategy('file_system')."),
    _c("SMOKE_STEP_FAILED", "A step a training run does failed when tried",
       "envdoctor tried, in the judged interpreter, something every run does (an import, a DataLoader with "
       "workers, a checkpoint, a process group, a GPU kernel, torch.compile) and it failed, crashed or hung.",
       "The run will fail the same way at that step, whatever the installed versions say.",
       "Run the reproduction the finding gives, read the error it quotes, and fix what it names."),
    # --- kernel, firmware and other frameworks in pasted reports (issue 42)
    _c("BIOS_PCIE_BAR_DISABLED", "The firmware gives the GPU no large memory window",
       "The GPU's 64-bit prefetchable BAR got no address space: Above 4G Decoding (and Resizable BAR) is off in "
       "the BIOS/UEFI, or the bridge above the GPU has no room, so the driver cannot initialise the GPU.",
       "nvidia-smi finds no device (or the driver logs RmInitAdapter failed) although the GPU is on the bus.",
       "Enable Above 4G Decoding and Resizable BAR (CSM off) in the firmware setup and reboot; in a VM, give the "
       "guest a 64-bit MMIO window large enough for the GPU."),
    _c("OPEN_KERNEL_MODULE_UNSUPPORTED_GPU", "The open kernel modules refuse the GPU",
       "NVIDIA's open kernel modules are installed, and they drive only GPUs with a GPU System Processor "
       "(Turing and newer): they refuse an older GPU (the 515-535 branches' open modules also refused GeForce and "
       "workstation GPUs unless NVreg_OpenRmEnableUnsupportedGpus=1 was set).",
       "The module loads but binds no GPU: nvidia-smi cannot communicate with the driver.",
       "Install the proprietary kernel modules of the driver (the non-open package or flavour), or the legacy "
       "branch that drives the GPU."),
    _c("FRAMEWORK_CPU_ONLY_BUILD", "A framework other than torch is a build without its GPU part",
       "A framework or library other than torch (TensorFlow, JAX, DGL, Faiss, ONNX Runtime, LightGBM ...) is a "
       "build without its GPU part: a CPU-only wheel or package installed where a GPU build exists (PyPI's plain "
       "jaxlib, faiss-cpu, a source build without CUDA), or a release that publishes no GPU build for this "
       "platform (TensorFlow 2.11 and newer on native Windows, jax's CUDA plug-in outside Linux).",
       "The framework lists no GPU and runs on the CPU, or fails where GPU work is asked for, whatever driver, CUDA "
       "and cuDNN are installed: its build has no CUDA support.",
       "Install the framework's GPU build (its CUDA package or wheel, or a source build with CUDA enabled) in "
       "place of the CPU one; where its release has no GPU build for the platform, run it where one exists (WSL2 "
       "or Linux) or use an older release that had one (TensorFlow 2.10 on native Windows)."),
    _c("GPU_SHARING_LAYER_INTERCEPTS_CUDA", "A GPU-sharing layer intercepts CUDA",
       "A GPU-sharing or virtualisation layer (HAMi's LD_PRELOADed libvgpu.so, a vGPU scheduler's hook) sits "
       "between the program and libcuda/NVML and breaks or limits what CUDA or NCCL can do.",
       "Calls the layer does not handle fail (NCCL, CUDA IPC, memory pools), or memory and device counts differ "
       "from the hardware.",
       "Run the job without the layer (no LD_PRELOAD of libvgpu, a whole-GPU resource request) or upgrade the "
       "layer to a release that supports the call."),
    # --- what envdoctor was not told about (issue 29)
    _c("UNRECOGNISED_ERROR", "An error envdoctor does not recognise",
       "The pasted text holds an error line (a traceback's last line, an `error:`/`fatal` line, a failure, a "
       "version mismatch, an NVRM or Xid kernel line, a non-zero exit status) that no finding explains.",
       "Something failed and envdoctor cannot say why from what was pasted, so the paste is not judged: it is "
       "not a clean bill of health.",
       "Paste what the finding asks for (the full traceback, `nvidia-smi`, `python -m torch.utils.collect_env`, "
       "the kernel's NVRM lines) together with the error, and diagnose again."),
]}

NOTE = "NOTE"
# an error line no finding explains (checks/diagnose_unexplained.py): the verdict is "not judged", never "no problems"
UNRECOGNISED = "UNRECOGNISED_ERROR"
# categories that name no problem: what an info finding may carry (GPU_VIRTUALIZED describes the machine, a
# vGPU slice, and is a problem only if a whole GPU was bought: its finding is always an info)
NEUTRAL_CATEGORIES = frozenset({NOTE, "HEALTHY", "GPU_VIRTUALIZED"})

# Root cause -> the categories that follow from it on the same machine (and the same interpreter, when both
# findings name one). A consequence is listed under its root and does not count as a problem of its own.
# Each edge is a mechanism, not a correlation: fixing the root fixes the consequence.
CAUSES: Dict[str, tuple] = {
    # a container started without the NVIDIA runtime has no driver libraries, hence no driver and no GPU
    # ... and, in a Jetson L4T container, none of the host's CUDA libraries the runtime mounts: torch cannot load them
    "CONTAINER_NO_GPU_RUNTIME": ("NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE", "TORCH_IMPORT_FAILED"),
    # WSL's driver is the Windows one, passed in through /usr/lib/wsl/lib
    "WSL_SPECIFIC": ("NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE"),
    # NVML/CUDA refuse to initialise on a module/library mismatch: the driver is unusable, no GPU shows
    "DRIVER_LIBRARY_MISMATCH": ("NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE"),
    "NO_NVIDIA_DRIVER": ("NO_GPU_VISIBLE", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    # torch.cuda.is_available() is False when the driver is older than torch's CUDA
    "DRIVER_TOO_OLD_FOR_TORCH_CUDA": ("NO_GPU_VISIBLE",),
    "TORCH_CPU_ONLY_BUILD": ("NO_GPU_VISIBLE",),
    # a foreign libcudnn/libnccl found first makes `import torch` fail with an undefined symbol
    "SYSTEM_LIB_SHADOWING": ("TORCH_IMPORT_FAILED",),
    # torch pins its CUDA libraries; a missing or older one breaks the import
    "CUDA_LIBRARY_VERSION_MISMATCH": ("TORCH_IMPORT_FAILED",),
    # another torch imported first: its variant, companions and libraries are not the environment's
    "PYTHON_PACKAGE_SHADOWED": ("CUDA_VARIANT_MIXED", "COMPANION_VERSION_MISMATCH", "TORCH_CPU_ONLY_BUILD",
                                "TORCH_IMPORT_FAILED", "CUDA_LIBRARY_VERSION_MISMATCH", "PYTHON_VERSION_UNSUPPORTED"),
    # a base companion next to the venv's torch, or a .pth line putting another site-packages first: the mixed
    # set and the torch from elsewhere follow from it (issue 30)
    "VENV_SYSTEM_SITE_MIXED": ("COMPANION_VERSION_MISMATCH", "CUDA_VARIANT_MIXED"),
    "PTH_EXEC_SYS_PATH": ("PYTHON_PACKAGE_SHADOWED",),
    # an extension's import runs `import torch` first: it fails for the same reason
    "TORCH_IMPORT_FAILED": ("THIRD_PARTY_EXTENSION_MISMATCH",),
    # torch loading a CUDA library of another major (a conda solve or pip wheels mixing majors) fails to import
    "CUDA_VARIANT_MIXED": ("TORCH_IMPORT_FAILED",),
    # a venv whose python now starts another minor reads no lib/pythonX.Y of its own: torch looks uninstalled;
    # two builds' files or metadata in one site-packages break the import (issue 38)
    "INTERPRETER_METADATA_MISMATCH": ("TORCH_NOT_INSTALLED", "TORCH_IMPORT_FAILED"),
    # a driver that ignores the GPU (a branch that dropped it, open modules on a pre-Turing GPU), or a GPU the
    # firmware gave no memory window: nvidia-smi cannot reach a driver and no GPU shows (issue 42)
    "DRIVER_DROPPED_GPU": ("NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE"),
    "OPEN_KERNEL_MODULE_UNSUPPORTED_GPU": ("NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE"),
    "BIOS_PCIE_BAR_DISABLED": ("NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE"),
}


def get(name: str) -> Category:
    return CATEGORIES[name]


# --------------------------------------------------------------------------- the action per finding (issue 43)
# What a scheduler can do about a finding (model/actions.py: the vocabulary and NVIDIA's names for it): a default
# per category, and the codes whose action differs from their category's. An info finding's action is always
# none (a note is never a problem). tests/unit/test_actions.py fails on a category without a default, an
# override for a code no check declares, and any finding code whose action is not in the vocabulary.
from .actions import DRAIN_NODE, NONE, REBOOT_NODE, RECONFIGURE, RESET_GPU, RESTART_PROCESS  # noqa: E402

CATEGORY_ACTIONS: Dict[str, str] = {
    # the software stack: packages, interpreters, drivers, toolkits, configuration
    **{name: RECONFIGURE for name in (
        "NO_NVIDIA_DRIVER", "NO_GPU_VISIBLE", "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "GPU_ARCH_NOT_IN_TORCH_BUILD",
        "TORCH_IMPORT_FAILED", "TARGET_PYTHON_UNUSABLE", "TORCH_NOT_INSTALLED", "TORCH_CPU_ONLY_BUILD",
        "COMPANION_VERSION_MISMATCH", "CUDA_VARIANT_MIXED", "SYSTEM_LIB_SHADOWING", "CUDA_LIBRARY_VERSION_MISMATCH",
        "PYTHON_PACKAGE_SHADOWED", "VENV_SYSTEM_SITE_MIXED", "PTH_EXEC_SYS_PATH", "PIP_UNAVAILABLE",
        "NVCC_TORCH_CUDA_MISMATCH", "HOST_COMPILER_TOO_NEW", "CONTAINER_NO_GPU_RUNTIME", "WSL_SPECIFIC",
        "PYTHON_VERSION_UNSUPPORTED", "THIRD_PARTY_EXTENSION_MISMATCH", "GPU_THROTTLED", "MIG_ENABLED",
        "PERSISTENCE_MODE_OFF", "COMPUTE_MODE_RESTRICTED", "INTERCONNECT", "SLOW_STORAGE", "SHM_TOO_SMALL",
        "CPU_STARVED", "HOST_MEMORY_LOW", "DRIVER_OUTDATED", "DRIVER_DROPPED_GPU", "REQUIREMENT_UNMET",
        "FLEET_INCONSISTENT", "GPU_BOUND", "GPU_MEMORY_PRESSURE", "INPUT_STORAGE_BOUND", "INPUT_CPU_BOUND",
        "INPUT_BOUND", "DATALOADER_IN_MAIN_PROCESS", "GPU_UNDERFED", "GPU_IDLE_UNUSED", "COMMUNICATION_BOUND",
        "CHECKPOINT_STALL", "ENV_VAR_HARMFUL", "DEPENDENCY_UNMET", "INTERPRETER_METADATA_MISMATCH",
        "TORCH_COMPILE_UNUSABLE", "OPEN_FILES_LIMIT_LOW", "SMOKE_STEP_FAILED", "OPEN_KERNEL_MODULE_UNSUPPORTED_GPU",
        "FRAMEWORK_CPU_ONLY_BUILD", "GPU_SHARING_LAYER_INTERCEPTS_CUDA", "LOOP_WAITS_ON_WRITES", "LOOP_PAUSED",
        "EVALUATION_STALL", "CPU_CONTENDED")},
    # the loaded module and the user-space libraries differ: reload the module, i.e. reboot
    "DRIVER_LIBRARY_MISMATCH": REBOOT_NODE,
    # other processes hold the GPU: end them (or wait for them)
    "GPU_BUSY": RESTART_PROCESS,
    # an uncorrectable memory error applies its remap/retirement at the next reset (NVIDIA's memory error
    # management); the codes that mean a failing GPU are drain-node below
    "GPU_MEMORY_ERRORS": RESET_GPU,
    # a hardware Xid the catalog marks warning/error: the check's fix drains and resets the GPU; the Xid
    # catalog's own resolution bucket (actions.nvidia_action) is finer where the finding carries it
    "GPU_XID_ERRORS": RESET_GPU,
    # hardware the provider must look at: a link below its width/generation, a node that measures slow
    "PCIE_LINK_DEGRADED": DRAIN_NODE,
    "PERF_BELOW_EXPECTED": DRAIN_NODE,
    "FLEET_STRAGGLER": DRAIN_NODE,
    "FLEET_RANK_UNREACHABLE": DRAIN_NODE,
    "GPU_STRAGGLER": DRAIN_NODE,
    # the firmware gave the GPU no memory window: a BIOS/UEFI setting (or the VM's MMIO window) the provider sets
    "BIOS_PCIE_BAR_DISABLED": DRAIN_NODE,
    # no problem named, or none envdoctor can name an action for (a person reads the finding)
    "HEALTHY": NONE, NOTE: NONE, "GPU_VIRTUALIZED": NONE, UNRECOGNISED: NONE,
    # a phase of the run reported apart (issue 41): nothing to act on
    "COLD_FIRST_EPOCH": NONE,
}

# finding code (a declared code; "{name}" in a kind template stands for any value of it) -> its action, where
# it differs from the category's
CODE_ACTIONS: Dict[str, str] = {
    "driver.hardware/none-expected": DRAIN_NODE,  # the node should have GPUs and shows none on its PCI bus
    "gpu.reachable/lost": REBOOT_NODE,  # NVML: GPU is lost (fallen off the bus): no reset reaches it
    "gpu.memory-errors/remap-failed": DRAIN_NODE,  # cannot repair its memory any more: replace the GPU
    "gpu.memory-errors/inforom": DRAIN_NODE,  # the provider reflashes the infoROM or replaces the GPU
    "gpu.memory-errors/ecc-aggregate": NONE,  # a lifetime count: watch it, report it if it grows
    "gpu.memory-errors/retired-pages": NONE,
    "gpu.memory-errors/remapped-uncorrectable": NONE,
    "gpu.memory-errors/xid-not-read": NONE,
    "gpu.ecc-mode/off-until-reboot": REBOOT_NODE,  # a pending ECC mode change applies at the reboot
    "gpu.ecc-mode/off-after-reboot": RECONFIGURE,  # turn ECC on (then the reboot above)
    "gpu.mig/change-pending": RESET_GPU,  # a pending MIG mode change applies at the GPU's reset
    "gpu.xid/log-unreadable": RECONFIGURE,
    # a hardware Xid at warning or error, whatever category its row gives (GPU_MEMORY_ERRORS, INTERCONNECT for
    # NVLink's 74): the check's fix resets the GPU; NVIDIA's bucket for the code is finer (actions.nvidia_action)
    "gpu.xid/{xid}": RESET_GPU,
    "gpu.throttle/thermal": DRAIN_NODE,  # cooling is the provider's
    "gpu.throttle/hw-slowdown": DRAIN_NODE,  # HW slowdown: power brake or thermal, the hardware's
    "gpu.throttle/hw-slowdown-seen": DRAIN_NODE,
    "interconnect.nvlink/inactive": DRAIN_NODE,  # links down on a board that has them: hardware
    "interconnect.nvlink/fewer-links": DRAIN_NODE,
    "interconnect.nvlink/no-bridge": DRAIN_NODE,
    "interconnect.fabric-manager/degraded": DRAIN_NODE,
    "interconnect.fabric-manager/unhealthy": DRAIN_NODE,
    "bench.matmul/tf32-override": RECONFIGURE,  # a setting, not the hardware
    "bench.membw/tf32-override": RECONFIGURE,
    "bench.matmul/no-reference": NONE,  # nothing to compare with
    "bench.membw/no-reference": NONE,
    "fleet.ranks/interrupted": RESTART_PROCESS,  # the run was stopped, not a node
    "fleet.ranks/late": RESTART_PROCESS,  # the rank came, after the deadline: run again (or raise --timeout)
    "watch.bottleneck/gpu-bound": NONE,  # the GPU is the bottleneck: the state to be in
    "watch.bottleneck/input-keeps-up": NONE,
}


def _code_matches(declared: str, code: str) -> bool:
    """Whether ``code`` is ``declared`` or one of the codes its "{name}" placeholders stand for (a placeholder is
    one or more characters, "/" included: messages.signature/{signature}/{category})."""
    import re

    if "{" not in declared:
        return declared == code
    pattern = "".join(".+" if part.startswith("{") else re.escape(part)
                      for part in re.split(r"(\{[^}]*\})", declared) if part)
    return re.fullmatch(pattern, code) is not None


def action_for(code: str, category: str, severity: str = "error") -> str:
    """The action of a finding: none for an info, else the code's own (CODE_ACTIONS), else its category's
    (CATEGORY_ACTIONS); none for a category without one (tests/unit/test_actions.py fails on such a category)."""
    if severity == "info":
        return NONE
    if code in CODE_ACTIONS:
        return CODE_ACTIONS[code]
    for declared, action in CODE_ACTIONS.items():
        if "{" in declared and _code_matches(declared, code):
            return action
    return CATEGORY_ACTIONS.get(category, NONE)
