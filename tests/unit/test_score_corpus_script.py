"""scripts/score_corpus.py's ``--json FILE`` never writes over an input: a glob after ``--json`` once made a
labels.json the output (a helper restored it by hand). The script refuses such a target before scoring."""

from __future__ import annotations

import importlib.util
import json

from tests.paths import REPO

spec = importlib.util.spec_from_file_location("score_corpus", REPO / "scripts" / "score_corpus.py")
assert spec is not None and spec.loader is not None
score_corpus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(score_corpus)


def _folder(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "a-001.txt").write_text("RuntimeError: CUDA error: no kernel image is available for execution on "
                                      "the device\n", encoding="utf-8")
    labels = [{"id": "a-001", "source": "o/r#1", "labels": ["GPU_ARCH_NOT_IN_TORCH_BUILD"]}]
    (folder / "labels.json").write_text(json.dumps(labels), encoding="utf-8")
    return folder


def test_a_labels_file_after_json_is_refused_and_left_as_it_was(tmp_path, capsys):
    folder = _folder(tmp_path)
    before = (folder / "labels.json").read_text(encoding="utf-8")
    assert score_corpus.main(["--json", str(folder / "labels.json"), str(folder)]) == 2
    assert (folder / "labels.json").read_text(encoding="utf-8") == before
    assert "--json takes the output file" in capsys.readouterr().err


def test_an_existing_file_that_is_not_a_score_is_refused(tmp_path, capsys):
    folder = _folder(tmp_path)
    other = tmp_path / "notes.json"
    other.write_text('{"keep": true}', encoding="utf-8")
    assert score_corpus.main(["--json", str(other), str(folder)]) == 2
    assert json.loads(other.read_text(encoding="utf-8")) == {"keep": True}
    assert "refusing" in capsys.readouterr().err


def test_a_new_or_earlier_output_is_written(tmp_path):
    folder = _folder(tmp_path)
    out = tmp_path / "scores.json"
    assert score_corpus.main([str(folder), "--json", str(out)]) == 0
    first = json.loads(out.read_text(encoding="utf-8"))
    assert [r["id"] for r in first] == ["a-001"] and "right" in first[0]
    assert score_corpus.main([str(folder), "--json", str(out)]) == 0  # an earlier output may be replaced
