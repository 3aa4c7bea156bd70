"""The facts a paste can carry are declared once, next to their fields (``pasted`` in facts.py): build_facts,
provenance, the signature fact paths and the conflict names between reports all come from those declarations."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from envdoctor.diagnose import engine, fields, machines
from envdoctor.diagnose.readers.base import BARE, STRUCTURED, Acc
from envdoctor.model import facts as facts_mod

PASTES = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "pastes").rglob("*.txt"))
# the keys that open their section in a paste (a Python platform alone is no interpreter: the readers derive it
# from the host's OS)
OPENERS = {"python.platform": "python.version", "toolkit.version_full": "toolkit.version",
           "gpu.capability": "gpu.loose_name"}


def _sample(section: type, name: str) -> Any:
    hint = typing.get_type_hints(section, vars(facts_mod))[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    kind = typing.get_origin(args[0]) or args[0]
    return {str: "9.8.7", int: 7, bool: True, list: ["sm_90"]}[kind]


def _at(obj: Any, path: str) -> Any:
    for part in path.split("."):
        name, _, index = part.partition("[")
        obj = getattr(obj, name)
        if index:
            obj = obj[int(index.rstrip("]"))]
    return obj


@pytest.mark.parametrize("fact", fields.declared(), ids=lambda f: f.path)
def test_every_declared_fact_reaches_its_field_and_provenance(fact: fields.PasteFact) -> None:
    """Put the fact's reader key alone (with the key that opens its section): build_facts fills the declared field
    with it, and provenance records it where the declaration says. A field declared ``pasted`` needs no other
    edit to be read from pastes."""
    acc = Acc()
    opener = OPENERS.get(fact.keys[0])
    if opener:
        acc.put(opener, "1.2.3", BARE, "test opener")
    value = _sample(fact.section, fact.field)
    acc.put(fact.keys[0], value, STRUCTURED, "test")
    built = engine.build_facts(acc, "")
    assert _at(built, fact.path) == value
    prov = engine.provenance(acc, lambda v: "line 1")
    cited = fact.path if fact.cite == "field" else fact.keys[0]
    assert prov[cited]["value"] == (value if not isinstance(value, list) else str(value))
    assert prov[cited]["confidence"] == "high"


def test_a_second_key_fills_the_field_when_the_first_is_absent() -> None:
    acc = Acc()
    acc.put("host.os_hint", "Windows", 1, "nvidia-smi table with a Windows driver model")
    assert engine.build_facts(acc, "").host.os == "Windows"
    acc.put("host.os", "Linux", 0, "a bare word")
    assert engine.build_facts(acc, "").host.os == "Linux"  # the first declared key wins over a later one
    assert set(engine.provenance(acc, lambda v: "x")) >= {"host.os", "host.os_hint"}


def test_provenance_paths_are_the_fact_paths_checks_cite() -> None:
    """The contract pastes' JSON already carries (docs/json-schema.md): facts cited by their path, the older ones
    by their reader key."""
    paths = fields.provenance_paths()
    assert paths["torch.cuda"] == "pythons[0].torch.cuda"
    assert paths["torch.cudnn"] == "pythons[0].torch.cudnn_version"
    assert paths["driver.cuda"] == "driver.cuda_driver_version"
    assert paths["toolkit.version"] == "toolkits.on_path.version"
    assert paths["gpu.capability"] == "driver.gpus[0].compute_capability"
    assert paths["torch.cpu_build"] == "pythons[0].torch.cpu_build"  # a signal
    assert paths["host.shm_total"] == "host.shm_total" and paths["python.platform"] == "python.platform"


def test_signature_fact_paths_map_to_reader_keys() -> None:
    from envdoctor.compat.signatures import FACT_PATHS

    for path in FACT_PATHS:
        if not path.startswith("gpu."):  # a GPU a message names is matched to the GPU list (engine._gpu_from_message)
            assert fields.key_of_path(path), path


def test_conflict_names_come_from_the_labels() -> None:
    assert machines.FACT_NAMES == {
        "torch.version": "torch version", "torch.cuda": "torch CUDA version (torch.version.cuda)",
        "driver.version": "driver version", "python.version": "Python version", "toolkit.version": "nvcc version",
        "host.os": "operating system", "host.distro_name": "OS release"}


def test_every_key_a_reader_puts_is_declared(compat) -> None:
    """Over every fixture paste, each reader key is a declared field's or a listed signal: a typo in a reader key
    (a fact no field receives) fails here."""
    unknown = {}
    for p in PASTES:
        acc = engine.read_all(p.read_text(encoding="utf-8", errors="replace"), compat)
        for key in acc.values:
            if not fields.known(key):
                unknown.setdefault(key, p.name)
    assert not unknown
