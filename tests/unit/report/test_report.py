"""Golden-text and contract tests for the console, JSON and Markdown renderers and redaction."""

from __future__ import annotations

import io
import json
import re

from rich.cells import cell_len

from envdoctor.judging.settle import settle
from envdoctor.model.facts import (
    Container,
    CudaToolkit,
    Driver,
    Facts,
    Gpu,
    Host,
    ProbeRun,
    ProbeStatus,
    PythonEnv,
    Toolkits,
    TorchInfo,
)
from envdoctor.model.findings import CheckResult, CheckStatus, Evidence, Finding, Fix, Report, Severity
from envdoctor.remedies.shell_wrap import wrap_command
from envdoctor.report import (
    redact_facts_dict,
    render_console,
    render_json,
    render_markdown,
)
from envdoctor.report.redact import redact_report, redact_text
from tests.paths import REPO

UUID = "GPU-5e3c2a1b-1234-4bcd-9876-0123456789ab"
LONG_PIP = (
    "pip install --force-reinstall torch==2.5.1+cu121 torchvision==0.20.1+cu121 "
    "torchaudio==2.5.1+cu121 --index-url https://download.pytorch.org/whl/cu121 "
    "--extra-index-url https://pypi.org/simple"
)


def make_facts() -> Facts:
    gpu = Gpu(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid=UUID,
        serial="1652023012345",
        compute_capability="9.0",
        memory_total_bytes=85520809984,
        pcie_gen_current=5,
        pcie_gen_max=5,
        pcie_width_current=8,
        pcie_width_max=16,
    )
    driver = Driver(
        status=ProbeStatus.OK,
        source="nvml",
        version="525.60.13",
        cuda_driver_version="12.0",
        gpus=[gpu],
    )
    toolkits = Toolkits(
        status=ProbeStatus.OK,
        on_path=CudaToolkit(
            path="/usr/local/cuda-12.4",
            nvcc_path="/usr/local/cuda-12.4/bin/nvcc",
            version="12.4",
            version_full="12.4.131",
            found_via="PATH",
        ),
    )
    python = PythonEnv(
        status=ProbeStatus.OK,
        executable="/home/alice/venvs/train/bin/python",
        python_version="3.11.7",
        torch=TorchInfo(
            version="2.5.1+cu124",
            cuda="12.4",
            cuda_available=False,
            cuda_init_error="The NVIDIA driver on your system is too old (found version 12000).",
        ),
        env={"LD_LIBRARY_PATH": "/home/alice/cudnn/lib:/usr/lib"},
    )
    host = Host(
        status=ProbeStatus.OK,
        hostname="gpu-node-17.cluster.example.org",
        os="Linux",
        distro_name="Ubuntu 22.04.4 LTS",
        kernel="5.15.0-105-generic",
        cpu_logical_count=64,
        memory_total_bytes=540662632448,
        container=Container(runtime="docker", evidence="/.dockerenv"),
    )
    probes = [
        ProbeRun("nvml", ProbeStatus.OK, None, 0.0412),
        ProbeRun("cuda_toolkit", ProbeStatus.OK, None, 0.1234),
        ProbeRun("storage", ProbeStatus.SKIPPED, "no --data path given", None),
    ]
    return Facts(
        envdoctor_version="0.1.0",
        collected_at="2025-01-20T10:00:00Z",
        origin="live",
        driver=driver,
        toolkits=toolkits,
        pythons=[python],
        host=host,
        probes=probes,
    )


