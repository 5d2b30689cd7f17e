"""UpdateFeatures (key 57), versions 0-2: change the cluster's finalized feature levels (``kafka-features``).

Every update is checked first, as Kafka 4.4's controller checks them, and one refusal fails them all: a top-level
INVALID_UPDATE_VERSION with Kafka's message, and no per-feature results. Success is one `FeatureLevelsUpdated` in
the log (nothing when nothing changes or ``validate_only``), answered once durable; v0-1 list every feature named
with NONE, v2 has no results. v0's ``allow_downgrade`` is read as Kafka 4.4's controller reads it: not at all (only
v1's ``upgrade_type`` may downgrade). Which levels can change, and what they mean here: `core.log.features`. ALTER
on the cluster is required (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.log.features import UPGRADE, update_features

if TYPE_CHECKING:
    from kio.schema.update_features import v0, v1, v2

    UpdateFeaturesRequest: TypeAlias = (
        v0.UpdateFeaturesRequest | v1.UpdateFeaturesRequest | v2.UpdateFeaturesRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)


@handler(57, "UpdateFeatures", 0, 2)
async def handle(context: RequestContext, request: UpdateFeaturesRequest) -> Any:
    broker = context.broker
    module = response_module("update_features", context.api_version)
    updates = [(update.feature, int(update.max_version_level), int(getattr(update, "upgrade_type", UPGRADE)))
               for update in request.feature_updates]  # v0 has no upgrade type (nor validate_only)
    validate_only = bool(getattr(request, "validate_only", False))
    message, event = update_features(broker.finalized_features(), updates, validate_only, broker.node_id)
    if message is not None:
        log.info("UpdateFeatures refused: %s", message)
        return _answer(module, ErrorCode.INVALID_UPDATE_VERSION, message, ())
    if event is not None:
        log.warning("finalized feature levels changed to %s (epoch %d)",
                    ", ".join(f"{name}={level}" for name, level in event.levels), event.epoch)
        broker.stage([event])
        await broker.durable()
    return _answer(module, ErrorCode.NONE, None, tuple(name for name, _, _ in updates))


def _answer(module: Any, code: ErrorCode, message: str | None, named: tuple[str, ...]) -> Any:
    """The response: v0-1 carry a NONE result per feature named on success (Kafka's message "NONE"), v2 none."""
    if not has_field(module.UpdateFeaturesResponse, "results"):
        return make(module.UpdateFeaturesResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    error_message=message)
    return make(module.UpdateFeaturesResponse, throttle_time=datetime.timedelta(0), error_code=code,
                error_message=message, results=tuple(
                    make(module.UpdatableFeatureResult, feature=name, error_code=ErrorCode.NONE, error_message="NONE")
                    for name in named))
