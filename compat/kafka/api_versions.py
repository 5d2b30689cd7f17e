"""ApiVersions (key 18), versions 0-4: generated from the handler table, never a hand-kept list.

Every connection asks it first, and its answer only changes when the table does (a plugin registering an
extension key): the encoded list is kept per response class and table, as making and encoding its 68 entries
for every connection was most of the request's cost (100-160 us of broker CPU, against 33 for an echo).

Since v3 the answer also names the broker's features (KIP-584): each with the levels this broker can run and the
level finalized for the cluster, which is what ``kafka-features describe`` and ``Admin.describeFeatures`` show and
what clients gate behaviour on (the Java producer uses transaction.version 2's protocol only when it is finalized).
logwright states what it implements, never Kafka's numbers for their own sake: KIP-848 groups (group.version 1),
share groups with KIP-1191 dead-letter copies (share.version 2), KIP-890 part 2's transactions (transaction.version
2: Produce v12 and TxnOffsetCommit v5 add to the transaction, EndTxn v5 bumps the epoch), and level 0 of the features
it does not have (Streams groups, eligible leader replicas, KRaft). It has no KRaft metadata log,
so no metadata.version; and no UpdateFeatures, so the levels never change and their epoch stays 1.

An unsupported ApiVersions version is answered in `fallback` with the v0 body the protocol prescribes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import HANDLERS, HandlerEntry, RequestContext, handler, make, response_module
from logwright.compat.wire.encoder import Encoded, encode_entity

if TYPE_CHECKING:
    from kio.schema.api_versions import v0, v1, v2, v3, v4

    ApiVersionsRequest: TypeAlias = (
        v0.ApiVersionsRequest | v1.ApiVersionsRequest | v2.ApiVersionsRequest | v3.ApiVersionsRequest
        | v4.ApiVersionsRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    max_level: int
    finalized_level: int
    """0 is not finalized: a feature at level 0 is left out of the finalized list, as Kafka leaves it out."""


FEATURES = (
    Feature("eligible.leader.replicas.version", 0, 0),
    Feature("group.version", 1, 1),
    Feature("kraft.version", 0, 0),
    Feature("share.version", 2, 2),
    Feature("streams.version", 0, 0),
    Feature("transaction.version", 2, 2),
)
"""Every feature's lowest level is 0 (the feature off)."""
FEATURES_EPOCH = 1


@handler(18, "ApiVersions", 0, 4, at_once=True)
async def handle(context: RequestContext, request: ApiVersionsRequest) -> Any:
    module = response_module("api_versions", context.api_version)
    if context.api_version < 3:
        return make(module.ApiVersionsResponse, error_code=ErrorCode.NONE, api_keys=served_keys(module.ApiVersion),
                    throttle_time=datetime.timedelta(0))
    supported, finalized = features(module, context.api_version)
    return make(
        module.ApiVersionsResponse,
        error_code=ErrorCode.NONE,
        api_keys=served_keys(module.ApiVersion),
        throttle_time=datetime.timedelta(0),
        supported_features=supported,
        finalized_features_epoch=FEATURES_EPOCH,
        finalized_features=finalized,
    )


_FEATURES: dict[Any, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def features(module: Any, api_version: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``(supported, finalized)`` feature entries for one version's response module, made once. Before v4 a
    supported feature whose lowest level is 0 is left out (old clients took 0 for a missing range), so v3 names none
    of ours as supported, as Kafka 4.4's v3 names only metadata.version."""
    kept = _FEATURES.get(module)
    if kept is None:
        supported = tuple(make(module.SupportedFeatureKey, name=feature.name, min_version=0,
                               max_version=feature.max_level)
                          for feature in FEATURES if api_version >= 4)
        finalized = tuple(make(module.FinalizedFeatureKey, name=feature.name, max_version_level=feature.finalized_level,
                               min_version_level=feature.finalized_level)
                          for feature in FEATURES if feature.finalized_level > 0)
        kept = _FEATURES[module] = (supported, finalized)
    return kept


_KEPT: dict[type, tuple[tuple[HandlerEntry, ...], tuple[Encoded, ...]]] = {}


def served_keys(entry_cls: type) -> tuple[Encoded, ...]:
    """The encoded ``ApiVersion`` entries of every served key, in key order, for one version's entry class;
    made again only when the handler table changed since (its entries compared by identity first: cheap)."""
    table = tuple(HANDLERS.values())
    kept = _KEPT.get(entry_cls)
    if kept is not None and kept[0] == table:
        return kept[1]
    encoded = tuple(
        Encoded(encode_entity(make(entry_cls, api_key=entry.api_key, min_version=entry.min_version,
                                   max_version=entry.max_version)))
        for entry in sorted(table, key=lambda entry: entry.api_key)
    )
    _KEPT[entry_cls] = (table, encoded)
    return encoded
