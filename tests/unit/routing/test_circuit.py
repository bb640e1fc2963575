"""Circuit transitions on a virtual clock: every time is an explicit ``now``."""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.circuit import (
    AdmissionKind,
    admission,
    effective_state,
    on_failure,
    on_success,
    release_probe,
    reopen_cooldown,
    take_probe,
    throttle_until,
)
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Circuit, CircuitState, OpenCause

T = FailureClass.TRANSIENT
S = CircuitSettings()  # allowed_fails 3, cooldown 5, window 60, max 300, probe 30, config 300
BOUNDED = CircuitSettings(max_probe_interval_seconds=20)  # prompt recovery, set explicitly
EXACT = CircuitSettings(throttle_exact_retry_after=True)  # a provider's wait, even if shorter


def fail(
    c: Circuit,
    now: float,
    cls: FailureClass = T,
    settings: CircuitSettings = S,
    *,
    probe: bool = False,
    started: float | None = None,
    seed: int = 0,
) -> Circuit | None:
    return on_failure(
        c,
        cls,
        now,
        settings,
        random.Random(seed),
        was_probe=probe,
        attempt_started_at=now - 1 if started is None else started,
    )


def fail_n(c: Circuit, times: list[float], settings: CircuitSettings = S) -> Circuit:
    for now in times:
        nxt = fail(c, now, settings=settings)
        assert nxt is not None
        assert nxt.version == c.version + 1
        c = nxt
    return c


def opened(now: float = 100.0, settings: CircuitSettings = S) -> Circuit:
    c = fail_n(Circuit("d1"), [now] * (settings.allowed_fails + 1), settings)
    assert c.state is CircuitState.OPEN
    return c


def test_fresh_circuit_allows() -> None:
    assert admission(Circuit("d1"), 0.0).kind is AdmissionKind.ALLOW
    assert effective_state(Circuit("d1"), 0.0) is CircuitState.CLOSED


def test_allowed_fails_3_opens_on_the_fourth_failure_in_the_window() -> None:
    c = fail_n(Circuit("d1"), [100.0, 110.0, 120.0])
    assert c.state is CircuitState.CLOSED
    assert c.failures == 3
    c = fail_n(c, [130.0])
    assert c.state is CircuitState.OPEN
    assert c.cause is OpenCause.TRANSIENT
    assert c.open_until == pytest.approx(135.0)
    assert c.opened_at == 130.0
    gate = admission(c, 131.0)
    assert gate.kind is AdmissionKind.BLOCKED
    assert gate.retry_after == pytest.approx(4.0)


def test_allowed_fails_0_opens_on_the_first_failure() -> None:
    c = fail_n(Circuit("d1"), [100.0], CircuitSettings(allowed_fails=0))
    assert c.state is CircuitState.OPEN


def test_fixed_window_expiry_starts_a_new_count() -> None:
    c = fail_n(Circuit("d1"), [100.0, 110.0, 150.0])
    assert c.failures == 3
    assert c.window_start == 100.0
    # 160 is the end of the fixed window [100, 160): a new window starts with this failure.
    c = fail_n(c, [160.0])
    assert c.state is CircuitState.CLOSED
    assert c.failures == 1
    assert c.window_start == 160.0


def test_cooldown_zero_disables_transient_circuits_without_writes() -> None:
    settings = CircuitSettings(cooldown_seconds=0, allowed_fails=0)
    assert fail(Circuit("d1"), 100.0, settings=settings) is None


def test_neutral_classes_change_nothing() -> None:
    c = fail_n(Circuit("d1"), [100.0])
    for cls in (
        FailureClass.THROTTLE,
        FailureClass.REQUEST,
        FailureClass.GATEWAY,
        FailureClass.INCOMPATIBLE,
    ):
        assert fail(c, 101.0, cls) is None
        assert fail(opened(), 106.0, cls, probe=True) is None


def test_half_open_after_cooldown_admits_exactly_one_probe() -> None:
    c = opened(100.0)  # open until 105
    assert effective_state(c, 104.0) is CircuitState.OPEN
    assert effective_state(c, 105.0) is CircuitState.HALF_OPEN
    assert admission(c, 105.0).kind is AdmissionKind.PROBE
    assert take_probe(c, "req-a", 104.0, S) is None  # still cooling down
    leased = take_probe(c, "req-a", 105.0, S)
    assert leased is not None
    assert leased.probe_owner == "req-a"
    assert leased.probe_until == 135.0
    assert leased.version == c.version + 1
    assert leased.state is CircuitState.HALF_OPEN
    gate = admission(leased, 106.0)
    assert gate.kind is AdmissionKind.BLOCKED
    assert gate.retry_after == pytest.approx(29.0)
    assert take_probe(leased, "req-b", 106.0, S) is None


