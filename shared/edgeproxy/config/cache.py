"""``cache:``: the exact response cache, off unless a pool, team or key turns it on.

    cache:
      pools:            # public model (or alias) -> rule
        fast-chat: {scope: team, ttl_seconds: 600}
      teams:            # team id -> rule
        research: {scope: team}
      keys:             # client key id (16 hex) -> rule
        3f2a9c0d1e2b4a5c: {enabled: false}

The most specific rule wins: a key's over its team's over its pool's; a
request no rule names is not cached. A rule with ``enabled: false`` turns
the cache off at its level (a key opting out of its team's cache).
``routing.cache`` resolves the rule and the key; ``docs/caching.md`` has the rest.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from edgeproxy.config.base import Strict

# The largest answer body stored: under the store's compressed cap of 1.4 MB
# (``state.answers.MAX_STORED_BYTES``) whatever the compression gains.
MAX_ANSWER_BYTES = 1_300_000
MAX_TTL_S = 7 * 86400  # a week; also the bound of the per-request TTL header
DEFAULT_TTL_S = 3600


class CacheScope(StrEnum):
    """Who shares a stored answer: the client key, its team, or every caller."""

    KEY = "key"
    TEAM = "team"
    GATEWAY = "gateway"


class CacheRule(Strict):
    """One level's cache setting."""

    enabled: bool = True
    scope: CacheScope = CacheScope.KEY
    ttl_seconds: Annotated[int, Field(gt=0, le=MAX_TTL_S)] = DEFAULT_TTL_S
    max_answer_bytes: Annotated[int, Field(gt=0, le=MAX_ANSWER_BYTES)] = 1_000_000
    # Identical requests in flight at once wait for the first one's answer (fleet-wide),
    # at most ``coalesce_wait_seconds``; then they call the upstream themselves.
    coalesce: bool = False
    coalesce_wait_seconds: Annotated[float, Field(gt=0, le=300)] = 30.0


class CacheSettings(Strict):
    """The rules of each level (see the module doc)."""

    pools: dict[str, CacheRule] = Field(default_factory=dict)
    teams: dict[str, CacheRule] = Field(default_factory=dict)
    keys: dict[Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")], CacheRule] = Field(
        default_factory=dict
    )

    @property
    def any(self) -> bool:
        """Whether any level turns the cache on (a request path with none skips it all)."""
        levels = (self.pools, self.teams, self.keys)
        return any(rule.enabled for level in levels for rule in level.values())
