"""Message families (issue 42; docs/diagnose.md "Message families"): a cause said in a program's own words that no
catalogue row knows is read from the words -- a warning at low confidence, only where nothing surer reads the
line. The pastes here are invented in the spirit of real ones (programs no row names), not corpus rows."""

from __future__ import annotations

import pytest

from envdoctor.compat.signatures import SignatureError, parse_signatures, signatures_from

from .pastes import by_row, findings

FAMILY_ROW = {
    "id": "family-x", "family": {"all": ["\\bdriver", "too old"], "none": ["mismatch"]}, "word": ["too old"],
    "category": "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "severity": "warning", "confidence": "low",
    "explanation": "e", "fix": "f", "source": "s",
}


def _family_findings(text: str, compat) -> dict:
    """family row id -> its finding (any severity)."""
    return {k: f for k, f in by_row(text, compat).items() if k.startswith("family-")}


def test_a_family_row_is_parsed_into_lookaheads_in_any_order() -> None:
    (sig,) = parse_signatures({"rows": [FAMILY_ROW]})
    assert sig.family and sig.words == ("too old",)
    assert sig.search("This NVIDIA driver is too old for us")
    assert sig.search("too old: the installed driver")  # the parts in the other order
    assert not sig.search("driver/library version mismatch: too old")  # a "none" word vetoes
    assert not sig.search("the driver is fine")


@pytest.mark.parametrize("change, says", [
    ({"severity": "error"}, "warning at low confidence"),
    ({"confidence": "medium"}, "warning at low confidence"),
    ({"word": None}, "warning at low confidence"),
    ({"pattern": "x"}, "not both"),
    ({"family": {"all": []}}, "non-empty 'all'"),
    ({"family": {"all": ["driver"], "none": [""]}}, "empty pattern"),
])
def test_the_loader_refuses_a_family_that_could_claim_more_than_a_reading(change, says) -> None:
    row = {k: v for k, v in {**FAMILY_ROW, **change}.items() if v is not None}
    with pytest.raises(SignatureError, match=says):
        parse_signatures({"rows": [row]})


def test_the_bundled_families_are_warnings_at_low_confidence(compat) -> None:
    families = [s for s in signatures_from(compat) if s.family]
    assert len(families) >= 10
    assert all(s.severity == "warning" and s.confidence == "low" and s.id.startswith("family-") for s in families)


# (paste, the family row that reads it, the category it names): a program no row of the catalogue knows, saying
# its cause in its own words
SAID = [
    ("FluxSim 3.2 starting\nFATAL: the installed NVIDIA driver (418.56) is too old for this build; driver 450.80 or "
     "newer is required\n", "family-driver-older-than-build", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("[render] GPU init failed: minimum required NVIDIA driver version is 535.54 (found 470.199)\n",
     "family-driver-older-than-build", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("splatter: error: kernels were not compiled for sm_89 (this build targets sm_70 sm_75 sm_80)\n",
     "family-arch-not-in-build", "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    ("RuntimeError: the GPU NVIDIA Tesla K80 is too old to be supported by this release of voxelnet\n",
     "family-gpu-generation-not-in-build", "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    ("WARNING: meshkit was built without CUDA support; falling back to the CPU path\n",
     "family-built-without-gpu", "FRAMEWORK_CPU_ONLY_BUILD"),
    ("./hydro: error while loading libraries: libcufft.so.10 is missing from this system\n",
     "family-cuda-library-file-not-loaded", "CUDA_LIBRARY_VERSION_MISMATCH"),
    ("ERROR [gpu] unable to load cuSOLVER; the solver stays on the host\n",
     "family-cuda-library-named-not-loaded", "CUDA_LIBRARY_VERSION_MISMATCH"),
    ("Fatal: builder requires host compiler gcc <= 12, gcc 14.1 is not supported by this CUDA\n",
     "family-host-compiler-too-new", "HOST_COMPILER_TOO_NEW"),
    ("worker 3: RuntimeError: unable to write 512 MiB to shared memory segment: no space left\n",
     "family-shared-memory-too-small", "SHM_TOO_SMALL"),
    ("loader: error: symbol lookup for cuMemGetHandleForAddressRange failed (libcuda.so.1)\n",
     "family-driver-api-function-missing", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("ERROR: the GeForce GTX 680 is not supported by this driver release; install a legacy driver\n",
     "family-driver-dropped-gpu", "DRIVER_DROPPED_GPU"),
]


@pytest.mark.parametrize("text, row, category", SAID, ids=[r for _, r, _ in SAID])
def test_a_cause_said_in_a_programs_own_words_is_read_as_a_low_warning(text, row, category, compat) -> None:
    got = _family_findings(text, compat)
    assert row in got, sorted(got)
    f = got[row]
    assert (f.category, f.severity, f.confidence) == (category, "warning", "low")
    assert "read from the words" in f.summary and "\u201c\u201d" not in f.summary  # it quotes the line it read
    # the line it read is explained: not also listed as an error envdoctor does not recognise
    unexplained = [g for g in findings(text, compat) if g.category == "UNRECOGNISED_ERROR"]
    assert not any(text.strip().splitlines()[-1][:40] in g.summary for g in unexplained)


@pytest.mark.parametrize("text, known", [
    # a row of the catalogue reads it: the family stays out
    ("RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n", "cuda-driver-insufficient"),
    ("ImportError: libcudnn_ops.so.9: cannot open shared object file: No such file or directory\n",
     "cuda-library-cannot-open"),
])
def test_a_family_is_not_read_where_a_known_row_reads_the_line(text, known, compat) -> None:
    rows = by_row(text, compat)
    assert any(k == known or k.startswith(known + "/") for k in rows), sorted(rows)
    assert not _family_findings(text, compat)


def test_a_family_is_not_read_where_the_line_quotes_an_nvidia_status(compat) -> None:
    # the status table calls CUDA_ERROR_INVALID_PTX ambiguous (a note with what to paste); the family would call
    # the words "the PTX is unsupported" a driver too old: the table, read from NVIDIA's header, wins
    text = "cuModuleLoad: CUDA_ERROR_INVALID_PTX, the PTX is unsupported\n"
    got = findings(text, compat)
    assert any(f.code.startswith("messages.status-codes/") for f in got)
    assert not _family_findings(text, compat)


@pytest.mark.parametrize("text", [
    "NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2\n",
    "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\nnvcc: NVIDIA (R) Cuda compiler driver\n",
    "Found GPU0 NVIDIA GeForce RTX 3090 with compute capability 8.6 (sm_86)\n",
    "Loaded cuDNN 9.1.0 from the torch wheel\n",
    "training failed: loss is NaN at step 1200 (driver of the scheduler restarted the job)\n",
])
def test_healthy_lines_with_the_families_words_stay_quiet(text, compat) -> None:
    assert not _family_findings(text, compat)


def test_explain_says_a_family_is_a_reading_of_words_not_a_known_message(compat) -> None:
    from envdoctor.checks.catalog import explain_lines

    fam = explain_lines("messages.signature/family-driver-older-than-build", compat)
    known = explain_lines("messages.signature/cuda-driver-insufficient", compat)
    assert "a message family" in fam[0] and "known error message" not in fam[0]
    assert "a known error message" in known[0]


def test_a_cuda_library_name_is_not_a_driver_api_function(compat) -> None:
    got = _family_findings("jax: Unable to load cuSOLVER from the wheel, retrying\n", compat)
    assert "family-driver-api-function-missing" not in got  # cuSOLVER is a library, not a cu<Name> entry point
    assert got["family-cuda-library-named-not-loaded"].category == "CUDA_LIBRARY_VERSION_MISMATCH"
