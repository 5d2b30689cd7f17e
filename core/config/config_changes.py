"""Config alterations as decisions: what a request changes in a resource's overrides, validated.

Two request styles exist. The legacy AlterConfigs replaces a resource's whole override set: a key the
request leaves out goes back to its default. IncrementalAlterConfigs names one operation per key (SET,
DELETE, and APPEND/SUBTRACT for list-typed keys, applied to the current value, the default if none is
set). Both produce one `ConfigChanged` event, or none when nothing would change, so replaying the log
gives the same overrides and a no-op request leaves no trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import IntEnum

from logwright.core.config.configs import ConfigRegistry
from logwright.core.errors import InvalidConfig, InvalidRequest
from logwright.core.events import ConfigChanged


class AlterOp(IntEnum):
    """IncrementalAlterConfigs operations, numbered as Kafka's ``AlterConfigOp.OpType``."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def _refuse_duplicates(resource_type: str, names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidRequest(f"{resource_type} config {name!r} appears more than once in the request")
        seen.add(name)


def _list_items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _operation(op: int, name: str) -> AlterOp:
    try:
        return AlterOp(op)
    except ValueError:
        raise InvalidRequest(
            f"unknown operation {op} for config {name!r}: expected 0 (SET), 1 (DELETE), 2 (APPEND) or 3 (SUBTRACT)"
        ) from None


def _event(resource_type: str, resource_name: str, overrides: Mapping[str, str],
           changes: list[tuple[str, str | None]]) -> ConfigChanged | None:
    effective = [(name, value) for name, value in changes if overrides.get(name) != value]
    return ConfigChanged(resource_type, resource_name, tuple(effective)) if effective else None


def _check_together(registry: ConfigRegistry, resource_type: str, overrides: Mapping[str, str],
                    changes: Sequence[tuple[str, str | None]]) -> None:
    """Rules across keys (`ConfigKey.consistent`) on the overrides as they would be after ``changes``."""
    after = dict(overrides)
    for name, value in changes:
        if value is None:
            after.pop(name, None)
        else:
            after[name] = value
    registry.check_together(resource_type, after, (name for name, value in changes if value is not None))


def alter_incrementally(
    registry: ConfigRegistry,
    resource_type: str,
    resource_name: str,
    overrides: Mapping[str, str],
    operations: Sequence[tuple[str, int, str | None]],
) -> ConfigChanged | None:
    """Apply ``(name, op, value)`` operations to ``overrides``; raises on an invalid key, value or op, in Kafka's
    order: a null value of anything but a DELETE first (INVALID_REQUEST), then an unknown key, which a DELETE
    removes without a word (it is not there), as Kafka does."""
    _refuse_duplicates(resource_type, (name for name, _, _ in operations))
    changes: list[tuple[str, str | None]] = []
    for name, op, value in operations:
        if value is None and op != AlterOp.DELETE:
            raise InvalidRequest(f"Null value not supported for : {name}")
        key = registry.get(resource_type, name)
        if key is None:
            if op == AlterOp.DELETE:
                continue
            raise InvalidConfig(f"unknown {resource_type} config {name!r}")
        operation = _operation(op, name)
        if operation is AlterOp.DELETE:
            changes.append((name, None))
            continue
        assert value is not None  # refused above
        if operation is AlterOp.SET:
            changes.append((name, value))
            continue
        if key.value_type != "LIST":
            raise InvalidConfig(f"{operation.name} applies to list configs only; {resource_type} config {name!r} "
                                f"is of type {key.value_type}")
        current = _list_items(overrides.get(name, key.default or ""))
        given = _list_items(value)
        if operation is AlterOp.APPEND:
            result = current + [item for item in given if item not in current]
        else:
            result = [item for item in current if item not in given]
        changes.append((name, ",".join(result)))
    registry.validate(resource_type, changes)
    _check_together(registry, resource_type, overrides, changes)
    return _event(resource_type, resource_name, overrides, changes)


def replace_overrides(
    registry: ConfigRegistry,
    resource_type: str,
    resource_name: str,
    overrides: Mapping[str, str],
    entries: Sequence[tuple[str, str | None]],
) -> ConfigChanged | None:
    """Legacy AlterConfigs: ``entries`` become the whole override set; keys left out are reset."""
    _refuse_duplicates(resource_type, (name for name, _ in entries))
    for name, value in entries:
        if value is None:  # INVALID_REQUEST, as Kafka; leaving the key out resets it
            raise InvalidRequest(f"Null value not supported for : {name}")
    registry.validate(resource_type, entries)
    wanted = dict(entries)
    changes: list[tuple[str, str | None]] = [(name, None) for name in sorted(overrides) if name not in wanted]
    changes.extend(sorted(wanted.items()))
    _check_together(registry, resource_type, overrides, changes)
    return _event(resource_type, resource_name, overrides, changes)
