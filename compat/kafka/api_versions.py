"""ApiVersions (key 18), versions 0-4: generated from the handler table, never a hand-kept list.

Every connection asks it first, and its answer only changes when the table does (a plugin registering an
extension key): the encoded list is kept per response class and table, as making and encoding its 68 entries
for every connection was most of the request's cost (100-160 us of broker CPU, against 33 for an echo).

Since v3 the answer also names the broker's features (KIP-584): each with the levels this broker can run and the
level finalized for the cluster, which is what ``kafka-features describe`` and ``Admin.describeFeatures`` show and
what clients gate behaviour on (`core.log.features`: which levels logwright runs, and why; UpdateFeatures changes
the finalized ones, and the epoch named with them).

An unsupported ApiVersions version is answered in `fallback` with the v0 body the protocol prescribes.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import HANDLERS, HandlerEntry, RequestContext, handler, make, response_module
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.core.log.features import DEFAULT_FEATURES, SUPPORTED, FinalizedFeatures

if TYPE_CHECKING:
    from kio.schema.api_versions import v0, v1, v2, v3, v4

    ApiVersionsRequest: TypeAlias = (
        v0.ApiVersionsRequest | v1.ApiVersionsRequest | v2.ApiVersionsRequest | v3.ApiVersionsRequest
        | v4.ApiVersionsRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(18, "ApiVersions", 0, 4, at_once=True)
async def handle(context: RequestContext, request: ApiVersionsRequest) -> Any:
    module = response_module("api_versions", context.api_version)
    if context.api_version < 3:
        return make(module.ApiVersionsResponse, error_code=ErrorCode.NONE, api_keys=served_keys(module.ApiVersion),
                    throttle_time=datetime.timedelta(0))
    # a context without a broker (the handler table listed by a tool or a test) names the levels by default
    finalized = context.broker.finalized_features() if context.broker is not None else DEFAULT_FEATURES
    supported, levels = features(module, context.api_version, finalized)
    return make(
        module.ApiVersionsResponse,
        error_code=ErrorCode.NONE,
        api_keys=served_keys(module.ApiVersion),
        throttle_time=datetime.timedelta(0),
        supported_features=supported,
        finalized_features_epoch=finalized.epoch,
        finalized_features=levels,
    )


_FEATURES: dict[tuple[Any, FinalizedFeatures], tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def features(module: Any, api_version: int, finalized: FinalizedFeatures) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``(supported, finalized)`` feature entries for one version's response module and the levels in force, made
    once. Before v4 a supported feature whose lowest level is 0 is left out (old clients took 0 for a missing range),
    as Kafka 4.4's v3 leaves out all but metadata.version."""
    kept = _FEATURES.get((module, finalized))
    if kept is None:
        supported = tuple(make(module.SupportedFeatureKey, name=feature.name, min_version=feature.min_level,
                               max_version=feature.max_level)
                          for feature in SUPPORTED if api_version >= 4 or feature.min_level > 0)
        levels = tuple(make(module.FinalizedFeatureKey, name=name, max_version_level=level, min_version_level=level)
                       for name, level in finalized.levels if level > 0)
        if len(_FEATURES) > 64:  # levels change by hand, rarely: keep the entries of the latest few
            _FEATURES.clear()
        kept = _FEATURES[(module, finalized)] = (supported, levels)
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
        Encoded(encode_entity(make(entry_cls, api_key=entry.api_key, min_version=entry.advertised_min,
                                   max_version=entry.max_version)))
        for entry in sorted(table, key=lambda entry: entry.api_key)
    )
    _KEPT[entry_cls] = (table, encoded)
    return encoded
