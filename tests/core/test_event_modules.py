"""The event modules: one per domain, no import cycle, every class re-exported and listed once."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import logwright.core.events as events
from logwright.core.events import ALL_EVENT_TYPES, Event

PACKAGE = "logwright.core.events"
MODULES = {path.stem: path for path in Path(events.__file__).parent.glob("*.py") if path.stem != "__init__"}


def imported_event_modules(path: Path) -> set[str]:
    """The event modules ``path`` imports (the package itself counts as ``__init__``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
        for name in names:
            if name == PACKAGE:
                found.add("__init__")
            elif name.startswith(PACKAGE + "."):
                found.add(name.removeprefix(PACKAGE + "."))
    return found


def test_base_imports_no_other_event_module_and_none_imports_the_package() -> None:
    assert imported_event_modules(MODULES["base"]) == set()
    assert {name for name, path in MODULES.items() if "__init__" in imported_event_modules(path)} == set()


def test_the_event_modules_import_each_other_without_a_cycle() -> None:
    graph = {name: imported_event_modules(path) for name, path in MODULES.items()}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"event modules import each other in a cycle: {error.args[1]}") from error
    assert order[0] == "base"


def test_every_event_class_is_re_exported_and_every_concrete_one_listed_once() -> None:
    defined = {cls for module in MODULES
               for _, cls in inspect.getmembers(importlib.import_module(f"{PACKAGE}.{module}"), inspect.isclass)
               if issubclass(cls, Event) and cls.__module__ == f"{PACKAGE}.{module}"}
    assert {cls for cls in defined if getattr(events, cls.__name__) is cls} == defined
    assert set(events.__all__) >= {cls.__name__ for cls in defined}
    assert len(ALL_EVENT_TYPES) == len(set(ALL_EVENT_TYPES))
    assert set(ALL_EVENT_TYPES) == {cls for cls in defined if cls.TAG}
    for cls in ALL_EVENT_TYPES:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
