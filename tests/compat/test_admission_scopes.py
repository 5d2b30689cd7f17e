"""Admission scopes (`acts_on_topics`): a produce request asks ``logwright_admit_append`` only about partitions of
topics some implementation acts on, and builds no request when there are none (issue 18: the chain cost a
one-batch produce request about a tenth of its time on topics no plugin acts on)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Generator, Mapping
from pathlib import Path

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import produce
from logwright.compat.registry import RequestContext
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.core.cursors.plugin_decisions import Admission, AppendRequest
from logwright.core.errors import AppendHeld, PolicyViolation
from logwright.core.events.log import ConfigChanged
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.api import ConfigKey, ConfigKeyRegister, boolean
from logwright.plugins.host import PluginHost
from logwright.plugins.spec import acts_on_topics, hookimpl

from tests.compat.brokers import in_process_broker

WATCHED = "logwright.test.watched"


def _watched(topic_configs: Mapping[str, str], broker_config: Callable[[str], str | None]) -> bool:
    return topic_configs.get(WATCHED) == "true"


class ScopedRefuser:
    """A third-party admission wrapper with a topic key of its own: it refuses appends to the topics that set it."""

    def __init__(self) -> None:
        self.asked: list[list[tuple[str, int]]] = []

    @hookimpl
    def logwright_register_config_keys(self, register: ConfigKeyRegister) -> None:
        register.add(ConfigKey(WATCHED, "topic", "false", boolean, "refuse appends", "BOOLEAN"))

    @hookimpl(wrapper=True)
    @acts_on_topics(_watched)
    def logwright_admit_append(self, request: AppendRequest) -> Generator[None, Admission, Admission]:
        admission = yield
        self.asked.append([(append.topic, append.partition_index) for append in request.appends])
        for append in request.appends:
            if _watched(append.topic_configs, lambda name: None):
                admission = admission.refuse(append.partition_id, PolicyViolation(f"{append.topic} is watched"))
        return admission


class UnscopedCounter:
    """A wrapper that declares no scope: every topic concerns it."""

    def __init__(self) -> None:
        self.asked: list[list[tuple[str, int]]] = []

    @hookimpl(wrapper=True)
    def logwright_admit_append(self, request: AppendRequest) -> Generator[None, Admission, Admission]:
        self.asked.append([(append.topic, append.partition_index) for append in request.appends])
        return (yield)


def _request(*topics: tuple[str, int]) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=tuple(
        TopicProduceData(name=name, partition_data=tuple(
            PartitionProduceData(index=index, records=build_batch([Record(0, 1_000, b"k", b"v")]))
            for index in range(partitions)))
        for name, partitions in topics))


async def _produce(broker: Broker, request: ProduceRequest) -> dict[str, list[ErrorCode]]:
    answer = await produce.handle(RequestContext(broker, 0, 9, 1, "tester", 1, "127.0.0.1"), request)
    return {topic.name: [partition.error_code for partition in topic.partition_responses]
            for topic in answer.responses}


def _broker(tmp_path: Path, *plugins: tuple[str, object]) -> tuple[Broker, RocksEventStore]:
    host = PluginHost.load(installed=False)
    for name, plugin in plugins:
        host.register(plugin, name, host.plugins()[0].source)
    store = RocksEventStore(tmp_path / "store", projections=host.projections(), types=host.type_registry())
    broker = in_process_broker(store, host=host, configs=host.config_registry())
    broker.create_topic("plain", 2)
    broker.create_topic("watched", 2, [(WATCHED, "true")])
    broker.commit_now()
    return broker, store


def test_the_chain_is_asked_only_about_partitions_of_topics_in_a_scope(tmp_path: Path) -> None:
    asyncio.run(_only_scoped_partitions(tmp_path))


async def _only_scoped_partitions(tmp_path: Path) -> None:
    refuser = ScopedRefuser()
    broker, store = _broker(tmp_path, ("scoped", refuser))
    try:
        assert await _produce(broker, _request(("plain", 2))) == {"plain": [ErrorCode.NONE] * 2}
        assert refuser.asked == [], "no request was built for topics outside every scope"
        codes = await _produce(broker, _request(("plain", 2), ("watched", 2)))
        assert codes == {"plain": [ErrorCode.NONE] * 2, "watched": [ErrorCode.POLICY_VIOLATION] * 2}
        assert refuser.asked == [[("watched", 0), ("watched", 1)]], "the request lists only scoped partitions"
        broker.stage([ConfigChanged("topic", "plain", ((WATCHED, "true"),))])
        broker.commit_now()
        assert await _produce(broker, _request(("plain", 1))) == {"plain": [ErrorCode.POLICY_VIOLATION]}
        assert refuser.asked[-1] == [("plain", 0)], "a config change moves a topic into the scope"
    finally:
        store.close()


def test_one_implementation_without_a_scope_makes_every_topic_concerned(tmp_path: Path) -> None:
    asyncio.run(_unscoped(tmp_path))


async def _unscoped(tmp_path: Path) -> None:
    refuser, counter = ScopedRefuser(), UnscopedCounter()
    broker, store = _broker(tmp_path, ("scoped", refuser), ("unscoped", counter))
    try:
        codes = await _produce(broker, _request(("plain", 1), ("watched", 1)))
        assert codes == {"plain": [ErrorCode.NONE], "watched": [ErrorCode.POLICY_VIOLATION]}
        assert counter.asked == [[("plain", 0), ("watched", 0)]]
        assert refuser.asked == [[("plain", 0), ("watched", 0)]], "each wrapper still filters for itself"
    finally:
        store.close()


def test_the_builtin_scopes_take_dedup_and_quota_topics_and_follow_broker_defaults(tmp_path: Path) -> None:
    asyncio.run(_builtin_scopes(tmp_path))


async def _builtin_scopes(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "store")
    host = PluginHost.load(installed=False)
    broker = in_process_broker(store, host=host, configs=host.config_registry())
    try:
        broker.create_topic("plain", 1)
        broker.create_topic("deduplicated", 1, [("logwright.dedup.key", "record-key")])
        broker.create_topic("quota", 1, [("logwright.backlog.quota.records", "100")])
        broker.create_topic("no-quota", 1, [("logwright.backlog.quota.records", "-1")])
        broker.commit_now()

        def applies(name: str) -> bool:
            topic = broker.topic(name)
            assert topic is not None
            return broker.admission_applies(topic)

        assert [applies(name) for name in ("plain", "deduplicated", "quota", "no-quota")] == [
            False, True, True, False]
        broker.stage([ConfigChanged("broker", "", (("logwright.backlog.quota.default.bytes", "1000000"),))])
        broker.commit_now()
        assert applies("plain") and applies("no-quota"), "a broker-wide default quota takes every topic"
        assert PluginHost.load(installed=False, extra=[("unscoped", UnscopedCounter())]).admission_scope() is None
    finally:
        store.close()


class Holder:
    """A third-party admission that holds appends to "held" until ``open``, counting how often it is asked."""

    def __init__(self) -> None:
        self.open = False
        self.asked_held = 0

    @hookimpl(wrapper=True)
    def logwright_admit_append(self, request: AppendRequest) -> Generator[None, Admission, Admission]:
        admission = yield
        for append in request.appends:
            if append.topic == "held":
                self.asked_held += 1
                if not self.open:
                    admission = admission.refuse(append.partition_id, AppendHeld("closed"))
        return admission


def test_a_held_request_is_asked_again_after_commits_that_may_settle_records_not_after_appends(
        tmp_path: Path) -> None:
    holder = Holder()
    store = RocksEventStore(tmp_path / "data", projections=PluginHost.load(installed=False).projections())
    host = PluginHost.load(installed=False, extra=[("holder", holder)])

    async def run() -> None:
        broker = in_process_broker(store, host=host)
        broker.create_topic("held", 1)
        broker.create_topic("other", 1)
        await broker.durable()
        waiting = asyncio.ensure_future(_produce(broker, _request(("held", 1))))
        for _ in range(20):
            await asyncio.sleep(0)
        assert holder.asked_held == 1 and not waiting.done()
        for _ in range(5):  # other producers' appends: each a commit of appends alone
            assert await _produce(broker, _request(("other", 1))) == {"other": [ErrorCode.NONE]}
            await broker.durable()
        assert holder.asked_held == 1, "not asked again after commits of appends alone"
        holder.open = True
        broker.stage([ConfigChanged("topic", "other", (("retention.ms", "60000"),))])  # a commit that may settle
        assert await asyncio.wait_for(waiting, 5) == {"held": [ErrorCode.NONE]}
        assert holder.asked_held == 2

    asyncio.run(run())
    store.close()
