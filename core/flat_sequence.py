"""A state's list of small all-integer dataclasses, stored as one flat tuple of integers.

The codec writes a dataclass nested in a state as an extension of its own (a msgpack call and a tag each), which is
what a list of thousands of entries, or a row written on every produced batch, cannot afford: a partition's 50,000
aborted transactions took 64 ms to encode, and an idempotent producer's last five batches 6 us a batch (0.5 flat).
A `FlatSequence` reads like a tuple of its entries and hands the codec ``codec_plain``: the fields of every entry,
one after another. It is built from either form, so a row written before (a tuple of dataclasses) reads the same.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar, cast, overload

Entry = TypeVar("Entry")


class FlatSequence(Sequence[Entry], Generic[Entry]):
    """An immutable sequence of ``ENTRY`` dataclasses (integer fields only) that the codec stores flat."""

    ENTRY: ClassVar[type[Any]]
    _WIDTH: ClassVar[int]
    _FIELDS: ClassVar[Callable[[Any], tuple[int, ...]]]
    __slots__ = ("_entries",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = [field.name for field in dataclasses.fields(cls.ENTRY)]
        if len(names) < 2:
            raise TypeError(f"{cls.__name__}: a FlatSequence's entries need at least two fields")
        cls._WIDTH = len(names)
        cls._FIELDS = operator.attrgetter(*names)  # 2+ fields: a tuple

    def __init__(self, entries: Iterable[Entry | int] = ()) -> None:
        items = tuple(entries)
        if items and type(items[0]) is int:  # as stored: flat integers
            flat = cast("tuple[int, ...]", items)
            width, entry = self._WIDTH, self.ENTRY
            items = tuple(entry(*flat[at:at + width]) for at in range(0, len(flat), width))
        self._entries = cast("tuple[Entry, ...]", items)

    def codec_plain(self) -> tuple[int, ...]:
        fields = type(self)._FIELDS
        return tuple(value for entry in self._entries for value in fields(entry))

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Entry, ...]: ...

    def __getitem__(self, index: int | slice) -> Entry | tuple[Entry, ...]:
        return self._entries[index]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FlatSequence):
            return type(other) is type(self) and self._entries == other._entries
        return isinstance(other, tuple) and self._entries == other

    def __hash__(self) -> int:
        return hash(self._entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._entries!r})"
