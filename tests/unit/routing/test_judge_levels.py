"""The levels above a key, decided purely (``routing.judge.levels``, ``routing.judge.end_user``):
which levels a request is charged at, what each charge writes, and each refusal's words,
on a virtual clock."""

from __future__ import annotations

import pytest

from edgeproxy.errors import QuotaExceeded, RateLimited, RequestError
from edgeproxy.routing.access import BudgetPeriod, ClientKey
from edgeproxy.routing.hierarchy import EndUserLimits, Group, Level
from edgeproxy.routing.judge.end_user import END_USER_HEADER, MAX_END_USER, end_user_of
from edgeproxy.routing.judge.levels import (
    LevelCharge,
    LevelCounts,
    LevelLimits,
    charges,
    end_user_partition,
    level_limits,
    level_refused,
    would_refuse,
)
from edgeproxy.routing.judge.reasons import Reason, Write
from edgeproxy.routing.judge.ruling import KEY_USAGE_RETENTION_S, Estimate

# 2027-01-15 10:00:20 UTC, a Friday: twenty seconds into its minute.
NOW = 1_800_007_200.0 + 20
KEY = ClientKey("0123456789abcdef00", "k", team_id="search")
ORG = Group(
    Level.ORGANIZATION, "acme", "Acme", budget_usd=100.0, budget_period=BudgetPeriod.MONTHLY
)
TEAM = Group(
    Level.TEAM,
    "search",
    "Search",
    parent="acme",
    rpm_limit=10,
    max_parallel_requests=2,
    end_user_limits=EndUserLimits(tpm_limit=500, budget_usd=1.0, budget_period=BudgetPeriod.DAILY),
)


def test_a_request_is_charged_innermost_first_at_every_level_that_sets_a_limit() -> None:
    levels = level_limits(KEY, TEAM, ORG, "alice")
    assert [(lv.level, lv.id) for lv in levels] == [
        (Level.END_USER, "alice"),
        (Level.TEAM, "search"),
        (Level.ORGANIZATION, "acme"),
    ]
    assert levels[1].partition == "team:search"
    assert levels[2].partition == "organization:acme"
    # No end user named, or a team without end_user_limits: no end-user level.
    assert [lv.level for lv in level_limits(KEY, TEAM, ORG, None)] == [
        Level.TEAM,
        Level.ORGANIZATION,
    ]
    bare = Group(Level.TEAM, "search", "Search", parent="acme")
    assert [lv.level for lv in level_limits(KEY, bare, ORG, "alice")] == [Level.ORGANIZATION]
    assert level_limits(KEY, bare, Group(Level.ORGANIZATION, "acme", "Acme"), "alice") == []


def test_an_end_user_is_scoped_to_its_team_and_its_name_never_reaches_a_table_key() -> None:
    other = ClientKey("fedcba987654321000", "k2", team_id="ads")
    mine = level_limits(KEY, TEAM, None, "alice#1")[0].partition
    theirs = level_limits(
        other,
        Group(Level.TEAM, "ads", "Ads", end_user_limits=EndUserLimits(rpm_limit=1)),
        None,
        "alice#1",
    )[0].partition
    assert mine != theirs
    assert mine == end_user_partition("team:search", "alice#1")
    assert "alice" not in mine
    assert "#" not in mine


