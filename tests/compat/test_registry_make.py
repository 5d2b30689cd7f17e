"""`registry.make`: one description of a message serves every version, and a misspelt field is an error."""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import pkgutil
from pathlib import Path

import pytest
from logwright.compat.registry import kio_source_fields, make, response_module


def test_fields_a_version_lacks_are_dropped() -> None:
    v3 = response_module("produce", 3)
    partition = make(v3.PartitionProduceResponse, index=0, error_code=0, base_offset=5,
                     log_append_time=datetime.datetime.fromtimestamp(0, datetime.UTC), log_start_offset=0,
                     record_errors=(), error_message=None)
    assert partition == v3.PartitionProduceResponse(index=0, error_code=0, base_offset=5,
                                                    log_append_time=partition.log_append_time)


def test_a_misspelt_field_raises_naming_field_and_class() -> None:
    module = response_module("sync_group", 5)
    with pytest.raises(TypeError, match=r"kio\.schema\.sync_group\.v5\.response\.SyncGroupResponse has no field "
                                        r"error_mesage in any version"):
        make(module.SyncGroupResponse, throttle_time=datetime.timedelta(0), error_code=0, protocol_type=None,
             protocol_name=None, assignment=b"", error_mesage="typo")


def test_a_misspelt_field_raises_on_an_old_version_too() -> None:
    module = response_module("sync_group", 0)
    with pytest.raises(TypeError, match="error_mesage"):
        make(module.SyncGroupResponse, error_code=0, assignment=b"", protocol_name=None, error_mesage="typo")


def test_a_nested_entity_knows_the_fields_of_its_other_versions() -> None:
    v4 = response_module("fetch", 4)
    partition = make(v4.PartitionData, partition_index=0, error_code=0, high_watermark=1, last_stable_offset=1,
                     log_start_offset=0, aborted_transactions=(), preferred_read_replica=-1, records=b"")
    assert partition.partition_index == 0
    with pytest.raises(TypeError, match="PartitionData has no field high_water_mark"):
        make(v4.PartitionData, partition_index=0, error_code=0, high_water_mark=1)


def test_reading_kio_source_finds_the_fields_of_every_class_of_every_version() -> None:
    """`make` reads field names from kio's generated source; a change in kio's layout must fail here."""
    package = Path(importlib.import_module("kio.schema").__path__[0])
    checked = 0
    for api in (found for found in pkgutil.iter_modules([str(package)]) if found.ispkg):
        for kind in ("request", "response"):
            from_source = kio_source_fields(api.name, kind)
            for version in pkgutil.iter_modules([str(package / api.name)]):
                if not (package / api.name / version.name / f"{kind}.py").is_file():
                    continue
                module = importlib.import_module(f"kio.schema.{api.name}.{version.name}.{kind}")
                for name, cls in vars(module).items():
                    if isinstance(cls, type) and cls.__module__ == module.__name__ and dataclasses.is_dataclass(cls):
                        fields = frozenset(field.name for field in dataclasses.fields(cls))
                        assert fields in from_source[name], (module.__name__, name)
                        checked += 1
    assert checked > 1000


def test_a_long_error_message_is_cut_to_fit_any_version() -> None:
    """A message quoting a 32,767-character topic name no longer fits a non-flexible version's string."""
    from kio.schema.create_partitions.v0.response import CreatePartitionsTopicResult
    from logwright.compat.registry import ERROR_MESSAGE_CHARS
    from logwright.compat.wire.encoder import encode_entity

    result = make(CreatePartitionsTopicResult, name="x" * 32_767, error_code=3,
                  error_message=f"topic {'x' * 32_767!r} does not exist")
    assert len(result.error_message) == ERROR_MESSAGE_CHARS and result.error_message.endswith("...")
    assert encode_entity(result)
    assert make(CreatePartitionsTopicResult, name="t", error_code=3, error_message="short").error_message == "short"
