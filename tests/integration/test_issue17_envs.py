"""Issue 17 end to end, on environments built the way users get there: a stale PYTHONPATH to another venv's
torch, a `--no-deps` install of an older nvidia-cudnn-cu13, a CUDA_HOME left pointing at a removed toolkit.
Each gets its finding and a fix that, run, leaves an importable torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from tests.integration.userenv import overlay_venv, pip_install_no_deps, site_packages, stub_wheel

pytestmark = pytest.mark.slow


def envdoctor_json(python: str, env: Dict[str, str], *only: str) -> Dict[str, Any]:
    argv = [sys.executable, "-m", "envdoctor", "check", "--python", python, "--format", "json", "--no-redact",
            "--only", ",".join(only)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(proc.stdout)


def torch_imports(python: str, env: Dict[str, str]) -> str:
    proc = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.__file__)"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-1000:]
    return proc.stdout.strip()


def run_fix(commands, env: Dict[str, str]) -> Dict[str, str]:
    """Apply `unset NAME` / `export NAME=value` lines to env, run anything else in a shell."""
    env = dict(env)
    for c in commands:
        if c.startswith("unset "):
            env.pop(c.split()[1], None)
        elif c.startswith("export ") and "=" in c:
            name, value = c[len("export "):].split("=", 1)
            env[name] = value.strip("'")
        else:
            subprocess.run(["sh", "-c", c], check=True, timeout=600, env=env)
    return env


def test_stale_pythonpath_to_a_cpu_venv(cpu_venv, cuda_venv) -> None:
    other = str(site_packages(cpu_venv.python))
    env = dict(os.environ, PYTHONPATH=other)
    assert "+cpu" in torch_imports(cuda_venv.python, env)  # the user's situation, for real
    report = envdoctor_json(cuda_venv.python, env, "torch.*", "packages.*")
    py = report["facts"]["pythons"][0]
    assert py["torch_origin"]["via"] == "PYTHONPATH" and py["torch_origin"]["entry"] == other
    assert "not this interpreter's own site-packages" in py["reason"]
    (x,) = [f for f in report["findings"] if f["category"] == "PYTHON_PACKAGE_SHADOWED"]
    assert x["severity"] == "error" and "+cu" in x["summary"] and other in x["summary"]
    assert x["fix"]["commands"] == ["unset PYTHONPATH"]
    assert all(f["caused_by"] == x["code"] for f in report["findings"]
               if f["category"] in ("CUDA_VARIANT_MIXED", "COMPANION_VERSION_MISMATCH"))
    # the fix, run, leaves the venv's own CUDA torch importable
    fixed = run_fix(x["fix"]["commands"], env)
    version, where = torch_imports(cuda_venv.python, fixed).split()
    assert "+cu" in version and where.startswith(str(site_packages(cuda_venv.python)))


def test_fresh_venv_living_on_anothers_torch(cpu_venv, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True, timeout=120)
    python = str(fresh / "bin" / "python")
    other = str(site_packages(cpu_venv.python))
    env = dict(os.environ, PYTHONPATH=other)
    report = envdoctor_json(python, env, "torch.*")
    (x,) = [f for f in report["findings"] if f["category"] == "PYTHON_PACKAGE_SHADOWED"]
    assert x["severity"] == "warning" and "has no torch" in x["summary"]
    install, drop = x["fix"]["commands"]
    # pip run with PYTHONPATH set would see the other torch as installed: the install runs without it
    assert install.startswith(f"env -u PYTHONPATH {python} -m pip install torch==") and drop == "unset PYTHONPATH"


def test_no_deps_install_of_an_older_cudnn(cuda_venv, tmp_path: Path) -> None:
    python = overlay_venv(tmp_path / "venv", cuda_venv.python, leave_out=["nvidia_cudnn_cu13-"],
                          leave_out_dirs=["cudnn"])
    wheel = stub_wheel(tmp_path, "nvidia-cudnn-cu13", "9.13.0.50",
                       [("nvidia/cudnn/lib/libcudnn.so.9", b"stub: not a library\n")], requires=["nvidia-cublas"])
    pip_install_no_deps(python, wheel)
    report = envdoctor_json(python, dict(os.environ), "packages.*", "torch.*")
    (x,) = [f for f in report["findings"] if f["category"] == "CUDA_LIBRARY_VERSION_MISMATCH"]
    pin = next(r for r in report["facts"]["pythons"][0]["packages"] if r["name"] == "torch")["requires"]
    want = next(r.split(";")[0].strip() for r in pin if r.startswith("nvidia-cudnn-cu13"))
    assert x["code"] == "packages.torch-requires/nvidia-cudnn-cu13" and x["severity"] == "error"
    assert "9.13.0.50" in x["summary"] and want.split("==")[1] in x["summary"]
    assert x["fix"]["commands"] == [f"{python} -m pip install {want}"]
    assert not any("uninstall" in c for f in report["findings"] for c in (f["fix"] or {}).get("commands", []))


def test_a_cuda_12_cudnn_installed_over_torchs_cuda_13_files(cuda_venv, tmp_path: Path) -> None:
    python = overlay_venv(tmp_path / "venv", cuda_venv.python, leave_out=["nvidia_cudnn_cu13-"],
                          leave_out_dirs=["cudnn"])
    lib = "nvidia/cudnn/lib/libcudnn.so.9"
    ours = stub_wheel(tmp_path, "nvidia-cudnn-cu13", "9.24.0.43", [(lib, b"cu13 stub\n")], ["nvidia-cublas"])
    other = stub_wheel(tmp_path, "nvidia-cudnn-cu12", "9.3.0.75", [(lib, b"cu12 stub, another size\n")])
    pip_install_no_deps(python, ours)
    pip_install_no_deps(python, other)  # e.g. for TensorFlow: it unpacks over torch's copy
    report = envdoctor_json(python, dict(os.environ), "packages.torch-requires")
    (x,) = report["findings"]
    assert x["code"] == "packages.torch-requires/nvidia-cudnn-cu13-overwritten" and x["severity"] == "error"
    assert "CUDA 12 build from nvidia-cudnn-cu12 9.3.0.75" in x["summary"] and lib in x["summary"]
    (fix,) = x["fix"]["commands"]
    assert fix == f"{python} -m pip install --force-reinstall --no-deps nvidia-cudnn-cu13==9.24.0.43"
    # run it (from the stub, the same pinned requirement): the file is torch's again, torch imports
    run_fix([fix + f" --no-index --find-links {tmp_path}"], dict(os.environ))
    again = envdoctor_json(python, dict(os.environ), "packages.torch-requires")
    assert again["findings"] == [] and "+cu" in torch_imports(python, dict(os.environ))


def test_cuda_home_naming_a_removed_toolkit(cuda_venv) -> None:
    env = dict(os.environ, CUDA_HOME="/nonexistent/cuda-12.1")
    report = envdoctor_json(cuda_venv.python, env, "toolchain.*")
    (res,) = [c for c in report["checks"] if c["id"] == "toolchain.nvcc-torch"]
    tk = report["facts"]["toolkits"]
    if not (tk.get("installed") or tk.get("on_path")):
        pytest.skip("no CUDA toolkit on this machine to point CUDA_HOME at")
    assert res["status"] == "failed"
    (x,) = [f for f in report["findings"] if f["code"].startswith("toolchain.nvcc-torch/cuda-home")]
    assert x["severity"] == "error" and "/nonexistent/cuda-12.1" in x["summary"]
    assert x["fix"]["commands"][0].startswith("export CUDA_HOME=/usr/local/cuda")
