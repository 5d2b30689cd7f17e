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
from typing import Any, ClassVar, Generic, Self, TypeVar, cast, overload

Entry = TypeVar("Entry")


class FlatSequence(Sequence[Entry], Generic[Entry]):
    """An immutable sequence of ``ENTRY`` dataclasses (integer fields only) that the codec stores flat.

    Both forms are kept once made, each made from the other only when asked for: a sequence read from a store is
    entries only when read (50,000 aborted transactions: 45 ms to build as dataclasses, at every start), and one the
    codec has flattened, or one extended by `_with` from a flattened one, is not flattened again (5 ms at 50,000, on
    every transaction of the partition, which rewrites the row)."""

    ENTRY: ClassVar[type[Any]]
    _WIDTH: ClassVar[int]
    _FIELDS: ClassVar[Callable[[Any], tuple[int, ...]]]
    __slots__ = ("_entries", "_flat")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = [field.name for field in dataclasses.fields(cls.ENTRY)]
        if len(names) < 2:
            raise TypeError(f"{cls.__name__}: a FlatSequence's entries need at least two fields")
        cls._WIDTH = len(names)
        cls._FIELDS = operator.attrgetter(*names)  # 2+ fields: a tuple

    def __init__(self, entries: Iterable[Entry | int] = ()) -> None:
        items = tuple(entries)
        self._entries: tuple[Entry, ...] | None
        self._flat: tuple[int, ...] | None
        if items and type(items[0]) is int:  # as stored: flat integers
            if len(items) % self._WIDTH:
                raise ValueError(f"{type(self).__name__}: {len(items)} integers are not whole entries of "
                                 f"{self._WIDTH}")
            self._entries, self._flat = None, cast("tuple[int, ...]", items)
        else:
            self._entries, self._flat = cast("tuple[Entry, ...]", items), None

    def _with(self, entry: Entry) -> tuple[tuple[Entry, ...], tuple[int, ...] | None]:
        """The entries with ``entry`` after them, and their flat form when this one has it already: what a subclass
        builds itself from to add an entry (`_built`)."""
        return (*self._listed(), entry), None if self._flat is None else self._flat + type(self)._FIELDS(entry)

    @classmethod
    def _built(cls, entries: tuple[Entry, ...], flat: tuple[int, ...] | None) -> Self:
        made = cls.__new__(cls)
        made._entries, made._flat = entries, flat
        return made

    def _listed(self) -> tuple[Entry, ...]:
        entries = self._entries
        if entries is None:
            flat, width, entry = cast("tuple[int, ...]", self._flat), self._WIDTH, self.ENTRY
            entries = self._entries = tuple(entry(*flat[at:at + width]) for at in range(0, len(flat), width))
        return entries

    def codec_plain(self) -> tuple[int, ...]:
        flat = self._flat
        if flat is None:
            fields = type(self)._FIELDS
            flat = self._flat = tuple(value for entry in cast("tuple[Entry, ...]", self._entries)
                                      for value in fields(entry))
        return flat

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Entry, ...]: ...

    def __getitem__(self, index: int | slice) -> Entry | tuple[Entry, ...]:
        return self._listed()[index]

    def __len__(self) -> int:
        return len(self._entries) if self._entries is not None else len(cast("tuple[int, ...]", self._flat)) // \
            self._WIDTH

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._listed())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FlatSequence):
            return type(other) is type(self) and self._listed() == other._listed()
        return isinstance(other, tuple) and self._listed() == other

    def __hash__(self) -> int:
        return hash(self._listed())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._listed()!r})"
