"""glibc's malloc told to keep the memory a Fetch answer freed, for the next answer to reuse.

A Fetch answer read into Python's memory (the stored batches of the tail cache, short runs of batch files: see
`BatchFiles.pieces`) is alive until it is sent, then freed; the next one allocates as much again. glibc's defaults
return freed memory to the kernel as soon as the top of the heap holds twice the largest block it last mapped
(``M_TRIM_THRESHOLD``, adjusted as it goes) and map larger blocks anew each time (``M_MMAP_THRESHOLD``), so every
answer page-faulted its memory back in: on this machine's VM a fresh page costs ~2 us, 0.5-0.7 CPU seconds per GB
held (`bytearray` of 256 KiB: 2.7 us reused, 138 us fresh), as much as Apache Kafka's whole consume path per GB.
Kept, the next answer takes the same pages. In process, a Fetch of 200 partitions' batches read from batch files
cost 16-17 ms of CPU a 52 MB answer instead of 28-41; over the wire, alternated with the code before (session 56),
Kafka's ConsumerPerformance read 1,000 partitions at 1.7-2.0 broker CPU s/GB instead of 2.0-2.4, and one partition
at 1.0-1.25 instead of 1.2-1.5, its ProducerPerformance writing at 10.8-14.5 instead of 13.4-15.7.

The cost is memory: up to `KEEP_FREED_BYTES` freed at the top of a malloc arena stays with the process (RSS), besides
what it uses; each thread that allocates much has an arena of its own (the event loop, RocksDB's background jobs,
the batch files' writer and the file deleter), so the bound is that per arena, reached only by an arena that once held
as much. Measured: 119-125 MiB under the memory workload's load (118-120 before), 171 MiB after ConsumerPerformance over
1,000 partitions (169 before; peak 171 against 194). Blocks up to `HEAP_BLOCKS_UP_TO` come from the heap, larger ones
are still mapped for themselves and unmapped when freed. Hand-written with ctypes because no maintained library sets
malloc's options; on a C library without ``mallopt`` (musl) nothing changes. Only the broker process installs it
(`logwright.app`).
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""glibc's ``malloc.h`` parameter numbers."""

KEEP_FREED_BYTES = 64 * 1024 * 1024
"""Freed memory at the heap's top kept for reuse rather than returned to the kernel (glibc: ``M_TRIM_THRESHOLD``):
a 50 MB Fetch answer (librdkafka's ``fetch.max.bytes``) fits."""
HEAP_BLOCKS_UP_TO = 8 * 1024 * 1024
"""Allocations this large or smaller come from the heap (glibc: ``M_MMAP_THRESHOLD``): a Fetch reads a partition
4 MiB at a time (`fetch.READ_SLICE_BYTES`), and answers are joined a quarter MiB at a time."""


def keep_freed_memory() -> bool:
    """Set glibc's trim and mmap thresholds (`KEEP_FREED_BYTES`, `HEAP_BLOCKS_UP_TO`); ``False`` where the C
    library has no ``mallopt`` or refuses them."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    kept = bool(mallopt(M_MMAP_THRESHOLD, HEAP_BLOCKS_UP_TO)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP_FREED_BYTES))
    if not kept:
        log.info("malloc kept its own thresholds: freed memory goes back to the kernel as glibc's defaults say")
    return kept
