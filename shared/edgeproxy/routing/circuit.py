"""Circuit transitions of one deployment, as a pure state machine.

Every transition returns the new ``Circuit`` to write conditionally on the
version it was decided from (``version + 1``), or ``None`` when nothing needs
writing; the success path of a healthy deployment writes nothing at all.

    closed --(allowed_fails+1 transient failures in one fixed window)--> open
    closed --(configuration failure)--> open (configuration cooldown)
    open --(cooldown passed)--> half-open (read-time: ``effective_state``)
    half-open --(take_probe: one owner, lease of half_open_probe_seconds)--> half-open
    half-open --(probe succeeds)--> closed, level 0
    half-open --(probe fails)--> open, cooldown * 2**(level+1) + jitter, capped
    any --(operator: force_open)--> open (maintenance) until a given time
    any --(operator: force_close)--> closed, level 0

The cap of a transient reopen is ``max_cooldown_seconds`` (000), tightened
to ``max_probe_interval_seconds`` when that is set (prompt recovery, as the
``interactive`` preset does). The level keeps counting failed probes either
way, so the cooldown grows exponentially up to the cap; a bound means a
recovered deployment gets traffic back within one interval plus the gap to
the next request, not after a cooldown that doubled all through the outage.

Only the probe's outcome moves a circuit that is not closed: a failure of an
attempt that started before the circuit opened, or that ends while it is
open, is late and changes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from enum import StrEnum

from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.backoff import capped_retry_after, jittered
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Circuit, CircuitState, OpenCause


class AdmissionKind(StrEnum):
    ALLOW = "allow"  # closed: go ahead
    PROBE = "probe"  # half-open and the lease is free: take_probe first
    BLOCKED = "blocked"  # open, or another request holds the probe lease


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether an attempt may use the deployment now; ``retry_after`` in seconds when blocked."""

    kind: AdmissionKind
    retry_after: float = 0.0


def effective_state(c: Circuit, now: float) -> CircuitState:
    """The state at ``now``: an open circuit whose cooldown has passed is half-open."""
    if c.state is CircuitState.CLOSED:
        return CircuitState.CLOSED
    return CircuitState.OPEN if now < c.open_until else CircuitState.HALF_OPEN


def probe_lease_valid(c: Circuit, now: float) -> bool:
    """Whether some request holds the half-open probe lease at ``now``."""
    return c.probe_owner is not None and now < c.probe_until


def admission(c: Circuit, now: float) -> Admission:
    """May an attempt use this deployment at ``now``?

    >>> admission(Circuit("d1"), now=100.0).kind
    <AdmissionKind.ALLOW: 'allow'>
    """
    state = effective_state(c, now)
    if state is CircuitState.CLOSED:
        return Admission(AdmissionKind.ALLOW)
    if state is CircuitState.OPEN:
        return Admission(AdmissionKind.BLOCKED, c.open_until - now)
    if probe_lease_valid(c, now):
        # The probe may finish sooner, but the lease end is the latest moment it frees up.
        return Admission(AdmissionKind.BLOCKED, c.probe_until - now)
    return Admission(AdmissionKind.PROBE)


def take_probe(c: Circuit, owner: str, now: float, settings: CircuitSettings) -> Circuit | None:
    """The circuit with ``owner`` holding the probe lease, or None if it cannot be taken.

    None when the circuit is not half-open or another owner's lease is still
    valid. An expired lease may be taken over: its owner crashed or stalled.
    """
    if admission(c, now).kind is not AdmissionKind.PROBE:
        return None
    return replace(
        c,
        state=CircuitState.HALF_OPEN,
        probe_owner=owner,
        probe_until=now + settings.half_open_probe_seconds,
        version=c.version + 1,
    )


def release_probe(c: Circuit, owner: str) -> Circuit | None:
    """Give the probe lease back without a verdict (the probe ended neutral)."""
    if c.probe_owner != owner or c.state is CircuitState.CLOSED:
        return None
    return replace(c, probe_owner=None, probe_until=0.0, version=c.version + 1)


def _open(c: Circuit, now: float, seconds: float, cause: OpenCause, level: int) -> Circuit:
    return replace(
        c,
        state=CircuitState.OPEN,
        failures=0,
        open_until=now + seconds,
        opened_at=now,
        level=level,
        probe_owner=None,
        probe_until=0.0,
        cause=cause,
        version=c.version + 1,
        reason=None,
    )


def reopen_cooldown(level: int, settings: CircuitSettings, rng: random.Random) -> float:
    """Cooldown after the ``level``-th failed probe: exponential, jittered, capped.

    The cap is ``max_cooldown_seconds``, tightened by ``max_probe_interval_seconds``
    when set (prompt recovery).
    """
    base = settings.cooldown_seconds * 2.0**level
    cap = float(settings.max_cooldown_seconds)
    if settings.max_probe_interval_seconds is not None:
        cap = min(cap, float(settings.max_probe_interval_seconds))
    return min(jittered(base, rng), cap)


