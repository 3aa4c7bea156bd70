"""redact_text returns short strings without pattern characters unchanged, without running its patterns: the
answer must be the one the full path gives, for every kind of string a report holds."""

from __future__ import annotations

import random
import string

import pytest

from envdoctor.report import redact

HOSTS = ["gpu1", "node7", "dgx-a100-03", "h"]
SAMPLES = [
    "", "12.4", "2.5.1+cu124", "cudnn", "nvidia-cudnn-cu12", "gpu1", "gpu10", "xgpu1", "node7.", "ok", "sm_90",
    "hf_abcdefghij", "AKIA0123456789", "xoxa-12345678", "GPU-1234abcd", "serial 12345", "Serial-Number",
    "dgx-a100-03", "dgx-a100-031", "torch 2.5.1", "a b c d e f g", "MIG-ab12cd34-1",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_short_strings_as_the_full_path_redacts_them(text: str) -> None:
    assert redact.redact_text(text, HOSTS) == redact._redact_text(text, HOSTS)
    assert redact.redact_text(text) == redact._redact_text(text)


def test_random_short_strings_as_the_full_path_redacts_them() -> None:
    rng = random.Random(19)
    alphabet = string.ascii_letters + string.digits + "._-+ ~#()[]"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        if rng.random() < 0.3:
            text = rng.choice(HOSTS) + text[: rng.randint(0, 8)]
        assert redact.redact_text(text, HOSTS) == redact._redact_text(text, HOSTS), text


def test_the_fast_path_still_redacts_a_host_name() -> None:
    assert redact.redact_text("gpu1", ["gpu1"]) == redact.REDACTED
    assert redact.redact_text("on gpu1 now", ["gpu1"]) == f"on {redact.REDACTED} now"
    assert redact.redact_text("/home/alice/x") != "/home/alice/x"  # a path always takes the full path
