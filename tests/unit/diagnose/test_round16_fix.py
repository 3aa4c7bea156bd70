"""Issue 42, corpus rounds 15 and 16's misses (helper fix16), each read as a kind.

- XLA's StreamExecutor platform manager: 'Could not find registered platform with name: "cuda". Available
  platform names are: Host Interpreter' (jax-017, jax-ml/jax#10349, line-wrapped in the paste). The list holds
  only the platforms the build registered, and a CUDA build registers CUDA whether or not a GPU is there, so the
  build is CPU-only (FRAMEWORK_CPU_ONLY_BUILD, warning). The same message from a Julia Reactant build without
  its CUDA runtime (EnzymeAD/Reactant docs) reads the same. The harmless 'rocm' lookup of a CUDA jaxlib (every
  JAX log at INFO level, alphafold's included), or a list that names CUDA, is not this kind.
- Docker's 'could not select device driver "" with capabilities: [[gpu]]' said without the empty quotes
  (localai-003, mudler/LocalAI#4511), as well as with them (container-toolkit, text-generation-inference rows).
- warp-ctc among the libraries with a cited oldest architecture (its CMakeLists.txt: compute_30 and up): its GPU
  test failing on a Fermi GeForce GTX 580 (warp-ctc-001) or its PyTorch binding on a GTX 480 reads as no kernels
  for that GPU (GPU_ARCH_NOT_IN_TORCH_BUILD, warning), as NCCL and LightGBM's rows do; a Pascal card does not.
- The CUDA toolkit's stub libcuda (lib64/stubs/libcuda.so) loaded at run time (numba-003, numba/numba#8985;
  pytorch/tensorpipe#294; the same mechanism as video-processing-framework-001's stub libnvcuvid): a shadowing
  library (SYSTEM_LIB_SHADOWING, warning); a package listing or a link line naming the stub is not.
"""

from __future__ import annotations

from tests.unit.diagnose.pastes import corpus_row
from tests.unit.diagnose.pastes import serious as _serious

# jax-017 (jax-ml/jax#10349), wrapped as pasted
JAX = ("```\n[RuntimeError: Backend 'gpu' failed to initialize: NOT_FOUND: Could not find \n"
       "registered platform with name: \"cuda\". Available platform names are: \nHost Interpreter]()\n```\n")
# a Julia Reactant build without CUDA (EnzymeAD/Reactant.jl tutorial output), escaped quotes as Julia prints
REACTANT = 'AssertionError("Could not find registered platform with name: \\"cuda\\". Available platform names are: ")\n'
# a CUDA jaxlib's INFO lines (alphafold, jax): the rocm lookup fails, CUDA is registered
ROCM_INFO = ("I0918 11:06:20.242466 140090094478592 xla_bridge.py:863] Unable to initialize backend 'rocm': "
             "NOT_FOUND: Could not find registered platform with name: \"rocm\". Available platform names are: CUDA\n")
CUDA_LISTED = ("NOT_FOUND: Could not find registered platform with name: \"cuda\". "
               "Available platform names are: Host CUDA Interpreter\n")

DOCKER_UNQUOTED = ("docker run -p 8080:8080 --gpus all --name local-ai -ti localai/localai:latest-aio-gpu-nvidia-cuda-11\n"
                   "Getting `could not select device driver with capabilities: [[gpu]]`\n")
DOCKER_QUOTED = 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].\n'
DOCKER_NAMED = 'docker: Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]].\n'
DOCKER_OTHER = "could not select device driver with capabilities: [[compute]]\n"


def test_xla_without_a_cuda_platform_is_a_cpu_only_build(compat) -> None:
    for text in (JAX, REACTANT, corpus_row("jax", "jax-017")):
        got = _serious(text, compat)
        assert "FRAMEWORK_CPU_ONLY_BUILD" in got, sorted(got)
        assert got["FRAMEWORK_CPU_ONLY_BUILD"].severity == "warning"


