"""A header-less `pip list | grep ...` fragment is read for torch-family and CUDA wheels (nvidia-*), but nvidia-smi's
own banner line ("NVIDIA-SMI 525.60.13", corpus paddle-008) is no package: it had put an `nvidia-smi` wheel in the
paste's interpreter."""

from __future__ import annotations

from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste

PADDLE_008 = ("paddleocr==3.1.0\npaddlepaddle==3.1.0\nuse cpu for inference , has someone same problem?\n\n"
              "NVIDIA-SMI 525.60.13   \nDriver Version: 525.60.13    \nCUDA Version: 12.0      \nV100/16GB\n")


def _packages(text: str) -> dict:
    facts, _ = read_paste([text], load_compat())
    return {p.name: p.version for py in facts.pythons for p in py.packages}


def test_nvidia_smi_banner_is_not_a_package() -> None:
    got = _packages(PADDLE_008)
    assert "nvidia-smi" not in got, got
    assert got.get("paddlepaddle") == "3.1.0", got


def test_a_grepped_pip_list_row_of_a_cuda_wheel_is_still_read() -> None:
    got = _packages("$ pip list | grep nvidia\nnvidia-cublas-cu12        12.1.3.1\nnvidia-cudnn-cu12         8.9.2.26\n")
    assert got.get("nvidia-cublas-cu12") == "12.1.3.1" and got.get("nvidia-cudnn-cu12") == "8.9.2.26", got
