"""envdoctor.domain.fastclass behaves as the standard dataclass for everything envdoctor's records use."""

from __future__ import annotations

import dataclasses
import pathlib
from dataclasses import field
from typing import List, Optional

import pytest

from envdoctor.domain import fastclass


def _pair(frozen: bool):
    """The same class body decorated both ways: (standard, fast)."""

    def body():
        class Rec:
            name: str
            size: int = 3
            tags: List[str] = field(default_factory=list)
            hidden: Optional[str] = field(default=None, repr=False)
            ignored: int = field(default=0, compare=False)
            derived: int = field(default=7, init=False)

        return Rec

    return dataclasses.dataclass(frozen=frozen)(body()), fastclass.dataclass(frozen=frozen)(body())


@pytest.mark.parametrize("frozen", [True, False])
def test_construction_repr_eq_and_replace_match_the_standard_decorator(frozen):
    std, fast = _pair(frozen)
    for args, kwargs in [(("a",), {}), (("a", 5), {}), ((), {"name": "b", "tags": ["x"]}),
                         (("c",), {"hidden": "h", "ignored": 9})]:
        s, f = std(*args, **kwargs), fast(*args, **kwargs)
        assert repr(f).replace("test_construction_repr_eq_and_replace_match_the_standard_decorator.<locals>.", "") \
            == repr(s).replace("test_construction_repr_eq_and_replace_match_the_standard_decorator.<locals>.", "")
        assert dataclasses.asdict(f) == dataclasses.asdict(s)
        assert f == fast(*args, **kwargs)
        assert f.derived == 7
        assert dataclasses.replace(f, size=11).size == 11
        assert dataclasses.replace(f, size=11) != f
    # compare=False fields do not take part in ==, as in the standard decorator
    assert fast("a", ignored=1) == fast("a", ignored=2)
    assert std("a", ignored=1) == std("a", ignored=2)
    # another class with the same fields is never equal
    assert fast("a") != std("a")
    assert (fast("a") == std("a")) is False
    # factories run per instance
    one, two = fast("a"), fast("a")
    assert one.tags is not two.tags


@pytest.mark.parametrize("bad", [lambda c: c(), lambda c: c("a", 1, [], None, 0, 9), lambda c: c("a", name="b"),
                                 lambda c: c("a", nope=1), lambda c: c("a", derived=1)])
def test_wrong_arguments_raise_typeerror_as_the_standard_one_does(bad):
    std, fast = _pair(True)
    with pytest.raises(TypeError):
        bad(std)
    with pytest.raises(TypeError):
        bad(fast)


def test_frozen_records_refuse_assignment_and_hash_their_compared_fields():
    _std, fast = _pair(True)

    @fastclass.dataclass(frozen=True)
    class Point:
        x: int
        y: int = field(default=0, compare=False)

    p = fast("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.name = "b"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.name
    assert hash(Point(1, 2)) == hash(Point(1, 3)) == hash((1,))
    assert {Point(1), Point(1)} == {Point(1)}
    with pytest.raises(TypeError):  # a list field: unhashable, as with the standard decorator
        hash(p)


def test_mutable_records_are_unhashable_and_assignable():
    _std, fast = _pair(False)
    r = fast("a")
    r.size = 9
    assert r.size == 9
    with pytest.raises(TypeError):
        hash(r)


def test_methods_of_the_class_body_and_post_init_are_kept():
    seen = []

    @fastclass.dataclass(frozen=True)
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __hash__(self) -> int:
            return 42

        def __post_init__(self) -> None:
            seen.append(self.a)
            if self.a < 0:
                raise ValueError("negative")

    one = Own(1)
    assert repr(one) == "own" and hash(one) == 42 and seen == [1]
    with pytest.raises(ValueError):
        Own(-1)


def test_subclasses_add_fields_and_keep_their_own_spec():
    @fastclass.dataclass(frozen=True)
    class Base:
        a: int
        b: int = 2

    @fastclass.dataclass(frozen=True)
    class Child(Base):
        c: int = 3

    assert Child(1).b == 2 and Child(1, 5, 6).c == 6
    assert Base(1) != Child(1)
    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b", "c"]
    assert Base(1, 4) == Base(1, 4)


def test_a_record_holding_itself_repr_does_not_recurse():
    @fastclass.dataclass
    class Node:
        other: object = None

    n = Node()
    n.other = n
    assert repr(n) == "test_a_record_holding_itself_repr_does_not_recurse.<locals>.Node(other=...)"


def test_envdoctor_declares_no_record_with_the_standard_decorator():
    """One decorator for the package's records (the import cost, see the module docstring), the payload aside
    (it runs in the judged interpreter and defines no records)."""
    import re

    import envdoctor

    root = pathlib.Path(envdoctor.__file__).parent
    standard = re.compile(r"^from dataclasses import [^\n]*\bdataclass\b|@dataclasses\.dataclass", re.M)
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if "_payload" not in p.parts and p.name != "fastclass.py" and standard.search(p.read_text("utf-8"))]
    assert offenders == []


def test_type_checkers_see_the_records_fields(tmp_path):
    # the package ships py.typed: mypy must see a record's constructor with its fields (it saw none: every call
    # with arguments was "Too many arguments") and still catch a wrong one
    pytest.importorskip("mypy", reason="mypy is not installed (pip install mypy)")
    import subprocess
    import sys

    from tests.paths import REPO

    good = tmp_path / "good.py"
    good.write_text("from envdoctor.model.facts import Gpu, PythonEnv\n"
                    "from envdoctor.model.findings import Evidence\n"
                    "g = Gpu(index=0, name='NVIDIA H100 80GB HBM3')\n"
                    "e = Evidence('driver.version', '550.54.14', expected='>= 550')\n"
                    "p = PythonEnv(executable='/usr/bin/python3')\n"
                    "n: int = g.index\n")
    bad = tmp_path / "bad.py"
    bad.write_text("from envdoctor.model.facts import Gpu\ng = Gpu(index=0, no_such_field=1)\n")
    base = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports", "--no-incremental",
            "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}"]
    env = {**__import__("os").environ, "MYPYPATH": str(REPO)}
    ok = subprocess.run(base + [str(good)], capture_output=True, text=True, timeout=600, cwd=str(tmp_path), env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    no = subprocess.run(base + [str(bad)], capture_output=True, text=True, timeout=600, cwd=str(tmp_path), env=env)
    assert no.returncode == 1 and 'Unexpected keyword argument "no_such_field"' in no.stdout, no.stdout
