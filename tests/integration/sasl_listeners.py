"""What the SASL and delegation token tests share: the brokers' settings (the ``listeners`` fixture in conftest.py
starts logwright with a SASL_PLAINTEXT listener, or Apache Kafka 4.4 under ``--against kafka``; both with PLAIN
users, SCRAM, and delegation tokens on), the answers both give, and a PLAIN login."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.sasl_authenticate.v2 import request as authenticate_v2
from kio.schema.sasl_handshake.v1 import request as handshake_v1
from logwright.client.connection import Connection, ConnectionClosed
from logwright.compat.registry import make

PLAIN_USERS = {"alice": "alice-secret", "bob": "b"}
TOKENS = {"delegation.token.secret.key": "token-secret", "delegation.token.expiry.check.interval.ms": "1000"}
"""Both brokers issue delegation tokens and sweep expired ones every second."""
AUTHORIZING = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
               "super.users": "User:ANONYMOUS"}
"""Both brokers enforce ACLs; the PLAINTEXT listener's clients (and Kafka's own controller link) are super users."""
OAUTHBEARER = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
    # Kafka's broker logs in with the same line: it needs a principal to make its own (unused) token
    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="broker" unsecuredValidatorRequiredScope="kafka produce" '
        'unsecuredValidatorAllowableClockSkewMs="2000";',
}
"""Both brokers serve OAUTHBEARER too, with Kafka's unsecured validator: tokens must carry the scope items
``kafka`` and ``produce``; two seconds of clock skew allowed."""
MECHANISMS = ("PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256")
"""As both brokers list PLAIN,SCRAM-SHA-256,SCRAM-SHA-512 enabled (the order of Kafka's HashSet)."""
SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
NONE, ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 0, 34, 33, 58


class Listeners:
    def __init__(self, plaintext: str, sasl: str) -> None:
        self.plaintext, self.sasl = plaintext, sasl


async def plain_login(bootstrap: str, user: str, client_id: str = "plain-login") -> Connection:
    """A connection authenticated as ``user`` (one of `PLAIN_USERS`) with PLAIN; closed again if refused."""
    connection = await Connection.open(bootstrap, client_id)
    try:
        handshake = await connection.request(make(handshake_v1.SaslHandshakeRequest, mechanism="PLAIN"))
        assert int(handshake.error_code) == NONE, handshake
        answer = await connection.request(make(authenticate_v2.SaslAuthenticateRequest,
                                               auth_bytes=f"\0{user}\0{PLAIN_USERS[user]}".encode()))
        assert int(answer.error_code) == NONE, answer
    except BaseException:
        await connection.close()
        raise
    return connection


def handshake(mechanism: str) -> Any:
    return make(handshake_v1.SaslHandshakeRequest, mechanism=mechanism)


def authenticate(token: bytes) -> Any:
    return make(authenticate_v2.SaslAuthenticateRequest, auth_bytes=token)


METADATA = make(metadata_v12.MetadataRequest, topics=(), allow_auto_topic_creation=False,
                include_topic_authorized_operations=False)


def short(answer: Any) -> tuple[Any, ...]:
    if hasattr(answer, "brokers"):
        return ("brokers", tuple((broker.host, broker.port) for broker in answer.brokers))
    if hasattr(answer, "mechanisms"):
        return int(answer.error_code), answer.mechanisms
    if hasattr(answer, "auth_bytes"):
        return int(answer.error_code), answer.error_message, answer.auth_bytes
    return (int(answer.error_code),)


def exchange(bootstrap: str, requests: list[Any]) -> list[Any]:
    """Each request's short answer on one connection, then whether a Metadata is still answered ("closed" where
    the connection was)."""

    async def run() -> list[Any]:
        connection = await Connection.open(bootstrap, "sasl-probe")
        answers: list[Any] = []
        try:
            for request in [*requests, METADATA]:
                answers.append(short(await connection.request(request, timeout_s=10)))
        except ConnectionClosed:
            answers.append("closed")
        finally:
            await connection.close()
        return answers

    return asyncio.run(run())
