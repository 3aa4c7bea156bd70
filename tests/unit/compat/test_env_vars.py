"""compat_data/env_vars.json: every row parses, is cited and dated; the rule language refuses a bad row at load."""

from __future__ import annotations

import copy
import datetime
import json
import shutil
from pathlib import Path
from typing import Any, Dict

import pytest

from envdoctor.checks.host_environment import ENVIRONMENT
from envdoctor.compat import CompatDataError, bundled_dir, load_compat
from envdoctor.compat.env_vars import OPERATORS, parse_env_vars
from envdoctor.model.catalogue import CATEGORIES

RAW: Dict[str, Any] = json.loads((bundled_dir() / "env_vars.json").read_text(encoding="utf-8"))


def test_every_row_parses_is_cited_and_dated():
    table = load_compat().env_vars
    assert table is not None and len(table.rows) == len(RAW["rows"])
    for raw, row in zip(RAW["rows"], table.rows):
        assert row.source.startswith("https://"), row.id
        assert datetime.date.fromisoformat(row.as_of) <= datetime.date.fromisoformat(RAW["as_of"])
        assert row.op in OPERATORS and row.does and row.why and row.fix
        assert (row.category or ENVIRONMENT.category) in ENVIRONMENT.all_categories  # the check declares it
        assert (row.category or ENVIRONMENT.category) in CATEGORIES
        assert raw["variable"] == row.variable
    # the variables the issue names, each judged by at least one row
    names = set(table.names())
    assert {"CUDA_LAUNCH_BLOCKING", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
            "TORCH_CUDA_ARCH_LIST", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
            "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME", "PYTORCH_CUDA_ALLOC_CONF"} <= names


def _row(**change: Any) -> Dict[str, Any]:
    doc = copy.deepcopy(RAW)
    row = doc["rows"][0]
    for k, v in change.items():
        if v is None:
            row.pop(k, None)
        else:
            row[k] = v
    return doc


@pytest.mark.parametrize("change,words", [
    ({"when": {"op": "greater_than", "value": "1"}}, "when.op 'greater_than' is not one of"),
    ({"when": {"op": "equals"}}, "needs a string value"),
    ({"when": {"op": "in", "value": []}}, "needs a non-empty list"),
    ({"when": {"op": "above_cores", "value": "8"}}, "takes no value"),
    ({"when": {"op": "equals", "value": "1", "unset": True}}, "when.unset is only for op not_in"),
    ({"when": {"op": "equals", "value": "1", "case": "any"}}, "unknown keys"),
    ({"when": "CUDA_LAUNCH_BLOCKING == 1"}, "when must be an object"),
    ({"harm": "bad"}, "harm 'bad' is not one of break, slow, noise"),
    ({"severity": "fatal"}, "severity 'fatal'"),
    ({"fix": []}, "fix must be a non-empty list"),
    ({"fix": [{"run": "reboot"}]}, "neither"),
    ({"fix": [{"export": "{threads}"}]}, "{threads} is not one of"),
    ({"variable": "cuda launch blocking"}, "is not an environment variable name"),
    ({"id": "CUDA_LAUNCH_BLOCKING"}, "becomes a finding code"),
    ({"category": "SLOW"}, "category 'SLOW' is not in the catalogue"),
    ({"only_if": ["on_tuesdays"]}, "only_if 'on_tuesdays'"),
    ({"otherwise": "info"}, "needs an only_if"),
    ({"source": "a forum post"}, "names no URL"),
    ({"as_of": "last week"}, "Invalid isoformat"),
    ({"why": None}, "missing field 'why'"),
])
def test_the_rule_language_rejects_bad_rows(change, words):
    with pytest.raises(CompatDataError) as info:
        parse_env_vars(_row(**change))
    msg = str(info.value)
    assert msg.startswith("env_vars.json: rows[0] (id "), msg
    assert words in msg, msg


def test_duplicate_ids_are_refused():
    doc = copy.deepcopy(RAW)
    doc["rows"].append(copy.deepcopy(doc["rows"][0]))
    with pytest.raises(CompatDataError, match=r"duplicates rows\[0\]"):
        parse_env_vars(doc)


def test_the_loader_refuses_a_bad_table(tmp_path: Path):
    data = tmp_path / "compat_data"
    shutil.copytree(bundled_dir(), data)
    doc = _row(when={"op": "equals", "value": 1})
    (data / "env_vars.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CompatDataError, match=r"^env_vars\.json: rows\[0\] \(id cuda-launch-blocking\): when\.op "
                                              r"equals needs a string value"):
        load_compat(data)
