"""The broker's features (KIP-584): the levels it can run, the level finalized for the cluster, and UpdateFeatures.

ApiVersions v3+ names them and clients gate behaviour on the finalized levels (the Java client 4.x and franz-go run
transaction version 2's protocol only while ``transaction.version`` is finalized at 2). logwright states the levels
it implements, never Kafka's for their own sake: KIP-848 groups (group.version 1), share groups with KIP-1191
dead-letter copies (share.version 2; 1 without them), KIP-890's transactions (transaction.version 1 or 2), and level
0 of what it does not have (Streams groups, eligible leader replicas, KRaft). It has no KRaft metadata log, so no
metadata.version.

Three can change, as on Kafka 4.4. ``kafka-features downgrade --feature transaction.version=1`` turns version 2 off
for the clients that look: its two levels differ only in what clients are told, and the broker serves each request
by its version, as Kafka 4.4 does at either level; its level 0 (no verification of transactional writes, the hanging
transactions KIP-890 closed) is not served. group.version 0 turns KIP-848 groups off and share.version 0 share
groups: their APIs stay listed and are answered UNSUPPORTED_VERSION (`compat.feature_gates`), and the groups, their
offsets and their timers stay; share.version 1 keeps share groups without KIP-1191's dead-letter copies.
`update_features` decides as Kafka 4.4's controller (`FeatureControlManager.updateFeature`), with its messages;
the levels are a `FeatureLevelsUpdated` event, folded into the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logwright.core.events.log import FeatureLevelsUpdated

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
"""UpdateFeatures' upgrade types (v1+; v0 requests are upgrades, whatever their ``allow_downgrade`` says, as
Kafka 4.4's controller reads them)."""

@dataclass(frozen=True, slots=True)
class SupportedFeature:
    """A feature's range of levels this broker runs (ApiVersions' supported features) and its level by default."""

    name: str
    min_level: int
    max_level: int
    default_level: int
    """The level finalized until an UpdateFeatures changes it; 0 is not finalized (left out, as Kafka leaves it)."""


SUPPORTED = (
    SupportedFeature("eligible.leader.replicas.version", 0, 0, 0),
    SupportedFeature("group.version", 0, 1, 1),
    SupportedFeature("kraft.version", 0, 0, 0),
    SupportedFeature("share.version", 0, 2, 2),
    SupportedFeature("streams.version", 0, 0, 0),
    SupportedFeature("transaction.version", 1, 2, 2),
)
_BY_NAME = {feature.name: feature for feature in SUPPORTED}

KIP_848_GROUPS = "group.version"
SHARE_GROUPS = "share.version"
SHARE_DEAD_LETTER_LEVEL = 2
"""share.version's level from which a share group's ``errors.deadletterqueue.topic.name`` gets copies (KIP-1191)."""

DEFAULT_EPOCH = 1
"""The finalized-features epoch before any update (a store that never had one)."""


@dataclass(frozen=True, slots=True)
class FinalizedFeatures:
    """The levels finalized now, by feature name (every supported feature, 0 for the ones not finalized), and the
    epoch ApiVersions names: one more on each change, so clients that cached the levels read them again."""

    levels: tuple[tuple[str, int], ...]
    epoch: int

    def level(self, name: str) -> int:
        return dict(self.levels).get(name, 0)


DEFAULT_FEATURES = FinalizedFeatures(tuple((feature.name, feature.default_level) for feature in SUPPORTED),
                                     DEFAULT_EPOCH)


def finalized(state: object) -> FinalizedFeatures:
    """The catalog's row (``None`` before any update) as the levels in force."""
    return state if isinstance(state, FinalizedFeatures) else DEFAULT_FEATURES


def update_features(current: FinalizedFeatures, updates: Sequence[tuple[str, int, int]], validate_only: bool,
                    node_id: int) -> tuple[str | None, FeatureLevelsUpdated | None]:
    """UpdateFeatures' ``(feature, level, upgrade type)`` updates, all or none: ``(the refusal's message, None)`` for
    the first one refused (INVALID_UPDATE_VERSION), else ``(None, the event)`` (``None`` when nothing changes or only
    validated). A feature named twice takes its last update, as Kafka's map of them does. ``node_id``: the broker's
    (``node.id``), which the messages name as the controller's."""
    wanted = {name: (level, upgrade_type) for name, level, upgrade_type in updates}
    for name, (level, upgrade_type) in wanted.items():
        reason = _refusal(current, name, level, upgrade_type, node_id)
        if reason is not None:
            return (f"The update failed for all features since the following feature had an error: Invalid update "
                    f"version {level} for feature {name}. {reason}"), None
    levels = {**dict(current.levels), **{name: level for name, (level, _) in wanted.items()}}
    if validate_only or levels == dict(current.levels):
        return None, None
    return None, FeatureLevelsUpdated(tuple(sorted(levels.items())), current.epoch + 1)


def _refusal(current: FinalizedFeatures, name: str, level: int, upgrade_type: int, node_id: int) -> str | None:
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    supported = _BY_NAME.get(name)
    lowest, highest = (supported.min_level, supported.max_level) if supported is not None else (0, 0)
    if name == "metadata.version" or not lowest <= level <= highest:  # no KRaft metadata log, so no metadata.version
        if highest == 0:
            return f"Local controller {node_id} does not support this feature."
        return f"Local controller {node_id} only supports versions {lowest}-{highest}"
    if supported is None:
        return f"Feature {name} not found."
    if level < current.level(name) and upgrade_type == UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.")
    if level > current.level(name) and upgrade_type != UPGRADE:
        return "Can't downgrade to a newer version."
    return None
