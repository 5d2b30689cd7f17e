"""ACL handlers at every version they serve (v1 classic, v2-v3 flexible): kio requests in, responses that encode."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from logwright.compat import turns
from logwright.compat.authorization import STANDARD_AUTHORIZER
from logwright.compat.broker import Broker, BrokerSettings
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import create_acls, delete_acls, describe_acls
from logwright.compat.registry import RequestContext, make
from logwright.compat.turns import TURNS_GIVEN_WAY
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.compat.wire.messages import encode_response
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import GivenWay, in_process_broker

AUTHORIZED = BrokerSettings(overrides={"authorizer.class.name": STANDARD_AUTHORIZER,
                                       "allow.everyone.if.no.acl.found": "true"})
"""Without an authorizer the ACL keys answer SECURITY_DISABLED (tests/integration/test_acls.py)."""
TOPIC, LITERAL, PREFIXED, MATCH, ANY = 2, 3, 4, 2, 1
READ, ALLOW = 3, 3


def run(broker: Broker, store: RocksEventStore, scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    try:
        asyncio.run(scenario())
    finally:
        broker.commit_now()
        store.close()


def request_module(api: str, version: int) -> Any:
    return importlib.import_module(f"kio.schema.{api}.v{version}.request")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_describe_delete_at_each_version(tmp_path: Path, version: int) -> None:
    store = RocksEventStore(tmp_path / "data")
    broker = in_process_broker(store, AUTHORIZED)

    async def call(api_key: int, handle: Any, request: Any) -> Any:
        response = await handle(RequestContext(broker, api_key, version, 7, "tester", 1, "127.0.0.1"), request)
        assert encode_response(api_key, version, 7, response)
        return response

    async def scenario() -> None:
        create = request_module("create_acls", version)
        created = await call(30, create_acls.handle, make(create.CreateAclsRequest, creations=(
            make(create.AclCreation, resource_type=TOPIC, resource_name="orders", resource_pattern_type=PREFIXED,
                 principal="User:alice", host="*", operation=READ, permission_type=ALLOW),
            make(create.AclCreation, resource_type=TOPIC, resource_name="orders", resource_pattern_type=MATCH,
                 principal="User:alice", host="*", operation=READ, permission_type=ALLOW),
        )))
        assert [r.error_code for r in created.results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST]
        assert "pattern type MATCH" in created.results[1].error_message

        describe = request_module("describe_acls", version)
        described = await call(29, describe_acls.handle, make(
            describe.DescribeAclsRequest, resource_type_filter=TOPIC, resource_name_filter="orders-eu",
            pattern_type_filter=MATCH, principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY))
        assert described.error_code == ErrorCode.NONE
        assert [(r.resource_name, r.pattern_type, [a.principal for a in r.acls]) for r in described.resources] == [
            ("orders", PREFIXED, ["User:alice"])]
        refused = await call(29, describe_acls.handle, make(
            describe.DescribeAclsRequest, resource_type_filter=0, resource_name_filter=None,
            pattern_type_filter=ANY, principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY))
        assert refused.error_code == ErrorCode.INVALID_REQUEST and refused.resources == ()

        delete = request_module("delete_acls", version)
        deleted = await call(31, delete_acls.handle, make(delete.DeleteAclsRequest, filters=(
            make(delete.DeleteAclsFilter, resource_type_filter=ANY, resource_name_filter=None,
                 pattern_type_filter=ANY, principal_filter="User:alice", host_filter=None, operation=ANY,
                 permission_type=0),
            make(delete.DeleteAclsFilter, resource_type_filter=ANY, resource_name_filter=None,
                 pattern_type_filter=ANY, principal_filter="User:alice", host_filter=None, operation=ANY,
                 permission_type=ANY),
        )))
        first, second = deleted.filter_results
        assert first.error_code == ErrorCode.INVALID_REQUEST and first.matching_acls == ()
        assert second.error_code == ErrorCode.NONE
        assert [(m.resource_name, m.pattern_type) for m in second.matching_acls] == [("orders", PREFIXED)]
        assert store.entities("acls") == {}

    run(broker, store, scenario)


def test_a_delete_of_many_filters_gives_way_and_deletes_take_turns(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """DeleteAcls matched every filter against every ACL in one stretch; it gives way every `BINDINGS_PER_TURN`
    bindings read now, and a second DeleteAcls started meanwhile decides after it (it reports nothing the first
    removed). A filter named again is answered with the first answer's bytes."""
    monkeypatch.setattr(delete_acls, "BINDINGS_PER_TURN", 50)
    given_way = GivenWay(monkeypatch, delete_acls)
    store = RocksEventStore(tmp_path / "data")
    broker = in_process_broker(store, AUTHORIZED)
    version = 3
    create = request_module("create_acls", version)
    delete = request_module("delete_acls", version)

    def context(api_key: int) -> RequestContext:
        return RequestContext(broker, api_key, version, 7, "tester", 1, "127.0.0.1")

    def by_principal(principal: str | None) -> Any:
        return make(delete.DeleteAclsFilter, resource_type_filter=ANY, resource_name_filter=None,
                    pattern_type_filter=ANY, principal_filter=principal, host_filter=None, operation=ANY,
                    permission_type=ANY)

    async def scenario() -> None:
        await create_acls.handle(context(30), make(create.CreateAclsRequest, creations=tuple(
            make(create.AclCreation, resource_type=TOPIC, resource_name=f"t-{n}", resource_pattern_type=LITERAL,
                 principal=f"User:{n % 40}", host="*", operation=READ, permission_type=ALLOW) for n in range(400))))
        filters = tuple(by_principal(f"User:{n}") for n in range(40)) + (by_principal("User:3"),) * 3
        first = asyncio.get_running_loop().create_task(
            delete_acls.handle(context(31), make(delete.DeleteAclsRequest, filters=filters)))
        await asyncio.sleep(0)
        second = asyncio.get_running_loop().create_task(delete_acls.handle(
            context(31), make(delete.DeleteAclsRequest, filters=(by_principal(None),))))
        turns = 0
        while not first.done():
            await asyncio.sleep(0)
            turns += 1
        assert given_way.count == 400 // 50 and turns >= given_way.count * TURNS_GIVEN_WAY // 2, turns
        answered = first.result()
        assert encode_response(31, version, 7, answered)
        results = answered.filter_results
        assert [len(result.matching_acls) for result in results[:40]] == [10] * 40
        again = results[40:]
        assert len(again) == 3 and all(isinstance(result, Encoded) for result in again)
        assert again[0] is again[1] is again[2] and again[0] == encode_entity(results[3])
        assert (await second).filter_results[0].matching_acls == ()
        assert store.entities("acls") == {}

    run(broker, store, scenario)


