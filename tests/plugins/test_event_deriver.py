"""Which ``logwright_derive_events`` implementations a staged change asks (`derives_from`): one that declares
nothing is asked about every change; one that declares event types or batches only about changes holding them
(subclasses included); in pluggy's order either way; and with none concerned, no `StagedChange` is built."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events import LogTruncated, OffsetCommitted
from logwright.core.events.base import Event
from logwright.core.log.index_hooks import StagedChange
from logwright.plugins.api import derives_from, hookimpl, names_partition
from logwright.plugins.event_deriver import EventDeriver
from logwright.plugins.host import PluginHost

COMMIT = OffsetCommitted("g", "t", 0, 5, -1, "", 1)
TRUNCATION = LogTruncated(7, 10)


@dataclass(frozen=True)
class Renamed(LogTruncated):
    """A subclass of a declared type (a plugin's own event may extend a core one)."""

    TAG: ClassVar[int] = 9_990


class Recorder:
    """Three third-party derivers recording what they were asked about."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, tuple[type[Event], ...], int]] = []

    def note(self, name: str, staged: StagedChange) -> None:
        self.asked.append((name, tuple(map(type, staged.events)), len(staged.batches)))


def deriver_with(recorder: Recorder) -> EventDeriver:
    class Everything:
        @hookimpl
        def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
            recorder.note("everything", staged)
            return None

    class Truncations:
        @hookimpl
        @derives_from((LogTruncated,), batches=False)
        def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
            recorder.note("truncations", staged)
            return [COMMIT]

    class Batches:
        @hookimpl
        @derives_from(lambda kind: False, batches=True)
        def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
            recorder.note("batches", staged)
            return None

    host = PluginHost.load(installed=False, disabled=["delayed_delivery", "pop", "backlog_quota"], extra=[
        ("everything", Everything()), ("truncations", Truncations()), ("batches", Batches())])
    deriver = host.event_deriver()
    assert isinstance(deriver, EventDeriver)
    return deriver


def view(events: Sequence[Event], batches: Sequence[object]) -> StagedChange:
    return StagedChange(events, [object()] * len(batches), 0, lambda partition_id: 0, lambda name: {}, {})  # type: ignore[list-item]


def test_an_undeclared_implementation_is_asked_about_everything_a_declared_one_only_about_its_own() -> None:
    recorder = Recorder()
    deriver = deriver_with(recorder)
    assert deriver.derive([COMMIT], [], view) == []
    assert recorder.asked == [("everything", (OffsetCommitted,), 0)]
    recorder.asked.clear()
    assert deriver.derive([COMMIT, Renamed(7, 11)], [], view) == [COMMIT]
    assert recorder.asked == [("truncations", (OffsetCommitted, Renamed), 0),  # pluggy's order: the last registered
                              ("everything", (OffsetCommitted, Renamed), 0)]  # first
    recorder.asked.clear()
    assert deriver.derive([], ["a batch"], view) == []
    assert recorder.asked == [("batches", (), 1), ("everything", (), 1)]


def test_a_change_no_implementation_reads_builds_no_staged_change() -> None:
    built: list[int] = []

    def counting_view(events: Sequence[Event], batches: Sequence[object]) -> StagedChange:
        built.append(1)
        return view(events, batches)

    class Truncations:
        @hookimpl
        @derives_from(LogTruncated, batches=False)  # one type alone, not taken for a predicate
        def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
            return None

    host = PluginHost.load(installed=False, disabled=["delayed_delivery", "pop", "backlog_quota"],
                           extra=[("truncations", Truncations())])
    deriver = host.event_deriver()
    assert deriver is not None
    assert deriver.derive([COMMIT], ["a batch"], counting_view) == []
    assert built == []
    assert deriver.derive([TRUNCATION], [], counting_view) == []
    assert built == [1]


def test_the_built_ins_declare_what_they_read() -> None:
    """An offset commit concerns only the backlog quota (an evicted group's commits); a truncation only delayed
    delivery (its due entries); a backlog eviction pop too; a batch delayed delivery."""
    deriver = PluginHost.load(installed=False).event_deriver()
    assert isinstance(deriver, EventDeriver)
    names = {index: function.__module__.rsplit(".", 1)[-1] for index, function in enumerate(deriver._functions)}

    def asked(events: Sequence[Event], batches: bool) -> set[str]:
        mask = deriver._concerned(events, batches)
        return {name for index, name in names.items() if mask >> index & 1}

    assert asked([COMMIT], False) == {"backlog_quota"}
    assert asked([TRUNCATION], False) == {"delayed_delivery"}
    assert asked([], True) == {"delayed_delivery"}
    assert names_partition(LogTruncated) and not names_partition(OffsetCommitted)


def test_an_implementation_deriving_from_a_projections_rows_is_not_asked_while_it_is_empty() -> None:
    """``while_rows``: left out while the projection it names holds no rows, asked again once it holds one; a caller
    that cannot tell (no ``rows``) asks it."""
    asked: list[int] = []

    class Evictions:
        @hookimpl
        @derives_from(OffsetCommitted, batches=False, while_rows="eviction_points")
        def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
            asked.append(len(staged.rows("eviction_points")))
            return [TRUNCATION]

    host = PluginHost.load(installed=False, disabled=["delayed_delivery", "pop", "backlog_quota"],
                           extra=[("evictions", Evictions())])
    deriver = host.event_deriver()
    assert deriver is not None
    projections: dict[str, dict[str, object]] = {"eviction_points": {}}

    def rows_view(events: Sequence[Event], batches: Sequence[object]) -> StagedChange:
        return StagedChange(events, [], 0, lambda partition_id: 0, projections.__getitem__, {})

    assert deriver.derive([COMMIT], [], rows_view, projections.__getitem__) == []
    assert asked == []
    projections["eviction_points"]["g"] = object()
    assert deriver.derive([COMMIT], [], rows_view, projections.__getitem__) == [TRUNCATION]
    assert asked == [1]
    projections["eviction_points"].clear()
    assert deriver.derive([COMMIT], [], rows_view) == [TRUNCATION]
    assert asked == [1, 0]
    assert deriver.derive([TRUNCATION], [], rows_view, projections.__getitem__) == []  # not its event type either
    assert asked == [1, 0]


def test_the_backlog_quota_is_asked_about_commits_only_while_a_group_has_an_eviction_point() -> None:
    from logwright.core.backlog.eviction_points import EVICTION_POINTS

    deriver = PluginHost.load(installed=False).event_deriver()
    assert isinstance(deriver, EventDeriver)
    (declared,) = [declared for function, declared in zip(deriver._functions, deriver._declared, strict=True)
                   if function.__module__.endswith("backlog_quota")]
    assert declared is not None and declared.while_rows == EVICTION_POINTS.name
