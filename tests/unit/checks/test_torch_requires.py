"""packages.torch-requires: the CUDA library wheels torch pins, against what is installed (issue 17).

The snapshot is a real one (torch 2.14.1+cu130 in a venv here, tests/fixtures/snapshots/SOURCES.md), edited the way
a `--no-deps` install of another nvidia-cudnn-cu13 (or a lost wheel) changes it.
"""

from __future__ import annotations

from dataclasses import replace

from envdoctor.model.facts import Facts, Package
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

SNAPSHOT = FIXTURES / "snapshots" / "dev-container-no-driver.json"
PY = "/work/venvs/cuda/bin/python"
CUDNN_ERROR = ("torch.backends.cudnn.version(): RuntimeError: cuDNN version incompatibility: PyTorch was compiled  "
               "against (9, 24, 0) but found runtime version (9, 13, 0). PyTorch already comes bundled with cuDNN.")


def base() -> Facts:
    return Facts.from_json(SNAPSHOT.read_text(encoding="utf-8"))


def with_package(f: Facts, name: str, version, notes=None, **torch_kw) -> Facts:
    py = f.pythons[0]
    pkgs = [p for p in py.packages if p.name != name]
    if version is not None:
        old = py.package(name)
        pkgs.append(replace(old, version=version) if old else Package(name, version))
    torch = replace(py.torch, **torch_kw) if torch_kw else py.torch
    return replace(f, pythons=[replace(py, packages=pkgs, torch=torch, notes=notes or py.notes)])


def findings(f: Facts, check_id: str = "packages.torch-requires"):
    report = judge(f)
    (res,) = [c for c in report.checks if c.id == check_id]
    return res, [x for x in report.findings if x.code.startswith(check_id + "/")], report


def test_the_real_snapshot_passes_on_what_it_judged():
    res, found, _ = findings(base())
    assert res.status == CheckStatus.PASSED and found == []


def test_older_cudnn_than_torch_pins_is_an_error_with_one_pinned_install():
    f = with_package(base(), "nvidia-cudnn-cu13", "9.13.0.50", notes=[CUDNN_ERROR], cudnn_version=None)
    res, (x,), report = findings(f)
    assert res.status == CheckStatus.FAILED
    assert x.code == "packages.torch-requires/nvidia-cudnn-cu13" and x.severity == Severity.ERROR
    assert x.category == "CUDA_LIBRARY_VERSION_MISMATCH"
    assert "9.13.0.50" in x.summary and "9.24.0.43" in x.summary and "cuDNN" in x.summary
    assert "torch 2.14.1+cu130 was built against cuDNN 9.24.0.43" in x.summary
    assert "cuDNN version incompatibility" in x.detail
    assert any(e.path == "pythons[0].notes" and "cuDNN version incompatibility" in str(e.value) for e in x.evidence)
    # the fix: one pinned install for the judged interpreter, nothing uninstalled, torch untouched
    assert x.fix.commands == [f"{PY} -m pip install nvidia-cudnn-cu13==9.24.0.43"]
    assert x in report.problems  # a root cause: it counts in the verdict


def test_newer_cudnn_minor_is_a_warning():
    f = with_package(base(), "nvidia-cudnn-cu13", "9.30.0.1")
    _, (x,), _ = findings(f)
    assert x.severity == Severity.WARNING and "not the version" in x.summary


def test_another_cudnn_major_is_an_error():
    f = with_package(base(), "nvidia-cudnn-cu13", "8.9.7.29")
    _, (x,), _ = findings(f)
    assert x.severity == Severity.ERROR and "another major version" in x.summary


def test_pins_through_cuda_toolkit_extras_are_followed():
    # torch pins cuda-toolkit[cublas,...]==13.0.3, which pins nvidia-cublas==13.1.1.3.* under extra == 'cublas'
    f = with_package(base(), "nvidia-cublas", "13.0.0.19")
    _, (x,), _ = findings(f)
    assert x.code == "packages.torch-requires/nvidia-cublas" and x.severity == Severity.ERROR
    assert "cuda-toolkit" in x.summary and "undefined symbol" in x.detail
    src = next(e.source for e in x.evidence if e.path == "pythons[0].packages.nvidia-cublas")
    assert "torch -> cuda-toolkit -> nvidia-cublas" in src
    assert x.fix.commands == [f"{PY} -m pip install 'nvidia-cublas==13.1.1.3.*'"]