def test_expired_probe_lease_lets_another_request_take_it() -> None:
    leased = take_probe(opened(100.0), "req-a", 105.0, S)
    assert leased is not None
    assert take_probe(leased, "req-b", 134.9, S) is None
    taken = take_probe(leased, "req-b", 135.0, S)
    assert taken is not None
    assert taken.probe_owner == "req-b"
    # The stalled first owner's late verdicts no longer apply.
    assert on_success(taken, 136.0, was_probe=True, owner="req-a") is None
    assert fail(taken, 136.0, probe=True) is not None  # without an owner the flag is trusted
    assert (
        on_failure(
            taken,
            T,
            136.0,
            S,
            random.Random(0),
            was_probe=True,
            attempt_started_at=105.0,
            owner="req-a",
        )
        is None
    )


def test_probe_success_closes_and_resets_level() -> None:
    c = opened(100.0)
    leased = take_probe(c, "req-a", 105.0, S)
    assert leased is not None
    reopened = fail(leased, 106.0, probe=True)
    assert reopened is not None
    assert reopened.level == 1
    again = take_probe(reopened, "req-b", reopened.open_until, S)
    assert again is not None
    closed = on_success(again, reopened.open_until + 1, was_probe=True, owner="req-b")
    assert closed is not None
    assert closed.state is CircuitState.CLOSED
    assert (closed.level, closed.failures, closed.probe_owner, closed.cause) == (0, 0, None, None)
    assert closed.version == again.version + 1
    assert admission(closed, reopened.open_until + 2).kind is AdmissionKind.ALLOW


UNBOUNDED = CircuitSettings(max_probe_interval_seconds=None)  # 000's cooldown alone


@pytest.mark.parametrize("settings", [S, UNBOUNDED], ids=["default", "explicit-null"])
def test_failed_probe_reopens_exponentially_with_bounded_jitter_and_cap(
    settings: CircuitSettings,
) -> None:
    # Under the defaults (patient) too: 000's growth to max_cooldown_seconds, on a virtual clock.
    c = opened(100.0, settings)
    now = c.open_until
    cooldowns: list[float] = []
    for _ in range(8):
        leased = take_probe(c, "p", now, settings)
        assert leased is not None
        nxt = fail(leased, now, settings=settings, probe=True, seed=len(cooldowns))
        assert nxt is not None
        assert nxt.state is CircuitState.OPEN
        assert nxt.level == c.level + 1
        cooldowns.append(nxt.open_until - now)
        c, now = nxt, nxt.open_until
    for level, cooldown in enumerate(cooldowns, start=1):
        base = 5 * 2**level
        assert min(base, 300) <= cooldown <= min(base * 1.25, 300), (level, cooldown)
    assert cooldowns[-1] == 300.0  # 5 * 2**8 = 1280: capped at max_cooldown_seconds


def test_the_default_reopen_cooldown_grows_to_max_cooldown_seconds() -> None:
    # 000: 5 s doubling per failed probe, jittered, capped only by max_cooldown_seconds (300).
    rng = random.Random(3)
    cooldowns = [reopen_cooldown(level, S, rng) for level in range(1, 8)]
    for level, cooldown in enumerate(cooldowns, start=1):
        assert min(5 * 2**level, 300) <= cooldown <= min(5 * 2**level * 1.25, 300), level
    assert cooldowns[4] > 150.0  # well past the 20 s the old default held it at
    assert cooldowns[-1] == 300.0


def test_probe_interval_bounds_the_exponential_growth() -> None:
    # An explicit interval (20 s): 5 s doubling until the interval, then held there.
    rng = random.Random(3)
    cooldowns = [reopen_cooldown(level, BOUNDED, rng) for level in range(1, 8)]
    assert 10.0 <= cooldowns[0] <= 12.5
    assert max(cooldowns) == 20.0
    assert cooldowns[2:] == [20.0] * 5
    assert reopen_cooldown(6, UNBOUNDED, rng) == 300.0


class _WorstJitter(random.Random):
    """Jitter always at its maximum (the slowest recovery the rule allows)."""

    def random(self) -> float:
        return 0.999999

    def uniform(self, a: float, b: float) -> float:
        return b


def _flapping_primary(settings: CircuitSettings, recovered_at: float = 60.0) -> float:
    """Primary answers 503 until ``recovered_at``, then recovers; one request every 4 s.

    Each request tries the primary when its circuit admits it (taking the probe
    lease when half-open), as the router does. Returns how long after the
    recovery the first request was served by the primary again.
    """
    rng = _WorstJitter()
    c = Circuit("primary")
    for step in range(0, 200):
        now = step * 4.0 + 0.5
        gate = admission(c, now)
        if gate.kind is AdmissionKind.BLOCKED:
            continue  # served by the fallback
        probe = gate.kind is AdmissionKind.PROBE
        if probe:
            leased = take_probe(c, f"r{step}", now, settings)
            assert leased is not None
            c = leased
        done = now + 0.2
        if done < recovered_at:
            changed = on_failure(
                c, T, done, settings, rng, was_probe=probe, attempt_started_at=now, owner=f"r{step}"
            )
            c = changed or c
            continue
        return now - recovered_at
    raise AssertionError("the primary never got traffic back")


