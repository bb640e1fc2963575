"""The idempotency lease rules, on a virtual clock: who executes, who waits, who replays."""

from __future__ import annotations

import pytest

from edgeproxy.errors import RequestError
from edgeproxy.routing.idempotency import (
    KEY_TTL_S,
    LEASE_MARGIN_S,
    MAX_KEY_CHARS,
    MAX_POLL_S,
    Decision,
    Lease,
    LeaseState,
    checked_key,
    decide,
    lease_until,
    poll_delay,
    wait_step,
)

T0 = 1_800_000_000.0
DEADLINE_S = 30.0


def running(at: float = T0, request_hash: str = "h") -> Lease:
    return Lease(
        request_hash, "first", LeaseState.RUNNING, lease_until(at, DEADLINE_S), at + KEY_TTL_S
    )


def done(at: float = T0, request_hash: str = "h") -> Lease:
    lease = running(at, request_hash)
    return Lease(
        lease.request_hash,
        lease.owner,
        LeaseState.DONE,
        lease.lease_until,
        lease.expires_at,
        answer="idem-abc",
    )


def test_the_first_call_takes_the_key() -> None:
    assert decide(None, "h", T0) is Decision.TAKE


def test_a_retry_waits_while_the_first_runs_then_replays_its_answer() -> None:
    assert decide(running(), "h", T0 + 1) is Decision.WAIT
    assert decide(done(), "h", T0 + 1) is Decision.REPLAY
    assert decide(done(), "h", T0 + KEY_TTL_S - 1) is Decision.REPLAY  # kept a day


def test_another_body_under_the_same_key_is_a_conflict_in_any_state() -> None:
    assert decide(running(), "other", T0 + 1) is Decision.CONFLICT
    assert decide(done(), "other", T0 + 1) is Decision.CONFLICT


def test_a_lease_whose_owner_died_lapses_after_its_deadline_and_margin() -> None:
    lapse = T0 + DEADLINE_S + LEASE_MARGIN_S
    assert decide(running(), "h", lapse - 0.001) is Decision.WAIT
    assert decide(running(), "h", lapse) is Decision.TAKE


def test_an_expired_record_is_ignored_whatever_it_held() -> None:
    # DynamoDB's TTL deletion is lazy: the reader judges expiry itself.
    after = T0 + KEY_TTL_S
    assert decide(done(request_hash="other"), "h", after) is Decision.TAKE


def test_polls_back_off_doubling_to_a_cap_and_stop_at_the_deadline() -> None:
    assert [poll_delay(n) for n in range(8)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert poll_delay(10_000) == MAX_POLL_S
    give_up = T0 + 2.0
    now, polls, waited = T0, 0, []
    while (step := wait_step(polls, now, give_up)) is not None:
        waited.append(step)
        now += step  # the virtual clock moves by exactly the wait
        polls += 1
    assert now == pytest.approx(give_up)
    assert sum(waited) == pytest.approx(2.0)
    assert waited[-1] <= MAX_POLL_S


@pytest.mark.parametrize("key", ["a", "order-7:retry", "x" * MAX_KEY_CHARS, ' ~!"#'])
def test_printable_ascii_keys_up_to_the_limit_are_accepted(key: str) -> None:
    assert checked_key(key) == key


@pytest.mark.parametrize("key", ["", "x" * (MAX_KEY_CHARS + 1), "caf\u00e9", "tab\there", "nl\n"])
def test_other_keys_are_a_400_naming_the_header(key: str) -> None:
    with pytest.raises(RequestError) as caught:
        checked_key(key)
    assert caught.value.status == 400
    assert caught.value.param == "Idempotency-Key"
    assert "Idempotency-Key" in caught.value.message
