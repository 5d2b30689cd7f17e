"""Delegation tokens and the SCRAM exchange, decided without I/O. The answers are the ones Kafka 4.4 gave over the
wire (tests/integration/test_delegation_tokens.py asks both brokers)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from logwright.core.events.security import DelegationTokenCreated, DelegationTokenRemoved, DelegationTokenRenewed
from logwright.core.security.delegation_tokens import (
    DELEGATION_TOKEN_AUTH_DISABLED,
    DELEGATION_TOKEN_EXPIRED,
    DELEGATION_TOKEN_NOT_FOUND,
    DELEGATION_TOKEN_OWNER_MISMATCH,
    DELEGATION_TOKENS,
    INVALID_PRINCIPAL_TYPE,
    NONE,
    DelegationToken,
    TokenSettings,
    create,
    described,
    expire,
    renew,
    swept,
    token_hmac,
    token_secret,
)
from logwright.core.security.sasl_plain import SaslFailed
from logwright.core.security.scram_credentials import SCRAM_SHA_256, SCRAM_SHA_512
from logwright.core.security.scram_exchange import ScramSecret, ScramServer

ON = TokenSettings("secret", max_lifetime_ms=604_800_000, renew_period_ms=86_400_000)
OFF = TokenSettings("", 604_800_000, 86_400_000)
ALICE, BOB, CAROL = ("User", "alice"), ("User", "bob"), ("User", "carol")
NOW = 1_000_000


def token(owner: tuple[str, str] = ALICE, renewers: tuple[tuple[str, str], ...] = (), expiry: int = NOW + 1_000,
          maximum: int = NOW + 10_000, token_id: str = "t1") -> DelegationToken:
    return DelegationToken(DelegationTokenCreated(token_id, *owner, *ALICE, renewers, NOW, expiry, maximum), expiry)


def test_create_lives_one_renewal_period_within_the_longest_life() -> None:
    made = create(ON, ALICE, None, [BOB], -1, NOW, "t1")
    assert made.error == NONE and made.owner == ALICE
    assert made.event == DelegationTokenCreated("t1", "User", "alice", "User", "alice", (BOB,), NOW,
                                                NOW + 86_400_000, NOW + 604_800_000)
    short = create(ON, ALICE, CAROL, [], 3_600_000, NOW, "t2").event
    assert short is not None and (short.owner_name, short.expiry_ms, short.max_ms) == (
        "carol", NOW + 3_600_000, NOW + 3_600_000)
    assert create(ON, ALICE, ("", "dan"), [], -1, NOW, "t3").owner == ("", "dan")  # any type, as Kafka takes it
    assert create(ON, ALICE, ("User", ""), [], -1, NOW, "t4").owner == ALICE  # no name: the requester


def test_create_refusals_in_kafkas_order() -> None:
    assert create(OFF, ALICE, None, [("Group", "x")], -1, NOW, "t").error == INVALID_PRINCIPAL_TYPE
    assert create(OFF, ALICE, None, [], -1, NOW, "t").error == DELEGATION_TOKEN_AUTH_DISABLED
    assert create(OFF, ALICE, None, [], -1, NOW, "t").event is None


def test_renew_by_owner_or_renewer_within_the_maximum() -> None:
    held = token(renewers=(BOB,))
    assert renew(ON, held, BOB, 500, NOW) == (NONE, NOW + 500, DelegationTokenRenewed("t1", NOW + 500))
    assert renew(ON, held, ALICE, -1, NOW)[1] == NOW + 10_000  # a day, capped at its maximum
    assert renew(ON, held, CAROL, -1, NOW) == (DELEGATION_TOKEN_OWNER_MISMATCH, 0, None)
    assert renew(ON, None, ALICE, -1, NOW) == (DELEGATION_TOKEN_NOT_FOUND, 0, None)
    assert renew(ON, held, ALICE, -1, NOW + 1_001) == (DELEGATION_TOKEN_EXPIRED, 0, None)
    assert renew(OFF, held, ALICE, -1, NOW) == (DELEGATION_TOKEN_AUTH_DISABLED, 0, None)


def test_expire_now_or_later() -> None:
    held = token()
    assert expire(ON, held, ALICE, -1, NOW) == (NONE, NOW, DelegationTokenRemoved("t1", True))
    assert expire(ON, held, ALICE, 300, NOW) == (NONE, NOW + 300, DelegationTokenRenewed("t1", NOW + 300))
    assert expire(ON, held, ALICE, 50_000, NOW)[1] == NOW + 10_000
    assert expire(ON, held, BOB, -1, NOW) == (DELEGATION_TOKEN_OWNER_MISMATCH, 0, None)
    assert expire(OFF, held, ALICE, -1, NOW) == (DELEGATION_TOKEN_AUTH_DISABLED, 0, None)


def test_describe_and_sweep() -> None:
    mine, carols = token(), token(CAROL, (BOB,), NOW + 5, NOW + 5, "t2")
    assert described([mine, carols], None) == [mine, carols]
    assert described([mine, carols], []) == []
    assert described([mine, carols], [BOB]) == [carols]  # a renewer
    assert swept([mine, carols], NOW + 5) == []
    assert swept([mine, carols], NOW + 6) == [DelegationTokenRemoved("t2", False)]


def test_the_projection_follows_a_token() -> None:
    created = DelegationTokenCreated("t1", "User", "alice", "User", "alice", (), NOW, NOW + 1, NOW + 2)
    state = DELEGATION_TOKENS.evolve(None, created, "t1")
    assert state == token(expiry=NOW + 1, maximum=NOW + 2)
    state = DELEGATION_TOKENS.evolve(state, DelegationTokenRenewed("t1", NOW + 2), "t1")
    assert state is not None and state.expiry_ms == NOW + 2
    assert DELEGATION_TOKENS.evolve(state, DelegationTokenRemoved("t1", False), "t1") is None


def test_the_hmac_is_kafkas_hmac_sha512_of_the_id() -> None:
    assert token_hmac("secret", "t1") == hmac.new(b"secret", b"t1", "sha512").digest()


def _client(server: ScramServer, user: str, password: bytes, digest: str, extensions: str = "",
            authzid: str = "") -> tuple[bytes, ScramSecret]:
    """RFC 5802's client side, by hand: the exchange as a Kafka client runs it."""
    bare = f"n={user},r=clientnonce{extensions}"
    first = server.first(f"n,{'a=' + authzid if authzid else ''},{bare}".encode()).decode()
    fields = dict(part.split("=", 1) for part in first.split(","))
    assert fields["r"].startswith("clientnonce")
    salted = hashlib.pbkdf2_hmac(digest, password, base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{bare},{first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(digest, client_key).digest(), auth, digest).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    final, secret = server.final(f"{without_proof},p={proof}".encode())
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    assert final == b"v=" + base64.b64encode(hmac.new(server_key, auth, digest).digest())
    return final, secret


def test_a_token_authenticates_its_owner_with_either_mechanism() -> None:
    held = token()
    password = base64.b64encode(token_hmac("secret", "t1"))
    for mechanism, digest in ((SCRAM_SHA_256, "sha256"), (SCRAM_SHA_512, "sha512")):
        server = ScramServer(mechanism, lambda name, is_token, m=mechanism: token_secret("secret", held, m)
                             if is_token and name == "t1" else None, "servernonce")
        _, secret = _client(server, "t1", password, digest, ",tokenauth=true")
        assert (secret.principal, server.token_authenticated) == ("alice", True)


@pytest.mark.parametrize("first", [
    b"y,,n=t1,r=abc",  # channel binding asked for
    b"n,,n=t1,r=abc,other=1",  # an extension Kafka does not accept
    b"n,,n=t1",  # no nonce
    b"n,,n=t,1,r=abc",  # a comma not escaped
    b"\xff\xfe",
])
def test_malformed_first_messages_fail_without_words(first: bytes) -> None:
    server = ScramServer(SCRAM_SHA_256, lambda name, is_token: None, "servernonce")
    with pytest.raises(SaslFailed) as failed:
        server.first(first)
    assert failed.value.message is None


def test_a_wrong_password_and_a_replayed_nonce_fail() -> None:
    salted = hashlib.pbkdf2_hmac("sha256", b"right", b"salt", 4096)
    stored, server_key = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest(), \
        hmac.new(salted, b"Server Key", "sha256").digest()
    secret = ScramSecret(b"salt", stored, server_key, 4096, "carol")

    def server() -> ScramServer:
        return ScramServer(SCRAM_SHA_256, lambda name, is_token: secret if name == "carol" else None, "n2")

    assert _client(server(), "carol", b"right", "sha256")[1].principal == "carol"
    with pytest.raises(SaslFailed):
        _client(server(), "carol", b"wrong", "sha256")
    other = server()
    other.first(b"n,,n=carol,r=abc")
    with pytest.raises(SaslFailed):
        other.final(b"c=biws,r=abcXX,p=AAAA")  # not the nonce the server answered
    with pytest.raises(SaslFailed) as refused:
        _client(server(), "carol", b"right", "sha256", authzid="bob")
    assert refused.value.message == ("Authentication failed: Client requested an authorization id that is different "
                                     "from username")
