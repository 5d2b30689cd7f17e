"""Coverage-guided fuzzing (atheris, libFuzzer) of the decoding path, in-process: header, bounds check, kio,
the hand Produce reader, the fallback answers, record batches and their codecs, extension bodies.

Any exception other than the ones that mean "refused" is a finding, and so is the process dying (kio or a
codec aborting on a forged length). Run by ``make fuzz``; by hand::

    .venv/bin/python tests/fuzz/atheris_decode.py -runs=200000 -max_len=4096 [corpus_dir]

The smallest request of every served (API key, version) seeds the corpus directory (a temporary one if
none is named).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["logwright"]):
    from logwright.compat.wire import produce_request
    from logwright.compat.wire.compression import CompressionError
    from logwright.compat.wire.extension_body import decode
    from logwright.compat.wire.fallback import unsupported_version_response
    from logwright.compat.wire.messages import KNOWN_VERSIONS, MalformedRequest, decode_request, parse_request_header
    from logwright.compat.wire.record_batch import CorruptBatch, UnsupportedMessageFormat, decode_records, iter_batches
    from logwright.core.errors import InvalidRequest

REFUSALS = (MalformedRequest, CorruptBatch, UnsupportedMessageFormat, CompressionError, InvalidRequest)


def one_input(data: bytes) -> None:
    try:
        header = parse_request_header(data)
    except MalformedRequest:
        return
    if header.api_key not in KNOWN_VERSIONS:
        try:
            decode(data[header.header_length:])
        except InvalidRequest:
            pass
        return
    if header.api_version not in KNOWN_VERSIONS[header.api_key]:
        unsupported_version_response(header, data)
        return
    try:
        _, request = decode_request(data)
    except MalformedRequest:
        return
    if header.api_key == 0 and produce_request.FIRST_VERSION <= header.api_version <= produce_request.LAST_VERSION:
        try:
            produce_request.read_produce_request(data, header.header_length, header.api_version)
        except (produce_request.TruncatedProduceRequest, IndexError, ValueError):
            pass
        for topic in request.topic_data:
            for partition in topic.partition_data:
                try:
                    for batch in iter_batches(partition.records or b""):
                        decode_records(batch)
                except REFUSALS:
                    pass


def main() -> None:
    """libFuzzer's arguments; the first corpus directory (a temporary one if none is named) gets the seeds."""
    arguments = sys.argv[1:]
    corpora = [argument for argument in arguments if not argument.startswith("-")]
    if not corpora:
        corpora.append(tempfile.mkdtemp(prefix="logwright-atheris-"))
        arguments.append(corpora[0])
    corpus = Path(corpora[0])
    corpus.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.fuzz.frames import smallest_seeds

    for number, seed in enumerate(smallest_seeds()):
        (corpus / f"seed-{number}").write_bytes(seed)
    atheris.Setup([sys.argv[0], *arguments], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