def make_report(facts: Facts = None) -> Report:  # type: ignore[assignment]
    error = Finding(
        code="driver.cuda-compat/too-old",
        category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
        severity=Severity.ERROR,
        summary="Driver 525.60.13 is too old for torch 2.5.1+cu124 (CUDA 12.4 needs >= 550.54.14)",
        detail="torch.cuda.is_available() is False: the driver only supports CUDA up to 12.0.",
        evidence=[
            Evidence("driver.version", "525.60.13", ">= 550.54.14", "compat_data/driver_cuda.json"),
            Evidence("pythons[0].torch.cuda", "12.4"),
        ],
        fix=Fix(
            summary="Install the CUDA 12.1 build of torch, which driver 525 supports",
            commands=[LONG_PIP],
            url="https://pytorch.org/get-started/locally/",
        ),
    )
    warning = Finding(
        code="pcie.link/degraded",
        category="PCIE_LINK_DEGRADED",
        severity=Severity.WARNING,
        summary="GPU 0 runs at PCIe Gen5 x8, below its Gen5 x16",
        detail="Host-device copies run at half the expected bandwidth.",
        evidence=[Evidence("driver.gpus[0].pcie_width_current", 8, "16")],
        fix=Fix(summary="Reseat the card in a CPU-attached x16 slot", commands=[]),
    )
    info = Finding(
        code="toolkit.nvcc/info",
        category="NVCC_TORCH_CUDA_MISMATCH",
        severity=Severity.INFO,
        summary="nvcc 12.4 on PATH matches torch's CUDA 12.4",
    )
    checks = [
        CheckResult("driver.cuda-compat", "driver", "Driver supports torch's CUDA", CheckStatus.FAILED,
                    [error]),
        CheckResult("driver.present", "driver", "NVIDIA driver loaded", CheckStatus.PASSED),
        CheckResult("pcie.link", "pcie", "PCIe links at full speed", CheckStatus.FAILED, [warning]),
        CheckResult("toolkit.nvcc", "toolkit", "nvcc matches torch", CheckStatus.PASSED, [info]),
        CheckResult("storage.data", "storage", "Data on fast storage", CheckStatus.SKIPPED,
                    reason="data path unknown: probe skipped: no --data path given"),
        CheckResult("gpu.memory", "gpu", "GPU memory healthy", CheckStatus.ERRORED,
                    reason="KeyError: 'ecc_volatile_uncorrected'"),
    ]
    # as the judge makes it: consequences linked and statuses settled (judging/settle.py)
    return Report(facts=facts or make_facts(), checks=settle(checks), envdoctor_version="0.1.0",
                  compat_as_of="2025-01-15")


GOLDEN_CONSOLE = """\
envdoctor 0.1.0 · facts: live, 2025-01-20 10:00 UTC · compat matrix as of 2025-01-15

Key facts
  GPU 0    NVIDIA H100 80GB HBM3 · compute 9.0 · 79.6 GiB · PCIe Gen5 x8 (max Gen5 x16)
  Driver   525.60.13 · CUDA ≤ 12.0 (the driver's ceiling, not a toolkit)
  nvcc     12.4.131 at /usr/local/cuda-12.4/bin/nvcc
  Python   3.11.7 at /home/alice/venvs/train/bin/python
    torch  2.5.1+cu124 · torch CUDA 12.4 · cuda available: no — The NVIDIA driver on your system is
           too old (found version 12000).
  Host     Ubuntu 22.04.4 LTS (Linux 5.15.0-105-generic) · 64 CPUs · 503.5 GiB RAM · container:
           docker

Checks
  ✗ driver  1 error, 1 passed
  ! pcie    1 warning
  i toolkit 1 noted
  E gpu     1 could not run (gpu.memory: KeyError: 'ecc_volatile_uncorrected')
  1 check could not be judged (facts unknown): storage.data; -v says why

Findings
✗ Driver 525.60.13 is too old for torch 2.5.1+cu124 (CUDA 12.4 needs >= 550.54.14)
  error · DRIVER_TOO_OLD_FOR_TORCH_CUDA · driver.cuda-compat/too-old
  torch.cuda.is_available() is False: the driver only supports CUDA up to 12.0.
  Fix: Install the CUDA 12.1 build of torch, which driver 525 supports
      pip install --force-reinstall torch==2.5.1+cu121 torchvision==0.20.1+cu121 \\
          torchaudio==2.5.1+cu121 --index-url https://download.pytorch.org/whl/cu121 \\
          --extra-index-url https://pypi.org/simple
  More: https://pytorch.org/get-started/locally/
  Evidence:
    driver.version = "525.60.13"; expected >= 550.54.14; source: compat_data/driver_cuda.json
    pythons[0].torch.cuda = "12.4"

! GPU 0 runs at PCIe Gen5 x8, below its Gen5 x16
  warning · PCIE_LINK_DEGRADED · pcie.link/degraded
  Host-device copies run at half the expected bandwidth.
  Fix: Reseat the card in a CPU-attached x16 slot
  Evidence:
    driver.gpus[0].pcie_width_current = 8; expected 16

i nvcc 12.4 on PATH matches torch's CUDA 12.4
  info · NOTE · toolkit.nvcc/info · about NVCC_TORCH_CUDA_MISMATCH

✗ 1 error, 1 warning — see fixes above; 1 check could not run (errored)
"""


