"""The codec and level a topic's configs store batches in (`appends.stored_compression`): ``compression.type`` and
its codec's ``compression.<codec>.level`` (KIP-390), at most what the event loop rebuilds at."""

from __future__ import annotations

import pytest
from logwright.compat.appends import stored_compression
from logwright.compat.wire.compression import Compression


@pytest.mark.parametrize(("configs", "stored"), [
    ({"compression.type": "producer"}, None),
    ({"compression.type": "uncompressed"}, (Compression.NONE, 0)),
    ({"compression.type": "gzip", "compression.gzip.level": "9"}, (Compression.GZIP, 9)),
    ({"compression.type": "lz4", "compression.lz4.level": "17"}, (Compression.LZ4, 9)),
    ({"compression.type": "zstd", "compression.zstd.level": "22"}, (Compression.ZSTD, 15)),
    ({"compression.type": "zstd", "compression.zstd.level": "-7"}, (Compression.ZSTD, -7)),
    ({"compression.type": "snappy"}, (Compression.SNAPPY, 0)),
])
def test_the_codec_and_level_a_topic_stores_batches_in(configs: dict[str, str],
                                                        stored: tuple[Compression, int] | None) -> None:
    """The levels past what the event loop can afford (`MOST_REBUILD_LEVELS`) are taken as the most it rebuilds at."""
    assert stored_compression(configs) == stored
