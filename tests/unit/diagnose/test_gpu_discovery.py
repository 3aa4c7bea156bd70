"""The GPUs llama.cpp (ggml) and Ollama report finding, as the paste's GPU list (issue 42)."""

from __future__ import annotations

from envdoctor.compat import load_compat
from envdoctor.diagnose.engine import read_all
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES, SHARED


def _gpus(text: str):
    return [(g.index, g.name, g.compute_capability) for g in read_all(text, load_compat()).gpus]


def test_ggmls_device_list_from_a_real_report() -> None:
    # tests/fixtures/corpus/llama-cpp/llama-cpp-004.txt: two Tesla P40 (ggerganov/llama.cpp issue)
    text = (FIXTURES / "corpus" / "llama-cpp" / "llama-cpp-004.txt").read_text()
    assert _gpus(text) == [(0, "Tesla P40", "6.1"), (1, "Tesla P40", "6.1")]
    # the older wording (ggml_init_cublas), llama-cpp-001
    old = (FIXTURES / "corpus" / "llama-cpp" / "llama-cpp-001.txt").read_text()
    assert _gpus(old) == [(0, "NVIDIA GeForce 940MX", "5.0")]
    # newer builds add the memory; ROCm builds name their devices so and are no NVIDIA GPU list
    new = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes, VRAM: 24082 MiB\n"
    assert read_all(new, load_compat()).gpus[0].memory_total_bytes == 24082 * 2**20
    rocm = "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, compute capability 11.0, VMM: no\n"
    assert _gpus(rocm) == []


OLLAMA = ('time=2024-11-22T23:20:04.592+01:00 level=INFO source=types.go:123 msg="inference compute" '
          'id=GPU-04f76f9a-be0a-544b-9a6f-8607b8d0a9ab library=cuda variant=v12 compute=8.6 driver=12.6 '
          'name="NVIDIA GeForce RTX 3060 Ti" total="8.0 GiB" available="7.0 GiB"\n')
OLLAMA_NEW = ('time=2025-10-01T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" '
              'id=GPU-93e08bff-19ea-9448-3848-d2ab3d687e30 filter_id="" library=CUDA compute=8.9 name=CUDA0 '
              'description="NVIDIA GeForce RTX 4090" libdirs=ollama,cuda_v12 driver=12.8 pci_id=0000:01:00.0 '
              'type=discrete total="23.6 GiB" available="23.3 GiB"\n')
ROCM = ('time=2025-01-14T19:05:43.725-05:00 level=INFO source=types.go:131 msg="inference compute" '
        'id=GPU-e423b557db994259 library=rocm variant="" compute=gfx1100 driver=6.10 name=1002:744c total="20.0 GiB"\n')


def test_ollamas_inference_compute_lines() -> None:
    assert _gpus(OLLAMA + OLLAMA) == [(0, "NVIDIA GeForce RTX 3060 Ti", "8.6")]  # a restart repeats the line
    assert _gpus(OLLAMA_NEW) == [(0, "NVIDIA GeForce RTX 4090", "8.9")]  # name=CUDA0, the model in description
    assert _gpus(ROCM) == []
    acc = read_all(OLLAMA, load_compat())
    assert acc.get("driver.cuda") == "12.6"
    report = diagnose_report([OLLAMA], load_compat())
    assert report.facts.driver.status == "ok" and report.facts.driver.gpus[0].compute_capability == "8.6"


def test_an_nvidia_smi_table_keeps_its_list_and_gains_the_compute_capability() -> None:
    table = (FIXTURES / "nvidia-smi-table" / "geforce-24gb_525.125.06_fan-err.txt").read_text()
    text = table + "\nggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
    assert _gpus(text) == [(0, "NVIDIA GeForce ...", "8.9")]


def test_jaxs_environment_info_names_the_gpu() -> None:
    text = ("jax:    0.5.2\njaxlib: 0.5.2\nnumpy:  2.2.5\n"
            "device info: NVIDIA GeForce RTX 4060 Laptop GPU-1, 1 local devices\"\nprocess_count: 1\n")
    assert _gpus(text) == [(0, "NVIDIA GeForce RTX 4060 Laptop GPU", None)]
    assert _gpus("device info: cpu-1, 1 local devices\n") == []  # JAX on its CPU backend only
    assert _gpus("device info: TPU v4-8, 4 local devices\n") == []


def test_jaxs_device_info_in_a_real_report_beside_its_nvidia_smi_table() -> None:
    path = SHARED / "examples" / "reports-batch5" / "422.txt"
    if not path.exists():
        import pytest

        pytest.skip("the shared reports are not beside this checkout")
    gpus = _gpus(path.read_text())
    assert len(gpus) == 1 and gpus[0][1].startswith("NVIDIA GeForce RTX 4060")  # the table's list wins


def test_tensorflows_created_device_lines_both_wordings() -> None:
    new = ("2021-09-30 15:39:28.858788: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1510] Created device "
           "/job:localhost/replica:0/task:0/device:GPU:0 with 10819 MB memory:  -> device: 0, name: Tesla K80, "
           "pci bus id: 0000:00:04.0, compute capability: 3.7\n")
    old = ("2018-08-30 18:04:53.603690: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1097] Created TensorFlow "
           "device (/job:localhost/replica:0/task:0/device:GPU:0 with 3044 MB memory) -> physical GPU (device: 0, "
           "name: GeForce GTX 970, pci bus id: 0000:01:00.0, compute capability: 5.2)\n")
    metal = ("2022-10-05 17:26:41.050691: I tensorflow/core/common_runtime/pluggable_device/pluggable_device_factory.cc:272] "
             "Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 0 MB memory) -> physical "
             "PluggableDevice (device: 0, name: METAL, pci bus id: <undefined>)\n")
    assert _gpus(new) == [(0, "Tesla K80", "3.7")]
    assert _gpus(old) == [(0, "GeForce GTX 970", "5.2")]
    assert read_all(new, load_compat()).gpus[0].pci_bus_id == "0000:00:04.0"
    assert _gpus(metal) == []
