"""OAUTHBEARER's sans-I/O parts (`core.security.oauthbearer`): the first message, Kafka's unsecured validator on a
clock the test sets, the JAAS options. The wire answers, checked against Kafka 4.4, are in
tests/integration/test_sasl_oauthbearer.py."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from logwright.core.errors import InvalidConfig
from logwright.core.security.oauthbearer import (
    InvalidToken,
    OAuthBearerServer,
    UnsecuredValidatorOptions,
    read_first_message,
    validate_unsecured,
)
from logwright.core.security.sasl_plain import SaslAborted, SaslFailed

NOW_MS = 1_800_000_000_000
UNSECURED = lambda token: validate_unsecured(token, UnsecuredValidatorOptions(), NOW_MS)  # noqa: E731
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"


def token(claims: dict[str, Any], header: dict[str, Any] | None = None, signature: str = "") -> str:
    def section(part: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()

    return f"{section({'alg': 'none'} if header is None else header)}.{section(claims)}.{signature}"


def alice(**more: Any) -> dict[str, Any]:
    return {"sub": "alice", "iat": NOW_MS // 1000, "exp": NOW_MS // 1000 + 60, **more}


def message(text: str) -> bytes:
    return f"n,,\x01auth=Bearer {text}\x01\x01".encode()


def test_the_first_message_is_read_with_kafkas_grammar() -> None:
    read = read_first_message(b"n,a=al=2Cice,\x01auth=Bearer abc.def.\x01traceId=x=y z\x01\x01")
    assert (read.token, read.authorization_id, dict(read.extensions)) == ("abc.def.", "al=2Cice", {"traceId": "x=y z"})
    assert read_first_message(b"n,,\x01auth=bearer  t~+/=\x01\x01").token == "t~+/="
    for unreadable in [b"", b"\x01", b"y,,\x01auth=Bearer t\x01\x01", b"n,,\x01auth=Bearer t\x01",
                       b"n,,\x01auth=Bearer\x01\x01", b"n,,\x01AUTH=Bearer t\x01\x01", b"n,,\x01k=\x01\x01",
                       b"n,,\x01auth=Bearer\tt\x01\x01", "n,,\x01auth=Bearer é\x01\x01".encode(),
                       b"n,a=a,b,\x01auth=Bearer t\x01\x01", b"n,,\x01bad-key=x\x01auth=Bearer t\x01\x01"]:
        with pytest.raises(SaslFailed) as failed:
            read_first_message(unreadable)
        assert failed.value.message is None, unreadable
    with pytest.raises(SaslAborted):  # Kafka's reader throws formatting its own message
        read_first_message(b"n,,\x01auth=Basic t\x01\x01")


def test_the_unsecured_validator_checks_in_kafkas_order() -> None:
    options = UnsecuredValidatorOptions(required_scope=("kafka",), clock_skew_ms=1000)
    valid = validate_unsecured(token(alice(scope=[" kafka ", "", "x"])), options, NOW_MS)
    assert (valid.principal, valid.expires_ms, valid.scope) == ("alice", NOW_MS + 60_000, frozenset({"kafka", "x"}))
    assert validate_unsecured(token(alice(scope="kafka", exp=NOW_MS / 1000 + 0.0004)), options,
                              NOW_MS).expires_ms == NOW_MS  # Math.round of the seconds
    assert validate_unsecured(token(alice(scope="kafka", iat=NOW_MS // 1000 + 1)), options, NOW_MS)  # within skew
    refused = {
        "no exp": alice(exp=None) | {"exp": None}, "exp past": alice(exp=NOW_MS // 1000 - 1),
        "exp at now plus skew": alice(exp=(NOW_MS - 1000) // 1000), "iat ahead": alice(iat=NOW_MS // 1000 + 2),
        "exp before iat": alice(iat=NOW_MS // 1000 + 1, exp=NOW_MS // 1000 + 1), "sub a list": alice(sub=["a"]),
        "sub blank": alice(sub=" \u0001 "), "scope a number": alice(scope=1),
    }
    for name, claims in refused.items():
        with pytest.raises(InvalidToken) as invalid:
            validate_unsecured(token(claims | {"scope": claims.get("scope", "kafka")}), options, NOW_MS)
        assert invalid.value.challenge == '{"status":"invalid_token"}', name
    with pytest.raises(InvalidToken) as insufficient:
        validate_unsecured(token(alice(scope=["x"])), UnsecuredValidatorOptions(required_scope=("a", "b")), NOW_MS)
    assert insufficient.value.challenge == '{"status":"insufficient_scope", "scope":"[a, b]"}'
    for bad in ["a..b.", "a.b", "a.b.c.d", token(alice(), signature="c2ln"), token(alice(), header={"alg": "RS256"}),
                token(alice()).replace(".", ".+", 1)]:
        with pytest.raises(InvalidToken):
            validate_unsecured(bad, UnsecuredValidatorOptions(), NOW_MS)
    with pytest.raises(SaslAborted):
        validate_unsecured(token(alice(), header={"typ": "JWT"}), UnsecuredValidatorOptions(), NOW_MS)


def test_a_custom_principal_claim_and_an_exp_past_a_long() -> None:
    options = UnsecuredValidatorOptions(principal_claim="email", scope_claim="scp")
    valid = validate_unsecured(token(alice(email="a@example.com", exp=10**400, scp="s")), options, NOW_MS)
    assert (valid.principal, valid.expires_ms, valid.scope) == ("a@example.com", 2**63 - 1, frozenset({"s"}))


def test_a_refusal_waits_for_the_clients_acknowledgement_or_a_new_try() -> None:
    server = OAuthBearerServer(UNSECURED)
    answer, accepted = server.step(message(token(alice(exp=1))))
    assert (answer, accepted) == (b'{"status":"invalid_token"}', None)
    answer, accepted = server.step(message(token(alice())))  # another try instead of 0x01
    assert answer == b"" and accepted is not None and accepted.principal == "alice"
    server = OAuthBearerServer(UNSECURED)
    server.step(message(token(alice(exp=1))))
    with pytest.raises(SaslFailed) as refused:
        server.step(b"\x01")
    assert refused.value.message == '{"status":"invalid_token"}'
    with pytest.raises(SaslFailed) as unread:  # 0x01 with no challenge before it is not a first message
        OAuthBearerServer(UNSECURED).step(b"\x01")
    assert unread.value.message is None
    with pytest.raises(SaslFailed) as other:
        OAuthBearerServer(UNSECURED).step(
            f"n,a=bob,\x01auth=Bearer {token(alice())}\x01\x01".encode())
    assert other.value.message == ("Authentication failed: Client requested an authorization id (bob) that is "
                                   "different from the token's principal name (alice)")


def test_the_options_come_from_the_login_modules_jaas_line() -> None:
    assert UnsecuredValidatorOptions.from_jaas("") == UnsecuredValidatorOptions()
    read = UnsecuredValidatorOptions.from_jaas(
        f'{LOGIN_MODULE} unsecuredLoginStringClaim_sub="broker" unsecuredValidatorPrincipalClaimName=" email " '
        'unsecuredValidatorScopeClaimName="scp" unsecuredValidatorRequiredScope=" a  b " '
        'unsecuredValidatorAllowableClockSkewMs="3000";')
    assert read == UnsecuredValidatorOptions("email", "scp", ("a", "b"), 3000)
    assert UnsecuredValidatorOptions.from_jaas(f'{LOGIN_MODULE} unsecuredValidatorPrincipalClaimName=" ";') == (
        UnsecuredValidatorOptions())
    for refused in [f'{LOGIN_MODULE} unsecuredValidatorAllowableClockSkewMs="-1";',
                    f'{LOGIN_MODULE} unsecuredValidatorAllowableClockSkewMs="soon";',
                    f'{LOGIN_MODULE} unsecuredValidatorRequiredScope="a\\"b";',
                    "org.apache.kafka.common.security.plain.PlainLoginModule required;",
                    f"{LOGIN_MODULE} a=b"]:
        with pytest.raises(InvalidConfig):
            UnsecuredValidatorOptions.from_jaas(refused)
