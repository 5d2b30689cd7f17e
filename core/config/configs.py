"""Config keys that topics, groups and the broker accept: defaults, validation and documentation.

A `ConfigRegistry` is built at start-up (plugins add their keys through a registration hook) and is
read-only afterwards. Invalid values are refused with `InvalidConfig` naming the key and the rule.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from logwright.core.compaction.settings import cleanup_policy, compaction_lags_agree
from logwright.core.consumer_groups.consumer_assignors import assignor_names
from logwright.core.errors import InvalidConfig, InvalidRequest
from logwright.core.security.oauthbearer import UNSECURED_VALIDATOR, UnsecuredValidatorOptions
from logwright.core.security.oauthbearer_jwt import JWT_VALIDATORS, SIGNED_VALIDATOR
from logwright.core.security.sasl_plain import plain_users
from logwright.core.security.ssl_principal_rules import PrincipalRules

Validator = Callable[[str], str | None]
"""Returns ``None`` when the value is valid, otherwise why it is not."""


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def java_long(value: str) -> int | None:
    """``value`` as Kafka's ConfigDef reads a LONG (trimmed, ``Long.parseLong``), or ``None``: Python's ``int``
    also takes ``1_0`` and numbers past 64 bits, which Kafka refuses and which then reach timers as deadlines."""
    text = value.strip()
    if "_" in text:
        return None
    try:
        number = int(text)
    except ValueError:
        return None
    return number if _LONG_MIN <= number <= _LONG_MAX else None


def long_at_least(minimum: int) -> Validator:
    def check(value: str) -> str | None:
        number = java_long(value)
        if number is None:
            return "must be an integer"
        return None if number >= minimum else f"must be at least {minimum}"

    return check


def long_between(minimum: int, maximum: int) -> Validator:
    def check(value: str) -> str | None:
        number = java_long(value)
        if number is None:
            return "must be an integer"
        return None if minimum <= number <= maximum else f"must be between {minimum} and {maximum}"

    return check


def one_of(*choices: str) -> Validator:
    def check(value: str) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"

    return check


def one_of_any_case(*choices: str) -> Validator:
    """Kafka's ``CaseInsensitiveValidString``."""
    def check(value: str) -> str | None:
        return None if value.lower() in choices else f"must be one of {', '.join(choices)} (any case)"

    return check


def only(*accepted: str, what: str) -> Validator:
    """A Kafka key that plugs in a class logwright cannot load: its default is served, anything else refused (a broker
    that ignored a custom principal builder or credential check would decide security without it)."""
    def check(value: str) -> str | None:
        return None if value in accepted else f"logwright serves no custom {what}: leave it unset"

    return check


def sasl_mechanisms(value: str) -> str | None:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")]
    return f"mechanisms not served: {', '.join(unknown)}" if unknown else None


def tls_protocols(value: str) -> str | None:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in ("TLSv1.2", "TLSv1.3")]
    if not names:
        return "name TLSv1.2, TLSv1.3 or both"
    return f"protocols not served: {', '.join(unknown)} (TLSv1.2 and TLSv1.3 are)" if unknown else None


DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"


def gzip_level(value: str) -> str | None:
    """Kafka's gzip levels: -1 (zlib's default, 6) or 1 to 9."""
    number = java_long(value)
    if number is None:
        return "must be an integer"
    return None if number == -1 or 1 <= number <= 9 else "must be -1 or between 1 and 9"


def compression_levels(resource_type: str) -> tuple[ConfigKey, ...]:
    """KIP-390's levels, Kafka's defaults and ranges: the level a batch rebuilt in the topic's ``compression.type``
    is compressed at (a batch already in that codec is stored as it came, whatever its level); the broker's keys of
    the same names are the topics' defaults."""
    what = "Default " if resource_type == "broker" else ""
    return (
        ConfigKey("compression.gzip.level", resource_type, "-1", gzip_level,
                  f"{what}Level of gzip for batches rebuilt when compression.type is gzip (-1: zlib's default).",
                  "INT"),
        ConfigKey("compression.lz4.level", resource_type, "9", long_between(1, 17),
                  f"{what}Level of lz4 for batches rebuilt when compression.type is lz4; above 9 they are "
                  "rebuilt at 9 (the broker rebuilds on its event loop: 10-17 cost ten times as much).", "INT"),
        ConfigKey("compression.zstd.level", resource_type, "3", long_between(-131072, 22),
                  f"{what}Level of zstd for batches rebuilt when compression.type is zstd; above 15 they are "
                  "rebuilt at 15 (the broker rebuilds on its event loop: 17-22 cost 0.5-3.8 s a MiB).", "INT"),
    )


def parsed_by(parse: Callable[[str], object], *refusals: type[Exception]) -> Validator:
    """A validator for a value some parser reads: the parser's own message when it refuses the value, so what is
    wrong is said once, where the value is read, and the broker refuses at start what it could not use later."""

    def validate(value: str) -> str | None:
        try:
            parse(value)
        except refusals as error:
            return str(error)
        return None

    return validate


principal_rules = parsed_by(PrincipalRules.parse, InvalidConfig)
plain_jaas = parsed_by(plain_users, InvalidConfig)
oauthbearer_jaas = parsed_by(UnsecuredValidatorOptions.from_jaas, InvalidConfig)


def boolean(value: str) -> str | None:
    return None if value.lower() in ("true", "false") else "must be true or false"


