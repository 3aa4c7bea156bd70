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


def _unguarded(text: str, hostnames=()) -> str:
    """_redact_text with every pattern run on every string (the guards in front of each are the speed-up)."""
    r = redact
    hostnames = list(hostnames) + [m.group(0).split("@", 1)[1] for m in r._PROMPT_RE.finditer(text)] \
        + r.csv_serials(text)
    out = r._csv_row_serials(text)
    out = r._GPU_UUID_RE.sub(lambda m: f"{m.group(1)}-<redacted>", out)
    out = r._URL_CREDENTIALS_RE.sub(lambda m: f"{m.group(1)}{r.REDACTED}@", out)
    out = r._SECRET_ASSIGN_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{r.REDACTED}", out)
    out = r._TOKEN_SHAPES_RE.sub(r.REDACTED, out)
    out = r._SERIAL_RE.sub(lambda m: f"{m.group(1)}{r.REDACTED}", out)
    out = r._PROMPT_RE.sub(f"{r.REDACTED}@{r.REDACTED}", out)
    for directory, replacement in sorted(r._local_homes(), key=lambda d: len(d[0]), reverse=True):
        out = r._redact_dir(out, directory, replacement)
    out = r._POSIX_HOME_RE.sub(r._home_sub, out)
    out = r._ROOT_HOME_RE.sub(r._home_sub, out)
    out = r._WINDOWS_HOME_RE.sub(r._home_sub, out)
    import re

    for name in sorted({h for h in hostnames if h}, key=len, reverse=True):
        out = re.sub(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", r.REDACTED, out)
    return out


FRAGMENTS = ["GPU-", "MIG-", "1234abcd", "-", "://", "@", "user:", "pass", "TOKEN", "Api_Key", "=", ": ", "hf_",
             "ghp_", "sk-", "AKIA", "xoxb-", "serial", "Serial Number", " : ", "/home/", "/Users/", "/u/", "/root",
             "C:\\Users\\", "\\", "alice", "gpu1", "node7", ",", "\n", "1650321012345", "0123456789ABCDEFGHIJ",
             "~", "/", " ", "x", "/scratch/", "secret", "credentials", "PASSWORD", "/homes/"]


def test_every_guard_is_a_condition_its_pattern_needs(monkeypatch) -> None:
    """Random strings built from the patterns' own fragments, and every string of the fixture snapshots and
    pastes: redacted the same with and without the substring guards."""
    import json
    from pathlib import Path

    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("USER", "alice")
    rng = random.Random(22)
    texts = ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14))) for _ in range(3000)]
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"

    def strings(obj):
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            for v in obj.values():
                yield from strings(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from strings(v)

    for path in sorted(fixtures.rglob("*")):
        if not path.is_file() or path.stat().st_size > 500_000:
            continue
        try:
            raw = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if path.suffix == ".json":
            try:
                texts.extend(strings(json.loads(raw)))
                continue
            except ValueError:
                pass
        texts.append(raw)
    assert len(texts) > 3500
    for text in texts:
        assert redact._redact_text(text, HOSTS) == _unguarded(text, HOSTS), text[:200]
