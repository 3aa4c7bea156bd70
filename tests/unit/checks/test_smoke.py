"""smoke.steps and smoke.open-files (issue 38) on facts: every failed step is a finding with its cause or its
reproduction, a passing tier passes, no tier skips; the snapshot round-trips through JSON."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv, Smoke, SmokeStep, TorchInfo
from envdoctor.model.findings import CheckStatus, Evidence, Fix, Severity
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
SITE = "/srv/venv/lib/python3.11/site-packages"
OK = [SmokeStep("resolve", "ok", 0.01), SmokeStep("compile", "ok", 0.4), SmokeStep("dataloader", "ok", 0.3),
      SmokeStep("checkpoint", "ok", 0.02), SmokeStep("distributed", "ok", 0.03)]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def env(steps, limit=(65536, 65536), tier="quick") -> PythonEnv:
    return PythonEnv(status=ProbeStatus.OK, executable=PY, python_version="3.11.7",
                     torch=TorchInfo(version="2.13.0+cpu", arch_list=[], imported=True),
                     smoke=Smoke(tier=tier, steps=list(steps), open_files_limit=list(limit), duration_s=1.0))


def result(report, check_id):
    return next(c for c in report.checks if c.id == check_id)


def replace_step(name, step):
    return [step if s.name == name else s for s in OK]


def test_a_passing_tier_passes_and_round_trips(compat) -> None:
    facts = Facts(pythons=[env(OK)])
    back = Facts.from_json(facts.to_json())
    assert back.pythons[0].smoke == facts.pythons[0].smoke
    report = judge(back, compat)
    assert result(report, "smoke.steps").status == CheckStatus.PASSED
    assert result(report, "smoke.open-files").status == CheckStatus.PASSED
    assert not [f for f in report.findings if f.code.startswith("smoke.")]


def test_no_tier_or_tier_off_skips(compat) -> None:
    report = judge(Facts(pythons=[PythonEnv(status=ProbeStatus.OK, executable=PY)]), compat)
    assert result(report, "smoke.steps").status == CheckStatus.SKIPPED
    off = judge(Facts(pythons=[env([], tier="off")]), compat)
    assert result(off, "smoke.steps").status == CheckStatus.SKIPPED
    assert "off" in result(off, "smoke.steps").reason
    none = Smoke(tier="quick", not_tried=["every smoke step: torch is not installed in this interpreter"])
    bare = judge(Facts(pythons=[PythonEnv(status=ProbeStatus.OK, executable=PY, smoke=none)]), compat)
    assert result(bare, "smoke.open-files").status == CheckStatus.SKIPPED
    assert "torch is not installed" in result(bare, "smoke.steps").reason


def test_an_unknown_failure_names_the_step_quotes_the_error_and_reproduces_it(compat) -> None:
    step = SmokeStep("distributed", "failed", 0.5, error_type="RuntimeError",
                     error="[enforce fail at gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address",
                     traceback=["  File \"x.py\", line 3, in step", "RuntimeError: [enforce fail ...]"])
    report = judge(Facts(pythons=[env(replace_step("distributed", step))]), compat)
    (f,) = [f for f in report.findings if f.code.startswith("smoke.")]
    assert f.code == "smoke.steps/distributed-failed" and f.category == "SMOKE_STEP_FAILED"
    assert f.severity == Severity.ERROR and f.subject == PY
    assert f.summary == (f"distributed failed when tried in {PY}: RuntimeError: [enforce fail at "
                         "gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address")
    assert f.evidence[:2] == [Evidence("pythons[0].smoke.steps[4].status", "failed", expected="ok",
                                       source="distributed in 0.5 s"),
                              Evidence("pythons[0].smoke.steps[4].error", "RuntimeError: [enforce fail at gloo/transport/"
                                       "tcp/device.cc:83] ifa != nullptr. Unable to find address")]
    assert f.fix.commands[0].startswith(f"{PY} -c ") and "init_process_group(\"gloo\"" in f.fix.commands[0]
    assert report.problems and result(report, "smoke.steps").status == CheckStatus.FAILED


def test_a_crash_and_a_hang_are_findings(compat) -> None:
    crash = SmokeStep("import:torchvision", "failed", 1.2, error_type="Crash",
                      error="the process killed by SIGSEGV during this step", signal="SIGSEGV",
                      detail={"module": "torchvision"})
    hang = SmokeStep("dataloader", "timed-out", 20.0, error_type="Timeout", error="did not finish in 20 s")
    report = judge(Facts(pythons=[env(replace_step("dataloader", hang) + [crash])]), compat)
    got = {f.code: f for f in report.findings if f.code.startswith("smoke.")}
    assert set(got) == {"smoke.steps/dataloader-timed-out", "smoke.steps/import-torchvision-failed"}
    assert got["smoke.steps/dataloader-timed-out"].summary == f"dataloader did not finish in 20 s when tried in {PY}"
    c = got["smoke.steps/import-torchvision-failed"]
    assert c.summary == f"importing torchvision crashed the process when tried in {PY}: the process killed by " \
                        "SIGSEGV during this step"
    assert c.fix.commands == [f"{PY} -c 'import torchvision; print(torchvision.__file__)'"]


def test_a_known_error_cites_its_signature(compat) -> None:
    step = SmokeStep("dataloader", "failed", 2.0, error_type="RuntimeError",
                     error="DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that "
                           "dataloader's workers are out of shared memory. Please try to raise your shared memory "
                           "limit.")
    report = judge(Facts(pythons=[env(replace_step("dataloader", step))]), compat)
    (f,) = [f for f in report.findings if f.code.startswith("smoke.")]
    assert f.code == "smoke.steps/signature-dataloader-bus-error-shm" and f.category == "SHM_TOO_SMALL"
    assert Evidence("signature", "dataloader-bus-error-shm", source=f.fix.url) in f.evidence


def test_no_compiler_is_a_torch_compile_problem_with_the_install(compat) -> None:
    step = SmokeStep("compile", "failed", 0.1, error_type="StepError",
                     error="C++ compiler not found: 'g++' is not on PATH",
                     detail={"compiler": "g++", "compiler_source": "default (g++)", "compiler_path": None,
                             "path": "/srv/venv/bin:/usr/bin"})
    facts = Facts(pythons=[env(replace_step("compile", step))])
    facts = dataclasses.replace(facts, host=dataclasses.replace(facts.host, distro_id="debian"))
    report = judge(facts, compat)
    (f,) = [f for f in report.findings if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/no-compiler", "TORCH_COMPILE_UNUSABLE", Severity.ERROR)
    assert f.summary == (f"torch.compile cannot build code for {PY}: the C++ compiler 'g++' (default (g++)) is not on "
                         "the run's PATH")
    assert f.fix.commands == ["apt-get install -y g++"]


def test_no_python_h_names_the_dev_package(compat) -> None:
    step = SmokeStep("compile", "failed", 0.1, error_type="StepError", error="Python.h not found",
                     detail={"compiler": "g++", "compiler_path": "/usr/bin/g++", "python_h": False,
                             "python_include": "/usr/include/python3.11"})
    facts = Facts(pythons=[env(replace_step("compile", step))])
    facts = dataclasses.replace(facts, host=dataclasses.replace(facts.host, distro_id="ubuntu"))
    (f,) = [f for f in judge(facts, compat).findings if f.code.startswith("smoke.")]
    assert f.code == "smoke.steps/no-python-headers" and f.fix.commands == ["apt-get install -y python3.11-dev"]


def test_a_noexec_cache_directory_names_the_variable_to_move(compat) -> None:
    loads = [{"role": "temp", "path": "/tmp", "variable": "TMPDIR", "ok": False,
              "error": "OSError: /tmp/envdoctor_smoke_1.so: failed to map segment from shared object"},
             {"role": "inductor-cache", "path": "/tmp/torchinductor_u", "variable": None, "ok": False,
              "error": "OSError: failed to map segment from shared object"},
             {"role": "torch-extensions", "path": "/home/u/.cache/torch_extensions", "variable": None, "ok": True}]
    step = SmokeStep("compile", "failed", 0.5, error_type="StepError", error="cannot be loaded",
                     detail={"compiler": "g++", "compiler_path": "/usr/bin/g++", "python_h": True, "loads": loads})
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("compile", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category) == ("smoke.steps/noexec", "TORCH_COMPILE_UNUSABLE")
    assert f.summary == ("a freshly compiled module cannot be loaded from /tmp (temp), /tmp/torchinductor_u "
                         "(inductor-cache): the mount forbids executing files (noexec); torch.compile and JIT "
                         "extensions load their code from there")
    assert f.fix.commands == ["findmnt -no TARGET,OPTIONS -T /tmp",
                              "mkdir -p $HOME/.cache/torch-exec/tmpdir && export TMPDIR=$HOME/.cache/torch-exec/tmpdir"]


def test_a_shadowing_file_in_the_working_directory_is_renamed(compat) -> None:
    step = SmokeStep("resolve", "failed", 0.01, error_type="StepError", error="would load /work/proj/torch.py",
                     detail={"cwd": "/work/proj", "modules": [
                         {"distribution": "torch", "version": "2.13.0+cpu", "module": "torch", "location": SITE,
                          "origin": "/work/proj/torch.py", "inside": False}]})
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("resolve", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/shadowed", "PYTHON_PACKAGE_SHADOWED", Severity.ERROR)
    assert f.summary == "`import torch` in /work/proj loads /work/proj/torch.py, not the installed torch 2.13.0+cpu"
    assert f.fix == Fix("Rename the local file or folder that carries the package's name (and remove its compiled "
                        "cache)", ["mv /work/proj/torch.py /work/proj/torch_local.py", "rm -rf /work/proj/__pycache__"],
                        "https://docs.python.org/3/library/sys_path_init.html")


def test_open_files_1024_is_a_note_while_the_dataloader_passes(compat) -> None:
    report = judge(Facts(pythons=[env(OK, limit=(1024, 4096))]), compat)
    (f,) = [f for f in report.findings if f.code.startswith("smoke.")]
    assert (f.code, f.severity, f.about) == ("smoke.open-files/low", Severity.INFO, "OPEN_FILES_LIMIT_LOW")
    assert f.summary == ("the open-files soft limit is 1024: DataLoader workers with many tensors per sample run out "
                         "of descriptors ('Too many open files'); the smoke DataLoader passed")
    assert f.fix.commands[0] == "ulimit -n 4096" and "set_sharing_strategy('file_system')" in f.fix.commands[2]
    assert f.fix.url == "https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies"


def test_a_dataloader_out_of_descriptors_is_an_error_of_the_limit(compat) -> None:
    step = SmokeStep("dataloader", "failed", 1.0, error_type="OSError", error="[Errno 24] Too many open files")
    report = judge(Facts(pythons=[env(replace_step("dataloader", step), limit=(64, 4096))]), compat)
    (f,) = [f for f in report.findings if f.code.startswith("smoke.")]  # one finding: the limit, not the step too
    assert (f.code, f.category, f.severity) == ("smoke.open-files/dataloader-failed", "OPEN_FILES_LIMIT_LOW",
                                                Severity.ERROR)
    assert f.summary == f"a DataLoader with two workers failed in {PY}: too many open files (soft limit 64)"


def test_a_directory_that_refuses_the_checkpoint_is_a_warning(compat) -> None:
    step = SmokeStep("checkpoint", "failed", 0.1, error_type="StepError",
                     error="writing a checkpoint in /data failed: PermissionError: [Errno 13] Permission denied: "
                           "'/data/.envdoctor_smoke_7.pt'")
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("checkpoint", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.severity) == ("smoke.steps/checkpoint-failed", Severity.WARNING)
    assert f.summary.startswith(f"a checkpoint cannot be written where the run may write it, tried in {PY}: "
                                "writing a checkpoint in /data failed: PermissionError: [Errno 13]")


def test_an_import_whose_version_is_not_the_installed_one_is_named(compat) -> None:
    step = SmokeStep("import:torchvision", "failed", 0.8, error_type="StepError",
                     error="`import torchvision` reports __version__ 0.27.0 from /s/torchvision/__init__.py, but the "
                           "installed torchvision is 0.28.0",
                     detail={"distribution": "torchvision", "version": "0.28.0", "module": "torchvision",
                             "file": "/s/torchvision/__init__.py", "location": "/s", "module_version": "0.27.0",
                             "inside": True, "version_mismatch": True})
    (f,) = [f for f in judge(Facts(pythons=[env(OK + [step])]), compat).findings if f.code.startswith("smoke.")]
    assert (f.code, f.category) == ("smoke.steps/shadowed", "PYTHON_PACKAGE_SHADOWED")
    assert f.summary == ("`import torchvision` gives torchvision 0.27.0 from /s/torchvision/__init__.py, but the "
                         "installed distribution says 0.28.0")
    assert f.fix.commands == [f"{PY} -m pip install --force-reinstall --no-deps torchvision==0.28.0"]


def test_an_import_whose_library_already_failed_to_load_is_a_note_of_that(compat) -> None:
    from envdoctor.model.facts import ExtensionLibrary, ExtensionScan

    err = "/s/torchvision/_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"
    step = SmokeStep("import:torchvision", "failed", 0.9, error_type="OSError", error=err,
                     detail={"module": "torchvision"})
    py = dataclasses.replace(env(OK + [step]), extensions=ExtensionScan(libraries=[
        ExtensionLibrary("torchvision", "0.28.0", "/s/torchvision/_C.so", loaded=False, load_error=err)]))
    (f,) = [f for f in judge(Facts(pythons=[py]), compat).findings if f.code.startswith("smoke.")]
    assert (f.code, f.severity, f.about) == ("smoke.steps/import-torchvision-failed", Severity.INFO,
                                             "SMOKE_STEP_FAILED")
    assert f.summary.endswith("its compiled library already failed to load next to this torch "
                              "(packages.extension-build names the cause and the fix)")


# --- issue 38, what its "Done when" lacked (smoke38b): the mount read, the workers' EMFILE, the catalogue rows,
# never "No problems found" after a failed step

FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[2] / "fixtures" / "smoke"


def _load_failed(noexec, options, error="OSError: /tmp/torchinductor_u/envdoctor_smoke_1/smoke.so: failed to map "
                                        "segment from shared object"):
    loads = [{"role": "temp", "path": "/tmp", "variable": None, "ok": True},
             {"role": "inductor-cache", "path": "/tmp/torchinductor_u", "variable": None, "ok": False,
              "error": error, "noexec": noexec, "mount_point": "/tmp", "mount_options": options},
             {"role": "triton-cache", "path": "/home/u/.triton/cache", "variable": None, "ok": True}]
    return SmokeStep("compile", "failed", 0.5, error_type="StepError", error="cannot be loaded",
                     detail={"compiler": "g++", "compiler_path": "/usr/bin/g++", "python_h": True, "loads": loads,
                             "dirs": [{"role": x["role"], "path": x["path"], "variable": None} for x in loads]})


def test_a_noexec_mount_read_by_the_step_is_named_with_its_mount_point(compat) -> None:
    step = _load_failed(True, "rw,nosuid,nodev,noexec,relatime")
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("compile", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/noexec", "TORCH_COMPILE_UNUSABLE", Severity.ERROR)
    assert f.summary == ("a freshly compiled module cannot be loaded from /tmp/torchinductor_u (inductor-cache): the "
                         "mount forbids executing files (/tmp mounted noexec); torch.compile and JIT extensions load "
                         "their code from there")
    assert Evidence("pythons[0].smoke.steps[1].detail.loads[1].mount_options", "rw,nosuid,nodev,noexec,relatime",
                    expected="exec (no noexec)",
                    source="/proc/self/mountinfo: /tmp/torchinductor_u is on /tmp; statvfs: ST_NOEXEC") in f.evidence
    assert f.fix.commands == [
        "findmnt -no TARGET,OPTIONS -T /tmp/torchinductor_u",
        "mkdir -p $HOME/.cache/torch-exec/torchinductor_cache_dir && "
        "export TORCHINDUCTOR_CACHE_DIR=$HOME/.cache/torch-exec/torchinductor_cache_dir"]
    assert f.fix.summary.endswith("(or, as root, remount without noexec: mount -o remount,exec /tmp)")
    assert f.fix.url == "https://man7.org/linux/man-pages/man8/mount.8.html"


def test_a_load_refused_on_an_exec_mount_is_not_called_noexec(compat) -> None:
    # the same loader message with the mount allowing exec (an address-space limit gives it too): no noexec verdict
    step = _load_failed(False, "rw,relatime")
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("compile", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/compile-failed", "TORCH_COMPILE_UNUSABLE",
                                                Severity.ERROR)
    assert "noexec" not in f.summary and "noexec" not in f.detail
    assert f.summary == ("a freshly compiled module cannot be loaded from /tmp/torchinductor_u (inductor-cache): "
                         "OSError: /tmp/torchinductor_u/envdoctor_smoke_1/smoke.so: failed to map segment from shared "
                         "object; torch.compile and JIT extensions load their code from there")
    assert f.fix.summary.startswith("Point the variable at another directory")


def test_a_home_on_the_failing_mount_moves_the_caches_off_it(compat) -> None:
    # TORCHINDUCTOR_CACHE_DIR set under a noexec /home: the new place is not under HOME either
    step = _load_failed(True, "rw,noexec")
    step.detail["loads"][1].update(path="/home/u/ind", variable="TORCHINDUCTOR_CACHE_DIR", mount_point="/home")
    step.detail["dirs"][1].update(path="/home/u/ind", variable="TORCHINDUCTOR_CACHE_DIR")
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("compile", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert f.fix.commands[1] == ("mkdir -p /var/tmp/torch-exec-$USER/torchinductor_cache_dir && "
                                 "export TORCHINDUCTOR_CACHE_DIR=/var/tmp/torch-exec-$USER/torchinductor_cache_dir")


def test_a_failed_compile_is_reproduced_by_a_command_that_needs_none_of_the_steps_files(compat) -> None:
    # the step removes its smoke.cpp: the printed command brings the source on stdin and writes where it wrote
    src = 'extern "C" int envdoctor_smoke_answer(void) { return 42; }'
    step = SmokeStep("compile", "failed", 0.5, error_type="StepError",
                     error="compiling a one-line C++ module failed (exit 1): /usr/bin/ld: final link failed: No "
                           "space left on device",
                     detail={"compiler": "g++", "compiler_path": "/usr/bin/g++", "python_h": True,
                             "compile_command": "/usr/bin/g++ -shared -fPIC -O0 -I/usr/include/python3.11 "
                                                "/tmp/torchinductor_u/envdoctor_smoke_7/smoke.cpp -o "
                                                "/tmp/torchinductor_u/envdoctor_smoke_7/smoke.so",
                             "compile_flags": ["-shared", "-fPIC", "-O0", "-I/usr/include/python3.11"],
                             "source": src, "build_dir": "/tmp/torchinductor_u"})
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("compile", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert f.code == "smoke.steps/compile-failed"
    assert f.fix.commands == [
        "mkdir -p /tmp/torchinductor_u && printf '%s\\n' '" + src + "' | /usr/bin/g++ -shared -fPIC -O0 "
        "-I/usr/include/python3.11 -x c++ - -o /tmp/torchinductor_u/envdoctor-try.so"]
    assert "envdoctor_smoke_7" not in " ".join(f.fix.commands)


def test_a_cache_that_cannot_even_be_made_gets_its_move_without_findmnt(compat) -> None:
    # HOME points nowhere: triton's default cache cannot be created; `findmnt -T` on a missing path fails, so the
    # fix is only the move (every printed command must run)
    step = _load_failed(None, None, error="FileNotFoundError: [Errno 2] No such file or directory: '/proc/nonexistent'")
    step.detail["loads"][1].update(path="/proc/nonexistent/.triton/cache", role="triton-cache", mount_point=None)
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("compile", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert f.code == "smoke.steps/compile-failed" and "No such file or directory" in f.summary
    assert f.fix.commands == ["mkdir -p /var/tmp/torch-exec-$USER/triton_cache_dir && "
                              "export TRITON_CACHE_DIR=/var/tmp/torch-exec-$USER/triton_cache_dir"]


@pytest.mark.parametrize("error", [
    "RuntimeError: DataLoader timed out after 15 seconds (the workers said: OSError: [Errno 24] Too many open files)",
    "RuntimeError: received 0 items of ancdata",
])
def test_a_dataloader_whose_workers_ran_out_of_descriptors_is_the_limit(compat, error) -> None:
    step = SmokeStep("dataloader", "failed", 15.2, error_type="StepError", error=error)
    report = judge(Facts(pythons=[env(replace_step("dataloader", step), limit=(32, 4096))]), compat)
    (f,) = [f for f in report.findings if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.open-files/dataloader-failed", "OPEN_FILES_LIMIT_LOW",
                                                Severity.ERROR)
    assert f.summary == f"a DataLoader with two workers failed in {PY}: too many open files (soft limit 32)"
    assert f.fix.commands[0] == "ulimit -n 4096"


def test_torch_compiles_own_noexec_error_cites_the_catalogue(compat) -> None:
    # the thorough tier's end-to-end torch.compile, failing as torch 2.13.0 fails on a noexec cache (captured here)
    text = (FIXTURES / "noexec-torch-compile_torch-2.13.0_glibc-2.36.txt").read_text()
    last = [x for x in text.splitlines() if x.startswith("torch._inductor.exc.InductorError")][0]
    step = SmokeStep("torch-compile", "failed", 30.0, error_type="torch._inductor.exc.InductorError",
                     error=last.split(": ", 1)[1], traceback=text.splitlines()[-14:])
    (f,) = [f for f in judge(Facts(pythons=[env(OK + [step], tier="thorough")]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/signature-shared-object-noexec-mount",
                                                "TORCH_COMPILE_UNUSABLE", Severity.ERROR)
    assert f.summary.startswith(f"torch-compile failed when tried in {PY}: torch._inductor.exc.InductorError: "
                                "OSError: /tmp/smoke38b_cap/inductor/")
    assert f.fix.summary.startswith("Point the build caches at a directory on a mount that allows executing files")
    assert f.fix.url.startswith("https://github.com/pytorch/pytorch/issues/91005")


@pytest.mark.parametrize("name,sig", [("dataloader-main_torch-2.13.0_soft-64", "dataloader-too-many-open-files"),
                                      ("dataloader-workers_torch-2.13.0_soft-32", "errno-24-too-many-open-files")])
def test_the_open_files_rows_match_the_captured_errors(compat, name, sig) -> None:
    from envdoctor.compat.signatures import signatures_from

    text = (FIXTURES / f"emfile-{name}.txt").read_text()
    assert [s.id for s in signatures_from(compat) if s.search(text)][:1] == [sig]


def test_another_step_out_of_descriptors_cites_errno_24(compat) -> None:
    step = SmokeStep("checkpoint", "failed", 0.1, error_type="StepError",
                     error="writing a checkpoint in /data failed: OSError: [Errno 24] Too many open files: "
                           "'/data/.envdoctor_smoke_7.pt'")
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step("checkpoint", step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/signature-errno-24-too-many-open-files",
                                                "OPEN_FILES_LIMIT_LOW", Severity.WARNING)


UNKNOWN = SmokeStep("", "failed", 0.3, error_type="ValueError", error="an error nobody has catalogued (zxqv-42)")


@pytest.mark.parametrize("name", ["resolve", "compile", "import:somepkg", "dataloader", "checkpoint", "distributed",
                                  "cuda-kernel", "cublas", "cudnn", "autocast", "nccl", "torch-compile",
                                  "a-step-added-later"])
@pytest.mark.parametrize("status", ["failed", "timed-out"])
def test_a_failed_step_never_ends_in_no_problems_found(compat, name, status) -> None:
    from envdoctor.report.console import render_console
    from envdoctor.report.summary import verdict

    step = dataclasses.replace(UNKNOWN, name=name, status=status)
    report = judge(Facts(pythons=[env(OK + [step] if name not in {s.name for s in OK}
                                      else replace_step(name, step))]), compat)
    assert report.problems, [(f.code, f.severity) for f in report.findings]
    assert not verdict(report).startswith("No problems")
    text = render_console(report, color=False, width=100)
    assert "No problems found" not in text and "error" in text.splitlines()[-1]


@pytest.mark.parametrize("name", ["resolve", "compile"])
def test_a_step_that_broke_before_it_found_anything_is_quoted_not_guessed(compat, name) -> None:
    # no detail (the step raised, crashed or hung first): no "shadowed" or compiler verdict made up from nothing
    step = dataclasses.replace(UNKNOWN, name=name)
    (f,) = [f for f in judge(Facts(pythons=[env(replace_step(name, step))]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.severity) == (f"smoke.steps/{name}-failed", Severity.ERROR)
    assert f.summary == f"{name} failed when tried in {PY}: ValueError: an error nobody has catalogued (zxqv-42)"


def test_a_gpu_below_tritons_floor_is_named_when_torch_compile_fails_on_it(compat) -> None:
    # torch 2.13.0's GPUTooOldForTriton, as the thorough tier's end-to-end torch.compile would meet it on a GTX 1080 Ti
    step = SmokeStep("torch-compile", "failed", 12.0, error_type="torch._inductor.exc.InductorError",
                     error="GPUTooOldForTriton: Found NVIDIA GeForce GTX 1080 Ti which is too old to be supported by "
                           "the triton GPU compiler, which is used as the backend. Triton only supports devices of "
                           "CUDA Capability >= 7.0, but your device is of CUDA capability 6.1")
    (f,) = [f for f in judge(Facts(pythons=[env(OK + [step], tier="thorough")]), compat).findings
            if f.code.startswith("smoke.")]
    assert (f.code, f.category, f.severity) == ("smoke.steps/signature-triton-gpu-too-old",
                                                "GPU_ARCH_NOT_IN_TORCH_BUILD", Severity.ERROR)
    assert "compute capability 7.0 or newer" in f.fix.summary


def test_an_import_said_by_extension_build_still_counts_as_a_problem(compat) -> None:
    # the smoke note defers to packages.extension-build, whose error is what the verdict counts
    from envdoctor.model.facts import ExtensionLibrary, ExtensionScan
    from envdoctor.report.summary import verdict

    err = "/s/torchvision/_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"
    step = SmokeStep("import:torchvision", "failed", 0.9, error_type="OSError", error=err,
                     detail={"module": "torchvision"})
    py = dataclasses.replace(env(OK + [step]), extensions=ExtensionScan(libraries=[
        ExtensionLibrary("torchvision", "0.28.0", "/s/torchvision/_C.so", loaded=False, load_error=err)]))
    report = judge(Facts(pythons=[py]), compat)
    assert [(f.code, f.severity) for f in report.problems] == [("packages.extension-build/does-not-load",
                                                               Severity.ERROR)]
    assert not verdict(report).startswith("No problems")
    # a library the scan skipped (a budget) was not judged there: the smoke step is then the problem itself (here
    # the catalogue's undefined-torch-symbol row)
    skipped = dataclasses.replace(py, extensions=ExtensionScan(libraries=[
        ExtensionLibrary("torchvision", "0.28.0", "/s/torchvision/_C.so", loaded=False, load_error=err,
                         skipped="the read budget")]))
    report = judge(Facts(pythons=[skipped]), compat)
    assert [(f.code, f.severity) for f in report.problems] == [
        ("smoke.steps/signature-extension-undefined-torch-symbol", Severity.ERROR)]
