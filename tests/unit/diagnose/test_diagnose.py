"""`envdoctor diagnose` on pastes built from real outputs, garbage input, size, and the signature catalogue."""

from __future__ import annotations

import json
import time

import pytest

from envdoctor.compat import load_compat
from envdoctor.compat.signatures import parse_signatures
from envdoctor.diagnose import NothingRecognised, read_paste
from envdoctor.model.catalogue import CATEGORIES
from envdoctor.model.facts import Facts
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES, REPO

PASTES = FIXTURES / "pastes"

# built paste -> the category it must show (warning or error); see tests/fixtures/SOURCES.md
BUILT = {
    "driver-too-old.txt": "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
    "driver-too-old-message.txt": "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
    "gpu-arch.txt": "GPU_ARCH_NOT_IN_TORCH_BUILD",
    "cpu-only.txt": "TORCH_CPU_ONLY_BUILD",
    "variant-mixed.txt": "CUDA_VARIANT_MIXED",
    "companion.txt": "COMPANION_VERSION_MISMATCH",
    "nvcc-mismatch.txt": "NVCC_TORCH_CUDA_MISMATCH",
    "host-compiler.txt": "HOST_COMPILER_TOO_NEW",
    "shadowing.txt": "SYSTEM_LIB_SHADOWING",
    "container.txt": "CONTAINER_NO_GPU_RUNTIME",
    "container-could-not-select.txt": "CONTAINER_NO_GPU_RUNTIME",
    "wsl.txt": "WSL_SPECIFIC",
    "no-driver.txt": "NO_NVIDIA_DRIVER",
    "no-devices.txt": "NO_GPU_VISIBLE",
    "lib-mismatch.txt": "DRIVER_LIBRARY_MISMATCH",
    "python-version.txt": "PYTHON_VERSION_UNSUPPORTED",
    "extension.txt": "THIRD_PARTY_EXTENSION_MISMATCH",
    "interconnect.txt": "INTERCONNECT",
}


@pytest.fixture(scope="module")
def compat():
    return load_compat()


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_pastes(name: str, compat) -> None:
    report = diagnose_report([(PASTES / name).read_text()], compat)
    serious = {f.category for f in report.findings if f.severity in ("warning", "error")}
    assert BUILT[name] in serious, [(f.category, f.severity, f.code) for f in report.findings]
    assert report.facts.origin == "paste"
    for f in report.findings:
        if f.severity in ("warning", "error"):
            assert f.fix is not None and f.fix.summary


def test_healthy_paste_has_no_error(compat) -> None:
    report = diagnose_report([(PASTES / "healthy-windows.txt").read_text()], compat)
    assert not [f for f in report.findings if f.severity == "error"]
    facts = report.facts
    assert facts.driver.version == "610.62" and facts.driver.cuda_driver_version == "13.3"
    assert facts.pythons[0].torch.cuda_available is True and facts.pythons[0].torch.cuda == "12.8"


def test_one_category_once_and_message_as_evidence(compat) -> None:
    # 016-style: the message and the facts it carries both say NVCC_TORCH_CUDA_MISMATCH
    text = ("The detected CUDA version (12.4) mismatches the version that was used to compile\n"
            "    PyTorch (11.8). Please make sure to use the same CUDA versions.\n")
    report = diagnose_report([text], compat)
    cats = [f.category for f in report.findings if f.severity != "info"]
    assert cats.count("NVCC_TORCH_CUDA_MISMATCH") == 1
    f = next(f for f in report.findings if f.category == "NVCC_TORCH_CUDA_MISMATCH")
    assert any(e.path.startswith("paste.messages") for e in f.evidence)
    assert report.facts.toolkits.on_path.version == "12.4"
    assert report.facts.pythons[0].torch.cuda == "11.8"


def test_numbers_in_messages_become_facts(compat) -> None:
    facts, _ = read_paste([(PASTES / "driver-too-old-message.txt").read_text()], compat)
    assert facts.driver.cuda_driver_version == "11.4"  # found version 11040


