"""The levels above a key: its team, its organization and the end user a request names (pure).

A key's own limits are ``routing.judge.ruling``'s. A request of a key in a
team is also held to the team's limits, the team's organization's, and,
when the request names an end user, the team's ``end_user_limits`` on that
end user's own counters. ``charges`` gives, for every level that sets a
limit, the conditional writes that hold the request to it (one
``LevelCharge`` each); the service makes all of them in one store
transaction (``state/dynamodb/dynamo_levels.py``), so they land together or
not at all, and ``level_refused`` is the refusal of the level whose write
found its condition false, naming the level.

A level's counters live in its own partition (``LevelLimits.partition``):
``team:<id>``, ``organization:<id>``, and an end user's under its scope
(its key's team, or the key itself when it has none).

What the reservation cannot see (the bound ``docs/teams.md`` states): as the
key's, an admitted request's actual usage beyond its estimate (the prompt
the calibrated bound missed, output past ``max_tokens``); a request whose
estimate alone is over a limit is admitted only into an empty minute or
budget.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from edgeproxy.routing.access import (
    DAY_S,
    BudgetPeriod,
    ClientKey,
    period_account,
    period_end,
    seconds_to_next_minute,
    utc_moment,
)
from edgeproxy.routing.hierarchy import Group, Level
from edgeproxy.routing.judge.reasons import SLOT_RETRY_AFTER_S, Reason, Refusal, Write
from edgeproxy.routing.judge.ruling import KEY_USAGE_RETENTION_S, Estimate

LEVEL_WORDS = {Level.TEAM: "team", Level.ORGANIZATION: "organization", Level.END_USER: "end user"}


@dataclass(frozen=True, slots=True)
class LevelLimits:
    """One level's limits as they apply to a request: ``level`` and its ``id`` (an end
    user's: its name), where its counters live (``partition``), and its limits."""

    level: Level
    id: str
    partition: str
    rpm_limit: int | None = None
    tpm_limit: int | None = None
    max_parallel_requests: int | None = None
    budget_usd: float | None = None
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL
    soft_budget_ratio: float | None = None  # a team's or organization's alert threshold

    @property
    def limited(self) -> bool:
        """Whether any limit is set (a level without one costs no write)."""
        return any(
            v is not None
            for v in (self.rpm_limit, self.tpm_limit, self.max_parallel_requests, self.budget_usd)
        )


@dataclass(frozen=True, slots=True)
class LevelCharge:
    """The writes that hold one request to one level's limits.

    ``rpm``: one request counted in the level's ``minute`` bucket under it;
    ``tpm``: the estimate's ``tokens`` added to that bucket under it;
    ``budget``: the estimate's ``spend_usd`` added to the level's spend
    ``account`` under it; ``parallel``: one of the level's slots held until
    the answer is over. None: that limit is not set (no write).
    """

    limits: LevelLimits
    minute: int
    expires: float
    account: str
    tokens: int = 0
    spend_usd: float = 0.0

    @property
    def rpm(self) -> int | None:
        return self.limits.rpm_limit

    @property
    def tpm(self) -> int | None:
        return self.limits.tpm_limit

    @property
    def budget(self) -> float | None:
        return self.limits.budget_usd

    @property
    def parallel(self) -> int | None:
        return self.limits.max_parallel_requests

    @property
    def bucket(self) -> bool:
        """Whether the minute bucket is written (an rpm count or a token reservation)."""
        return self.rpm is not None or self.tpm is not None


def end_user_partition(scope: str, end_user: str) -> str:
    """Where an end user's counters live: under its scope (``team:<id>`` or ``key:<id>``),
    by a digest of its name (a name is any printable text; a digest is a safe table key)."""
    digest = hashlib.sha256(end_user.encode()).hexdigest()[:32]
    return f"end_user:{scope}:{digest}"


def end_user_scope(key: ClientKey) -> str:
    """The scope an end user a request of ``key`` names belongs to: its team, or the key."""
    return f"team:{key.team_id}" if key.team_id else f"key:{key.id}"


def level_limits(
    key: ClientKey, team: Group | None, org: Group | None, end_user: str | None
) -> list[LevelLimits]:
    """The levels above ``key`` that set a limit, innermost first: the end user (under the
    team's ``end_user_limits``), the team, the organization."""
    found: list[LevelLimits] = []
    per_user = team.end_user_limits if team is not None else None
    if end_user is not None and per_user is not None:
        found.append(
            LevelLimits(
                Level.END_USER,
                end_user,
                end_user_partition(end_user_scope(key), end_user),
                per_user.rpm_limit,
                per_user.tpm_limit,
                per_user.max_parallel_requests,
                per_user.budget_usd,
                per_user.budget_period,
            )
        )
    for group in (team, org):
        if group is not None:
            found.append(
                LevelLimits(
                    group.kind,
                    group.id,
                    f"{group.kind.value}:{group.id}",
                    group.rpm_limit,
                    group.tpm_limit,
                    group.max_parallel_requests,
                    group.budget_usd,
                    group.budget_period,
                    group.soft_budget_ratio,
                )
            )
    return [limits for limits in found if limits.limited]


