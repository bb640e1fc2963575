"""The scheduled health job: recompute every deployment's health score from usage.

Runs every minute (template.yaml). One Query per deployment (its usage
buckets in the window) and one conditional PutItem on the minute it scored,
so overlapping or repeated runs are harmless; readers ignore a score that is
stale or has no traffic behind it (``routing.health``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from edgeproxy.config.loader import from_document
from edgeproxy.routing.health import health_from_usage, window
from edgeproxy.routing.snapshot import Health
from edgeproxy.state.store import JobStore

logger = logging.getLogger(__name__)

HEALTH_RETENTION_SECONDS = 3600


class HealthJob:
    """Recomputes health for every configured deployment."""

    def __init__(self, store: JobStore, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def run(self) -> list[Health]:
        """One pass; returns what was written."""
        stored = await self._store.load_config()
        if stored is None:
            logger.warning("no configuration stored; nothing to score")
            return []
        config = from_document(stored.document)
        now = self._clock()
        first, last = window(now)

        async def score(deployment_id: str, shards: int) -> Health | None:
            buckets = await self._store.read_usage(deployment_id, first, last, shards)
            health = health_from_usage(deployment_id, buckets, now, minute=last)
            # A deployment without traffic still gets its item: "no data" (samples 0)
            # replaces numbers that would otherwise linger until they expire.
            if not await self._store.put_health(health, now + HEALTH_RETENTION_SECONDS):
                return None  # another run already scored this minute
            return health

        results = await asyncio.gather(*(score(d.id, d.counter_shards) for d in config.deployments))
        written = [h for h in results if h is not None]
        logger.info("health scores updated for %d of %d deployments", len(written), len(results))
        return written