def test_console_golden() -> None:
    text = render_console(make_report(), color=False, width=100)
    assert text == GOLDEN_CONSOLE


def test_console_no_color_has_no_ansi_and_writes_file() -> None:
    buf = io.StringIO()
    text = render_console(make_report(), color=False, file=buf)
    assert "\x1b[" not in text
    assert buf.getvalue() == text
    colored = render_console(make_report(), color=True)
    assert "\x1b[" in colored


def _check_width(text: str, width: int = 100) -> None:
    for line in text.splitlines():
        assert cell_len(line) <= width, line


def test_console_fits_100_columns_with_long_commands() -> None:
    very_long = " ".join(["pip install"] + [f"nvidia-package-number-{i}-cu12==12.4.{i}.99" for i in range(12)])
    report = make_report()
    finding = Finding(
        code="x.y/long", category="CUDA_VARIANT_MIXED", severity=Severity.ERROR,
        summary="A summary long enough to wrap: " + "word " * 40,
        detail="Detail " * 50,
        evidence=[Evidence("pythons[0].packages", "v" * 150, "x" * 60, "s" * 60)],
        fix=Fix(summary="Reinstall " * 20, commands=[very_long, LONG_PIP, "# " + "comment " * 30]),
    )
    checks = report.checks + [CheckResult("x.y", "x", "Long " * 30, CheckStatus.FAILED, [finding])]
    report = Report(facts=report.facts, checks=checks, envdoctor_version="0.1.0", compat_as_of="2025-01-15")
    for verbose in (False, True):
        text = render_console(report, verbose=verbose, color=False, width=100)
        _check_width(text)
    # the command is broken only between words, with shell continuations: it pastes as one command
    lines = wrap_command(very_long, 100)
    assert len(lines) > 1
    assert all(line.endswith(" \\") for line in lines[:-1])
    rejoined = " ".join(line[:-2].strip() if line.endswith(" \\") else line.strip() for line in lines)
    assert rejoined == very_long


def test_wrap_command_keeps_short_commands_and_quotes() -> None:
    assert wrap_command("nvidia-smi -pm 1", 100) == ["      nvidia-smi -pm 1"]
    cmd = "export LD_LIBRARY_PATH='" + "/opt/lib/with spaces " * 8 + "' && " + "pip install torch " * 6
    lines = wrap_command(cmd, 60)
    quoted = "'" + "/opt/lib/with spaces " * 8 + "'"
    assert any(quoted in line for line in lines)  # never split inside quotes


def test_console_verbose_shows_evidence_and_probe_timings() -> None:
    plain = render_console(make_report(), color=False)
    text = render_console(make_report(), verbose=True, color=False)
    assert "Probes" not in plain and "(driver.cuda-compat)" not in plain  # the checklist by area, no timings
    # a problem's evidence shows by default (two lines at most); a note's only under -v
    assert 'driver.version = "525.60.13"; expected >= 550.54.14' in plain
    assert plain.count("Evidence:") == text.count("Evidence:") == 2  # (the note has none)
    assert 'driver.version = "525.60.13"; expected >= 550.54.14; source: compat_data/driver_cuda.json' in text
    assert "driver.gpus[0].pcie_width_current = 8; expected 16" in text
    assert re.search(r"nvml\s+ok\s+0\.04 s", text)
    assert re.search(r"storage\s+skipped\s+unknown\s+no --data path given", text)
    _check_width(text)


def test_console_absent_sections_show_reason_never_na() -> None:
    facts = Facts(
        origin="snapshot",
        driver=Driver(status=ProbeStatus.ABSENT,
                      reason="NVML library not found: no NVIDIA driver installed"),
        toolkits=Toolkits(status=ProbeStatus.FAILED, reason="nvcc --version timed out after 10 s"),
        pythons=[PythonEnv(status=ProbeStatus.OK, executable="/usr/bin/python3", python_version=None,
                           torch=None)],
    )
    report = Report(facts=facts, checks=[CheckResult("driver.present", "driver", "NVIDIA driver loaded",
                                                     CheckStatus.PASSED)], envdoctor_version="0.1.0")
    text = render_console(report, color=False)
    assert "Driver   not found — NVML library not found: no NVIDIA driver installed" in text
    assert "nvcc     could not be read — nvcc --version timed out after 10 s" in text
    assert "Python   unknown at /usr/bin/python3" in text
    assert "torch  not installed" in text
    assert "Host     not checked" in text
    assert "facts: snapshot" in text and "compat matrix as of unknown" in text
    assert "N/A" not in text
    assert text.rstrip().endswith("✓ No problems found")