def charges(
    levels: Sequence[LevelLimits], estimate: Estimate | None, now: float, routed: bool = True
) -> tuple[LevelCharge, ...]:
    """The writes that hold one request at ``now`` to every level of ``levels``. A request
    without an estimate is held to the rpm limits and slots only; one not ``routed`` (a
    token count) holds no slot."""
    minute = int(now // 60)
    out: list[LevelCharge] = []
    for limits in levels:
        if not routed:
            limits = _without_slots(limits)
        if estimate is None:
            limits = LevelLimits(
                limits.level,
                limits.id,
                limits.partition,
                limits.rpm_limit,
                max_parallel_requests=limits.max_parallel_requests,
            )
        if not limits.limited:
            continue
        out.append(
            LevelCharge(
                limits,
                minute,
                minute * 60.0 + KEY_USAGE_RETENTION_S,
                period_account(limits.partition, limits.budget_period, now),
                estimate.tokens if estimate is not None else 0,
                estimate.spend_usd
                if estimate is not None and limits.budget_usd is not None
                else 0.0,
            )
        )
    return tuple(out)


def _without_slots(limits: LevelLimits) -> LevelLimits:
    return LevelLimits(
        limits.level,
        limits.id,
        limits.partition,
        limits.rpm_limit,
        limits.tpm_limit,
        None,
        limits.budget_usd,
        limits.budget_period,
        limits.soft_budget_ratio,
    )


def _named(limits: LevelLimits) -> str:
    if limits.level is Level.END_USER:
        return "this end user"  # its name is the client's own; not echoed
    return f"{LEVEL_WORDS[limits.level]} `{limits.id}`"


def level_refused(limits: LevelLimits, write: Write, now: float) -> Refusal:
    """The refusal of a request whose ``write`` at ``limits``' level found its condition
    false at ``now``: the key's refusal for the same write (status, code, Retry-After),
    naming the level."""
    who = _named(limits)
    level = limits.level.value
    if write is Write.PARALLEL:
        return Refusal(
            Reason.PARALLEL,
            f"Too many requests in flight for {who} (level {level}, max_parallel_requests: "
            f"{limits.max_parallel_requests}); retry when one has finished.",
            SLOT_RETRY_AFTER_S,
            level=level,
        )
    if write is Write.RPM or write is Write.TOKENS:
        what = "requests per minute" if write is Write.RPM else "tokens per minute"
        reason = Reason.RPM if write is Write.RPM else Reason.TPM
        return Refusal(
            reason,
            f"Rate limit reached for {who} (level {level}, {what}).",
            seconds_to_next_minute(now),
            level=level,
        )
    end = period_end(limits.budget_period, now)
    if end is None:
        message = f"The budget of {who} (level {level}) is used up."
    else:
        moment = utc_moment(int(end // DAY_S))
        message = (
            f"The {limits.budget_period.value} budget of {who} (level {level}) is used up; "
            f"it resets at {moment}."
        )
    return Refusal(Reason.BUDGET, message, level=level)


@dataclass(frozen=True, slots=True)
class LevelCounts:
    """What one level's counters held when read (the explainer's view, no write): the
    minute bucket's ``requests`` and ``tokens``, the period's ``spend_usd``, and how many
    of its slots were ``in_flight`` (0 for a level without a cap)."""

    requests: int = 0
    tokens: int = 0
    spend_usd: float = 0.0
    in_flight: int = 0
    spend_seen: bool = False  # whether a spend item exists (an empty budget admits anything)
    tokens_seen: bool = False  # whether the minute bucket holds tokens


def would_refuse(
    planned: Sequence[LevelCharge], counts: Sequence[LevelCounts]
) -> tuple[int, Write] | None:
    """Which charge of ``planned`` would be refused with ``counts`` read, and by which write
    (None: all would land), by the reservation's own rules: a limit of 0 first, then the
    transaction's conditions (the innermost level's first; a full level's slots last)."""
    for i, c in enumerate(planned):
        if c.parallel == 0:
            return i, Write.PARALLEL
        if c.rpm == 0:
            return i, Write.RPM
        if c.budget is not None and c.budget <= 0:
            return i, Write.SPEND
    for i, (c, n) in enumerate(zip(planned, counts, strict=True)):
        if c.rpm is not None and n.requests >= c.rpm:
            return i, Write.RPM
        if c.tpm is not None and n.tokens_seen and n.tokens > max(0, c.tpm - c.tokens):
            return i, Write.TOKENS
        if c.budget is not None and n.spend_seen and not _spend_room(c.budget, c, n):
            return i, Write.SPEND
    for i, (c, n) in enumerate(zip(planned, counts, strict=True)):
        if c.parallel is not None and n.in_flight >= c.parallel:
            return i, Write.PARALLEL
    return None


def _spend_room(budget: float, c: LevelCharge, n: LevelCounts) -> bool:
    """The budget's condition (``SPEND_ROOM``): under it, with room for the estimate."""
    return n.spend_usd < budget and n.spend_usd <= max(0.0, budget - c.spend_usd)
