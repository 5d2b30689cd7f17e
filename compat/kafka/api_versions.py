"""ApiVersions (key 18), versions 0-4: generated from the handler table, never a hand-kept list.

Every connection asks it first, and its answer only changes when the table does (a plugin registering an
extension key): the encoded list is kept per response class and table, as making and encoding its 67 entries
for every connection was most of the request's cost (100-160 us of broker CPU, against 33 for an echo).

An unsupported ApiVersions version is answered in `fallback` with the v0 body the protocol prescribes.
"""

from __future__ import annotations

import datetime
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


@handler(18, "ApiVersions", 0, 4, at_once=True)
async def handle(context: RequestContext, request: ApiVersionsRequest) -> Any:
    module = response_module("api_versions", context.api_version)
    return make(
        module.ApiVersionsResponse,
        error_code=ErrorCode.NONE,
        api_keys=served_keys(module.ApiVersion),
        throttle_time=datetime.timedelta(0),
    )


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
