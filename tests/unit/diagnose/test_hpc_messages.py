"""Messages of HPC, vision and other GPU programs taken from their source before anyone pastes them (issue 42, kbhpc):
LAMMPS's GPU package and Kokkos's CUDA backend built for another architecture, OpenCV, CatBoost and GROMACS built
without GPU support, and CUDA.jl's driver check. Each case is the message as its source formats it, with realistic
values (the source's printf filled in), and a near miss that must not be read as that cause."""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import assert_names_its_cause, by_row

# (row id, the source's message with realistic values, the category, the severity)
CASES = [
    # LAMMPS's error->all(FLERR, ...) as it prints on rank 0
    ("lammps-gpu-lib-not-compiled-for-accelerator",
     "LAMMPS (2 Aug 2023 - Update 1)\n"
     "  using 1 OpenMP thread(s) per MPI task\n"
     "ERROR: GPU library not compiled for this accelerator (src/GPU/gpu_extra.h:57)\n"
     "Last command: package gpu 1\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    # Kokkos 3.x/4.x: kernels for Hopper on an Ampere card (Kokkos::abort's output)
    ("kokkos-cuda-kernels-for-other-cc",
     "Kokkos::Cuda::initialize ERROR: running kernels compiled for compute capability 9.0 on device with compute "
     "capability 8.6 is not supported by CUDA!\n"
     "Traceback functionality not available\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    ("kokkos-cuda-kernels-for-other-cc",
     "Kokkos::Cuda::initialize ERROR: likely mismatch of architecture\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    # Kokkos 2.x: Kepler kernels on a Turing card
    ("kokkos-cuda-kernels-for-other-cc",
     "Kokkos::Cuda::initialize ERROR: running kernels compiled for compute capability 3.5 (< 5.0) on device with "
     "compute capability 7.5 (>=5.0), this would give incorrect results!\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    # cv2.error from a pip opencv-python (OpenCV 4.x) and the 2.4 dynamicuda wording
    ("opencv-built-without-cuda",
     "Traceback (most recent call last):\n"
     '  File "flow.py", line 12, in <module>\n'
     "    gpu_frame.upload(frame)\n"
     "cv2.error: OpenCV(4.8.0) /io/opencv/modules/core/include/opencv2/core/private.cuda.hpp:106: error: "
     "(-216:No CUDA support) The library is compiled without CUDA support in function 'throw_no_cuda'\n",
     "FRAMEWORK_CPU_ONLY_BUILD", "error"),
    ("opencv-built-without-cuda",
     "terminate called after throwing an instance of 'cv::Exception'\n"
     "  what():  /opt/opencv-2.4.13/modules/dynamicuda/include/opencv2/dynamicuda/dynamicuda.hpp:84: error: (-216) "
     "The library is compiled without CUDA support in function setDevice\n",
     "FRAMEWORK_CPU_ONLY_BUILD", "error"),
    # CUDA.jl's @error (Julia's logging box) and CUDAdrv.jl's older wording
    ("cuda-jl-driver-too-old",
     "┌ Error: This version of CUDA.jl only supports NVIDIA drivers for CUDA 11.x or higher (yours is for CUDA 10.2.0)\n"
     "└ @ CUDA ~/.julia/packages/CUDA/tVtYo/src/initialization.jl:70\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    ("cuda-jl-driver-too-old",
     "┌ Warning: CUDAdrv.jl only supports NVIDIA drivers for CUDA 9.0 or higher (yours is for CUDA 8.0.0)\n"
     "└ @ CUDAdrv ~/.julia/packages/CUDAdrv/3EzC1/src/CUDAdrv.jl:67\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    # CatBoost's CB_ENSURE as the Python package raises it (a CPU-only build asked for task_type='GPU')
    ("catboost-gpu-support-not-compiled",
     "_catboost.CatBoostError: /src/catboost/catboost/libs/train_lib/train_model.cpp:1128: GPU support was not compiled\n",
     "FRAMEWORK_CPU_ONLY_BUILD", "error"),
    # GROMACS's fatal-error block, its text wrapped as gmx prints it
    ("gromacs-built-without-gpu",
     "-------------------------------------------------------\n"
     "Program:     gmx mdrun, version 2023.1\n"
     "Source file: src/gromacs/taskassignment/decidegpuusage.cpp (line 226)\n\n"
     "Fatal error:\n"
     "Nonbonded interactions on the GPU were requested with -nb gpu, but the GROMACS\n"
     "binary has been built without GPU support. Either run without selecting GPU\n"
     "options, or recompile GROMACS with GPU support enabled\n",
     "FRAMEWORK_CPU_ONLY_BUILD", "error"),
]


@pytest.mark.parametrize("row,text,category,severity", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_sources_message_names_its_cause(row, text, category, severity, compat):
    assert_names_its_cause(text, compat, row, category, severity)


def test_the_versions_are_read_from_the_message(compat):
    f = by_row(CASES[1][1], compat)["kokkos-cuda-kernels-for-other-cc"]
    assert "9.0" in f.summary + f.detail + str(f.evidence) and "8.6" in f.summary + f.detail + str(f.evidence)
    g = by_row(CASES[6][1], compat)["cuda-jl-driver-too-old"]
    assert "10.2.0" in g.summary + g.detail + str(g.evidence)


NEAR_MISSES = [
    # another GPU-package failure of LAMMPS: memory, not the library's architecture
    ("lammps-gpu-lib-not-compiled-for-accelerator", "ERROR: Insufficient memory on accelerator (src/GPU/gpu_extra.h:53)\n"),
    # Kokkos's performance WARNING: the kernels run, only slower
    ("kokkos-cuda-kernels-for-other-cc",
     "Kokkos::Cuda::initialize WARNING: running kernels compiled for compute capability 8.0 on device with compute "
     "capability 8.6 , this will likely reduce potential performance.\n"),
    # OpenCV built WITH CUDA, a functionality not in this build: another error code and text
    ("opencv-built-without-cuda",
     "cv2.error: OpenCV(4.8.0) /opencv/modules/core/include/opencv2/core/private.cuda.hpp:112: error: "
     "(-213:The function/feature is not implemented) The called functionality is disabled for current build or "
     "platform in function 'throw_no_cuda'\n"),
    # an application's own hint, not OpenCV's error
    ("opencv-built-without-cuda", "No GPU found or the library is compiled without CUDA support\n"),
    # the 11.x-or-12.x wording also fires for a driver NEWER than CUDA.jl knows (CUDA 13): not the driver's age
    ("cuda-jl-driver-too-old",
     "┌ Error: This version of CUDA.jl only supports NVIDIA drivers for CUDA 11.x or 12.x (yours is for CUDA 13.0.0)\n"),
    # CatBoost's GPU trainer present but the device refused: another cause
    ("catboost-gpu-support-not-compiled",
     "_catboost.CatBoostError: catboost/cuda/cuda_lib/cuda_base.h:281: CUDA error 35: CUDA driver version is "
     "insufficient for CUDA runtime version\n"),
    # GROMACS's other -nb gpu refusal: the simulation settings, not the build
    ("gromacs-built-without-gpu",
     "Fatal error:\nNonbonded interactions on the GPU were required, but not supported for these simulation settings. "
     "Change your settings, or do not require using GPUs.\n"),
]


@pytest.mark.parametrize("row,text", NEAR_MISSES, ids=[f"{c[0]}-{i}" for i, c in enumerate(NEAR_MISSES)])
def test_a_near_miss_is_not_read_as_that_cause(row, text, compat):
    assert row not in by_row(text, compat)  # nothing recognisable at all counts as not the row either
