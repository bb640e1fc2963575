"""The in-process configuration cache: stale-while-revalidate, with a bound.

Configuration changes slowly, so a handler keeps the parsed document for a
short TTL (``EDGEPROXY_CONFIG_TTL_SECONDS``, 10 s by default) instead of paying
a DynamoDB read per request. Once the TTL has passed, the next reader starts
one refresh (a task of its own; no lock is held while the store is read) and
waits for it at most ``REFRESH_WAIT_S``; every other reader meanwhile gets the
last good copy at once. So with a healthy store readers see a new version
within the TTL, and with a slow or failing one they never wait on it:

- a refresh that fails keeps the last good copy and is retried after
  ``RETRY_AFTER_FAILURE_S`` (fail open);
- a copy older than the TTL plus ``MAX_STALE_S`` (5 minutes) is no longer
  served: readers wait for the refresh and get its ``StoreError`` (503), so a
  long outage cannot keep a revoked key or a removed deployment alive (fail
  closed);
- with no copy at all (a cold start during an outage) readers wait for the
  refresh and get its error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from edgeproxy.config.loader import from_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import StoreError
from edgeproxy.state.store import ConfigSource

logger = logging.getLogger(__name__)

REFRESH_WAIT_S = 0.25  # how long the reader that starts a refresh waits for it
RETRY_AFTER_FAILURE_S = 1.0
MAX_STALE_S = 300.0


class ConfigCache:
    """Serves the stored configuration, re-reading it at most once per TTL."""

    def __init__(self, store: ConfigSource, ttl_seconds: float, clock: Callable[[], float]) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._clock = clock
        self._config: GatewayConfig | None = None
        self._version = -1
        self._fetched_at = float("-inf")  # when the cached copy was last confirmed
        self._next_try = float("-inf")  # no refresh before this (after a failure)
        self._refresh: asyncio.Task[None] | None = None

    async def get(self) -> GatewayConfig:
        """The current configuration (an empty one if none was ever loaded).

        Raises ``StoreError`` only when no copy may be served (none yet, or
        one past the staleness bound) and the store cannot be read.
        """
        now = self._clock()
        age = now - self._fetched_at
        if self._config is not None and age < self._ttl:
            return self._config
        servable = self._config is not None and age < self._ttl + MAX_STALE_S
        if servable and (self._refresh is not None or now < self._next_try):
            return self._config  # type: ignore[return-value]
        task = self._start()
        if servable:
            # Wait briefly so a healthy store's new version is seen at once; never longer.
            with contextlib.suppress(StoreError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), REFRESH_WAIT_S)
        else:
            await asyncio.shield(task)  # raises the store's error
        assert self._config is not None
        return self._config

    def cached(self) -> GatewayConfig | None:
        """The copy held now, never reading the store (None before the first load)."""
        return self._config

    def invalidate(self) -> None:
        """Force the next ``get`` to re-read the store."""
        self._fetched_at = float("-inf")
        self._next_try = float("-inf")

    def _start(self) -> asyncio.Task[None]:
        if self._refresh is None:
            self._refresh = asyncio.ensure_future(self._load())
            self._refresh.add_done_callback(self._finished)
        return self._refresh

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._refresh = None
        if not task.cancelled() and task.exception() is not None:
            self._next_try = self._clock() + RETRY_AFTER_FAILURE_S

    async def _load(self) -> None:
        try:
            stored = await self._store.load_config()
        except StoreError as exc:
            logger.warning(
                "configuration refresh failed (%s); serving the cached version %s",
                type(exc).__name__,
                self._version,
            )
            raise
        self._fetched_at = self._clock()
        if stored is None:
            if self._config is None:
                logger.warning("no configuration stored yet; every model is unknown")
                self._config = GatewayConfig()
            return
        if stored.version != self._version:
            self._config = from_document(stored.document)
            self._version = stored.version