def test_each_charge_names_its_writes_in_its_minute_and_budget_period() -> None:
    estimate = Estimate(tokens=30, spend_usd=0.03)
    user, team, org = charges(level_limits(KEY, TEAM, ORG, "alice"), estimate, NOW)
    minute = int(NOW // 60)
    for c in (user, team, org):
        assert c.minute == minute
        assert c.expires == minute * 60.0 + KEY_USAGE_RETENTION_S
        assert c.tokens == 30
    assert (user.rpm, user.tpm, user.budget, user.parallel) == (None, 500, 1.0, None)
    assert user.account.endswith("@2027-01-15")  # a daily budget: today's account
    assert user.spend_usd == 0.03
    assert (team.rpm, team.tpm, team.budget, team.parallel) == (10, None, None, 2)
    assert team.spend_usd == 0.0  # no budget: nothing reserved on spend
    assert team.bucket
    assert org.account == "organization:acme@2027-01-01"  # a monthly budget's account
    assert not org.bucket
    # The next day, the end user's account is another (its budget starts again).
    assert charges(level_limits(KEY, TEAM, ORG, "alice"), estimate, NOW + 86_400)[
        0
    ].account.endswith("@2027-01-16")


def test_a_request_without_an_estimate_or_not_routed_is_held_to_less() -> None:
    levels = level_limits(KEY, TEAM, ORG, "alice")
    counted = charges(levels, None, NOW)  # no estimate: rpm limits and slots only
    assert [(c.limits.level, c.rpm, c.tpm, c.budget, c.parallel) for c in counted] == [
        (Level.TEAM, 10, None, None, 2)
    ]
    unrouted = charges(levels, Estimate(5, 0.5), NOW, routed=False)  # a token count
    assert all(c.parallel is None for c in unrouted)
    assert [c.limits.level for c in charges(levels, None, NOW, routed=False)] == [Level.TEAM]


@pytest.mark.parametrize(
    ("write", "reason", "kind", "words"),
    [
        (Write.RPM, Reason.RPM, RateLimited, "requests per minute"),
        (Write.TOKENS, Reason.TPM, RateLimited, "tokens per minute"),
        (Write.PARALLEL, Reason.PARALLEL, RateLimited, "max_parallel_requests: 2"),
        (Write.SPEND, Reason.BUDGET, QuotaExceeded, "budget"),
    ],
)
def test_each_refusal_is_the_keys_own_naming_the_level(
    write: Write, reason: Reason, kind: type[Exception], words: str
) -> None:
    team = level_limits(KEY, TEAM, ORG, None)[0]
    refusal = level_refused(team, write, NOW)
    assert refusal.reason is reason
    assert refusal.level == "team"
    error = refusal.error()
    assert type(error) is kind
    assert error.status == 429
    assert "team `search`" in error.message
    assert "level team" in error.message
    assert words in error.message
    if write in (Write.RPM, Write.TOKENS):
        assert error.retry_after == pytest.approx(40.0)  # to the next minute on this clock
        assert level_refused(team, write, NOW + 30).retry_after == pytest.approx(10.0)
    elif write is Write.PARALLEL:
        assert error.retry_after == 1.0
    else:
        assert error.retry_after is None


def test_a_periodic_budget_says_when_it_resets_and_an_end_user_is_not_echoed() -> None:
    org = level_limits(KEY, None, ORG, None)[0]
    message = level_refused(org, Write.SPEND, NOW).message
    assert "organization `acme` (level organization)" in message
    assert "monthly budget" in message
    assert "2027-02-01T00:00:00Z" in message
    user = level_limits(KEY, TEAM, ORG, "alice")[0]
    said = level_refused(user, Write.SPEND, NOW).message
    assert "level end_user" in said
    assert "2027-01-16T00:00:00Z" in said
    assert "alice" not in said
    total = LevelLimits(Level.TEAM, "t", "team:t", budget_usd=1.0)
    assert "resets" not in level_refused(total, Write.SPEND, NOW).message


def test_the_end_user_comes_from_the_header_else_the_body() -> None:
    body = {"user": "from-body", "metadata": {"user_id": "from-metadata"}}
    assert end_user_of("from-header", body, None) == "from-header"
    assert end_user_of(None, body, None) == "from-body"
    assert end_user_of(None, body, "anthropic.messages") == "from-metadata"
    assert end_user_of(None, {}, None) is None
    assert end_user_of(None, {"metadata": "x"}, "anthropic.messages") is None
    assert end_user_of(None, {"user": "x" * MAX_END_USER}, None) == "x" * MAX_END_USER


@pytest.mark.parametrize(
    ("header", "body", "surface", "param"),
    [
        ("x" * (MAX_END_USER + 1), {}, None, END_USER_HEADER),
        ("a\nb", {}, None, END_USER_HEADER),
        (None, {"user": ""}, None, "user"),
        (None, {"user": 7}, None, "user"),
        (None, {"user": "tab\there"}, None, "user"),
        (None, {"metadata": {"user_id": "y" * 300}}, "anthropic.messages", "metadata.user_id"),
    ],
)
def test_a_malformed_end_user_is_a_400_naming_its_field(
    header: str | None, body: dict[str, object], surface: str | None, param: str
) -> None:
    with pytest.raises(RequestError) as bad:
        end_user_of(header, body, surface)
    assert bad.value.status == 400
    assert bad.value.param == param
    assert param in bad.value.message


def _planned(estimate: Estimate) -> tuple[LevelCharge, ...]:
    # end user (tpm 500, $1 a day), team (rpm 10, 2 slots), organization ($100 a month)
    return charges(level_limits(KEY, TEAM, ORG, "alice"), estimate, NOW)


def test_would_refuse_reads_the_reservations_own_conditions() -> None:
    planned = _planned(Estimate(30, 0.5))
    empty = [LevelCounts() for _ in planned]
    assert would_refuse(planned, empty) is None
    # rpm: the count is at the limit (10 made).
    assert would_refuse(planned, [empty[0], LevelCounts(requests=10), empty[2]]) == (1, Write.RPM)
    assert would_refuse(planned, [empty[0], LevelCounts(requests=9), empty[2]]) is None
    # tpm: the bucket must leave room for the estimate (500 - 30).
    near = LevelCounts(tokens=470, tokens_seen=True)
    assert would_refuse(planned, [near, *empty[1:]]) is None
    over = LevelCounts(tokens=471, tokens_seen=True)
    assert would_refuse(planned, [over, *empty[1:]]) == (0, Write.TOKENS)
    # budget: under it, with room for the estimate ($1 - $0.5); an empty budget admits.
    room = LevelCounts(spend_usd=0.5, spend_seen=True)
    assert would_refuse(planned, [room, *empty[1:]]) is None
    spent = LevelCounts(spend_usd=0.51, spend_seen=True)
    assert would_refuse(planned, [spent, *empty[1:]]) == (0, Write.SPEND)
    # slots: both held.
    full = LevelCounts(in_flight=2)
    assert would_refuse(planned, [empty[0], full, empty[2]]) == (1, Write.PARALLEL)


def test_a_limit_refusal_is_named_before_a_full_levels_slots_and_zero_before_all() -> None:
    planned = _planned(Estimate(30, 0.5))
    spent = LevelCounts(spend_usd=100.0, spend_seen=True)
    full = LevelCounts(in_flight=2)
    # The team's slots are full and the organization's budget is spent: the budget is
    # named (another slot would not help), as the store's cancellation reasons are read.
    assert would_refuse(planned, [LevelCounts(), full, spent]) == (2, Write.SPEND)
    closed = Group(Level.ORGANIZATION, "acme", "Acme", rpm_limit=0)
    zero = charges(level_limits(KEY, TEAM, closed, None), Estimate(30, 0.5), NOW)
    assert would_refuse(zero, [LevelCounts(requests=10), LevelCounts()]) == (1, Write.RPM)