def ratio(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return "must be a number"
    return None if 0.0 <= number <= 1.0 else "must be between 0 and 1"


def any_value(value: str) -> str | None:
    return None


def parse_connection_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs separated by commas (Kafka's form)."""
    overrides: dict[str, int] = {}
    for entry in filter(None, (part.strip() for part in value.split(","))):
        host, separator, count = entry.rpartition(":")
        if not separator or not host or not count.isdigit():
            raise ValueError(f"{entry!r} is not host:count")
        overrides[host] = int(count)
    return overrides


connection_overrides = parsed_by(parse_connection_overrides, ValueError)
consumer_assignors = parsed_by(assignor_names, ValueError)  # group.consumer.assignors: names or Kafka's classes


_ISO_DURATION = re.compile(r"P(?!$)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?", re.IGNORECASE)


def socket_buffer_bytes(value: str) -> str | None:
    """A socket buffer size: -1 for the operating system's default, else a positive number of bytes (Java's
    ``setSendBufferSize`` refuses zero and below, so a Kafka broker given one fails at start or at every accept)."""
    number = java_long(value)
    if number is None:
        return "must be an integer"
    if number == -1 or 1 <= number <= _INT_MAX:
        return None
    return "must be -1 (the OS default) or a positive number of bytes that fits 32 bits"


def share_auto_offset_reset(value: str) -> str | None:
    """KIP-932/KIP-1106: ``latest``, ``earliest`` or ``by_duration:`` and a non-negative ISO-8601 duration."""
    if value in ("latest", "earliest"):
        return None
    prefix, _, duration = value.partition(":")
    if prefix == "by_duration" and _ISO_DURATION.fullmatch(duration):
        return None
    return "must be latest, earliest or by_duration:<ISO-8601 duration>, e.g. by_duration:PT1H"


def iso_duration_ms(duration: str) -> int:
    """Milliseconds of a validated ISO-8601 duration such as ``PT1H`` or ``P1DT30M`` (days, hours, minutes, seconds)."""
    match = _ISO_DURATION.fullmatch(duration)
    if match is None:
        raise ValueError(f"not an ISO-8601 duration: {duration!r}")
    days, _, hours, minutes, seconds, _ = match.groups()
    total = float(seconds[:-1]) if seconds else 0.0
    total += 60 * int(minutes[:-1]) if minutes else 0
    total += 3600 * int(hours[:-1]) if hours else 0
    total += 86400 * int(days[:-1]) if days else 0
    return int(total * 1000)


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    resource_type: str
    default: str | None
    validate: Validator
    doc: str
    value_type: str = "STRING"
    sensitive: bool = False
    read_only: bool = False
    consistent: Callable[[Mapping[str, str]], str | None] | None = None
    """A rule across topic or broker keys (a minimum not above a maximum), given the resource's effective values
    after a change that sets this key; ``None`` when they agree, otherwise why not. Group keys have one
    mechanism for that, the ``logwright_check_group_config`` hook (it also sees the group's members and
    topics), so `ConfigRegistry.register` refuses a group key with a rule here."""


def _check_value(resource_type: str, key: ConfigKey, value: str) -> None:
    """Refuse an invalid value of ``key``: an INT key's must fit 32 bits, as Kafka's ``Integer.parseInt`` reads it."""
    number = java_long(value) if key.value_type == "INT" else None
    problem = ("must be an integer (32 bits)" if key.value_type == "INT" and (
        number is None or not _INT_MIN <= number <= _INT_MAX) else key.validate(value))
    if problem is not None:
        raise InvalidConfig(f"invalid value {value!r} for {resource_type} config {key.name!r}: {problem}")


@dataclass(slots=True)
class ConfigRegistry:
    """Known keys per resource type (``topic``, ``group``, ``broker``)."""

    keys: dict[tuple[str, str], ConfigKey] = field(default_factory=dict)

    def register(self, key: ConfigKey) -> None:
        if (key.resource_type, key.name) in self.keys:
            raise ValueError(f"config key {key.name!r} for {key.resource_type} is registered twice")
        if key.resource_type == "group" and key.consistent is not None:
            raise ValueError(f"group config key {key.name!r} has a rule across keys: check it in the "
                             "logwright_check_group_config hook instead")
        self.keys[(key.resource_type, key.name)] = key

    def known(self, resource_type: str) -> list[ConfigKey]:
        return [key for (kind, _), key in sorted(self.keys.items()) if kind == resource_type]

    def get(self, resource_type: str, name: str) -> ConfigKey | None:
        return self.keys.get((resource_type, name))

    def validate(self, resource_type: str, entries: Iterable[tuple[str, str | None]]) -> None:
        """Refuse unknown keys, read-only keys (`InvalidRequest`, as Kafka 4.4 refuses a static broker key) and invalid
        values (`_check_value`); ``None`` (reset) is always valid."""
        for name, value in entries:
            key = self.keys.get((resource_type, name))
            if key is None:
                raise InvalidConfig(f"unknown {resource_type} config {name!r}")
            if key.read_only:  # Kafka's words and error (INVALID_REQUEST) for a static key
                raise InvalidRequest(f"Cannot update these configs dynamically: [{name}]")
            if value is not None:
                _check_value(resource_type, key, value)

    def check_static(self, resource_type: str, overrides: Mapping[str, str]) -> list[str]:
        """Refuse (`InvalidConfig`) an invalid value of a known key among a broker's static settings (the command
        line's), as Kafka refuses to start on one; the keys no one registered, which Kafka warns about and ignores."""
        unknown = [name for name in overrides if (resource_type, name) not in self.keys]
        known = {name: value for name, value in overrides.items() if (resource_type, name) in self.keys}
        for name, value in known.items():
            _check_value(resource_type, self.keys[(resource_type, name)], value)
        self.check_together(resource_type, known, known)
        return unknown

    def check_together(self, resource_type: str, overrides: Mapping[str, str], changed: Iterable[str]) -> None:
        """Refuse ``overrides`` (the whole set after a change) when a changed key's rule across keys fails."""
        values: dict[str, str] | None = None
        for name in changed:
            key = self.keys.get((resource_type, name))
            if key is None or key.consistent is None:
                continue
            if values is None:
                values = {n: v for n, (v, _) in self.effective(resource_type, overrides).items() if v is not None}
            problem = key.consistent(values)
            if problem is not None:
                raise InvalidConfig(f"invalid {resource_type} config {name!r}: {problem}")

    def effective(self, resource_type: str, overrides: Mapping[str, str]) -> dict[str, tuple[str | None, bool]]:
        """Every known key's value and whether it is the default, for DescribeConfigs."""
        result: dict[str, tuple[str | None, bool]] = {}
        for key in self.known(resource_type):
            if key.name in overrides:
                result[key.name] = (overrides[key.name], False)
            else:
                result[key.name] = (key.default, True)
        return result


_TOPIC_KEYS = (
    ConfigKey("cleanup.policy", "topic", "delete", cleanup_policy,
              "compact keeps the latest record per key (the log cleaner, docs/compaction.md) and refuses records "
              "without a key; delete deletes the oldest whole segments by retention.ms and retention.bytes.", "LIST"),
    ConfigKey("retention.ms", "topic", "604800000", long_at_least(-1),
              "How long a segment is kept after its newest record (default: the broker's log.retention.*); -1 keeps "
              "it forever.", "LONG"),
    ConfigKey("retention.bytes", "topic", "-1", long_at_least(-1),
              "Largest size of a partition's log before its oldest whole segments are deleted (default: the "
              "broker's log.retention.bytes); -1 for no limit.", "LONG"),
    ConfigKey("max.message.bytes", "topic", "1048588", long_at_least(0),
              "Largest record batch a producer may send to this topic.", "INT"),
    ConfigKey("message.timestamp.type", "topic", "CreateTime", one_of("CreateTime", "LogAppendTime"),
              "Whether record timestamps are the producer's or the broker's append time."),
    ConfigKey("compression.type", "topic", "producer",
              one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
              "The codec batches are stored in: producer keeps each as its producer compressed it; a codec (or "
              "uncompressed) rebuilds each batch of another codec in it when it is produced, as Kafka's broker "
              "does."),
    *compression_levels("topic"),
    ConfigKey("max.decompressed.message.bytes", "topic", "2147483639", long_between(1, 2147483639),
              "Longest record body a compressed batch may hold once inflated (INVALID_RECORD otherwise, as Kafka "
              "4.4 checks it when producing); default: the broker's max.decompressed.message.bytes. logwright checks "
              "it on produce only: compaction and offsets by timestamp read stored records whatever its value.",
              "INT"),
    ConfigKey("segment.bytes", "topic", "1073741824", long_at_least(1048576),
              "Size at which a compacted partition's modelled segment rolls; only closed segments are compacted "
              "(RocksDB has no segment files).", "INT"),
    ConfigKey("segment.ms", "topic", "604800000", long_at_least(1),
              "Record-time span after which a compacted partition's modelled segment rolls at the next append; "
              "only closed segments are compacted.", "LONG"),
    ConfigKey("min.insync.replicas", "topic", "1", long_at_least(1),
              "Accepted for compatibility; there is one replica.", "INT"),
    ConfigKey("unclean.leader.election.enable", "topic", "false", boolean,
              "Accepted for compatibility; there is one replica.", "BOOLEAN"),
    ConfigKey("min.cleanable.dirty.ratio", "topic", "0.5", ratio,
              "A compacted partition is cleaned when its dirty bytes are above this share of its cleanable log.",
              "DOUBLE"),
    ConfigKey("delete.retention.ms", "topic", "86400000", long_at_least(0),
              "How long a tombstone (and a transaction marker) stays once a compaction pass first kept it.", "LONG"),
    ConfigKey("min.compaction.lag.ms", "topic", "0", long_at_least(0),
              "Records stay uncompacted at least this long after their timestamp.", "LONG",
              consistent=compaction_lags_agree),
    ConfigKey("max.compaction.lag.ms", "topic", "9223372036854775807", long_at_least(1),
              "A dirty closed segment whose first batch is older than this is compacted whatever the dirty ratio; "
              "segments of compacted topics roll after it too.", "LONG", consistent=compaction_lags_agree),
    ConfigKey("message.timestamp.before.max.ms", "topic", "9223372036854775807", long_at_least(0),
              "Accepted for compatibility.", "LONG"),
    ConfigKey("message.timestamp.after.max.ms", "topic", "3600000", long_at_least(0),
              "Accepted for compatibility.", "LONG"),
)

_OAUTHBEARER_JWT_KEYS = (
    ConfigKey("sasl.oauthbearer.jwks.endpoint.url", "broker", "", any_value,
              "Where the signed OAUTHBEARER validator reads its keys (a JWKS): a file: URL (read again when it "
              "changes) or an http(s): one (refreshed).", read_only=True),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.refresh.ms", "broker", "3600000", long_at_least(1),
              "How often an http(s) JWKS is fetched again (broker clock); sooner when a token names a key id the "
              "set lacks.", "LONG", read_only=True),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "broker", "100", long_at_least(0),
              "The first wait before fetching a JWKS again after a failure; it doubles.", "LONG", read_only=True),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "broker", "10000", long_at_least(0),
              "The longest wait between failed JWKS fetches.", "LONG", read_only=True),
    ConfigKey("sasl.oauthbearer.clock.skew.seconds", "broker", "30", long_at_least(0),
              "The clock difference allowed between the identity provider and the broker when a token's exp and "
              "nbf are checked.", "INT", read_only=True),
    ConfigKey("sasl.oauthbearer.expected.audience", "broker", "", any_value,
              "The audiences a signed token's aud must name one of (required unless "
              "sasl.oauthbearer.allow.unverified.audience is true).", "LIST", read_only=True),
    ConfigKey("sasl.oauthbearer.expected.issuer", "broker", "", any_value,
              "The issuer a signed token's iss must be (required unless sasl.oauthbearer.allow.unverified.issuer "
              "is true).", read_only=True),
    *(ConfigKey(f"sasl.oauthbearer.allow.unverified.{claim}", "broker", "false", boolean,
                f"Accept signed tokens without checking their {claim} (Kafka 4.4 requires this set to true to leave "
                f"sasl.oauthbearer.expected.{claim} empty).", "BOOLEAN", read_only=True)
      for claim in ("audience", "issuer")),
    ConfigKey("sasl.oauthbearer.scope.claim.name", "broker", "scope", any_value,
              "The claim of a signed token holding its scope.", read_only=True),
    ConfigKey("sasl.oauthbearer.sub.claim.name", "broker", "sub", any_value,
              "The claim of a signed token naming its principal.", read_only=True),
    ConfigKey("sasl.oauthbearer.jwt.validator.class", "broker", JWT_VALIDATORS[0],
              only("", *JWT_VALIDATORS, what="JWT validator"),
              "Kafka's default JWT validator only (the broker validator of signed tokens).", "CLASS",
              read_only=True),
)
"""The keys Kafka's broker validator of signed OAUTHBEARER tokens reads."""


