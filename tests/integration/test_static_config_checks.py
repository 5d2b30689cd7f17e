"""The command line's broker settings are checked when the broker starts, as Kafka checks server.properties: a value
a key refuses stops the start with the key's own reason; a key no one registered is warned about and ignored
(Kafka's "supplied but isn't a known config")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .broker_process import BrokerProcess


@pytest.mark.parametrize(("config", "says"), [
    ({"ssl.client.auth": "bogus"}, "invalid value 'bogus' for broker config 'ssl.client.auth'"),
    ({"num.partitions": "many"}, "invalid value 'many' for broker config 'num.partitions'"),
    ({"group.share.partition.max.record.locks": "99"}, "must be between 100 and 10000"),
    ({"principal.builder.class": "com.example.CustomPrincipalBuilder"}, "serves no custom principal builder"),
    ({"ssl.principal.mapping.rules": "RULE:(/x/"}, "does not compile"),
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
