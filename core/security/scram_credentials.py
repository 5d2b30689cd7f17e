"""SCRAM credentials (KIP-554): what AlterUserScramCredentials may change, decided as Kafka's controller decides
(its checks, words and the order of its answer), and the ``scram_credentials`` projection that SCRAM
authentication and DescribeUserScramCredentials read.

A credential is kept as Kafka keeps it: the salt, the iterations, and the stored and server keys derived from the
salted password the client sent (RFC 5802), never the password itself.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from logwright.core.events.base import Event
from logwright.core.events.security import SECURITY_EVENT_TYPES, ScramCredential, UserScramCredentialsAltered
from logwright.core.java_hash_order import java_map_order_of_strings
from logwright.core.projection import Projection

SCRAM_SHA_256, SCRAM_SHA_512 = 1, 2
MECHANISM_NAMES = {SCRAM_SHA_256: "SCRAM-SHA-256", SCRAM_SHA_512: "SCRAM-SHA-512"}
"""Kafka's ``ScramMechanism`` types on the wire (0 is UNKNOWN)."""
HASHES = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
"""Kafka's bounds for both mechanisms."""

UNKNOWN_SERVER_ERROR, UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL = -1, 33, 93
RESOURCE_NOT_FOUND, DUPLICATE_RESOURCE = 91, 92
"""The Kafka error codes of a refusal (the core names them by number: they are the answer, as Kafka's controller
gives it)."""


@dataclass(frozen=True, slots=True)
class UserCredentials:
    """A user's credentials (the projection's state), one per mechanism, by mechanism type."""

    user: str
    credentials: tuple[ScramCredential, ...]

    def of(self, mechanism: int) -> ScramCredential | None:
        return next((credential for credential in self.credentials if credential.mechanism == mechanism), None)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, UserScramCredentialsAltered):
        return tuple(dict.fromkeys([*(credential.user for credential in event.upserted),
                                    *(user for user, _ in event.deleted)]))
    return ()


def _evolve(state: UserCredentials | None, event: Event, key: str) -> UserCredentials | None:
    if not isinstance(event, UserScramCredentialsAltered):
        return state
    held = {credential.mechanism: credential for credential in (state.credentials if state else ())}
    for user, mechanism in event.deleted:
        if user == key:
            held.pop(mechanism, None)
    for credential in event.upserted:
        if credential.user == key:
            held[credential.mechanism] = credential
    return UserCredentials(key, tuple(held[mechanism] for mechanism in sorted(held))) if held else None


SCRAM_CREDENTIALS: Projection[UserCredentials] = Projection(
    "scram_credentials", _keys, _evolve, frozenset(SECURITY_EVENT_TYPES))


def derived_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """RFC 5802's StoredKey and ServerKey of a salted password, as Kafka's ScramFormatter derives them."""
    name = HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", name).digest()
    server_key = hmac.new(salted_password, b"Server Key", name).digest()
    return hashlib.new(name, client_key).digest(), server_key


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class UserResult:
    """One user's answer: error code 0 and message None when its alteration is made."""

    user: str
    error_code: int
    message: str | None


_TWICE = "A user credential cannot be altered twice in the same request"


def _name_error(user: str, mechanism: int) -> tuple[int, str] | None:
    if not user:
        return UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _upsertion_error(upsertion: Upsertion) -> tuple[int, str] | None:
    refusal = _name_error(upsertion.user, upsertion.mechanism)
    if refusal is None and upsertion.iterations < MIN_ITERATIONS:
        return UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if refusal is None and upsertion.iterations > MAX_ITERATIONS:
        return UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return refusal


