"""The immutable collections states hold where a sorted tuple was rebuilt for every change: a persistent map
underneath, iterated (and stored) in sorted order.

`immutables.Map` is a hash array mapped trie: setting or deleting one key shares all but a few nodes with the map
before, so a fold that adds or removes entries one event at a time stays linear, where rebuilding and re-sorting a
tuple per event was quadratic (a group's committed partitions, a transaction's pending offsets, a group's eviction
points). The sorted tuple is built once per collection, when first asked: to encode it (``codec_plain``, what the
store writes, the same bytes as the tuple stored before) or by a reader listing every entry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from immutables import Map

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class SortedPersistent(Generic[K, V, T]):
    """A `Map` of ``K`` to ``V`` whose entries are listed as a sorted tuple of ``T`` (`ordered` says how)."""

    __slots__ = ("_map", "_sorted")

    def __init__(self, entries: Map[K, V]) -> None:
        self._map = entries
        self._sorted: tuple[T, ...] | None = None

    def ordered(self) -> tuple[T, ...]:
        """The entries as stored, sorted: each collection says what an entry is."""
        raise NotImplementedError

    def sorted(self) -> tuple[T, ...]:
        """Sorted once per collection, when first asked."""
        if self._sorted is None:
            self._sorted = self.ordered()
        return self._sorted

    def codec_plain(self) -> tuple[T, ...]:
        """What the codec stores: the sorted entries."""
        return self.sorted()

    def __iter__(self) -> Iterator[T]:
        return iter(self.sorted())

    def __len__(self) -> int:
        return len(self._map)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._map == other._map

    def __hash__(self) -> int:
        return hash(self._map)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sorted()!r})"
