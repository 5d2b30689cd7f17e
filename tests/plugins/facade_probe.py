"""A plugin whose background task tries each `BrokerFacade` operation once and appends what it saw as JSON."""

from __future__ import annotations

import json

from logwright.plugins.api import (
    AppendRefused,
    BackgroundTask,
    BackgroundTaskRegister,
    BrokerFacade,
    OutgoingRecord,
    hookimpl,
)

REPORT_TOPIC = "facade-report"


async def probe(broker: BrokerFacade) -> None:
    await broker.sleep(1000)
    report: dict[str, object] = {"now": broker.now_ms()}
    for topic in ("missing", "locked"):
        try:
            await broker.append(topic, [OutgoingRecord(b"x")])
        except AppendRefused as refused:
            report[topic] = [refused.error, str(refused)]
    report["group_limit"] = broker.group_config("some-group", "share.delivery.count.limit")
    report["unknown_group_key"] = broker.group_config("some-group", "no.such.key")
    report["read_only"] = broker.topic_config("locked", "logwright.audit.read.only")
    report["missing_topic_config"] = broker.topic_config("missing", "retention.ms")
    report["partitions"] = [broker.partition_count(REPORT_TOPIC), broker.partition_count("missing")]
    report["broker_config"] = broker.broker_config("num.partitions")
    first = await broker.append(REPORT_TOPIC, [OutgoingRecord(b"first", key=b"k", headers=(("h", b"v"),),
                                                              timestamp_ms=7)])
    report["first_offset"] = first
    await broker.append(REPORT_TOPIC, [OutgoingRecord(json.dumps(report).encode())])
    await broker.sleep(10**12)


@hookimpl
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    register.add(BackgroundTask("facade-probe", probe))
