"""``TeamOrganizations``: a team's organization for the log's labels, cached per process."""

from __future__ import annotations

from edgeproxy.errors import StoreUnavailable
from edgeproxy.routing.hierarchy import Group, Level
from edgeproxy.service.usage.organizations import TeamOrganizations


class Teams:
    """Team items by id (a dict), counting reads; ``down`` makes every read fail."""

    def __init__(self) -> None:
        self.parents: dict[str, str] = {"search": "acme"}
        self.down = False

    async def get_group(self, kind: Level, group_id: str) -> Group | None:
        assert kind is Level.TEAM
        if self.down:
            raise StoreUnavailable("down", retry_after=1.0)
        parent = self.parents.get(group_id)
        return None if parent is None else Group(Level.TEAM, group_id, group_id, parent=parent)


async def test_a_lookup_is_trusted_for_the_ttl_then_read_again() -> None:
    teams, now = Teams(), [1000.0]
    cache = TeamOrganizations(teams, lambda: now[0], ttl_seconds=10)
    assert await cache.of("search") == "acme"
    teams.parents["search"] = "globex"  # the team moved
    now[0] += 9.9
    assert await cache.of("search") == "acme"
    assert cache.reads == 1
    now[0] += 0.2
    assert await cache.of("search") == "globex"
    assert cache.reads == 2


async def test_unknown_teams_are_cached_and_store_failures_are_not() -> None:
    teams, now = Teams(), [1000.0]
    cache = TeamOrganizations(teams, lambda: now[0], ttl_seconds=10)
    assert await cache.of("gone") is None
    assert await cache.of("gone") is None
    assert cache.reads == 1
    teams.down = True
    assert await cache.of("search") is None  # no organization for this record, no raise
    teams.down = False
    assert await cache.of("search") == "acme"  # the failure was not cached


async def test_the_cache_is_bounded_least_recently_used_first() -> None:
    teams = Teams()
    teams.parents.update({f"t{i}": "acme" for i in range(3)})
    cache = TeamOrganizations(teams, lambda: 0.0, ttl_seconds=10, max_cached=2)
    for team in ("t0", "t1", "t0", "t2"):  # t1 is the least recently used when t2 comes
        await cache.of(team)
    reads = cache.reads
    await cache.of("t0")
    await cache.of("t2")
    assert cache.reads == reads
    await cache.of("t1")
    assert cache.reads == reads + 1