def test_unseen_sections_are_skipped(compat) -> None:
    facts, info = read_paste(["Torch not compiled with CUDA enabled"], compat)
    assert facts.driver.status == "skipped" and facts.driver.reason == "not in the pasted text"
    assert facts.toolkits.status == "skipped" and facts.host.status == "skipped"
    assert "driver version" in info.not_found
    assert facts.paste.messages == ["Torch not compiled with CUDA enabled"]


def test_no_devices_is_ok_with_zero_gpus(compat) -> None:
    facts, _ = read_paste(["No devices were found"], compat)
    assert facts.driver.status == "ok" and facts.driver.gpus == []


def test_thin_paste_ranks_and_suggests(compat) -> None:
    report = diagnose_report([">>> import torch\n>>> torch.cuda.is_available()\nFalse\n"], compat)
    serious = [f for f in report.findings if f.severity in ("error", "warning") and f.category != "HEALTHY"]
    assert serious and all(f.confidence in ("high", "medium", "low") for f in serious)
    assert any("nvidia-smi" in s for s in report.facts.paste.settle)


def test_found_formats(compat) -> None:
    text = (PASTES / "nvcc-mismatch.txt").read_text()
    _, info = read_paste([text], compat)
    assert "an nvidia-smi table" in info.found and "nvcc --version" in info.found


def test_windows_table_is_found_as_windows(compat) -> None:
    _, info = read_paste([(PASTES / "nvidia-smi-table" / "rtx-2080-super_windows_610.62_load.txt").read_text()],
                            compat)
    assert "an nvidia-smi table (Windows)" in info.found


@pytest.mark.parametrize("data", [b"\x00\x01\x02binary\x00" * 100, "", "   \n\n",
                                  "".join(chr(i % 31 + 1) for i in range(5000)),
                                  "lorem ipsum dolor sit amet\nconsectetur adipiscing elit\n"])
def test_garbage_is_nothing_recognised(data, compat) -> None:
    with pytest.raises(NothingRecognised, match="nothing recognisable"):
        read_paste([data], compat)


def _cpu_seconds(fn, reps: int = 1) -> float:
    """The least CPU time (not wall time: a busy neighbour does not count) of `reps` calls of fn."""
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


# A complexity guard, not a speed goal (speed lives in scripts/bench_diagnose.py): the CPU cost of a 10x larger
# paste, measured against a smaller one in the same test. Linear reading gives at most about 10 (measured 4-11
# here, also beside two CPU hogs; fixed costs weigh more in the small run); one quadratic step gives about 100.
# No absolute seconds.
SIZE_FACTOR = 10
MAX_COST_RATIO = 3 * SIZE_FACTOR


def _cost_ratio(make, compat) -> float:
    small, big = make(500_000), make(500_000 * SIZE_FACTOR)
    return _cpu_seconds(lambda: read_paste([big], compat)) / max(
        _cpu_seconds(lambda: read_paste([small], compat), reps=3), 1e-4)


