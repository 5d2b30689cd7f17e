"""ApiVersions (key 18), versions 0-4: generated from the handler table, never a hand-kept list.

An unsupported ApiVersions version is answered in `fallback` with the v0 body the protocol prescribes.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import HANDLERS, RequestContext, handler, make, response_module

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
    api_keys = tuple(
        make(module.ApiVersion, api_key=entry.api_key, min_version=entry.min_version, max_version=entry.max_version)
        for entry in sorted(HANDLERS.values(), key=lambda entry: entry.api_key)
    )
    return make(
        module.ApiVersionsResponse,
        error_code=ErrorCode.NONE,
        api_keys=api_keys,
        throttle_time=datetime.timedelta(0),
    )