def decide_alterations(deletions: Sequence[tuple[str, int]], upsertions: Sequence[Upsertion],
                       stored: Mapping[str, UserCredentials]
                       ) -> tuple[list[UserResult], UserScramCredentialsAltered | None]:
    """Kafka's controller on one AlterUserScramCredentials (its ``ScramControlManager``): each change is checked
    as it is read and a refused user's later changes are passed over; a user changed twice is refused
    DUPLICATE_RESOURCE and neither change is made. The answer lists the deletions made, then the upsertions made
    (each in its Java ``HashMap``'s order), then every refusal in the order of Kafka's map of them. An empty
    salted password cannot key an HMAC: Kafka answers it UNKNOWN_SERVER_ERROR without a message, and so does
    this."""
    refused: dict[str, tuple[int, str | None]] = {}
    deleting: dict[str, int] = {}
    upserting: dict[str, Upsertion] = {}
    for user, mechanism in deletions:
        if user in refused:
            continue
        if deleting.pop(user, None) is not None:
            refused[user] = DUPLICATE_RESOURCE, _TWICE
            continue
        refusal = _name_error(user, mechanism)
        held = stored.get(user)
        if refusal is None and (held is None or held.of(mechanism) is None):
            refusal = RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        if refusal is not None:
            refused[user] = refusal
        else:
            deleting[user] = mechanism
    for upsertion in upsertions:
        if upsertion.user in refused:
            continue
        if deleting.pop(upsertion.user, None) is not None or upserting.pop(upsertion.user, None) is not None:
            refused[upsertion.user] = DUPLICATE_RESOURCE, _TWICE
            continue
        refusal = _upsertion_error(upsertion)
        if refusal is not None:
            refused[upsertion.user] = refusal
        else:
            upserting[upsertion.user] = upsertion
    results = [UserResult(user, 0, None) for user in java_map_order_of_strings(deleting)]
    deleted = tuple((user, deleting[user]) for user in java_map_order_of_strings(deleting))
    upserted: list[ScramCredential] = []
    for user in java_map_order_of_strings(upserting):
        upsertion = upserting[user]
        if not upsertion.salted_password:
            refused[user] = UNKNOWN_SERVER_ERROR, None
            continue
        stored_key, server_key = derived_keys(upsertion.mechanism, upsertion.salted_password)
        upserted.append(ScramCredential(user, upsertion.mechanism, upsertion.salt, stored_key, server_key,
                                        upsertion.iterations))
        results.append(UserResult(user, 0, None))
    results += [UserResult(user, *refused[user]) for user in java_map_order_of_strings(refused)]
    if not deleted and not upserted:
        return results, None
    return results, UserScramCredentialsAltered(tuple(upserted), deleted)


def _every_user(stored: Iterable[UserCredentials]) -> list[str]:
    """Every user with a credential in the order Kafka's ScramImage meets them: mechanism by mechanism, each
    mechanism's users in its own map's order (Kafka's mechanisms are an enum-keyed map, whose order varies from
    one JVM to the next; logwright takes them by type)."""
    by_mechanism: dict[int, list[str]] = {}
    for credentials in sorted(stored, key=lambda credentials: credentials.user):
        for credential in credentials.credentials:
            by_mechanism.setdefault(credential.mechanism, []).append(credentials.user)
    return [user for mechanism in sorted(by_mechanism) for user in java_map_order_of_strings(by_mechanism[mechanism])]


@dataclass(frozen=True, slots=True)
class DescribedUser:
    user: str
    error_code: int
    message: str | None
    mechanisms: tuple[tuple[int, int], ...]
    """(mechanism, iterations) of each credential held."""


def describe(users: Sequence[str] | None, stored: Iterable[UserCredentials]) -> list[DescribedUser]:
    """DescribeUserScramCredentials as Kafka's ScramImage answers it: no users (or none listed) means every user
    with a credential; a user named twice is refused DUPLICATE_RESOURCE, one without any RESOURCE_NOT_FOUND."""
    held = {credentials.user: credentials for credentials in stored}
    twice: dict[str, bool] = {}
    for user in (users or _every_user(held.values())):
        twice[user] = user in twice
    answer = []
    for user in java_map_order_of_strings(twice):
        if twice[user]:
            answer.append(DescribedUser(
                user, DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}", ()))
        elif user in held:
            answer.append(DescribedUser(user, 0, "", tuple((credential.mechanism, credential.iterations)
                                                             for credential in held[user].credentials)))
        else:
            answer.append(DescribedUser(user, RESOURCE_NOT_FOUND,
                                        f"Attempt to describe a user credential that does not exist: {user}", ()))
    return answer