def test_a_describe_reads_and_lists_the_acls_in_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ACL may be read and listed by one DescribeAcls: 100,000 held every client 441 ms in one stretch."""
    store = RocksEventStore(tmp_path / "data")
    broker = in_process_broker(store, AUTHORIZED)
    create = request_module("create_acls", 3)
    describe = request_module("describe_acls", 3)

    async def scenario() -> None:
        await create_acls.handle(RequestContext(broker, 30, 3, 7, "tester", 1, "127.0.0.1"), make(
            create.CreateAclsRequest, creations=tuple(
                make(create.AclCreation, resource_type=TOPIC, resource_name=f"t-{n % 2}",
                     resource_pattern_type=LITERAL, principal=f"User:{n:02}", host="*", operation=READ,
                     permission_type=ALLOW) for n in range(30))))
        monkeypatch.setattr(turns, "ANSWERS_PER_TURN", 10)
        given_way = GivenWay(monkeypatch, turns)
        described = await describe_acls.handle(RequestContext(broker, 29, 3, 7, "tester", 1, "127.0.0.1"), make(
            describe.DescribeAclsRequest, resource_type_filter=ANY, resource_name_filter=None,
            pattern_type_filter=ANY, principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY))
        assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == [
            ("t-0", [f"User:{n:02}" for n in range(0, 30, 2)]), ("t-1", [f"User:{n:02}" for n in range(1, 30, 2)])]
        assert given_way.count == 6, "30 read, 30 listed, 10 a turn"

    run(broker, store, scenario)
