"""``dataclass`` for envdoctor's records, without per-class generated code: the same fields, defaults, factories,
``__post_init__``, ``replace``, ``asdict``, equality, hashing and frozenness, at no compile cost.

Why: the standard decorator writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and, frozen,
``__setattr__``, ``__delattr__``, ``__hash__``) as source text and ``exec``s it: about 1.6 ms a class on
CPython 3.11. envdoctor declares over a hundred such records (facts, findings, compat rows) and every command
imports most of them, so that was 0.16 s of each run's 0.46 s of imports, before any work (measured, see
docs/measurements.md, "First run"). Here ``dataclasses.dataclass`` still collects the fields (so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work unchanged) but generates nothing;
one shared implementation of each method, written once below, reads a per-class spec. An instance costs a
few microseconds more to build; a run builds hundreds, not hundreds of thousands.

Semantics kept from the standard library (tests/unit/domain/test_fastclass.py checks each against it):
positional and keyword arguments in field order, defaults and ``default_factory`` per call, ``init=False``
fields set from their default, ``__post_init__`` after; ``repr`` of the ``repr=True`` fields; ``==`` between
instances of the very same class over the ``compare=True`` fields as tuples (``NotImplemented`` otherwise);
frozen: assignment and deletion raise ``dataclasses.FrozenInstanceError`` and ``hash`` covers the compared
fields; not frozen: unhashable (``__hash__ = None``), as ``eq=True`` makes it. A method the class body defines
itself is kept. Not supported (envdoctor uses none): ``order``, ``unsafe_hash``, ``kw_only``, ``slots``,
``InitVar``, ``ClassVar`` fields with defaults in ``__init__``.

A hierarchy is all of this decorator or all of the standard one: ``dataclasses`` sees these classes as not
frozen (the freezing is done here), and refuses to mix frozen and non-frozen classes in one hierarchy.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

_MISSING = dataclasses.MISSING
_set = object.__setattr__


def _spec(cls: type) -> Tuple[Tuple[Tuple[str, Any, Any], ...], Tuple[Tuple[str, Any, Any], ...]]:
    """(init fields, init=False fields), each as (name, default, factory)."""
    init, rest = [], []
    for f in dataclasses.fields(cls):
        (init if f.init else rest).append((f.name, f.default, f.default_factory))
    return tuple(init), tuple(rest)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    spec = cls.__dict__.get("__fastclass_spec__") or _spec_of(cls)
    init, rest = spec
    if len(args) > len(init):
        raise TypeError(f"{cls.__qualname__}.__init__() takes {len(init) + 1} positional arguments but "
                        f"{len(args) + 1} were given")
    for i, (name, default, factory) in enumerate(init):
        if i < len(args):
            if name in kwargs:
                raise TypeError(f"{cls.__qualname__}.__init__() got multiple values for argument {name!r}")
            value = args[i]
        elif name in kwargs:
            value = kwargs.pop(name)
        elif default is not _MISSING:
            value = default
        elif factory is not _MISSING:
            value = factory()
        else:
            raise TypeError(f"{cls.__qualname__}.__init__() missing 1 required positional argument: {name!r}")
        _set(self, name, value)
    if kwargs:
        name = next(iter(kwargs))
        raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}")
    for name, default, factory in rest:
        if default is not _MISSING:
            _set(self, name, default)
        elif factory is not _MISSING:
            _set(self, name, factory())
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _spec_of(cls: type) -> Any:
    spec = _spec(cls)
    type.__setattr__(cls, "__fastclass_spec__", spec)
    return spec


def _compared(cls: type) -> Tuple[str, ...]:
    names = cls.__dict__.get("__fastclass_compare__")
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.compare)
        type.__setattr__(cls, "__fastclass_compare__", names)
    return names


def _hashed(cls: type) -> Tuple[str, ...]:
    names = cls.__dict__.get("__fastclass_hash__")
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if (f.compare if f.hash is None else f.hash))
        type.__setattr__(cls, "__fastclass_hash__", names)
    return names


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _compared(self.__class__)
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in _hashed(self.__class__)))


_repr_running: set = set()


def _repr(self: Any) -> str:
    key = (id(self), threading.get_ident())
    if key in _repr_running:  # a record that holds itself, as reprlib.recursive_repr answers
        return "..."
    _repr_running.add(key)
    try:
        parts = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    finally:
        _repr_running.discard(key)
    return f"{self.__class__.__qualname__}({parts})"


def _frozen_methods(cls: type) -> Tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in cls.__dataclass_fields__:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in cls.__dataclass_fields__:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _process(cls: type, frozen: bool) -> type:
    own = set(cls.__dict__)
    # a __hash__ of the class body's own; Python's None for a body that defines __eq__ alone is not one
    class_hash = cls.__dict__.get("__hash__", _MISSING)
    explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False)
    methods = {"__init__": _init, "__repr__": _repr, "__eq__": _eq}
    if frozen:
        methods["__setattr__"], methods["__delattr__"] = _frozen_methods(cls)
    for name, fn in methods.items():
        if name not in own:
            setattr(cls, name, fn)
    if not explicit_hash:
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
    return cls


if TYPE_CHECKING:
    # for type checkers (the package ships py.typed): the records are the dataclasses they are, so that mypy and
    # pyright see their fields and their constructors' arguments; at run time, the decorator below
    from dataclasses import dataclass as dataclass
else:
    def dataclass(cls: Optional[type] = None, *, frozen: bool = False) -> Any:
        """``@dataclass`` or ``@dataclass(frozen=True)``: see the module docstring."""
        if cls is None:
            return lambda c: _process(c, frozen)
        return _process(cls, frozen)