def _listener_override(key: ConfigKey, listener: str) -> ConfigKey:
    """Kafka's listener-prefixed form of a SASL mechanism's key (``listener.name.L.oauthbearer.KEY``), which wins
    over ``KEY`` for that listener's mechanism; unset ("") by default."""
    check = key.validate

    def unset_or_valid(value: str) -> str | None:
        return None if value == "" else check(value)

    return dataclasses.replace(key, name=f"listener.name.{listener}.oauthbearer.{key.name}", default="",
                               validate=unset_or_valid, value_type="STRING" if key.value_type == "INT" else
                               key.value_type, doc=f"{key.name} for the {listener.upper()} listener's OAUTHBEARER.")




def bounds_of(kind: str, setting: str, minimum: str, maximum: str, validate: Validator) -> tuple[ConfigKey, ...]:
    """The broker's static ``group.<kind>.min.<setting>`` and ``group.<kind>.max.<setting>``: the range a group's
    ``<kind>.<setting>`` may be set in (`logwright.core.config.group_bounds`)."""
    return tuple(ConfigKey(f"group.{kind}.{edge}.{setting}", "broker", value, validate,
                           f"{word} {kind}.{setting} a group may set.", "INT", read_only=True)
                 for edge, value, word in (("min", minimum, "Smallest"), ("max", maximum, "Largest")))