def test_five_megabytes_cost_linear_in_size(compat) -> None:
    real = (PASTES / "nvidia-smi-table" / "h100-x8_550.90.07.txt").read_text()
    noise = "INFO step 1234 loss=0.123 lr=3e-4 " + "x" * 60 + "\n"

    def make(size: int) -> str:
        return real + noise * (size // len(noise)) + "(" * (size // 50) + " " * (size // 50) + "\n"

    facts, _ = read_paste([make(5 * 1024 * 1024)], compat)
    assert facts.driver.version == "550.90.07"
    assert _cost_ratio(make, compat) < MAX_COST_RATIO


def test_error_dense_log_cost_linear_in_size(compat) -> None:
    # distinct error lines all the way (no repeat to skip), a table at the top and the real error at the end
    real = (PASTES / "nvidia-smi-table" / "h100-x8_550.90.07.txt").read_text()

    def make(size: int) -> str:
        lines = [f"[rank{i % 8}]: RuntimeError: CUDA error: an illegal memory access at step {i}\n"
                 f"/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:{i}: UserWarning: "
                 f"worker {i % 16} failed\n" for i in range(size // 170)]
        return real + "".join(lines) + "RuntimeError: CUDA error: no kernel image is available for execution\n"

    text = make(5 * 1024 * 1024)
    assert len(text) > 5_000_000
    facts, info = read_paste([text], compat)
    assert facts.driver.version == "550.90.07"
    assert len(facts.paste.messages) <= 300
    assert any("no kernel image" in m for m in facts.paste.messages)  # the last error is kept
    assert _cost_ratio(make, compat) < MAX_COST_RATIO


def test_repeated_report_is_read_once(compat) -> None:
    one = (PASTES / "gpu-arch.txt").read_text() + "\n"

    def make(size: int) -> str:
        return one * (size // len(one))

    facts_one, _ = read_paste([one], compat)
    facts_many, info = read_paste([make(5_000_000)], compat)
    assert facts_many.driver == facts_one.driver and facts_many.pythons == facts_one.pythons
    assert any("repeated block" in f for f in info.found)
    assert _cost_ratio(make, compat) < MAX_COST_RATIO


def test_snapshot_round_trip(compat) -> None:
    facts, _ = read_paste([(PASTES / "gpu-arch.txt").read_text()], compat)
    again = Facts.from_json(facts.to_json())
    assert again == facts


def test_signature_catalogue_is_valid() -> None:
    path = REPO / "compat_data" / "error_signatures.json"
    doc = json.loads(path.read_text())
    assert {"title", "as_of", "sources", "rows"} <= set(doc)
    sigs = parse_signatures(doc)
    assert len(sigs) == len(doc["rows"]) >= 20
    for s in sigs:
        assert s.source.startswith("https://") and s.category in CATEGORIES
        # catastrophic backtracking shows as a cost growing faster than the text: 8x the text costs about
        # 8x when linear (measured at most 9 here), 64x when quadratic; sizes small enough that a bad
        # pattern still ends in seconds
        for evil in ("a", "sm_1 ", "(", "lib", "1."):
            small, big = evil * (5000 // len(evil)) + ".so", evil * (40000 // len(evil)) + ".so"
            ratio = _cpu_seconds(lambda t=big, rx=s.regex: rx.search(t), reps=5) / max(
                _cpu_seconds(lambda t=small, rx=s.regex: rx.search(t), reps=5), 1e-6)
            assert ratio < 32, f"pattern {s.id}: 8x the text costs {ratio:.0f}x"


# Issue 4's required messages: each maps to its category.
REQUIRED = [
    ("CUDA error: no kernel image is available for execution on the device", "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    ("NVIDIA A100 with CUDA capability sm_80 is not compatible with the current PyTorch installation.",
     "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    ("The NVIDIA driver on your system is too old (found version 11080).", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("AssertionError: Torch not compiled with CUDA enabled", "TORCH_CPU_ONLY_BUILD"),
    ("RuntimeError: operator torchvision::nms does not exist", "COMPANION_VERSION_MISMATCH"),
    ("libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12",
     "SYSTEM_LIB_SHADOWING"),
    # cuDNN missing outside torch's import: the cuDNN the program was built for is not installed (round 7, paste7fix)
    ("OSError: libcudnn.so.8: cannot open shared object file: No such file or directory",
     "SYSTEM_LIB_SHADOWING|THIRD_PARTY_EXTENSION_MISMATCH|CUDA_LIBRARY_VERSION_MISMATCH"),
    ("Failed to initialize NVML: Driver/library version mismatch", "DRIVER_LIBRARY_MISMATCH"),
    ("#error -- unsupported GNU version! gcc versions later than 12 are not supported!", "HOST_COMPILER_TOO_NEW"),
    ("The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.8).",
     "NVCC_TORCH_CUDA_MISMATCH"),
    ('docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
     "CONTAINER_NO_GPU_RUNTIME"),
    # 804 alone: the compat libcuda was loaded because the host driver is older than the CUDA wanted (issue 29);
    # with the driver's branch below its reported CUDA it is the library mismatch (test_driver_error_kinds.py)
    ("Error 804: forward compatibility was attempted on non supported HW", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
]


@pytest.mark.parametrize("message,category", REQUIRED)
def test_required_signatures(message: str, category: str, compat) -> None:
    report = diagnose_report([message], compat)
    serious = {f.category for f in report.findings if f.severity in ("warning", "error")}
    assert serious & set(category.split("|")), serious


# Every catalogue category a paste can show -> a paste built from real captures that shows it, and the
# severities its check gives (info where the check rates the condition info: MIG and persistence mode are
# choices, not faults). See tests/fixtures/SOURCES.md for what each paste holds.
CATEGORY_PASTES = {
    "NO_NVIDIA_DRIVER": ("no-driver.txt", ("warning", "error")),
    "NO_GPU_VISIBLE": ("no-devices.txt", ("warning", "error")),
    "ENV_VAR_HARMFUL": ("cuda-launch-blocking-train-py.txt", ("warning",)),  # a real question quoting train.py
    "DRIVER_LIBRARY_MISMATCH": ("lib-mismatch.txt", ("warning", "error")),
    "DRIVER_TOO_OLD_FOR_TORCH_CUDA": ("driver-too-old.txt", ("warning", "error")),
    "GPU_ARCH_NOT_IN_TORCH_BUILD": ("gpu-arch.txt", ("warning", "error")),
    "TORCH_CPU_ONLY_BUILD": ("cpu-only.txt", ("warning", "error")),
    "TORCH_IMPORT_FAILED": ("torch-import-failed.txt", ("warning", "error")),  # Windows DLL load failure
    "COMPANION_VERSION_MISMATCH": ("companion.txt", ("warning", "error")),
    "CUDA_VARIANT_MIXED": ("variant-mixed.txt", ("warning", "error")),
    "SYSTEM_LIB_SHADOWING": ("shadowing.txt", ("warning", "error")),
    "NVCC_TORCH_CUDA_MISMATCH": ("nvcc-mismatch.txt", ("warning", "error")),
    "HOST_COMPILER_TOO_NEW": ("host-compiler.txt", ("warning", "error")),
    "CONTAINER_NO_GPU_RUNTIME": ("container.txt", ("warning", "error")),
    "WSL_SPECIFIC": ("wsl.txt", ("warning", "error")),
    "PYTHON_VERSION_UNSUPPORTED": ("python-version.txt", ("warning", "error")),
    "THIRD_PARTY_EXTENSION_MISMATCH": ("extension.txt", ("warning", "error")),
    "PCIE_LINK_DEGRADED": ("pcie.txt", ("warning", "error")),  # nvidia-smi -q of an RTX 5090
    "GPU_THROTTLED": ("throttle.txt", ("warning", "error")),  # -q with HW Slowdown active
    "GPU_MEMORY_ERRORS": ("memory-errors.txt", ("warning", "error")),  # -q with a row remap pending
    "GPU_XID_ERRORS": ("xid.txt", ("warning", "error")),  # dmesg with Xid 119
    "GPU_BUSY": ("busy.txt", ("warning", "error")),  # -q -x with processes holding memory
    "MIG_ENABLED": ("mig-persistence.txt", ("info", "warning", "error")),  # gpu.mig rates MIG info
    "PERSISTENCE_MODE_OFF": ("mig-persistence.txt", ("info", "warning", "error")),  # gpu.persistence: info
    "COMPUTE_MODE_RESTRICTED": ("compute-mode.txt", ("warning", "error")),
    "INTERCONNECT": ("interconnect.txt", ("warning", "error")),
    "SHM_TOO_SMALL": ("shm.txt", ("warning", "error")),  # df -h /dev/shm and the DataLoader bus error
    "CPU_STARVED": ("cpu-memory.txt", ("warning", "error")),  # nproc next to an 8-GPU table
    "HOST_MEMORY_LOW": ("cpu-memory.txt", ("warning", "error")),  # free -g next to an 8-GPU table
    "DRIVER_OUTDATED": ("outdated.txt", ("warning", "error")),  # -q of driver 460.32.03
    "HEALTHY": ("healthy-device-assert.txt", ("info",)),  # a device-side assert: the program, not the machine
    "UNRECOGNISED_ERROR": ("unrecognised-error.txt", ("warning",)),  # an error line nothing explains
    # NVRM's own lines (issue 42): a branch that dropped the GPU, the open modules on a pre-Turing GPU, a BAR with
    # no address space
    "DRIVER_DROPPED_GPU": ("legacy-branch.txt", ("error",)),
    "OPEN_KERNEL_MODULE_UNSUPPORTED_GPU": ("open-module.txt", ("error",)),
    "BIOS_PCIE_BAR_DISABLED": ("bar.txt", ("error",)),
    "FRAMEWORK_CPU_ONLY_BUILD": ("tensorflow-windows.txt", ("error",)),  # TensorFlow's template, native Windows
    "GPU_SHARING_LAYER_INTERCEPTS_CUDA": ("hami.txt", ("error",)),  # HAMi's libvgpu lacking a driver API symbol
}
# Categories a paste cannot show:
# - SLOW_STORAGE: it judges the disk under the training data (storage.data-path); a paste does not say which
#   path holds the data, so no paste fact can stand for it (a `df`/`mount` line alone names no data set).
# - TARGET_PYTHON_UNUSABLE: about the interpreter envdoctor itself ran (not executable, not a Python, crashed); a
#   paste is judged without running any interpreter, so it has none to judge.
# - PERF_BELOW_EXPECTED, GPU_VIRTUALIZED: judged from `envdoctor bench` results, which no paste carries.
# - NOTE: every info carries it, whatever the paste (tests/unit/report/test_trust.py).
# - REQUIREMENT_UNMET: it judges requirements declared to `envdoctor assert` / preflight(), never pasted.
NOT_FROM_PASTES = {"SLOW_STORAGE", "NOTE", "TARGET_PYTHON_UNUSABLE", "PERF_BELOW_EXPECTED",
                   "GPU_VIRTUALIZED", "REQUIREMENT_UNMET"}
# the watch verdicts: a pasted recording gives them (GPU_BOUND below); each is tested on synthetic series and the
# real recordings in tests/unit/checks/test_watch.py
# an install whose build needs torch in the environment and found none (DeepSpeed's setup.py, a real paste of the
# corpus): what the paste shows of the environment it built in (issue 29)
CATEGORY_PASTES["TORCH_NOT_INSTALLED"] = ("../corpus/deepspeed/deepspeed-006.txt", ("error",))
CATEGORY_PASTES["GPU_BOUND"] = ("../timeseries/015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt", ("info",))
NOT_FROM_PASTES |= {"GPU_MEMORY_PRESSURE", "INPUT_STORAGE_BOUND", "INPUT_CPU_BOUND", "INPUT_BOUND",
                    "DATALOADER_IN_MAIN_PROCESS", "GPU_UNDERFED", "GPU_STRAGGLER", "GPU_IDLE_UNUSED",
                    "COMMUNICATION_BOUND", "CHECKPOINT_STALL"}
# the watched process's own state (R/D/S, its I/O, its cgroup's throttling, per-epoch step times: issue 41), which
# no pasted tool output carries (tests/unit/checks/test_watch_main.py, tests/integration/test_watch41b.py)
NOT_FROM_PASTES |= {"LOOP_WAITS_ON_WRITES", "LOOP_PAUSED", "EVALUATION_STALL", "CPU_CONTENDED", "COLD_FIRST_EPOCH"}
# judged across the nodes of a job by `envdoctor fleet` (tests/unit/fleet), never from one paste
NOT_FROM_PASTES |= {"FLEET_INCONSISTENT", "FLEET_STRAGGLER", "FLEET_RANK_UNREACHABLE"}
# judged from the live interpreter's metadata and sys.path, which a paste does not show
NOT_FROM_PASTES |= {"CUDA_LIBRARY_VERSION_MISMATCH", "PYTHON_PACKAGE_SHADOWED"}
# (DRIVER_DROPPED_GPU: a driver past a GPU's last branch does not bind it, so nvidia-smi cannot show both; the
# kernel says it in NVRM lines, which a paste does show: legacy-branch.txt, issue 42)
# the interpreter's own files (pyvenv.cfg, .pth lines, where pip and each copy of a distribution live) are read from
# the live target; a paste shows none of them (issue 30)
NOT_FROM_PASTES |= {"PIP_UNAVAILABLE", "VENV_SYSTEM_SITE_MIXED", "PTH_EXEC_SYS_PATH"}
# every installed distribution's Requires-Dist, pyvenv.cfg and the metadata directories are read from the live
# target (issue 38)
NOT_FROM_PASTES |= {"DEPENDENCY_UNMET", "INTERPRETER_METADATA_MISMATCH"}
# the smoke tier's verdicts come from trying steps in the live target (a compile, a DataLoader, a checkpoint), which a
# paste did not run (issue 38); a paste of the loader's noexec refusal or of DataLoader's "Too many open files" names
# the same causes (catalogue rows, errors captured by the smoke tier's tests)
NOT_FROM_PASTES |= {"SMOKE_STEP_FAILED"}
CATEGORY_PASTES["TORCH_COMPILE_UNUSABLE"] = ("../smoke/noexec-torch-compile_torch-2.13.0_glibc-2.36.txt", ("error",))
CATEGORY_PASTES["OPEN_FILES_LIMIT_LOW"] = ("../smoke/emfile-dataloader-main_torch-2.13.0_soft-64.txt", ("error",))


def test_every_category_is_covered_or_explained() -> None:
    assert set(CATEGORY_PASTES) | NOT_FROM_PASTES == set(CATEGORIES)


@pytest.mark.parametrize("category", sorted(CATEGORY_PASTES))
def test_category_from_a_paste(category: str, compat) -> None:
    name, severities = CATEGORY_PASTES[category]
    report = diagnose_report([(PASTES / name).read_text()], compat)
    # an info is a NOTE about its category (``about``): found when the paste gives that note
    got = {(f.about or f.category, f.severity) for f in report.findings}
    assert any(c == category and s in severities for c, s in got), sorted(got)
    if category == "HEALTHY":
        assert not [f for f in report.findings if f.severity == "error"]


def test_blocks_fill_the_live_facts(compat) -> None:
    facts, info = read_paste([(PASTES / "throttle.txt").read_text()], compat)
    assert "nvidia-smi -q" in info.found and len(facts.driver.gpus) == 8
    assert any("hw_slowdown" in (g.throttle_reasons or []) for g in facts.driver.gpus)
    facts, _ = read_paste([(PASTES / "cpu-memory.txt").read_text()], compat)
    assert facts.host.cpu_affinity_count == 16 and facts.host.memory_total_bytes == 62 * 1024 ** 3
    facts, _ = read_paste([(PASTES / "shm.txt").read_text()], compat)
    assert facts.host.shm_total_bytes == 64 * 1024 ** 2
    facts, _ = read_paste([(PASTES / "xid.txt").read_text()], compat)
    assert facts.driver.xid_events and facts.driver.xid_events[0].code == 119


@pytest.mark.parametrize("text,platform", [
    ("Downloading torch-2.3.0-cp310-cp310-manylinux1_x86_64.whl (779.1 MB)\ntorch: 2.3.0", "linux-x86_64"),
    ("Downloading torch-2.1.0%2Bcu121-cp311-cp311-win_amd64.whl\ntorch: 2.1.0", "win-amd64"),
    ('File "/venv/lib/python3.10/site-packages/torch/__init__.py"\n/usr/lib/x86_64-linux-gnu/libcuda.so\n'
     "torch: 2.3.0", "linux-x86_64"),
])
def test_platform_from_wheels_and_paths(text: str, platform: str, compat) -> None:
    facts, _ = read_paste([text], compat)
    assert facts.pythons[0].platform == platform
