"""`registry.make`: one description of a message serves every version, and a misspelt field is an error."""

from __future__ import annotations

import datetime

import pytest
from logwright.compat.registry import make, response_module


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
