"""The scheduled quota refresh: read every configured quota source, store what it says.

Runs every minute (template.yaml, ``QuotaRefreshSchedule``). Each source is
fetched once, in parallel; its readings are stored per credential and unit
with a conditional write, so a slow run never overwrites a newer reading
(answers' rate-limit headers write the same items). A failed fetch is
logged and recorded beside the last good readings, which are kept with their
age: a failure never deletes data, and routing ignores a reading once it is
older than ``quota_max_age_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from edgeproxy.config.loader import from_document
from edgeproxy.config.quota import QuotaSource
from edgeproxy.errors import CredentialError, QuotaFetchError
from edgeproxy.routing.snapshot import Quota, credential_key
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.state.store import JobStore
from edgeproxy.upstream.quota import fetch

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What one source's refresh did: its readings, or why it failed."""

    source: str
    readings: tuple[Quota, ...] = ()
    error: str | None = None


class QuotaJob:
    """Refreshes every configured quota source."""

    def __init__(
        self,
        store: JobStore,
        http: httpx.AsyncClient,
        credentials: CredentialResolver,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._http = http
        self._credentials = credentials
        self._clock = clock

    async def run(self) -> list[Refreshed]:
        """One pass over every source; returns what happened to each."""
        stored = await self._store.load_config()
        if stored is None:
            logger.warning("no configuration stored; no quota to refresh")
            return []
        sources = from_document(stored.document).quota_sources
        results = await asyncio.gather(*(self._refresh(s) for s in sources))
        failed = [r.source for r in results if r.error]
        logger.info(
            "quota refreshed for %d of %d sources", len(results) - len(failed), len(results)
        )
        return list(results)

    async def _refresh(self, source: QuotaSource) -> Refreshed:
        now = self._clock()
        try:
            secret = await self._credentials.resolve(source.credential)
            readings = await fetch(
                source, secret.get_secret_value() if secret else None, self._http, now=now
            )
        except (CredentialError, QuotaFetchError) as exc:
            # Kept beside the last good readings, which stay (with their age) for routing.
            logger.warning("quota refresh failed: %s", exc)
            await self._store.note_quota_failure(credential_key(source.credential), str(exc), now)
            return Refreshed(source.name, error=str(exc))
        for reading in readings:
            await self._store.put_quota(reading)
        return Refreshed(source.name, tuple(readings))