def on_failure(
    c: Circuit,
    cls: FailureClass,
    now: float,
    settings: CircuitSettings,
    rng: random.Random,
    *,
    was_probe: bool,
    attempt_started_at: float,
    owner: str | None = None,
) -> Circuit | None:
    """The circuit after a failed attempt of class ``cls``, or None if it does not change.

    Call once per logical request and deployment: the spec counts at most one
    failure per request toward a circuit. ``owner`` (optional) makes a probe
    failure count only while that owner still holds the lease.
    """
    if cls not in (FailureClass.TRANSIENT, FailureClass.CONFIGURATION):
        return None  # throttle, request, gateway and incompatible are health-neutral
    if was_probe:
        return _probe_failed(c, cls, now, settings, rng, owner)
    if c.state is not CircuitState.CLOSED or attempt_started_at < c.opened_at:
        return None  # late: the circuit already opened for this outage
    if cls is FailureClass.CONFIGURATION:
        return _open(c, now, settings.configuration_cooldown_seconds, OpenCause.CONFIGURATION, 0)
    if settings.cooldown_seconds == 0:
        return None  # automatic transient circuits are disabled; nothing to count for
    if c.failures == 0 or now >= c.window_start + settings.failure_window_seconds:
        counted = replace(c, failures=1, window_start=now, version=c.version + 1)
    else:
        counted = replace(c, failures=c.failures + 1, version=c.version + 1)
    if counted.failures > settings.allowed_fails:
        return _open(c, now, settings.cooldown_seconds, OpenCause.TRANSIENT, 0)
    return counted


def _probe_failed(
    c: Circuit,
    cls: FailureClass,
    now: float,
    settings: CircuitSettings,
    rng: random.Random,
    owner: str | None,
) -> Circuit | None:
    if c.state is CircuitState.CLOSED or c.probe_owner is None:
        return None  # someone else already decided this probe round
    if owner is not None and c.probe_owner != owner:
        return None
    if cls is FailureClass.CONFIGURATION:
        return _open(c, now, settings.configuration_cooldown_seconds, OpenCause.CONFIGURATION, 0)
    if settings.cooldown_seconds == 0:
        # Transient circuits are disabled and the probe showed no configuration
        # fault (only such a fault could have opened it): back to normal routing.
        return _closed(c, now)
    level = c.level + 1
    return _open(c, now, reopen_cooldown(level, settings, rng), OpenCause.TRANSIENT, level)


def _closed(c: Circuit, now: float) -> Circuit:
    return replace(
        c,
        state=CircuitState.CLOSED,
        failures=0,
        window_start=now,
        open_until=0.0,
        level=0,
        probe_owner=None,
        probe_until=0.0,
        cause=None,
        version=c.version + 1,
        reason=None,
    )


def force_open(c: Circuit, now: float, until: float, reason: str) -> Circuit:
    """The circuit forced open for maintenance until ``until`` (an operator's decision).

    Routing treats it as open until then; afterwards it is half-open like any
    other circuit, so one probe checks the deployment before traffic returns.
    Failures of attempts that started before ``now`` are late and count nothing.
    """
    if until <= now:
        raise ValueError("a maintenance window must end in the future")
    return replace(_open(c, now, until - now, OpenCause.MAINTENANCE, 0), reason=reason)


def force_close(c: Circuit, now: float) -> Circuit:
    """The circuit closed by an operator: routes again at once, failure count reset."""
    return _closed(c, now)


def on_success(
    c: Circuit, now: float, *, was_probe: bool, owner: str | None = None
) -> Circuit | None:
    """The circuit after a successful attempt, or None when nothing changes.

    A probe's success closes the circuit and resets the cooldown level. While
    closed, a success clears the transient-failure count; a success with
    nothing to clear writes nothing.
    """
    if was_probe:
        if c.state is CircuitState.CLOSED or c.probe_owner is None:
            return None
        if owner is not None and c.probe_owner != owner:
            return None
        return _closed(c, now)
    if c.state is CircuitState.CLOSED and c.failures > 0:
        return replace(c, failures=0, version=c.version + 1)
    return None


def throttle_until(now: float, retry_after: float | None, settings: CircuitSettings) -> float:
    """When a failure domain's capacity circuit closes after a provider 429.

    000: ``throttle_cooldown_seconds`` is the floor; the provider's Retry-After
    (honoured up to ``MAX_RETRY_AFTER_SECONDS``) may lengthen the wait, never
    shorten it. With ``throttle_exact_retry_after`` a Retry-After is followed
    exactly, shorter or longer, and the cooldown is only for a 429 naming no wait.

    >>> throttle_until(100.0, 2.0, CircuitSettings()), throttle_until(100.0, 30.0, CircuitSettings())
    (105.0, 130.0)
    >>> throttle_until(100.0, 2.0, CircuitSettings(throttle_exact_retry_after=True))
    102.0
    """
    floor = float(settings.throttle_cooldown_seconds)
    if retry_after is None or retry_after < 0:  # none sent, or not a wait at all
        return now + floor
    wait = capped_retry_after(retry_after)
    return now + (wait if settings.throttle_exact_retry_after else max(wait, floor))