def test_json_contract() -> None:
    text = render_json(make_report())
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2)
    assert list(data) == sorted(data)
    assert {"schema_version", "envdoctor_version", "compat_as_of", "facts", "checks", "findings",
            "summary"} <= set(data)
    assert [f["category"] for f in data["findings"]] == [
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "PCIE_LINK_DEGRADED", "NOTE"]
    assert data["findings"][2]["about"] == "NVCC_TORCH_CUDA_MISMATCH"
    assert data["summary"]["errors"] == 1 and data["summary"]["checks_errored"] == 1
    assert data["facts"]["host"]["hostname"] == "gpu-node-17.cluster.example.org"  # not redacted by default


def test_json_redacted() -> None:
    text = render_json(make_report(), redact=True)
    assert "gpu-node-17" not in text and "alice" not in text and "5e3c2a1b" not in text
    data = json.loads(text)
    assert data["facts"]["host"]["hostname"] == "<redacted>"
    assert data["facts"]["driver"]["gpus"][0]["uuid"] == "GPU-<redacted>"


def test_markdown() -> None:
    text = render_markdown(make_report())
    assert text.startswith("# envdoctor report: 1 error, 1 warning\n")
    assert "**Verdict:** 1 error, 1 warning — see fixes below" in text
    assert "| error | `DRIVER_TOO_OLD_FOR_TORCH_CUDA` | Driver 525.60.13 is too old" in text
    assert "```bash\n" + LONG_PIP + "\n```" in text  # whole, never wrapped
    assert "| Driver | 525.60.13 · CUDA ≤ 12.0 (the driver's ceiling, not a toolkit) |" in text
    assert "<details><summary>Facts</summary>" in text and "</details>" in text
    facts_json = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert Facts.from_json(facts_json).host.hostname == "<redacted>"
    # redacted by default
    assert "gpu-node-17" not in text and "alice" not in text and "5e3c2a1b" not in text
    assert "~/venvs/train/bin/python" in text
    assert "alice" in render_markdown(make_report(), redact=False)