def test_missing_pinned_wheels_are_one_finding_with_one_install():
    f = with_package(with_package(base(), "nvidia-nccl-cu13", None), "nvidia-nvshmem-cu13", None)
    _, (x,), _ = findings(f)
    assert x.code == "packages.torch-requires/missing" and x.severity == Severity.ERROR
    assert x.fix.commands == [f"{PY} -m pip install nvidia-nccl-cu13==2.30.7 nvidia-nvshmem-cu13==3.4.5"]


def test_markers_are_the_judged_interpreters():
    # a Windows interpreter: torch's Linux-only pins (platform_system == "Linux") do not apply to it
    f = base()
    py = replace(f.pythons[0], platform="win-amd64")
    f = replace(f, pythons=[replace(py, packages=[p for p in py.packages if p.name != "nvidia-cudnn-cu13"])])
    res, found, _ = findings(f)
    assert found == [] and res.status == CheckStatus.SKIPPED


def test_a_cpu_torch_without_pins_is_skipped_with_the_reason():
    f = base()
    py = f.pythons[0]
    torch = replace(py.package("torch"), requires=["filelock", "sympy>=1.13.3"])
    f = replace(f, pythons=[replace(py, packages=[torch] + [p for p in py.packages if p.name != "torch"])])
    res, found, _ = findings(f)
    assert res.status == CheckStatus.SKIPPED and "pins a CUDA library" in res.reason and found == []


def test_a_library_file_from_another_cuda_major_is_named():
    from envdoctor.model.facts import FileClaim, SharedLibraryFile

    path = "/work/venvs/cuda/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
    shared = SharedLibraryFile(path, 120, [FileClaim("nvidia-cudnn-cu13", "9.24.0.43", 100),
                                           FileClaim("nvidia-cudnn-cu12", "9.3.0.75", 120)], "nvidia-cudnn-cu12")
    f = base()
    f = replace(f, pythons=[replace(f.pythons[0], shared_library_files=[shared])])
    _, (x,), _ = findings(f)
    assert x.code == "packages.torch-requires/nvidia-cudnn-cu13-overwritten" and x.severity == Severity.ERROR
    assert "CUDA 12 build from nvidia-cudnn-cu12 9.3.0.75" in x.summary
    assert x.fix.commands == [f"{PY} -m pip install --force-reinstall --no-deps nvidia-cudnn-cu13==9.24.0.43"]
    # the file is torch's wheel's (its recorded size): nothing to say
    ok = replace(shared, size=100, owner="nvidia-cudnn-cu13")
    assert findings(replace(f, pythons=[replace(f.pythons[0], shared_library_files=[ok])]))[1] == []


def test_trying_one_unnamed_extra_answers_as_trying_them_all():
    """_applies evaluates a marker once for all the extras it does not name: the same answer as evaluating it
    for each extra, on cuda-toolkit-like markers and on markers the shortcut must leave alone."""
    from packaging.requirements import Requirement

    from envdoctor.checks import torch_requires as tr

    env = {"python_version": "3.11", "python_full_version": "3.11.7", "platform_system": "Linux",
           "sys_platform": "linux", "os_name": "posix", "platform_machine": "x86_64", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "platform_release": "", "platform_version": "",
           "implementation_version": "3.11.7", "extra": ""}
    markers = [
        "extra == 'all'", "extra == 'cublas'", "extra != 'cublas'", "'cublas' == extra", "extra == 'Cu_Blas'",
        "(sys_platform == 'linux' and platform_machine == 'x86_64') and extra == 'cudart'",
        "sys_platform == 'win32' and extra == 'cudart' or extra == 'all'", "extra == 'nvjitlink' or extra == 'x.y'",
        "platform_system == 'Linux'", "extra in 'cublas cudart'", "'cu' in extra", "extra > 'm'",
        "python_version >= '3.9' and extra == 'cufft'", "extra not in 'a b'",
    ]
    extra_sets = [set(), {"cublas"}, {"cublas", "cudart", "cufft", "nvjitlink", "nvrtc"}, {"cu-blas", "all"},
                  {"x_y", "z"}, {"m", "z", "a"}, {"cudart", "nvtx"}]
    for marker in markers:
        req = Requirement(f"nvidia-cublas==13.1; {marker}")
        for extras in extra_sets:
            plain = any(req.marker.evaluate(dict(env, extra=e)) for e in (extras or {""}))
            assert tr._applies(req, env, set(extras)) == plain, (marker, extras)