def test_a_rocm_lookup_or_a_listed_cuda_platform_is_not_a_cpu_build(compat) -> None:
    for text in (ROCM_INFO, CUDA_LISTED):
        assert "FRAMEWORK_CPU_ONLY_BUILD" not in _serious(text, compat)


def test_docker_gpu_capability_error_with_or_without_the_quotes(compat) -> None:
    for text in (DOCKER_UNQUOTED, DOCKER_QUOTED, DOCKER_NAMED, corpus_row("localai", "localai-003")):
        got = _serious(text, compat)
        assert "CONTAINER_NO_GPU_RUNTIME" in got, sorted(got)
    assert "CONTAINER_NO_GPU_RUNTIME" not in _serious(DOCKER_OTHER, compat)


# warp-ctc-001 (baidu-research/warp-ctc#29): its GPU test fails on a Fermi card
WARPCTC = ("Running GPU tests\nterminate called after throwing an instance of 'std::runtime_error'\n"
           "  what():  Error: compute_ctc_loss in small_test, stat = execution failed\nAborted (core dumped)\n\n"
           "Note that: I can run 'test_cpu' without any problems (Running CPU tests, Tests pass)\n\n"
           "I have GeForce GTX 580.\n")
# SeanNaren/warp-ctc's PyTorch binding on a Fermi card
WARPCTC_PYTORCH = ("from warpctc_pytorch import CTCLoss\nRuntimeError: CUDA error: invalid device function\n"
                   "GPU: GeForce GTX 480\n")
WARPCTC_PASCAL = WARPCTC.replace("GeForce GTX 580", "GeForce GTX 1080")


def test_warp_ctc_on_a_gpu_below_its_oldest_architecture(compat) -> None:
    for text in (WARPCTC, WARPCTC_PYTORCH, corpus_row("warp-ctc", "warp-ctc-001")):
        got = _serious(text, compat)
        assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in got, sorted(got)
        assert got["GPU_ARCH_NOT_IN_TORCH_BUILD"].severity == "warning"
        assert "warp-ctc" in got["GPU_ARCH_NOT_IN_TORCH_BUILD"].summary
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" not in _serious(WARPCTC_PASCAL, compat)


# numba-003 (numba/numba#8985): the stub answers ctypes' symbol lookup
STUB_NUMBA = ("python -c \"from ctypes import CDLL; CDLL('libcuda.so')._undef\"\n"
              "AttributeError: /scratch/yhao24/opt/cuda-12.1/lib64/stubs/libcuda.so: undefined symbol: _undef\n")
# pytorch/tensorpipe#294: the stub said to be loaded
STUB_TENSORPIPE = ("On my machine, tensorpipe loads `/usr/lib/x86_64-linux-gnu/stubs/libcuda.so` instead of "
                   "`/usr/lib/x86_64-linux-gnu/libcuda.so`.\n")
# near misses: a package listing (vllm-project/vllm#6864) and a link line name the stub without loading it
STUB_LISTED = ("fish> dpkg-query --search libcuda.so\nlibcuda1:amd64: /usr/lib/x86_64-linux-gnu/libcuda.so\n"
               "cuda-driver-dev-12-4: /usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libcuda.so\n")
STUB_LINKED = "g++ main.o -L/usr/local/cuda/lib64/stubs -lcuda -o main\n"


def test_the_toolkit_stub_libcuda_loaded_is_a_shadowing_library(compat) -> None:
    for text in (STUB_NUMBA, STUB_TENSORPIPE, corpus_row("numba", "numba-003")):
        got = _serious(text, compat)
        assert "SYSTEM_LIB_SHADOWING" in got, sorted(got)
        assert got["SYSTEM_LIB_SHADOWING"].severity == "warning"
    for text in (STUB_LISTED, STUB_LINKED):
        assert "SYSTEM_LIB_SHADOWING" not in _serious(text, compat)
