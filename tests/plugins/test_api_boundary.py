"""Plugins import logwright through `logwright.plugins.api` only (the rule is stated in docs/plugins.md).

The example plugin (and so any third-party plugin written like it) may import no other logwright module.
Built-in plugins import the API too; they may also import ``logwright.core`` modules, for domain logic
the API does not re-export (Key_Shared's hash-range arithmetic), but never a name the API offers, and
never compat, the event store, the client or the plugin host's own modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.plugins import api
from logwright.plugins.host import BUILTIN_PLUGINS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin-example" / "logwright_example_plugin"
THIRD_PARTY = Path(__file__).resolve().parent / "third_party"
API = "logwright.plugins.api"


def imports(path: Path, package: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every module ``path`` imports (relative ones resolved against ``package``, the one holding ``path``)
    with the names taken."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            yield module, tuple(alias.name for alias in node.names)


def logwright_imports(path: Path, package: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(module, names) for module, names in imports(path, package)
            if module == "logwright" or module.startswith("logwright.")]


@pytest.mark.parametrize("path", sorted([*EXAMPLE.rglob("*.py"), *THIRD_PARTY.rglob("*.py")]),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_third_party_plugins_import_only_the_api_and_the_test_fixtures(path: Path) -> None:
    allowed = {API, "logwright.testing"} if path.name.startswith("test_") or path.name == "conftest.py" else {API}
    outside = [module for module, _ in logwright_imports(path, "plugin") if module not in allowed]
    assert not outside, f"{path.name} imports {outside}; a plugin imports logwright only through {API}"


@pytest.mark.parametrize("name", BUILTIN_PLUGINS)
def test_builtin_plugins_import_the_api_and_core_only_for_what_the_api_lacks(name: str) -> None:
    path = ROOT / "plugins" / f"{name}.py"
    for module, names in logwright_imports(path, "logwright.plugins"):
        if module == API:
            continue
        assert module.startswith("logwright.core."), f"{name} imports {module}: built-ins use {API} and core only"
        offered = sorted(set(names) & set(api.__all__))
        assert not offered, f"{name} imports {offered} from {module}; take them from {API}"


def test_the_api_lists_only_names_it_has() -> None:
    assert all(hasattr(api, name) for name in api.__all__)
    assert len(set(api.__all__)) == len(api.__all__)
