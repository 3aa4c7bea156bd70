"""diagnose.no-wheel-for-python: pip's "No matching distribution" for a package outside torch's family, judged
against the Python the paste names and the cited table of the Python ranges releases publish wheels for: outside
a listed range an error, inside it no finding, a release the table lacks only "no wheel here" (never a guessed
range), and skipped without the Python or the message."""

from __future__ import annotations

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.diagnose import diagnose_report
from tests import machines as m

CHECK = "diagnose.no-wheel-for-python"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _result(text: str, compat):
    return next(c for c in diagnose_report([text], compat).checks if c.id == CHECK)


def _pip_failure(req: str, available: str = "none") -> str:
    return (f"$ pip install {req}\n"
            f"ERROR: Could not find a version that satisfies the requirement {req} (from versions: {available})\n"
            f"ERROR: No matching distribution found for {req}\n")


def test_python_outside_the_listed_range_is_an_error(compat):
    text = "Python version: 3.10.14\n" + _pip_failure("onnxruntime-gpu==1.24.1", "1.19.0, 1.19.2, 1.20.1")
    res = _result(text, compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity, f.confidence) == (
        "diagnose.no-wheel-for-python/outside-range", "PYTHON_VERSION_UNSUPPORTED", Severity.ERROR, "high")
    assert f.summary == ("No wheel of onnxruntime-gpu==1.24.1 for Python 3.10: onnxruntime-gpu 1.24 publishes "
                         "wheels for Python 3.11 to 3.14")
    py = f.evidence[0]
    assert (py.path, py.value, py.expected) == ("pythons[0].python_version", "3.10.14", "3.11 .. 3.14")
    assert py.source.startswith("https://github.com/microsoft/onnxruntime/releases/tag/v1.24.1")
    assert f.evidence[1].value.startswith("ERROR: ") and "onnxruntime-gpu==1.24.1" in f.evidence[1].value
    assert f.fix.commands == ["python3.14 -m venv .venv && . .venv/bin/activate",
                              "python -m pip install onnxruntime-gpu==1.24.1"]


def test_python_inside_the_listed_range_is_not_this_cause(compat):
    res = _result("Python version: 3.12.3\n" + _pip_failure("onnxruntime-gpu==1.24.1"), compat)
    # no finding of its own (the status is settled with the message lead it leaves in place)
    assert res.findings == [] and res.status != CheckStatus.FAILED


def test_a_release_the_table_lacks_says_only_no_wheel_here(compat):
    text = "### Python version\n\n3.13\n\n" + _pip_failure("flash-attn", "none")
    (f,) = _result(text, compat).findings
    assert (f.code, f.category, f.severity, f.confidence) == (
        "diagnose.no-wheel-for-python/no-wheel-here", "PYTHON_VERSION_UNSUPPORTED", Severity.WARNING, "medium")
    assert f.summary == "No wheel of flash-attn for Python 3.13 here: pip found no release of it for this interpreter"
    assert "no Python range for flash-attn" in f.detail
    assert f.fix.commands == ["python -m pip index versions flash-attn", "python -m pip debug --verbose"]
    # a package without a version: the newest release is wanted, and the table never names it
    (g,) = _result("Python version: 3.9.1\n" + _pip_failure("tensorflow"), compat).findings
    assert g.code == "diagnose.no-wheel-for-python/no-wheel-here"


def test_skipped_without_the_python_or_the_message(compat):
    no_python = _result(_pip_failure("xformers==0.0.22"), compat)
    assert (no_python.status, no_python.reason) == (
        CheckStatus.SKIPPED, "the paste does not say which Python pip ran under")
    facts, _ = read_paste(["Python version: 3.11.2\nSuccessfully installed tensorflow-2.16.1\n"], compat)
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == CHECK])
    assert res.status == CheckStatus.SKIPPED and "No matching distribution" in res.reason
    (live,) = run_checks(m.healthy_a100(), compat, [c for c in all_checks() if c.id == CHECK])
    assert live.status == CheckStatus.SKIPPED and live.not_applicable == "judged in pastes only"


def test_a_post_release_matches_its_release_row(compat):
    (f,) = _result("Python version: 3.13.1\n" + _pip_failure("vllm==0.6.1.post1", "0.11.0, 0.14.0"), compat).findings
    assert (f.code, f.severity) == ("diagnose.no-wheel-for-python/outside-range", Severity.ERROR)
    assert f.summary == "No wheel of vllm==0.6.1.post1 for Python 3.13: vllm 0.6.1 publishes wheels for Python 3.8 to 3.12"
    assert f.evidence[0].source.startswith("https://docs.vllm.ai/en/v0.6.1.post2/")


@pytest.mark.parametrize("text, expect", [
    # unpinned, under a Python newer than the newest release's range: the install cannot find a wheel
    ("Latest Fedora with python 3.14\n$ uv pip install -U vllm --pre --extra-index-url https://wheels.vllm.ai/nightly\n",
     "vllm's newest release envdoctor knows (0.14.0) publishes wheels for Python 3.10 to 3.13"),
    # a pinned release whose range leaves this Python out
    ("Python version: 3.12.3\n$ pip install vllm==0.4.0\n", "vllm 0.4.0 publishes wheels for Python 3.8 to 3.11"),
    # unpinned under an older Python than the newest range: pip falls back to an older release; no finding
    ("Python version: 3.9.18\n$ pip install vllm\n", None),
    # inside the range, a package the table lacks, an option's value and a wheel path: nothing to judge
    ("Python version: 3.12.3\n$ pip install vllm==0.6.1 -i https://x/simple --index-strategy vllm "
     "./vllm-0.3.3-cp38-abi3-linux_x86_64.whl somepkg\n", None),
])
def test_an_install_line_outside_the_table_without_pip_error(compat, text, expect):
    res = _result(text, compat)
    if expect is None:
        assert res.findings == [] and res.status == CheckStatus.PASSED, res
        return
    (f,) = res.findings
    assert (f.code, f.severity, f.confidence) == ("diagnose.no-wheel-for-python/outside-range", Severity.WARNING,
                                                  "medium")
    assert expect in f.summary and f.evidence[1].path == "paste.install_requests"
    assert f.evidence[1].source.startswith("line 2: ")


def test_install_requests_read_names_not_options_urls_or_the_next_command():
    from envdoctor.diagnose.readers.packages import _requested

    args = ("-U vllm[audio]>=0.6 'flash-attn==2.7.4.post1' --extra-index-url https://x/cu130 -r reqs.txt "
            "--index-strategy unsafe-best-match ./local.whl . && python -c x").split()
    assert _requested(args) == ["vllm", "flash-attn==2.7.4.post1"]
