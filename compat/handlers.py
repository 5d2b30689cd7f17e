"""Every API key the broker serves, in one table: Kafka's keys and logwright's extension keys.

From a key to its module is a look at this table; ApiVersions is generated from what these modules register, so
a key listed here and nowhere else is never advertised. Importing this module registers every handler.
"""

from __future__ import annotations

from types import ModuleType

from logwright.compat.extensions import (
    acknowledge_batch,
    acknowledge_cumulative,
    acknowledge_processed,
    broker_stats,
    clock_control,
    consumer_options,
    cursor_inspection,
    negative_acknowledge,
    pop,
    pop_ack,
    pop_change_invisible_time,
    pop_inspection,
    pop_nack,
    pop_reset,
    reconsume_later,
)
from logwright.compat.kafka import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_share_group_offsets,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_delegation_token,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_delegation_token,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_share_group_offsets,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    expire_delegation_token,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    renew_delegation_token,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    sync_group,
    txn_offset_commit,
    update_features,
    write_txn_markers,
)
from logwright.compat.registry import HANDLERS, HandlerEntry
from logwright.compat.wire.messages import API_NAMES

KAFKA_APIS: dict[int, ModuleType] = {
    0: produce,  # Produce
    1: fetch,  # Fetch
    2: list_offsets,  # ListOffsets
    3: metadata,  # Metadata
    8: offset_commit,  # OffsetCommit
    9: offset_fetch,  # OffsetFetch
    10: find_coordinator,  # FindCoordinator
    11: join_group,  # JoinGroup
    12: heartbeat,  # Heartbeat
    13: leave_group,  # LeaveGroup
    14: sync_group,  # SyncGroup
    15: describe_groups,  # DescribeGroups
    16: list_groups,  # ListGroups
    17: sasl_handshake,  # SaslHandshake
    18: api_versions,  # ApiVersions
    19: create_topics,  # CreateTopics
    20: delete_topics,  # DeleteTopics
    21: delete_records,  # DeleteRecords
    22: init_producer_id,  # InitProducerId
    23: offset_for_leader_epoch,  # OffsetForLeaderEpoch
    24: add_partitions_to_txn,  # AddPartitionsToTxn
    25: add_offsets_to_txn,  # AddOffsetsToTxn
    26: end_txn,  # EndTxn
    27: write_txn_markers,  # WriteTxnMarkers
    28: txn_offset_commit,  # TxnOffsetCommit
    29: describe_acls,  # DescribeAcls
    30: create_acls,  # CreateAcls
    31: delete_acls,  # DeleteAcls
    32: describe_configs,  # DescribeConfigs
    33: alter_configs,  # AlterConfigs
    34: alter_replica_log_dirs,  # AlterReplicaLogDirs
    35: describe_log_dirs,  # DescribeLogDirs
    36: sasl_authenticate,  # SaslAuthenticate
    37: create_partitions,  # CreatePartitions
    38: create_delegation_token,  # CreateDelegationToken
    39: renew_delegation_token,  # RenewDelegationToken
    40: expire_delegation_token,  # ExpireDelegationToken
    41: describe_delegation_token,  # DescribeDelegationToken
    42: delete_groups,  # DeleteGroups
    43: elect_leaders,  # ElectLeaders
    44: incremental_alter_configs,  # IncrementalAlterConfigs
    45: alter_partition_reassignments,  # AlterPartitionReassignments
    46: list_partition_reassignments,  # ListPartitionReassignments
    47: offset_delete,  # OffsetDelete
    48: describe_client_quotas,  # DescribeClientQuotas
    49: alter_client_quotas,  # AlterClientQuotas
    50: describe_user_scram_credentials,  # DescribeUserScramCredentials
    51: alter_user_scram_credentials,  # AlterUserScramCredentials
    55: describe_quorum,  # DescribeQuorum
    57: update_features,  # UpdateFeatures
    60: describe_cluster,  # DescribeCluster
    61: describe_producers,  # DescribeProducers
    65: describe_transactions,  # DescribeTransactions
    66: list_transactions,  # ListTransactions
    68: consumer_group_heartbeat,  # ConsumerGroupHeartbeat
    69: consumer_group_describe,  # ConsumerGroupDescribe
    74: list_config_resources,  # ListConfigResources
    75: describe_topic_partitions,  # DescribeTopicPartitions
    76: share_group_heartbeat,  # ShareGroupHeartbeat
    77: share_group_describe,  # ShareGroupDescribe
    78: share_fetch,  # ShareFetch
    79: share_acknowledge,  # ShareAcknowledge
    90: describe_share_group_offsets,  # DescribeShareGroupOffsets
    91: alter_share_group_offsets,  # AlterShareGroupOffsets
    92: delete_share_group_offsets,  # DeleteShareGroupOffsets
}
"""Kafka's API keys: key -> the module serving it (named as Kafka names the API)."""

EXTENSION_APIS: dict[int, ModuleType] = {
    clock_control.API_KEY: clock_control,  # LogwrightAdvanceClock, served only on a manual clock
    consumer_options.API_KEY: consumer_options,
    negative_acknowledge.API_KEY: negative_acknowledge,
    acknowledge_batch.API_KEY: acknowledge_batch,
    acknowledge_cumulative.API_KEY: acknowledge_cumulative,
    cursor_inspection.API_KEY: cursor_inspection,
    broker_stats.API_KEY: broker_stats,
    reconsume_later.API_KEY: reconsume_later,  # LogwrightReconsumeLater: retry letter topics
    pop.API_KEY: pop,  # LogwrightPop ... LogwrightPopInspect: pop consumption (RocketMQ 5), docs/pop.md
    pop_ack.API_KEY: pop_ack,
    pop_change_invisible_time.API_KEY: pop_change_invisible_time,
    pop_nack.API_KEY: pop_nack,
    pop_inspection.API_KEY: pop_inspection,
    pop_reset.API_KEY: pop_reset,  # LogwrightPopReset: F41's admin reset of a pop group's position
    acknowledge_processed.API_KEY: acknowledge_processed,  # LogwrightAcknowledgeProcessed: processed keys, docs/keys.md
}
"""logwright's own keys (32001 and up): key -> module. Standard clients ignore keys they do not know."""


def load_handlers() -> dict[int, HandlerEntry]:
    """The handler table, checked against the lists above: a module that registers another key than the one it
    is listed under, or a registered Kafka key listed nowhere, is a mistake found at start-up.

    Extension keys may be registered beyond `EXTENSION_APIS` (plugins add theirs through
    `registry.register_extension`); LogwrightAdvanceClock only once a manual clock enables it.
    """
    for api_key, module in (KAFKA_APIS | EXTENSION_APIS).items():
        entry = HANDLERS.get(api_key)
        if entry is None and module is clock_control:
            continue
        if entry is None or entry.handle.__module__ != module.__name__:
            raise RuntimeError(f"API key {api_key} is listed for {module.__name__} but that module does not serve it")
    unlisted = sorted(api_key for api_key in HANDLERS if api_key in API_NAMES and api_key not in KAFKA_APIS)
    if unlisted:
        raise RuntimeError(f"Kafka API keys {unlisted} are registered but not listed in KAFKA_APIS")
    return HANDLERS