def test_flapping_primary_gets_traffic_back_within_30_s_of_recovery() -> None:
    # Every phase of the recovery against the probe schedule, a 60 s outage and longer.
    ends = [60.0 + tenth / 10 for tenth in range(0, 1200, 5)]
    assert max(_flapping_primary(BOUNDED, end) for end in ends) <= 30.0
    # Without the bound (000's doubling alone, the default) it can take longer: the rule is
    # what helps.
    assert max(_flapping_primary(UNBOUNDED, end) for end in ends) > 30.0
    assert max(_flapping_primary(S, end) for end in ends) > 30.0


def test_reopen_jitter_spreads_but_stays_within_25_percent() -> None:
    rng = random.Random(7)
    values = [reopen_cooldown(1, S, rng) for _ in range(500)]
    assert min(values) >= 10.0
    assert max(values) <= 12.5
    assert max(values) - min(values) > 2.0  # the jitter is real, not a constant


def test_configuration_failure_quarantines_at_once() -> None:
    c = fail(Circuit("d1", failures=0), 100.0, FailureClass.CONFIGURATION)
    assert c is not None
    assert c.state is CircuitState.OPEN
    assert c.cause is OpenCause.CONFIGURATION
    assert c.open_until == 400.0
    # Even with transient circuits disabled.
    off = CircuitSettings(cooldown_seconds=0)
    c2 = fail(Circuit("d1"), 100.0, FailureClass.CONFIGURATION, off)
    assert c2 is not None
    assert c2.cause is OpenCause.CONFIGURATION


def test_configuration_probe_failure_requarantines() -> None:
    c = fail(Circuit("d1"), 100.0, FailureClass.CONFIGURATION)
    assert c is not None
    leased = take_probe(c, "p", 400.0, S)
    assert leased is not None
    again = fail(leased, 401.0, FailureClass.CONFIGURATION, probe=True)
    assert again is not None
    assert again.cause is OpenCause.CONFIGURATION
    assert again.open_until == 701.0


def test_late_failures_cannot_extend_an_open_circuit() -> None:
    c = opened(100.0)
    assert fail(c, 101.0, started=90.0) is None  # started before it opened
    assert fail(c, 103.0, started=101.0) is None  # ends while open: not the probe
    leased = take_probe(c, "p", 105.0, S)
    assert leased is not None
    assert fail(leased, 106.0, started=99.0) is None  # half-open: only the probe decides
    assert fail(leased, 106.0, FailureClass.CONFIGURATION, started=99.0) is None


def test_late_failure_after_recovery_does_not_count_again() -> None:
    c = opened(100.0)
    leased = take_probe(c, "p", 105.0, S)
    assert leased is not None
    closed = on_success(leased, 106.0, was_probe=True)
    assert closed is not None
    assert fail(closed, 200.0, started=99.0) is None  # a long stream from before the outage
    counted = fail(closed, 200.0, started=150.0)
    assert counted is not None
    assert counted.failures == 1


def test_success_while_closed_clears_the_count_and_otherwise_writes_nothing() -> None:
    c = fail_n(Circuit("d1"), [100.0, 101.0])
    cleared = on_success(c, 102.0, was_probe=False)
    assert cleared is not None
    assert cleared.failures == 0
    assert cleared.version == c.version + 1
    assert on_success(cleared, 103.0, was_probe=False) is None
    assert on_success(Circuit("d1"), 103.0, was_probe=False) is None
    # A success while open is not a verdict: only the probe closes it.
    assert on_success(opened(), 106.0, was_probe=False) is None
    # A probe verdict on a circuit somebody already closed writes nothing.
    assert on_success(Circuit("d1"), 103.0, was_probe=True) is None


def test_release_probe_frees_the_lease() -> None:
    leased = take_probe(opened(100.0), "p", 105.0, S)
    assert leased is not None
    assert release_probe(leased, "other") is None
    freed = release_probe(leased, "p")
    assert freed is not None
    assert freed.probe_owner is None
    assert admission(freed, 106.0).kind is AdmissionKind.PROBE


def test_throttle_until_honours_retry_after_within_bounds() -> None:
    for settings in (S, EXACT):
        assert throttle_until(100.0, 30.0, settings) == 130.0
        assert throttle_until(100.0, 3600.0, settings) == 160.0  # honoured up to 60 s


def test_the_throttle_cooldown_is_the_floor_of_a_capacity_circuit() -> None:
    # 000: the provider's Retry-After may lengthen the cooldown, never shorten it.
    assert throttle_until(100.0, None, S) == 105.0
    assert throttle_until(100.0, -5.0, S) == 105.0  # not a wait: as if none was sent
    assert throttle_until(100.0, 2.0, S) == 105.0
    assert throttle_until(100.0, 0.0, S) == 105.0
    assert throttle_until(100.0, 7.5, S) == 107.5
    # A floor above the 60 s cap is the operator's own choice and holds.
    assert throttle_until(100.0, 30.0, CircuitSettings(throttle_cooldown_seconds=90)) == 190.0


def test_an_exact_retry_after_is_followed_even_when_shorter_than_the_cooldown() -> None:
    assert throttle_until(100.0, None, EXACT) == 105.0
    assert throttle_until(100.0, -5.0, EXACT) == 105.0
    assert throttle_until(100.0, 2.0, EXACT) == 102.0
    assert throttle_until(100.0, 0.0, EXACT) == 100.0
