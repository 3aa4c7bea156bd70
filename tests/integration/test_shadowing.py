"""End to end with a real CUDA torch venv: a foreign libnccl.so.2 in LD_PRELOAD breaks `import torch` (issue 8)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

pytestmark = pytest.mark.slow

GCC = shutil.which("gcc")

# defines NCCL's version banner and a few entry points, but not ncclRecv & co. that libtorch_cuda.so needs
FOREIGN_NCCL = """
const char banner[] = "NCCL version 2.18.1+cuda12.1";
int ncclGetVersion(int *v) { *v = 21801; return 0; }
int ncclCommInitRank(void) { return 0; }
int ncclAllReduce(void) { return 0; }
"""


@pytest.fixture(scope="module")
def foreign_nccl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if GCC is None:
        pytest.skip("gcc is needed to build the foreign libnccl.so.2")
    d = tmp_path_factory.mktemp("nccl")
    (d / "x.c").write_text(FOREIGN_NCCL)
    subprocess.run([GCC, "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o", str(d / "libnccl.so.2"),
                    str(d / "x.c")], check=True, capture_output=True, timeout=60)
    return d / "libnccl.so.2"


def envdoctor_json(python: str, preload: Path, *extra: str) -> Dict[str, Any]:
    env = dict(os.environ, LD_PRELOAD=str(preload))
    argv: List[str] = [sys.executable, "-m", "envdoctor", "check", "--python", python, "--format", "json",
                       "--no-redact", "--only", "torch.*,libraries.*", *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_preloaded_foreign_nccl_is_the_root_cause(cuda_venv, foreign_nccl: Path) -> None:
    # the scenario is real: torch's import fails on an NCCL symbol the foreign library lacks
    probe = subprocess.run([cuda_venv.python, "-c", "import torch"], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, LD_PRELOAD=str(foreign_nccl)))
    if "undefined symbol: nccl" not in probe.stderr:
        pytest.skip(f"this torch does not fail on the foreign NCCL: {probe.stderr.strip()[-200:]}")
    report = envdoctor_json(cuda_venv.python, foreign_nccl)
    py = report["facts"]["pythons"][0]
    assert py["torch"]["version"].endswith("+cu130") or "+cu" in py["torch"]["version"]
    assert py["torch"]["imported"] is False and py["torch"]["cuda"]
    findings = report["findings"]
    shadow = next(f for f in findings if f["category"] == "SYSTEM_LIB_SHADOWING")
    assert shadow["severity"] == "error" and str(foreign_nccl) in shadow["summary"]
    assert "NCCL 2.18.1" in shadow["summary"] and "nvidia-nccl" in shadow["summary"]
    assert shadow["fix"]["commands"] == ["unset LD_PRELOAD"]
    imp = next(f for f in findings if f["category"] == "TORCH_IMPORT_FAILED")
    assert imp["fix"]["commands"] == ["unset LD_PRELOAD"]
    assert findings.index(shadow) < findings.index(imp)
    # one root cause, one problem: the failed import is listed under the shadowing library
    assert imp["caused_by"] == shadow["code"] and report["summary"]["root_causes"] == 1


def test_no_torch_still_shows_the_build_and_its_arch_list(cuda_venv, foreign_nccl: Path) -> None:
    report = envdoctor_json(cuda_venv.python, foreign_nccl, "--no-torch")
    t = report["facts"]["pythons"][0]["torch"]
    assert "+cu" in t["version"] and t["imported"] is False
    assert t["arch_list_source"] == "fatbin" and t["arch_list"] and all(a.startswith(("sm_", "compute_"))
                                                                         for a in t["arch_list"])
    # the same list torch reports about itself when it imports cleanly
    real = subprocess.run([cuda_venv.python, "-c", "import torch; print(' '.join(torch.cuda.get_arch_list()) or "
                           "torch._C._cuda_getArchFlags())"], capture_output=True, text=True, timeout=300)
    if real.returncode == 0 and real.stdout.strip():
        assert t["arch_list"] == real.stdout.split()
    assert any(f["category"] == "SYSTEM_LIB_SHADOWING" for f in report["findings"])
