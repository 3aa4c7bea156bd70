"""scripts/signature_precision.py (issue 42, precision audit): per message row that fired, how often it was right,
wrong as an error, wrong as a warning, and given on a HEALTHY row. The counting is checked on a small fake set
whose every figure is known, then once through the real `diagnose` on a two-paste folder."""

from __future__ import annotations

import importlib.util
import json
import sys

from tests.paths import REPO

spec = importlib.util.spec_from_file_location("signature_precision", REPO / "scripts" / "signature_precision.py")
assert spec is not None and spec.loader is not None
precision = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = precision  # its dataclass looks its module up
spec.loader.exec_module(precision)

SIG_A = "messages.signature/row-a"
SIG_A_ALSO = "messages.signature/row-a/cuda-variant-mixed"
STATUS = "messages.status-codes/cuda-runtime.cudaerrorillegaladdress"

FAKE = [
    # right error; a second machine's copy of the same finding counts once; another check's finding is not a row
    ({"id": "1", "labels": ["NO_GPU_VISIBLE"]}, "f/1",
     [("NO_GPU_VISIBLE", "error", SIG_A, "medium"), ("NO_GPU_VISIBLE", "warning", SIG_A, "low"),
      ("NO_GPU_VISIBLE", "error", "driver.gpus-visible/none", "high")]),
    # wrong error, and its further cause a wrong low warning
    ({"id": "2", "labels": ["MIG_ENABLED"], "root_cause": "MIG"}, "f/2",
     [("NO_GPU_VISIBLE", "error", SIG_A, "medium"), ("CUDA_VARIANT_MIXED", "warning", SIG_A_ALSO, "low")]),
    # on a HEALTHY row: an error is wrong; an info of a neutral category is not
    ({"id": "3", "labels": ["HEALTHY"]}, "f/3",
     [("NO_GPU_VISIBLE", "error", SIG_A, "medium"), ("HEALTHY", "info", STATUS, "medium")]),
    # a NOTE info on a labelled row: fired, not right, not wrong
    ({"id": "4", "labels": ["SHM_TOO_SMALL"]}, "f/4", [("NOTE", "info", STATUS, "medium")]),
    # the further cause right
    ({"id": "5", "labels": ["CUDA_VARIANT_MIXED"]}, "f/5", [("CUDA_VARIANT_MIXED", "warning", SIG_A_ALSO, "low")]),
]


def test_each_figure_of_the_fake_set():
    got = precision.tally(FAKE)
    assert set(got) == {SIG_A, SIG_A_ALSO, STATUS}
    a = got[SIG_A]
    assert (a.fired, a.right, a.wrong_errors, a.wrong_warnings, a.healthy) == (3, 1, 2, 0, 1)
    assert a.given == {"error/medium": 3} and a.categories == {"NO_GPU_VISIBLE": 3}
    assert [w.split(":")[0] for w in a.wrong_on] == ["f/2", "f/3"] and "root cause: MIG" in a.wrong_on[0]
    also = got[SIG_A_ALSO]
    assert (also.fired, also.right, also.wrong_errors, also.wrong_warnings, also.healthy) == (2, 1, 0, 1, 0)
    st = got[STATUS]
    assert (st.fired, st.right, st.wrong_errors, st.wrong_warnings, st.healthy) == (2, 1, 0, 0, 1)
    assert st.table == "status" and a.table == "signature"
    # wrong errors first, then wrong warnings, then how often fired
    assert [t.code for t in precision.ordered(got)] == [SIG_A, SIG_A_ALSO, STATUS]


def test_run_reads_the_labelled_folders_and_prints_the_table(tmp_path, capsys):
    folder = tmp_path / "reports"
    folder.mkdir()
    nki = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    (folder / "a-001.txt").write_text(nki, encoding="utf-8")
    (folder / "a-002.txt").write_text(nki, encoding="utf-8")
    labels = [{"id": "a-001", "source": "o/r#1", "labels": ["GPU_ARCH_NOT_IN_TORCH_BUILD"]},
              {"id": "a-002", "source": "o/r#2", "labels": ["HEALTHY"], "root_cause": "a made-up healthy row"}]
    (folder / "labels.json").write_text(json.dumps(labels), encoding="utf-8")
    out = tmp_path / "precision.json"
    assert precision.main([str(folder), "--why", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = {r["code"]: r for r in json.loads(out.read_text(encoding="utf-8"))}
    row = rows["messages.signature/no-kernel-image"]
    assert (row["fired"], row["right"], row["wrong_errors"], row["healthy"]) == (2, 1, 1, 1), row
    assert "reports/a-002: ['HEALTHY'] got GPU_ARCH_NOT_IN_TORCH_BUILD (error)" in printed
    assert precision.main([str(folder), "--json", str(folder / "labels.json")]) == 2  # never over an input
