"""The message reader's triggers (issue 42): a glog E/F record is an error line, and a catalogue row whose text
holds "not " (a keyword of the reader's own) is still found when its line holds no trigger word."""

from __future__ import annotations

from envdoctor.checks._errors import is_error_line, unprefixed
from envdoctor.compat import load_compat
from envdoctor.compat.signatures import signatures_from
from envdoctor.diagnose.engine import read_raw
from envdoctor.diagnose.readers import messages
from envdoctor.services.diagnose import diagnose_report

# the line the issue quotes (TensorFlow / XLA through glog), with a status that holds no trigger word
CUDNN = "E0515 10:03:24.130426 19611 cuda_dnn.cc:534] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED"


def test_a_row_holding_not_has_a_word_of_its_own() -> None:
    sigs = signatures_from(load_compat())
    words = messages._literal_keywords(sigs)
    # the cuDNN handle row's text holds "not " and no trigger word: its phrase is one of the row words now
    assert "could not create cudnn handle" in words
    # without the glog prefix too: the line is found by the row, not by the glog rule
    acc = read_raw("Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n", load_compat())
    assert acc.messages == ["Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED"]


def test_a_line_with_not_and_no_row_stays_out() -> None:
    # a person's sentence with "not " and no trigger word nor row word is not a message
    acc = read_raw("I am not sure the GPU is used at all\n", load_compat())
    assert acc.messages == []


def test_a_glog_error_record_is_a_message_and_an_error_line() -> None:
    acc = read_raw("I0515 10:03:20.000001 19611 service.cc:145] XLA service 0x55 initialized\n" + CUDNN + "\n",
                   load_compat())
    assert CUDNN in acc.messages
    assert not any(m.startswith("I0515") for m in acc.messages)
    assert is_error_line(CUDNN)
    assert unprefixed(CUDNN) == "Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED"
    # an F record is an error; I and W records are not, whatever their words
    assert is_error_line("F0515 10:03:24.130426 19611 cuda_solvers.cc:86] Check failed: status == CUSOLVER_OK")
    assert not is_error_line("W0515 10:03:24.130426 19611 gpu_device.cc:1956] Cannot dlopen some GPU libraries. "
                             "Skipping registering GPU devices... failed")
    assert not is_error_line("I0515 10:03:24.130426 19611 x.cc:1] Loading failed kernels: none")


def test_a_glog_only_paste_is_judged() -> None:
    report = diagnose_report([CUDNN + "\n"], load_compat())  # was "nothing recognisable"
    assert any(f.code == "messages.signature/cudnn-create-handle-failed" for f in report.findings)


def test_each_glog_record_is_a_message_of_its_own() -> None:
    text = ("E0515 10:03:24.130426 19611 cuda_dnn.cc:534] Could not create cudnn handle\n"
            "E0515 10:03:24.130500 19611 cuda_dnn.cc:538] Memory usage: 1048576 bytes free, 8589934592 bytes total.\n")
    acc = read_raw(text, load_compat())
    # two records, never glued into one message
    assert not any("handle" in m and "Memory usage" in m for m in acc.messages)
    assert any(m.endswith("8589934592 bytes total.") for m in acc.messages)


def test_the_lines_of_one_glog_event_are_explained_together() -> None:
    # the handle failure and the memory line cuda_dnn.cc prints right after it, at level E on the same thread
    # (the shape of conda-forge/jaxlib-feedstock#312's log, reports-batch5/422): the signature explains both, no unexplained-error warning is left
    text = CUDNN + "\nE0515 10:03:24.130483 19611 cuda_dnn.cc:538] Memory usage: 7973961728 bytes free, " \
                   "8198619136 bytes total.\n"
    report = diagnose_report([text], load_compat())
    codes = {f.code for f in report.all_findings if f.severity != "info"}
    assert codes == {"messages.signature/cudnn-create-handle-failed"}
    # another thread's E line in the same second is its own event, and is listed as unexplained
    other = text + "E0515 10:03:24.200000 19777 gpu_driver.cc:91] Some unknown failure in the driver shim\n"
    report = diagnose_report([other], load_compat())
    assert "diagnose.unexplained-error/error-line" in {f.code for f in report.all_findings}
