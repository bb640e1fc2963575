"""A team's or organization's sharded minute bucket, decided purely (``routing.judge.levels``):
each shard's share of the limits, the start shard drawn from the rng passed in, and the
borrowing order that ends only when every shard was found full."""

from __future__ import annotations

import random
from dataclasses import replace

from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import EndUserLimits, Group, Level
from edgeproxy.routing.judge.levels import (
    LevelCharge,
    borrow,
    charges,
    level_limits,
    start_shards,
)
from edgeproxy.routing.judge.ruling import Estimate

NOW = 1_800_007_200.0 + 20
KEY = ClientKey("0123456789abcdef00", "k", team_id="search")
ORG = Group(Level.ORGANIZATION, "acme", "Acme", rpm_limit=1000, counter_shards=8)
TEAM = Group(
    Level.TEAM,
    "search",
    "Search",
    parent="acme",
    rpm_limit=10,
    tpm_limit=1003,
    budget_usd=5.0,
    counter_shards=4,
    end_user_limits=EndUserLimits(rpm_limit=3),
)


def _planned() -> tuple[LevelCharge, ...]:
    return charges(level_limits(KEY, TEAM, ORG, "alice"), Estimate(30, 0.3), NOW)


def test_the_shard_count_comes_from_the_team_and_organization_and_an_end_user_has_one() -> None:
    user, team, org = _planned()
    assert (user.shards, team.shards, org.shards) == (1, 4, 8)
    assert (user.shard, team.shard, org.shard) == (0, 0, 0)  # before a start is drawn
    # A stored 0 or less is read as one item.
    assert level_limits(KEY, replace(TEAM, counter_shards=0), None, None)[0].shards == 1


def test_the_shares_of_every_shard_sum_to_the_limit_exactly() -> None:
    team = _planned()[1]
    rooms = [replace(team, shard=s) for s in range(4)]
    assert [c.rpm_room for c in rooms] == [3, 3, 2, 2]
    assert [c.tpm_room for c in rooms] == [251, 251, 251, 250]
    assert sum(c.rpm_room or 0 for c in rooms) == 10
    assert sum(c.tpm_room or 0 for c in rooms) == 1003
    # One shard: the whole limit; a limit not set has no share.
    user = _planned()[0]
    assert (user.rpm_room, user.tpm_room) == (3, None)


def test_start_shards_draw_from_the_rng_passed_in_and_leave_single_items_alone() -> None:
    planned = _planned()
    a = start_shards(planned, random.Random(11))
    b = start_shards(planned, random.Random(11))
    assert [c.shard for c in a] == [c.shard for c in b]  # the rng decides, nothing else
    assert a[0].shard == 0  # the end user: one item
    seen = {
        (c[1].shard, c[2].shard)
        for c in (start_shards(planned, random.Random(n)) for n in range(200))
    }
    assert {t for t, _ in seen} == {0, 1, 2, 3}
    assert {o for _, o in seen} == set(range(8))
    # Only the shard moves: the limits, minute, estimate and budget account are the plan's.
    assert [replace(c, shard=0) for c in a] == list(planned)


def test_a_charge_without_a_minute_bucket_keeps_shard_zero() -> None:
    budget_only = replace(TEAM, rpm_limit=None, tpm_limit=None)
    (c,) = charges(level_limits(KEY, budget_only, None, None), Estimate(30, 0.3), NOW)
    assert not c.bucket
    assert start_shards([c], random.Random(1))[0].shard == 0


def test_borrowing_visits_every_other_shard_once_then_gives_up() -> None:
    team = replace(_planned()[1], shard=2)
    visited = [team.shard]
    tried = 0
    while (found := borrow(team, 2, tried + 1)) is not None:
        team, tried = found
        visited.append(team.shard)
    assert visited == [2, 3, 0, 1]
    assert tried == 3  # refused only once all four shares were found full
    assert borrow(_planned()[0], 0, 1) is None  # one item: nothing to borrow from


def test_shards_seen_full_this_minute_are_skipped_and_all_full_needs_no_write() -> None:
    team = _planned()[1]
    assert borrow(team, 1, 0, {1, 2}) == (replace(team, shard=3), 2)
    assert borrow(team, 1, 0, set()) == (replace(team, shard=1), 0)
    assert borrow(team, 1, 3, {0}) is None  # the last position was the full one
    assert borrow(team, 0, 0, {0, 1, 2, 3}) is None
