"""Where OAUTHBEARER's signed-token validator gets its keys: ``sasl.oauthbearer.jwks.endpoint.url``, as Kafka's
broker gets them (`core.security.oauthbearer_jwt` checks the tokens).

- A ``file:`` URL is read at start (a file that cannot be read or is no key set refuses the start) and read again
  when its modification time or size changes, as Kafka 4.4's cached file is; a change that does not parse keeps
  the keys before it, with a warning.
- An ``http:`` or ``https:`` URL is fetched at start and every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``,
  retried after ``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms`` while it fails (the keys before are
  kept); a token naming a key id the set lacks asks for a refresh at once, at most once a minute per key id (Kafka's
  ``RefreshingHttpsJwks``). That token is refused; the client's next try finds the new key. Fetches run in a thread,
  answers are read up to 1 MiB and 10 s, HTTPS checks the server against the system's CAs (``SSL_CERT_FILE``
  names others). Waits are on the broker clock.
"""

from __future__ import annotations

import asyncio
import logging
import os
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING

from logwright.core.errors import InvalidConfig
from logwright.core.security.oauthbearer_jwt import KeySet

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

log = logging.getLogger(__name__)

LARGEST_KEY_SET_BYTES = 1 << 20
FETCH_TIMEOUT_S = 10.0
MISSING_KEY_RECHECK_MS = 60_000
"""A key id the set lacks asks for a refresh at most this often (Kafka's in-flight window for missing key ids)."""
LONGEST_KEY_ID = 1_000


class JwksEndpoint:
    """The identity provider's current key set, from a file or an HTTP(S) endpoint."""

    def __init__(self, url: str, refresh_ms: int, backoff_ms: int, backoff_max_ms: int,
                 now_ms: Callable[[], int]) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("file", "http", "https"):
            raise InvalidConfig(f"sasl.oauthbearer.jwks.endpoint.url must be a file, http or https URL: {url!r}")
        self.url = url
        self._path = urllib.request.url2pathname(parsed.path) if parsed.scheme == "file" else None
        self._refresh_ms, self._backoff_ms, self._backoff_max_ms = refresh_ms, max(1, backoff_ms), backoff_max_ms
        self._now_ms = now_ms
        self._keys = KeySet(())
        self._file_stamp: tuple[int, int] | None = None
        self._missing: dict[str, int] = {}
        self._expedite = asyncio.Event()
        if self._path is not None:
            try:
                self._keys, self._file_stamp = self._read_file()
            except (OSError, ValueError) as error:
                raise InvalidConfig(f"the JWKS file {self._path} cannot be read as a key set: {error}") from None

    def keys(self) -> KeySet:
        """The keys now (a file's read again first if it changed)."""
        if self._path is None:
            return self._keys
        try:
            stat = os.stat(self._path)
            stamp: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        if stamp != self._file_stamp:
            try:
                self._keys, self._file_stamp = self._read_file()
            except (OSError, ValueError) as error:  # warned once per change, not once per authentication
                log.warning("the JWKS file %s changed but cannot be read as a key set (%s): keeping its last keys",
                            self._path, error)
                self._file_stamp = stamp
        return self._keys

    def missing(self, key_id: str | None) -> None:
        """A token named a key id the set lacks: refresh an HTTP(S) key set soon."""
        if self._path is not None or key_id is None or len(key_id) > LONGEST_KEY_ID:
            return
        now = self._now_ms()
        if self._missing.get(key_id, 0) <= now:
            self._missing[key_id] = now + MISSING_KEY_RECHECK_MS
            if len(self._missing) > 10_000:  # hostile key ids must not grow it without end
                self._missing = {kid: until for kid, until in self._missing.items() if until > now}
            self._expedite.set()

    async def run(self, sleep_until: Callable[[int], Coroutine[Any, Any, None]]) -> None:
        """Keep an HTTP(S) key set fresh for the broker's life (a file needs nothing)."""
        if self._path is not None:
            return
        backoff = self._backoff_ms
        while True:
            try:
                self._keys = KeySet.parse(await asyncio.to_thread(self._fetch))
                log.info("fetched the JWKS of %s: %d keys", self.url, len(self._keys.keys))
                wait_ms, backoff = self._refresh_ms, self._backoff_ms
            except Exception as error:  # noqa: BLE001 - any failure of the endpoint keeps the keys and retries
                log.warning("could not fetch the JWKS of %s (%s): keeping its last keys, retrying in %d ms",
                            self.url, error, backoff)
                wait_ms, backoff = backoff, min(backoff * 2, self._backoff_max_ms)
            self._expedite.clear()
            sleeper = asyncio.ensure_future(sleep_until(self._now_ms() + wait_ms))
            expedited = asyncio.ensure_future(self._expedite.wait())
            try:
                await asyncio.wait((sleeper, expedited), return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                expedited.cancel()

    def _read_file(self) -> tuple[KeySet, tuple[int, int]]:
        assert self._path is not None
        with open(self._path, "rb") as file:
            stat = os.fstat(file.fileno())
            data = file.read(LARGEST_KEY_SET_BYTES + 1)
        if len(data) > LARGEST_KEY_SET_BYTES:
            raise ValueError(f"larger than {LARGEST_KEY_SET_BYTES} bytes")
        return KeySet.parse(data), (stat.st_mtime_ns, stat.st_size)

    def _fetch(self) -> bytes:
        request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as answer:  # noqa: S310 - http(s) checked
            data: bytes = answer.read(LARGEST_KEY_SET_BYTES + 1)
        if len(data) > LARGEST_KEY_SET_BYTES:
            raise ValueError(f"an answer larger than {LARGEST_KEY_SET_BYTES} bytes")
        return data
