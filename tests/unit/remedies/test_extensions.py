"""The fix for a compiled extension built for another torch (remedies/extensions.py): never a build for another torch."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest

from envdoctor.model.facts import Package
from envdoctor.remedies.extensions import extension_fix, torch_pin_accepts
from tests import machines

BASH = shutil.which("bash")


def _env(torch_version: str, ext: Package, installer: str = "pip"):
    env = machines.torch_env(torch_version, "12.4" if "+cu" in torch_version else None, [], packages=[ext])
    return replace(env, packages=[Package("torch", torch_version, installer=installer), ext])


@pytest.mark.parametrize("requires, torch_version, verdict", [
    (["torch==2.5.1"], "2.5.1+cu124", True), (["torch==2.4.1"], "2.5.1+cu124", False),
    (["torch>=2.4,<2.6", "numpy"], "2.5.1", True), (["torch"], "2.5.1", None),
    (["torch==2.4.1 ; extra == 'torch'"], "2.5.1", None), ([], "2.5.1", None), (None, "2.5.1", None),
])
def test_torch_pin_accepts(requires, torch_version, verdict) -> None:
    assert torch_pin_accepts(Package("x", "1", requires=requires), torch_version) is verdict


def test_a_pin_that_excludes_this_torch_lets_pip_choose_with_torch_pinned() -> None:
    xf = Package("xformers", "0.0.28.post3", requires=["torch==2.4.1"])
    fix = extension_fix(None, _env("2.5.1+cu124", xf), xf, built_for="2.4.1+cu124")
    assert fix.commands == ["/opt/venv/bin/python -m pip install xformers torch==2.5.1+cu124 "
                            "--index-url https://download.pytorch.org/whl/cu124"]
    assert "install the torch it was built for (2.4.1+cu124)" in fix.summary
    other = Package("bitsandbytes", "0.40.0", requires=["torch<2.0"])  # not on PyTorch's index: PyPI
    assert extension_fix(None, _env("2.5.1+cu124", other), other).commands == [
        "/opt/venv/bin/python -m pip install bitsandbytes torch==2.5.1+cu124"]


def test_pins_that_accept_this_torch_or_none_mean_a_source_build_against_it() -> None:
    for requires in (["torch==2.5.1"], ["torch"], None):
        fa = Package("flash-attn", "2.6.3+cu123torch2.4cxx11abiFALSE", requires=requires)
        fix = extension_fix(None, _env("2.5.1+cu124", fa), fa)
        assert fix.commands == ["/opt/venv/bin/python -m pip install --force-reinstall --no-deps "
                                "--no-build-isolation --no-binary flash-attn flash-attn==2.6.3"]
        assert "install the torch it was built for" not in fix.summary
    uv = extension_fix(None, _env("2.5.1", fa, installer="uv"), fa)
    assert uv.commands[0].startswith("uv pip install --python /opt/venv/bin/python --reinstall --no-deps")


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_the_commands_parse_in_bash() -> None:
    xf = Package("xformers", "0.0.28.post3", requires=["torch==2.4.1"])
    for ext, tv in ((xf, "2.5.1+cu124"), (Package("apex", "0.1", requires=None), "2.5.1")):
        for cmd in extension_fix(None, _env(tv, ext), ext).commands:
            subprocess.run([BASH, "-n", "-c", cmd], check=True, timeout=30)