def test_redact_facts_dict() -> None:
    facts = make_facts()
    d = facts.to_dict()
    d["pythons"][0]["env"]["CUDA_VISIBLE_DEVICES"] = UUID
    d["pythons"][0]["reason"] = "ssh gpu-node-17 said: /root/.bashrc and /Users/bob/x"
    out = redact_facts_dict(d)
    assert d["host"]["hostname"] == "gpu-node-17.cluster.example.org"  # input untouched
    assert out["host"]["hostname"] == "<redacted>"
    gpu = out["driver"]["gpus"][0]
    assert gpu["uuid"] == "GPU-<redacted>" and gpu["serial"] == "GPU-<redacted>"
    py = out["pythons"][0]
    assert py["executable"] == "~/venvs/train/bin/python"
    assert py["env"] == {"LD_LIBRARY_PATH": "~/cudnn/lib:/usr/lib", "CUDA_VISIBLE_DEVICES": "GPU-<redacted>"}
    assert py["reason"] == "ssh <redacted> said: ~/.bashrc and ~/x"
    assert out["toolkits"]["on_path"]["nvcc_path"] == "/usr/local/cuda-12.4/bin/nvcc"
    assert out["driver"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert Facts.from_dict(out).host.hostname == "<redacted>"


def test_redact_text_edges() -> None:
    assert redact_text("/home/alice") == "~"
    assert redact_text("cd /home/alice/x; ls /rootfs /root") == "cd ~/x; ls /rootfs ~"
    assert redact_text("node1 node10 node1.lan", ["node1"]) == "<redacted> node10 <redacted>.lan"
    assert redact_text("MIG-5e3c2a1b-1234-4bcd-9876-0123456789ab") == "MIG-<redacted>"


def test_redact_report_covers_findings() -> None:
    report = make_report()
    finding = Finding(code="a.b/c", category="SYSTEM_LIB_SHADOWING", severity=Severity.WARNING,
                      summary="cuDNN loaded from /home/alice/cudnn/lib on gpu-node-17",
                      evidence=[Evidence("pythons[0].env.LD_LIBRARY_PATH", "/home/alice/cudnn/lib")],
                      fix=Fix("Remove it", ["export LD_LIBRARY_PATH=/usr/lib  # was /home/alice/cudnn/lib"]))
    report = Report(facts=report.facts, checks=[CheckResult("a.b", "a", "A", CheckStatus.FAILED, [finding])],
                    envdoctor_version="0.1.0")
    red = redact_report(report)
    f = red.findings[0]
    assert f.summary == "cuDNN loaded from ~/cudnn/lib on <redacted>"
    assert f.evidence[0].value == "~/cudnn/lib"
    assert f.fix is not None and f.fix.commands == ["export LD_LIBRARY_PATH=/usr/lib  # was ~/cudnn/lib"]
    md = render_markdown(report)
    assert "alice" not in md and "gpu-node-17" not in md


def test_json_schema_doc_lists_every_category_and_key() -> None:

    from envdoctor.model.catalogue import CATEGORIES

    doc = (REPO / "docs" / "json-schema.md").read_text(encoding="utf-8")
    for name in CATEGORIES:
        assert f"`{name}`" in doc, name
    for key in make_report().to_dict():
        assert f"`{key}`" in doc, key
    for key in make_facts().to_dict():
        assert f"`{key}`" in doc, key


def test_key_facts_several_interpreters_lost_gpu_and_paste() -> None:
    from envdoctor.model.facts import PasteSource

    facts = Facts(
        origin="paste",
        driver=Driver(status=ProbeStatus.OK, version="550.54.14", cuda_driver_version=None,
                      gpus=[Gpu(index=0, name="NVIDIA A100-SXM4-40GB", nvml_error="GPU_IS_LOST")]),
        pythons=[
            PythonEnv(status=ProbeStatus.OK, executable="/usr/bin/python3", python_version="3.10.12",
                      torch=TorchInfo(version="2.4.0+cpu", cuda=None, cuda_available=False)),
            PythonEnv(status=ProbeStatus.FAILED, requested_as="/opt/py/bin/python",
                      reason="interpreter timed out after 60 s"),
        ],
        paste=PasteSource(found=["collect_env output"], not_found=["driver version", "nvcc"]),
    )
    text = render_console(Report(facts=facts, checks=[], envdoctor_version="0.1.0"), color=False)
    rows = [" ".join(line.split()) for line in text.splitlines()]
    assert "GPU 0 NVIDIA A100-SXM4-40GB · could not be read: GPU_IS_LOST" in rows
    assert "Driver 550.54.14 · CUDA ceiling unknown" in rows
    assert "Python 0 3.10.12 at /usr/bin/python3" in rows
    assert "torch 2.4.0+cpu · CPU build · cuda available: no" in rows
    assert "Python 1 /opt/py/bin/python: could not be read — interpreter timed out after 60 s" in rows
    assert "Not in paste driver version, nvcc" in rows
    assert "no checks ran" in text and "facts: paste" in text
    md = render_markdown(Report(facts=facts, checks=[], envdoctor_version="0.1.0"))
    # no check ran: nothing was judged, which is not "No problems found"
    assert md.startswith("# envdoctor report\n") and "**Verdict:** Nothing could be judged: no check ran" in md


def test_the_markdown_of_a_healthy_box_stays_short() -> None:
    import re

    from envdoctor.compat import load_compat
    from envdoctor.services.collect import judge
    from tests.paths import FIXTURES

    facts = Facts.from_json((FIXTURES / "snapshots" / "h100-sxm-x8-healthy.json").read_text())
    report = judge(facts, compat=load_compat())
    text = render_markdown(report)
    shown = re.sub(r"<details>.*?</details>", "", text, flags=re.S)  # what GitHub shows unfolded
    assert "No problems found" in shown and "## Key facts" in shown and "- `✓` gpu: " in shown
    assert len(shown.splitlines()) <= 45, len(shown.splitlines())
    folded = text.split("<details><summary>Every check (", 1)[1]
    assert all(f"(`{c.id}`)" in folded for c in report.checks)  # every check still there, folded
