"""The command line's broker settings are checked when the broker starts, as Kafka checks server.properties: a value
a key refuses stops the start with the key's own reason; a key no one registered is warned about and ignored
(Kafka's "supplied but isn't a known config")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .broker_process import BrokerProcess

OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
SIGNED = {"sasl.enabled.mechanisms": "OAUTHBEARER",
          "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
              "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}


@pytest.mark.parametrize(("config", "says"), [
    ({"ssl.client.auth": "bogus"}, "invalid value 'bogus' for broker config 'ssl.client.auth'"),
    ({"num.partitions": "many"}, "invalid value 'many' for broker config 'num.partitions'"),
    ({"group.share.partition.max.record.locks": "99"}, "must be between 100 and 10000"),
    ({"principal.builder.class": "com.example.CustomPrincipalBuilder"}, "serves no custom principal builder"),
    ({"ssl.principal.mapping.rules": "RULE:(/x/"}, "does not compile"),
    ({"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{OAUTH_MODULE} "
      'unsecuredValidatorAllowableClockSkewMs="-1";'}, "Allowable clock skew millis must be a non-negative int"),
    ({**SIGNED}, 'requires "sasl.oauthbearer.jwks.endpoint.url" to be configured'),
    ({**SIGNED, "sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json"},
     'requires "sasl.oauthbearer.expected.audience" to be configured'),
    ({**SIGNED, "sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json",
      "sasl.oauthbearer.expected.audience": "kafka", "sasl.oauthbearer.allow.unverified.issuer": "true"},
     "the JWKS file /nonexistent/jwks.json cannot be read as a key set"),
    ({**SIGNED, "sasl.oauthbearer.jwks.endpoint.url": "ftp://example/jwks.json",
      "sasl.oauthbearer.expected.audience": "kafka", "sasl.oauthbearer.expected.issuer": "i"},
     "must be a file, http or https URL"),
])
def test_an_invalid_value_stops_the_start(tmp_path: Path, config: dict[str, str], says: str) -> None:
    process = BrokerProcess(tmp_path / "data", config=config)
    with pytest.raises(RuntimeError, match="the broker exited with 1"):
        process.start()
    assert says in process.log_tail()


def test_an_unknown_key_is_warned_about_and_the_broker_serves(tmp_path: Path) -> None:
    process = BrokerProcess(tmp_path / "data", config={"num.network.threads": "3", "num.partitions": "2"}).start()
    try:
        assert "the configuration 'num.network.threads' was supplied but isn't a known config" in process.log_tail()
        assert "num.partitions" not in process.log_tail()
    finally:
        process.kill()
