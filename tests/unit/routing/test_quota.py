"""When reported quota rules a deployment out, on a virtual clock."""

from __future__ import annotations

import pytest

from edgeproxy.config.quota import QuotaSource
from edgeproxy.routing.eligibility import Limit, Status, assess
from edgeproxy.routing.quota import RECORD_EVERY_S, spent_for, worth_recording
from edgeproxy.routing.snapshot import PoolSnapshot, Quota, QuotaStatus, credential_key
from tests.unit.routing.builders import dep

NOW = 1_000_000.0
MAX_AGE = 600.0
KEY = credential_key("env:ACME_KEY")


def status(*quotas: Quota) -> QuotaStatus:
    return QuotaStatus(KEY, quotas)


def reading(remaining: float | None, *, reset_at: float | None = None, age: float = 10.0) -> Quota:
    return Quota(KEY, "requests", remaining, 100.0, reset_at, "acme", NOW - age)


def test_a_spent_reading_holds_until_its_reset() -> None:
    assert spent_for(status(reading(0, reset_at=NOW + 45)), NOW, MAX_AGE) == pytest.approx(45)
    assert spent_for(status(reading(0, reset_at=NOW - 1)), NOW, MAX_AGE) is None


def test_remaining_quota_stale_readings_and_no_reading_rule_nothing_out() -> None:
    assert spent_for(status(reading(3, reset_at=NOW + 45)), NOW, MAX_AGE) is None
    assert spent_for(status(reading(0, reset_at=NOW + 45, age=MAX_AGE + 1)), NOW, MAX_AGE) is None
    assert spent_for(None, NOW, MAX_AGE) is None
    assert spent_for(status(reading(None)), NOW, MAX_AGE) is None


def test_without_a_reset_time_a_spent_reading_holds_until_it_ages_out() -> None:
    assert spent_for(status(reading(0, age=100)), NOW, MAX_AGE) == pytest.approx(MAX_AGE - 100)


def test_the_latest_reset_of_every_spent_unit_wins() -> None:
    tokens = Quota(KEY, "tokens", 0, 1000, NOW + 90, "headers", NOW)
    assert spent_for(status(reading(0, reset_at=NOW + 30), tokens), NOW, MAX_AGE) == 90


def test_a_spent_credential_makes_its_deployments_rate_limited() -> None:
    spent = PoolSnapshot(quotas={KEY: status(reading(0, reset_at=NOW + 30))})
    d = dep("a", credential="env:ACME_KEY")
    verdict = assess(d, spent, NOW, int(NOW // 60), quota_max_age=MAX_AGE)
    assert (verdict.status, verdict.eligible, verdict.limit) == (
        Status.RATE_LIMITED,
        False,
        Limit.QUOTA,
    )
    assert verdict.retry_after == pytest.approx(30)
    other = dep("b", credential="env:OTHER_KEY")
    assert assess(other, spent, NOW, int(NOW // 60)).eligible
    assert assess(d, spent, NOW + 31, int((NOW + 31) // 60)).eligible  # after the reset


def test_unknown_fetchers_and_parameters_are_refused_with_what_is_known() -> None:
    with pytest.raises(ValueError, match="known: json, openrouter-key, probe"):
        QuotaSource(name="x", fetcher="chutes", credential="env:K")
    with pytest.raises(ValueError, match="remaning") as info:
        QuotaSource(
            name="x", fetcher="json", credential="env:K", params={"url": "u", "remaning": "a"}
        )
    assert "parameters: url, remaining" in str(info.value)


def test_answers_headers_are_recorded_only_when_they_say_something_new() -> None:
    fresh = Quota(KEY, "requests", 500, 1000, NOW + 60, "headers", NOW)
    assert worth_recording(fresh, None, NOW)  # nothing stored yet
    stored = status(Quota(KEY, "requests", 600, 1000, NOW + 60, "headers", NOW - 5))
    assert not worth_recording(fresh, stored, NOW)  # recent and plenty left: no write
    assert worth_recording(fresh, stored, NOW + RECORD_EVERY_S)  # the stored one aged
    low = Quota(KEY, "requests", 50, 1000, NOW + 60, "headers", NOW)
    assert worth_recording(low, stored, NOW)  # running low: routing must know
    spent = status(Quota(KEY, "requests", 0, 1000, NOW + 60, "acme", NOW - 5))
    assert worth_recording(fresh, spent, NOW)  # refilled
    tokens = Quota(KEY, "tokens", 9000, 10000, NOW + 60, "headers", NOW)
    assert worth_recording(tokens, stored, NOW)  # another unit
