"""The in-process configuration cache.

Configuration changes slowly, so a handler keeps the parsed document for a
short TTL (``EDGEPROXY_CONFIG_TTL_SECONDS``, 10 s by default) instead of paying
a DynamoDB read per request. Only one refresh runs at a time; if the store is
unreachable during a refresh, the last good configuration keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from edgeproxy.config.loader import from_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import StoreError
from edgeproxy.state.store import ConfigSource

logger = logging.getLogger(__name__)


class ConfigCache:
    """Serves the stored configuration, re-reading it at most once per TTL."""

    def __init__(self, store: ConfigSource, ttl_seconds: float, clock: Callable[[], float]) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._clock = clock
        self._config: GatewayConfig | None = None
        self._version = -1
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def get(self) -> GatewayConfig:
        """The current configuration (an empty one if none was ever loaded)."""
        if self._config is not None and self._clock() - self._fetched_at < self._ttl:
            return self._config
        async with self._lock:
            if self._config is None or self._clock() - self._fetched_at >= self._ttl:
                await self._refresh()
        assert self._config is not None
        return self._config

    def invalidate(self) -> None:
        """Force the next ``get`` to re-read the store."""
        self._fetched_at = float("-inf")

    async def _refresh(self) -> None:
        try:
            stored = await self._store.load_config()
        except StoreError:
            if self._config is None:
                raise
            logger.warning(
                "configuration refresh failed; serving the cached version %s", self._version
            )
            self._fetched_at = self._clock()
            return
        self._fetched_at = self._clock()
        if stored is None:
            if self._config is None:
                logger.warning("no configuration stored yet; every model is unknown")
                self._config = GatewayConfig()
            return
        if stored.version != self._version:
            self._config = from_document(stored.document)
            self._version = stored.version