_BROKER_KEYS = (
    ConfigKey("auto.create.topics.enable", "broker", "true", boolean,
              "Create a topic when Metadata or Produce names one that does not exist.", "BOOLEAN"),
    ConfigKey("num.partitions", "broker", "1", long_at_least(1),
              "Partitions of an automatically created topic.", "INT"),
    ConfigKey("offsets.topic.num.partitions", "broker", "50", long_at_least(1),
              "Partitions of the internal __consumer_offsets topic when the broker creates it (it stays empty: "
              "offsets are events).", "INT"),
    ConfigKey("socket.request.max.bytes", "broker", "104857600", long_at_least(1024),
              "Largest request frame accepted; larger ones close the connection.", "INT", read_only=True),
    ConfigKey("socket.send.buffer.bytes", "broker", "102400", socket_buffer_bytes,
              "SO_SNDBUF of each accepted connection (Linux doubles it, within net.core.wmem_max); -1 for the OS "
              "default, which grows with the connection (autotuning).", "INT", read_only=True),
    ConfigKey("socket.receive.buffer.bytes", "broker", "-1", socket_buffer_bytes,
              "SO_RCVBUF of the listening socket, which its connections inherit (Linux doubles it, within "
              "net.core.rmem_max); -1 for the OS default, which grows with the connection (autotuning). Kafka's "
              "default is 102400; logwright's is -1: one event loop reads and handles, so while it handles a request "
              "the kernel's buffer is where the next one waits, and at 100 KiB a producer of 1 MB records lost a "
              "fifth or more of its MB/s.", "INT", read_only=True),
    ConfigKey("message.max.bytes", "broker", "1048588", long_at_least(0),
              "Largest record batch a producer may send, for topics without their own max.message.bytes.", "INT"),
    ConfigKey("fetch.max.bytes", "broker", "57671680", long_at_least(1024),
              "Most bytes one Fetch or ShareFetch answer carries, whatever the client asks (the first batch "
              "still goes whole, KIP-74).", "INT"),
    ConfigKey("max.incremental.fetch.session.cache.slots", "broker", "1000", long_between(0, 2**31 - 1),
              "Most incremental fetch sessions (KIP-227) kept at once; a full fetch that finds no slot is answered "
              "without a session (compat/fetch_sessions.py).", "INT", read_only=True),
    ConfigKey("max.connections", "broker", "2147483647", long_at_least(0),
              "Most client connections open at once; a connection over it is closed right after accept.", "INT"),
    ConfigKey("max.connections.per.ip", "broker", "2147483647", long_at_least(0),
              "Most connections from one address; a connection over it is closed right after accept.", "INT"),
    ConfigKey("max.connections.per.ip.overrides", "broker", "", connection_overrides,
              "Per-address exceptions to max.connections.per.ip, as host:count,host:count.", "STRING"),
    ConfigKey("connections.max.idle.ms", "broker", "600000", long_at_least(1),
              "A connection with no request in flight that reads and writes nothing for this long (broker "
              "clock) is closed.", "LONG", read_only=True),
    ConfigKey("delete.topic.enable", "broker", "true", boolean,
              "Whether DeleteTopics deletes: false answers every topic TOPIC_DELETION_DISABLED (INVALID_REQUEST "
              "before v3), as Kafka's controller. Static, as in Kafka.", "BOOLEAN", read_only=True),
    ConfigKey("max.request.partition.size.limit", "broker", "2000", long_at_least(1),
              "Most partitions one DescribeTopicPartitions answer holds, whatever limit the request asks.", "INT",
              read_only=True),
    ConfigKey("queued.max.requests", "broker", "500", long_at_least(1),
              "Most requests read and not yet answered, across all connections; past it, reading pauses.", "INT",
              read_only=True),
    ConfigKey("queued.max.request.bytes", "broker", "-1", long_at_least(-1),
              "Bytes of requests read and not yet answered, across all connections, before reading pauses (one "
              "request alone always starts); -1 for no limit.", "LONG", read_only=True),
    ConfigKey("logwright.max.in.flight.requests.per.connection", "broker", "8", long_at_least(1),
              "Requests of one connection handled at once (Kafka: 1), together at most socket.request.max.bytes "
              "(one larger request alone); past it, and while answers wait to be written, reading from that "
              "connection pauses. Answers always leave in request order.", "INT",
              read_only=True),
    ConfigKey("logwright.socket.partial.frame.budget.bytes", "broker", "268435456", long_at_least(1024),
              "Bytes all connections together may hold for request frames not yet fully read; past it, the "
              "connection holding the largest partial frame is closed.", "LONG", read_only=True),
    ConfigKey("logwright.fetch.session.cache.partitions", "broker", "200000", long_between(0, 2**31 - 1),
              "Partitions all incremental fetch sessions together may hold (Kafka bounds only their number); a "
              "session that would pass it is not opened, or is closed (compat/fetch_sessions.py).", "INT",
              read_only=True),
    ConfigKey("log.retention.hours", "broker", "168", long_at_least(-1),
              "Default retention.ms of topics, in hours, when log.retention.minutes and log.retention.ms are unset.",
              "INT"),
    ConfigKey("log.retention.minutes", "broker", None, long_at_least(-1),
              "Default retention.ms of topics, in minutes (before log.retention.hours); -1 keeps forever.", "INT"),
    ConfigKey("log.retention.ms", "broker", None, long_at_least(-1),
              "Default retention.ms of topics (before log.retention.minutes); -1 keeps forever.", "LONG"),
    ConfigKey("log.retention.bytes", "broker", "-1", long_at_least(-1),
              "Default retention.bytes of topics; -1 for no limit.", "LONG"),
    ConfigKey("log.retention.check.interval.ms", "broker", "300000", long_at_least(1),
              "Kafka's retention check period. Logwright deletes when due, but a segment no sooner than this after "
              "its newest append (the latest Kafka's check could come), so records with old timestamps stay "
              "readable that long.", "LONG", read_only=True),
    ConfigKey("log.cleaner.dedupe.buffer.size", "broker", "134217728", long_at_least(1 << 20),
              "Memory for the log cleaner's key map of one pass (about 136 bytes per distinct key); a dirty range "
              "with more keys is compacted over several passes.", "LONG", read_only=True),
    ConfigKey("log.segment.bytes", "broker", "1073741824", long_at_least(1048576),
              "Default segment.bytes of topics.", "INT"),
    ConfigKey("log.roll.ms", "broker", None, long_at_least(1),
              "Default segment.ms of topics (before log.roll.hours).", "LONG"),
    ConfigKey("log.roll.hours", "broker", "168", long_at_least(1),
              "Default segment.ms of topics, in hours, when log.roll.ms is unset.", "INT"),
    ConfigKey("log.cleanup.policy", "broker", "delete", cleanup_policy,
              "Default cleanup.policy of topics.", "LIST"),
    ConfigKey("log.cleaner.delete.retention.ms", "broker", "86400000", long_at_least(0),
              "Default delete.retention.ms of topics.", "LONG"),
    ConfigKey("log.cleaner.min.compaction.lag.ms", "broker", "0", long_at_least(0),
              "Default min.compaction.lag.ms of topics.", "LONG"),
    ConfigKey("log.cleaner.max.compaction.lag.ms", "broker", "9223372036854775807", long_at_least(1),
              "Default max.compaction.lag.ms of topics.", "LONG"),
    ConfigKey("log.cleaner.min.cleanable.ratio", "broker", "0.5", ratio,
              "Default min.cleanable.dirty.ratio of topics.", "DOUBLE"),
    ConfigKey("log.message.timestamp.type", "broker", "CreateTime", one_of("CreateTime", "LogAppendTime"),
              "Default message.timestamp.type of topics."),
    ConfigKey("log.message.timestamp.before.max.ms", "broker", "9223372036854775807", long_at_least(0),
              "Default message.timestamp.before.max.ms of topics.", "LONG"),
    ConfigKey("log.message.timestamp.after.max.ms", "broker", "3600000", long_at_least(0),
              "Default message.timestamp.after.max.ms of topics.", "LONG"),
    ConfigKey("compression.type", "broker", "producer",
              one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
              "Default compression.type of topics."),
    *compression_levels("broker"),
    ConfigKey("max.decompressed.message.bytes", "broker", "2147483639", long_between(1, 2147483639),
              "Default max.decompressed.message.bytes of topics.", "INT"),
    ConfigKey("min.insync.replicas", "broker", "1", long_at_least(1),
              "Default min.insync.replicas of topics; there is one replica.", "INT"),
    ConfigKey("unclean.leader.election.enable", "broker", "false", boolean,
              "Default unclean.leader.election.enable of topics; there is one replica.", "BOOLEAN"),
    ConfigKey("offset.metadata.max.bytes", "broker", "4096", long_at_least(-(2**31)),
              "Longest metadata a committed offset may carry, counted in UTF-16 code units (Java's String.length(), "
              "as Kafka counts it), not bytes; longer is OFFSET_METADATA_TOO_LARGE. Static, as in Kafka.", "INT",
              read_only=True),
    ConfigKey("offsets.retention.minutes", "broker", "10080", long_at_least(1),
              "How long committed offsets are kept: from when their group became Empty (a classic group with a "
              "protocol type), else from their commit; offsets of topics members subscribe to stay. Static, as in "
              "Kafka.", "INT", read_only=True),
    ConfigKey("sasl.enabled.mechanisms", "broker", "SCRAM-SHA-256,SCRAM-SHA-512", sasl_mechanisms,
              "Mechanisms the SASL_PLAINTEXT and SASL_SSL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
              "OAUTHBEARER (unsecured tokens, Kafka's default validator) (Kafka's default, GSSAPI, is not served).",
              "LIST", read_only=True),
    ConfigKey("listener.name.sasl_plaintext.plain.sasl.jaas.config", "broker", "", plain_jaas,
              "The PLAIN users of the SASL_PLAINTEXT listener, in Kafka's JAAS form: "
              "org.apache.kafka.common.security.plain.PlainLoginModule required user_NAME=\"PASSWORD\";",
              "PASSWORD", sensitive=True, read_only=True),
    ConfigKey("listener.name.sasl_ssl.plain.sasl.jaas.config", "broker", "", plain_jaas,
              "The PLAIN users of the SASL_SSL listener, in the same form.", "PASSWORD", sensitive=True,
              read_only=True),
    *(ConfigKey(f"listener.name.{listener}.oauthbearer.sasl.jaas.config", "broker", "", oauthbearer_jaas,
                f"The {listener.upper()} listener's OAUTHBEARER validator options, in Kafka's JAAS form: "
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                "unsecuredValidatorRequiredScope=\"...\" ...; (PrincipalClaimName, ScopeClaimName, RequiredScope, "
                "AllowableClockSkewMs).", "PASSWORD", sensitive=True, read_only=True)
      for listener in ("sasl_plaintext", "sasl_ssl")),
    *(ConfigKey(f"listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class", "broker", "",
                only("", UNSECURED_VALIDATOR, SIGNED_VALIDATOR, what="OAUTHBEARER callback handler"),
                "Empty (Kafka's default): the unsecured validator (unsigned tokens, for development and tests); "
                f"{SIGNED_VALIDATOR}: tokens signed by a key of sasl.oauthbearer.jwks.endpoint.url, checked as "
                "Kafka's broker validator checks them.", "CLASS", read_only=True)
      for listener in ("sasl_plaintext", "sasl_ssl")),
    *_OAUTHBEARER_JWT_KEYS,
    *(_listener_override(key, listener) for key in _OAUTHBEARER_JWT_KEYS
      for listener in ("sasl_plaintext", "sasl_ssl")),
    ConfigKey("sasl.server.max.receive.size", "broker", "524288", long_at_least(1),
              "The largest request a SASL connection may send before it has authenticated; a larger one closes it.",
              "INT", read_only=True),
    ConfigKey("connections.max.reauth.ms", "broker", "0", long_at_least(0),
              "The longest a SASL session lasts before the client must re-authenticate (KIP-368; broker clock); 0: "
              "no limit, but a delegation token's session ends with the token.", "LONG", read_only=True),
    ConfigKey("connection.failed.authentication.delay.ms", "broker", "100", long_at_least(0),
              "How long a failed SASL authentication waits (broker clock) before its answer and the close.", "INT",
              read_only=True),
    ConfigKey("ssl.keystore.location", "broker", "", any_value,
              "The SSL listener's keystore: a PEM file holding its private key (PKCS#8) and certificate chain.",
              read_only=True),
    ConfigKey("ssl.keystore.key", "broker", "", any_value,
              "The keystore's private key as PEM text (PKCS#8), instead of ssl.keystore.location.", "PASSWORD",
              sensitive=True, read_only=True),
    ConfigKey("ssl.keystore.certificate.chain", "broker", "", any_value,
              "The keystore's certificate chain as PEM text, with ssl.keystore.key.", "PASSWORD", sensitive=True,
              read_only=True),
    ConfigKey("ssl.keystore.type", "broker", "PEM", one_of("PEM"),
              "PEM only (Kafka's default, JKS, is not read: convert the store with keytool and openssl).",
              read_only=True),
    ConfigKey("ssl.key.password", "broker", "", any_value,
              "The password of the keystore's private key, if it is encrypted.", "PASSWORD", sensitive=True,
              read_only=True),
    ConfigKey("ssl.truststore.location", "broker", "", any_value,
              "A PEM file of the CAs client certificates must chain to (ssl.client.auth requested or required); "
              "empty: ssl.truststore.certificates, else the system's CAs.", read_only=True),
    ConfigKey("ssl.truststore.certificates", "broker", "", any_value,
              "The truststore's CAs as PEM text, instead of a file.", "PASSWORD", sensitive=True, read_only=True),
    ConfigKey("ssl.truststore.type", "broker", "PEM", one_of("PEM"), "PEM only.", read_only=True),
    ConfigKey("ssl.client.auth", "broker", "none", one_of("none", "requested", "required"),
              "Whether the SSL listener asks clients for a certificate: none, requested or required. A client's "
              "principal is User:<its certificate's subject>, or User:ANONYMOUS without one.", read_only=True),
    ConfigKey("ssl.enabled.protocols", "broker", "TLSv1.2,TLSv1.3", tls_protocols,
              "The TLS versions the SSL listener accepts: TLSv1.2, TLSv1.3.", "LIST", read_only=True),
    ConfigKey("ssl.cipher.suites", "broker", "", any_value,
              "The TLS suites the SSL listeners may negotiate, by their IANA names as Kafka's (Java's); empty: "
              "OpenSSL's default suites. A list without TLS 1.3 suites serves TLS 1.2 only; the TLS 1.3 suites are "
              "named all three or none. A suite not served refuses the start.", "LIST", read_only=True),
    ConfigKey("ssl.principal.mapping.rules", "broker", "DEFAULT", principal_rules,
              "How a client certificate's subject (RFC 2253) becomes its principal's name, as Kafka's rules: "
              "DEFAULT (the whole subject) and RULE:pattern/replacement/[LU], the first whose pattern matches the "
              "whole subject naming it; a subject no rule matches is refused (its connection closes).", "LIST",
              read_only=True),
    ConfigKey("principal.builder.class", "broker", DEFAULT_PRINCIPAL_BUILDER,
              only("", DEFAULT_PRINCIPAL_BUILDER, what="principal builder"),
              "Kafka's default principal builder only (SASL: the user; SSL: the certificate subject mapped by "
              "ssl.principal.mapping.rules).", "CLASS", read_only=True),
    ConfigKey("ssl.engine.factory.class", "broker", "", only("", what="SSL engine factory"),
              "Not served: the TLS context is built from the ssl.* keys.", "CLASS", read_only=True),
    *(ConfigKey(name, "broker", "", only("", what="SASL callback handler"),
                "Not served: PLAIN checks the users of the listener's JAAS line, SCRAM the stored credentials.",
                "CLASS", read_only=True)
      for name in ("sasl.server.callback.handler.class",
                   "listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class",
                   "listener.name.sasl_ssl.plain.sasl.server.callback.handler.class")),
    ConfigKey("authorizer.class.name", "broker", "",
              one_of("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
              "The authorizer: empty (the default) checks nothing; Kafka's StandardAuthorizer enforces the stored "
              "ACLs on every request (docs/acls.md).", read_only=True),
    ConfigKey("super.users", "broker", "", any_value,
              "Principals the authorizer lets do anything, separated by semicolons (User:admin;User:ANONYMOUS).",
              "LIST", read_only=True),
    ConfigKey("allow.everyone.if.no.acl.found", "broker", "false", boolean,
              "Whether the authorizer allows an operation on a resource no ACL names at all.", "BOOLEAN",
              read_only=True),
    ConfigKey("delegation.token.secret.key", "broker", "", any_value,
              "The key delegation tokens' HMACs are made with; empty (the default, as on Kafka): no tokens.",
              "PASSWORD", sensitive=True, read_only=True),
    ConfigKey("delegation.token.max.lifetime.ms", "broker", "604800000", long_at_least(1),
              "The longest a delegation token lives, renewals included.", "LONG", read_only=True),
    ConfigKey("delegation.token.expiry.time.ms", "broker", "86400000", long_at_least(1),
              "How long a delegation token lives from its creation or last renewal.", "LONG", read_only=True),
    ConfigKey("delegation.token.expiry.check.interval.ms", "broker", "3600000", long_at_least(1),
              "How often expired delegation tokens are removed (broker clock).", "LONG", read_only=True),
    ConfigKey("quota.window.num", "broker", "11", long_at_least(1),
              "Samples a client quota's byte rate is measured over.", "INT", read_only=True),
    ConfigKey("quota.window.size.seconds", "broker", "1", long_at_least(1),
              "Span of each sample of a client quota's byte rate.", "INT", read_only=True),
    ConfigKey("offsets.retention.check.interval.ms", "broker", "600000", long_at_least(1),
              "How often expired offsets are deleted, and groups left empty without offsets with them (broker "
              "clock).", "LONG", read_only=True),
    # the three group keys are static in Kafka (set at start, never altered), and so here
    ConfigKey("group.initial.rebalance.delay.ms", "broker", "0", long_at_least(0),
              "Wait before the first rebalance of an empty group.", "INT", read_only=True),
    ConfigKey("group.min.session.timeout.ms", "broker", "6000", long_at_least(0),
              "Smallest session timeout a consumer group member may ask for.", "INT", read_only=True),
    ConfigKey("group.max.session.timeout.ms", "broker", "1800000", long_at_least(0),
              "Largest session timeout a consumer group member may ask for.", "INT", read_only=True),
    ConfigKey("group.max.size", "broker", "2147483647", long_at_least(1),
              "Most members a classic consumer group may have.", "INT"),
    ConfigKey("producer.id.expiration.ms", "broker", "86400000", long_at_least(1),
              "An idempotent or transactional producer idle this long on a partition (broker time since its last "
              "batch or marker there) is forgotten there: its next batch is taken as its first. Kafka counts from "
              "the last record's timestamp, which the client sets.", "INT"),
    ConfigKey("producer.id.expiration.check.interval.ms", "broker", "600000", long_at_least(1),
              "How often idle producers are looked for (producer.id.expiration.ms).", "INT", read_only=True),
    ConfigKey("transactional.id.expiration.ms", "broker", "604800000", long_at_least(1),
              "A transactional id without a transaction open and not updated this long is forgotten (its next "
              "InitProducerId starts afresh).", "INT"),
    ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", "broker", "3600000", long_at_least(1),
              "How often expired transactional ids are looked for (transactional.id.expiration.ms).", "INT",
              read_only=True),
    ConfigKey("transaction.max.timeout.ms", "broker", "900000", long_at_least(1),
              "Largest transaction.timeout.ms a transactional producer may ask for (INVALID_TRANSACTION_TIMEOUT "
              "above it).", "INT"),
    ConfigKey("group.consumer.session.timeout.ms", "broker", "45000", long_at_least(1),
              "A KIP-848 consumer group member that does not heartbeat for this long is removed (a group's "
              "consumer.session.timeout.ms overrides it).", "INT"),
    ConfigKey("group.consumer.heartbeat.interval.ms", "broker", "5000", long_at_least(1),
              "How often KIP-848 consumer group members heartbeat (a group's consumer.heartbeat.interval.ms "
              "overrides it).", "INT"),
    ConfigKey("group.consumer.assignment.interval.ms", "broker", "1000", long_at_least(0),
              "Least time between two target assignments of a KIP-848 consumer group (KIP-1263): a change sooner "
              "is assigned by the first heartbeat once it has passed; 0 assigns every change at once (a group's "
              "consumer.assignment.interval.ms overrides it, within the min and max).", "INT"),
    *bounds_of("consumer", "assignment.interval.ms", "0", "15000", long_at_least(0)),
    *bounds_of("consumer", "session.timeout.ms", "45000", "60000", long_at_least(1)),
    *bounds_of("consumer", "heartbeat.interval.ms", "5000", "15000", long_at_least(1)),
    ConfigKey("group.consumer.assignors", "broker", "uniform,range", consumer_assignors,
              "The server assignors a KIP-848 consumer group member may name (uniform, range, or Kafka's classes of "
              "them); the first is a group's when no member names one.", "LIST", read_only=True),
    ConfigKey("group.consumer.max.size", "broker", "2147483647", long_between(1, 2**31 - 1),
              "Most members a KIP-848 consumer group may have: one more is refused (GROUP_MAX_SIZE_REACHED) unless "
              "it replaces a static member that left (classic groups: group.max.size).", "INT", read_only=True),
    ConfigKey("group.consumer.migration.policy", "broker", "bidirectional",
              one_of_any_case("disabled", "upgrade", "downgrade", "bidirectional"),
              "Whether a group moves between the classic and the consumer protocol with members in it: anything but "
              "disabled lets classic members join a consumer group (Kafka 4.4's online migration); upgrade and "
              "bidirectional also let a consumer-protocol member join a classic group that has members, which then "
              "becomes a consumer group.", "STRING", read_only=True),
    ConfigKey("group.share.session.timeout.ms", "broker", "45000", long_at_least(1),
              "A share group member that does not heartbeat for this long is removed (a group's "
              "share.session.timeout.ms overrides it, within the min and max).", "INT", read_only=True),
    *bounds_of("share", "session.timeout.ms", "45000", "60000", long_at_least(1)),
    ConfigKey("group.share.heartbeat.interval.ms", "broker", "5000", long_at_least(1),
              "How often share group members heartbeat (a group's share.heartbeat.interval.ms overrides it).", "INT",
              read_only=True),
    *bounds_of("share", "heartbeat.interval.ms", "5000", "15000", long_at_least(1)),
    ConfigKey("group.share.max.size", "broker", "200", long_between(1, 1000),
              "Most members a share group may have: one more is refused (GROUP_MAX_SIZE_REACHED).", "INT",
              read_only=True),
    ConfigKey("group.share.record.lock.duration.ms", "broker", "30000", long_at_least(1),
              "How long a share consumer holds acquired records before they are delivered again, for groups "
              "without share.record.lock.duration.ms.", "INT", read_only=True),
    *bounds_of("share", "record.lock.duration.ms", "15000", "60000", long_at_least(1)),
    ConfigKey("group.share.delivery.count.limit", "broker", "5", long_between(2, 10),
              "Deliveries of one record to a share group before it is archived (dead-lettered), for groups "
              "without share.delivery.count.limit.", "INT", read_only=True),
    *bounds_of("share", "delivery.count.limit", "2", "10", long_between(2, 10)),
    ConfigKey("group.share.partition.max.record.locks", "broker", "2000", long_between(100, 10000),
              "Records one share-partition may hold in flight (from its first unfinished record to the last "
              "acquired) for groups without share.partition.max.record.locks; at the limit a fetch acquires no "
              "new records there.", "INT", read_only=True),
    ConfigKey("group.share.max.share.sessions", "broker", "2000", long_between(1, 2**31 - 1),
              "Share sessions the broker holds at most; a ShareFetch opening one more is refused "
              "(SHARE_SESSION_LIMIT_REACHED), once sessions of ids that are no longer members are dropped.", "INT",
              read_only=True),
    ConfigKey("group.share.min.partition.max.record.locks", "broker", "100", long_between(100, 2000),
              "Smallest share.partition.max.record.locks a group may set.", "INT", read_only=True),
    ConfigKey("group.share.max.partition.max.record.locks", "broker", "4000", long_between(2000, 10000),
              "Largest share.partition.max.record.locks a group may set.", "INT", read_only=True),
    ConfigKey("node.id", "broker", "1", long_at_least(0),
              "This broker's id in Metadata and FindCoordinator; set at start-up (--config node.id=N).", "INT",
              read_only=True),
    ConfigKey("listeners", "broker", None, any_value, "Where this broker listens (--listen).", "LIST",
              read_only=True),
    ConfigKey("advertised.listeners", "broker", None, any_value,
              "The address given to clients (--advertised, else --listen).", "LIST", read_only=True),
)


