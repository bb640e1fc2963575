"""Budget periods and key status, decided from plain values (UTC boundaries, no clock read)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgeproxy.routing.access import (
    BudgetPeriod,
    ClientKey,
    KeyRefusal,
    account_key_id,
    key_status,
    period_end,
    refusal,
    spend_account,
)
from edgeproxy.state import keys

DIGEST = "0123456789abcdef" + "0" * 48


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("period", "now", "account", "end"),
    [
        (BudgetPeriod.DAILY, "2026-12-01T23:59:59", "2026-12-01", "2026-12-02T00:00:00"),
        (BudgetPeriod.DAILY, "2026-12-02T00:00:00", "2026-12-02", "2026-12-03T00:00:00"),
        # ISO weeks start on Monday: 2026-11-30 is one; Sunday 2026-12-06 is still its week.
        (BudgetPeriod.WEEKLY, "2026-12-06T23:00:00", "2026-11-30", "2026-12-07T00:00:00"),
        (BudgetPeriod.WEEKLY, "2026-12-07T00:00:00", "2026-12-07", "2026-12-14T00:00:00"),
        (BudgetPeriod.MONTHLY, "2026-12-31T23:59:59", "2026-12-01", "2027-01-01T00:00:00"),
        (BudgetPeriod.MONTHLY, "2027-02-28T12:00:00", "2027-02-01", "2027-03-01T00:00:00"),
    ],
)
def test_each_period_starts_and_ends_at_utc_boundaries(
    period: BudgetPeriod, now: str, account: str, end: str
) -> None:
    key = ClientKey(DIGEST, "k", budget_period=period)
    assert spend_account(key, at(now)) == f"0123456789abcdef@{account}"
    assert account_key_id(spend_account(key, at(now))) == key.id
    assert period_end(period, at(now)) == at(end)
    # Each period's spend is its own item in the key's partition; the minute buckets are not.
    assert keys.key_spend_key(spend_account(key, at(now))) == (
        "key#0123456789abcdef",
        f"spend#{account}",
    )
    assert keys.key_usage_key(spend_account(key, at(now)), 7) == keys.key_usage_key(key.id, 7)


def test_a_total_budget_keeps_the_lifetime_item_and_never_lifts() -> None:
    key = ClientKey(DIGEST, "k", budget_usd=1.0)
    assert spend_account(key, at("2026-12-01T00:00:00")) == key.id
    assert keys.key_spend_key(key.id) == ("key#0123456789abcdef", "spend")
    assert period_end(BudgetPeriod.TOTAL, 0.0) is None


def test_a_periodic_budget_lifts_when_its_period_ends() -> None:
    key = ClientKey(DIGEST, "k", budget_usd=1.0, budget_period=BudgetPeriod.DAILY)
    now = at("2026-12-01T23:00:00")
    assert period_end(key.budget_period, now) == now + 3600.0


def test_a_previous_secret_is_refused_after_its_grace_and_the_key_shows_rotating() -> None:
    key = ClientKey(DIGEST, "k", rotated_at=100.0, grace_until=200.0, secret_expires_at=200.0)
    assert refusal(key, 199.0) is None
    assert refusal(key, 200.0) is KeyRefusal.ROTATED
    assert key_status(key, 150.0) == "rotating"
    assert key_status(key, 200.0) == "active"
    assert key_status(ClientKey(DIGEST, "k", revoked=True, grace_until=200.0), 150.0) == "revoked"
    assert key_status(ClientKey(DIGEST, "k", expires_at=10.0), 150.0) == "expired"
