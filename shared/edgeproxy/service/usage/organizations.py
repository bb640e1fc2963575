"""``TeamOrganizations``: which organization a team belongs to, for the request log's labels.

A request's record carries its key's team (``ClientKey.team_id``) and that
team's organization (``Group.parent``), which the key does not hold. The
lookup is one GetItem of the team, then trusted for ``ttl_seconds`` (the key
cache's TTL: a team moved to another organization is labelled with its new
one within that time, as a key's changes reach every process). Unknown and
deleted teams are cached too (as no organization). The cache is bounded,
least recently used dropped first. A store failure is no organization for
this record (logged, never raised: the answer is the client's) and is not
cached.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from edgeproxy.errors import StoreError
from edgeproxy.routing.hierarchy import Group, Level

logger = logging.getLogger(__name__)

MAX_CACHED = 10_000
TTL_S = 10.0


class GroupReader(Protocol):
    async def get_group(self, kind: Level, group_id: str) -> Group | None: ...


class TeamOrganizations:
    """A per-process cache of team id -> organization id (see the module doc)."""

    def __init__(
        self,
        store: GroupReader,
        clock: Callable[[], float],
        ttl_seconds: float = TTL_S,
        max_cached: int = MAX_CACHED,
    ) -> None:
        self._store = store
        self._clock = clock
        self._ttl = ttl_seconds
        self._max = max_cached
        self._held: OrderedDict[str, tuple[str | None, float]] = OrderedDict()
        self.reads = 0  # store reads made (for tests)

    async def of(self, team_id: str) -> str | None:
        """The organization of team ``team_id`` (None: no such team, or the store failed)."""
        now = self._clock()
        held = self._held.get(team_id)
        if held is not None and held[1] > now:
            self._held.move_to_end(team_id)
            return held[0]
        self.reads += 1
        try:
            team = await self._store.get_group(Level.TEAM, team_id)
        except StoreError as exc:
            logger.warning("could not read a team for the request log: %s", type(exc).__name__)
            return None
        org = team.parent if team is not None else None
        self._held[team_id] = (org, now + self._ttl)
        self._held.move_to_end(team_id)
        while len(self._held) > self._max:
            self._held.popitem(last=False)
        return org