_GROUP_KEYS = (
    ConfigKey("consumer.session.timeout.ms", "group", "45000", long_at_least(1),
              "Session timeout of members of this KIP-848 consumer group (classic groups use the timeout each "
              "member asks for).", "INT"),
    ConfigKey("consumer.heartbeat.interval.ms", "group", "5000", long_at_least(1),
              "Heartbeat interval of members of this KIP-848 consumer group.", "INT"),
    ConfigKey("consumer.assignment.interval.ms", "group", "1000", long_at_least(0),
              "Least time between two target assignments of this KIP-848 consumer group (KIP-1263).", "INT"),
    ConfigKey("share.session.timeout.ms", "group", "45000", long_at_least(1),
              "A share group member that does not heartbeat for this long is removed.", "INT"),
    ConfigKey("share.heartbeat.interval.ms", "group", "5000", long_at_least(1),
              "How often share group members heartbeat.", "INT"),
    ConfigKey("share.record.lock.duration.ms", "group", "30000", long_at_least(1),
              "How long a share consumer holds acquired records before they are delivered again.", "INT"),
    ConfigKey("share.delivery.count.limit", "group", "5", long_at_least(2),
              "Deliveries of one record to a share group before it is archived (dead-lettered).", "INT"),
    ConfigKey("share.partition.max.record.locks", "group", "2000", long_at_least(100),
              "Records one share-partition of this group may hold in flight (within the broker's "
              "group.share.min/max.partition.max.record.locks; unset: group.share.partition.max.record.locks).",
              "INT"),
    ConfigKey("share.auto.offset.reset", "group", "latest", share_auto_offset_reset,
              "Where a share group starts on a partition it has never read: latest, earliest or "
              "by_duration:<ISO-8601 duration> (the first record at most that old)."),
    ConfigKey("share.isolation.level", "group", "read_uncommitted", one_of("read_uncommitted", "read_committed"),
              "Whether share consumers see records of open transactions; there are no transactions yet."),
    ConfigKey("share.renew.acknowledge.enable", "group", "true", boolean,
              "Whether share consumers may renew the acquisition locks they hold (RENEW acknowledgements, "
              "KIP-1222); when false a RENEW is refused with INVALID_RECORD_STATE, as Kafka 4.4 refuses it.",
              "BOOLEAN"),
)


def default_registry() -> ConfigRegistry:
    """The keys the core itself understands; plugins add theirs at start-up."""
    from logwright.core.config.client_metrics import KEYS as CLIENT_METRICS_KEYS  # noqa: PLC0415 - both build on this
    from logwright.core.config.kafka_log_keys import KAFKA_LOG_TOPIC_KEYS  # noqa: PLC0415 - module

    registry = ConfigRegistry()
    for key in (*_TOPIC_KEYS, *KAFKA_LOG_TOPIC_KEYS, *_BROKER_KEYS, *_GROUP_KEYS, *CLIENT_METRICS_KEYS):
        registry.register(key)
    return registry
