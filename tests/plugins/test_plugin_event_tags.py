"""Plugins' events reach the codec through the host: in their tag range they are read and written, and a
clash or a tag out of range stops the type registry (so the broker) from being built, naming the classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from logwright.core.events import Event
from logwright.core.projection import Projection
from logwright.plugins.host import PluginHost
from logwright.plugins.registrars import ProjectionRegister
from logwright.plugins.spec import hookimpl


@dataclass(frozen=True, slots=True)
class Visited(Event):
    TAG: ClassVar[int] = 10_100
    page: str


@dataclass(frozen=True, slots=True)
class Clicked(Event):
    TAG: ClassVar[int] = 10_100
    button: str


@dataclass(frozen=True, slots=True)
class LowTagged(Event):
    TAG: ClassVar[int] = 49
    page: str


class Folding:
    """A plugin whose projection folds ``event_type`` under ``name``."""

    def __init__(self, name: str, event_type: type[Event]) -> None:
        self.projection: Projection[Any] = Projection(name, lambda event: (), lambda state, event, key: state,
                                                      frozenset({event_type}))
        self.event_type = event_type

    @hookimpl
    def logwright_register_projections(self, register: ProjectionRegister) -> None:
        register.add(self.projection, [self.event_type])


def with_plugins(host: PluginHost, *plugins: tuple[str, Folding]) -> PluginHost:
    for name, plugin in plugins:
        host.register(plugin, name, host.plugins()[0].source)
    return host


def test_a_plugin_event_in_the_plugin_range_round_trips(host: PluginHost) -> None:
    types = with_plugins(host, ("visits", Folding("visits", Visited))).type_registry()
    assert types.decode_event(types.encode_event(7, Visited("/")), "test") == (7, Visited("/"))


def test_two_plugins_claiming_one_tag_are_refused_naming_both_classes(host: PluginHost) -> None:
    with_plugins(host, ("visits", Folding("visits", Visited)), ("clicks", Folding("clicks", Clicked)))
    with pytest.raises(ValueError, match=r"tag 10100 of .*\.Clicked is taken by .*\.Visited"):
        host.type_registry()


def test_a_plugin_event_below_the_plugin_range_is_refused(host: PluginHost) -> None:
    with_plugins(host, ("low", Folding("low", LowTagged)))
    with pytest.raises(ValueError, match=r"plugin event .*\.LowTagged has tag 49, outside the tags reserved for "
                                         r"plugin events \(10000-19999\)"):
        host.type_registry()
