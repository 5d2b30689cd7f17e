"""Time retention as a client sees it, on logwright and on Apache Kafka (``pytest --against kafka``): a segment
whose records are older than ``retention.ms`` goes, the log start moves to the next segment, a fetch below it is
out of range, the active segment with a young record stays. Real time on both: Kafka's node of its own checks
every second (``log.retention.check.interval.ms``), logwright acts when due; the test polls the watermarks."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from .broker_process import BrokerProcess
from .compacted_topics import produce
from .conftest import BENCH, against
from .test_retention import create, fetch_error_from, watermarks


@pytest.fixture
def retention_bootstrap(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A broker of the test's own: Kafka with a 1 s retention check, or logwright with the same interval (it
    deletes no segment sooner than that after its newest append)."""
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(tmp_path / "kafka", config={"log.retention.check.interval.ms": "1000"}) as kafka:
            yield kafka.bootstrap
        return
    process = BrokerProcess(tmp_path / "data", config={"log.retention.check.interval.ms": "1000"}).start()
    try:
        yield process.bootstrap
    finally:
        process.kill()


def test_an_expired_segment_goes_and_the_log_start_moves(retention_bootstrap: str) -> None:
    bootstrap = retention_bootstrap
    topic = create(bootstrap, {"retention.ms": "30000", "segment.ms": "1000"})
    now = int(time.time() * 1000)
    assert produce(bootstrap, topic, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], now - 60_000) == [None] * 3
    assert produce(bootstrap, topic, [(b"d", b"4")], now) == [None]  # a minute later in record time: rolls
    deadline = time.monotonic() + 30
    while watermarks(bootstrap, topic)[0] != 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert watermarks(bootstrap, topic) == (3, 4)
    assert fetch_error_from(bootstrap, topic, 0) == KafkaError._AUTO_OFFSET_RESET
    assert fetch_error_from(bootstrap, topic, 3) is None
