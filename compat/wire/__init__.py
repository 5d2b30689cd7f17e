"""Bytes in, bytes out: framing, request and response codecs, record batches, compression, varints.

Nothing here knows the broker; handlers and the bundled client both build on it."""
