"""The request budget: one total deadline and attempt count across every attempt.

``total_ms`` spans the whole request, retries and fallback hops included; each
attempt's own response timeout is the policy's ``response_ms`` cut down to
what is left of the total, so an attempt never outlives its request.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeproxy.config.policies import Deadline


@dataclass(frozen=True, slots=True)
class AttemptTimeouts:
    """Timeouts for one attempt, in seconds (``idle`` None: no idle limit)."""

    response: float
    idle: float | None
    total: float


@dataclass(frozen=True, slots=True)
class Budget:
    """What one request may still spend; times are epoch seconds, durations ms.

    >>> b = Budget(started_at=100.0, total_ms=30_000, max_attempts=3)
    >>> b.remaining(110.0)
    20.0
    """

    started_at: float
    total_ms: int
    max_attempts: int

    @classmethod
    def from_deadline(
        cls, deadline: Deadline, started_at: float, cap_ms: int | None = None
    ) -> Budget:
        """The budget of a request that started at ``started_at`` under ``deadline``.

        ``cap_ms``: the platform's own ceiling (API Gateway ends an integration
        after 30 s), applied over any configured ``total_ms``.

        >>> Budget.from_deadline(Deadline(total_ms=600_000), 0.0, cap_ms=27_000).total_ms
        27000
        """
        total = deadline.total_ms if cap_ms is None else min(deadline.total_ms, cap_ms)
        return cls(started_at, total, deadline.max_attempts)

    @property
    def deadline_at(self) -> float:
        """When the whole request must be over (epoch seconds)."""
        return self.started_at + self.total_ms / 1000.0

    def remaining(self, now: float) -> float:
        """Seconds left at ``now`` (never negative)."""
        return max(0.0, self.deadline_at - now)

    def expired(self, now: float) -> bool:
        """Whether the total deadline has passed at ``now``."""
        return now >= self.deadline_at

    def attempts_left(self, attempts_made: int) -> int:
        """How many more attempts the budget allows after ``attempts_made``."""
        return max(0, self.max_attempts - attempts_made)

    def allows_attempt(self, now: float, attempts_made: int, wait: float = 0.0) -> bool:
        """Whether another attempt, after waiting ``wait`` seconds, still fits.

        It fits when an attempt is left and some time remains once the wait is
        over; a backoff that would eat the rest of the budget is not worth
        sleeping through.
        """
        return self.attempts_left(attempts_made) > 0 and self.remaining(now) > wait

    def timeouts(self, now: float, policy: Deadline) -> AttemptTimeouts:
        """Timeouts for an attempt starting at ``now`` under the deployment's ``policy``.

        The response timeout is ``min(response_ms, remaining)``; the idle
        timeout is the policy's, also never past the total deadline.
        """
        left = self.remaining(now)
        idle = None if policy.idle_ms is None else min(policy.idle_ms / 1000.0, left)
        response = min(policy.response_ms / 1000.0, left)
        return AttemptTimeouts(response=response, idle=idle, total=left)

    def tightened(self, policy: Deadline) -> Budget:
        """This budget under a stricter ``policy`` (a deployment's override), never looser."""
        return Budget(
            self.started_at,
            min(self.total_ms, policy.total_ms),
            min(self.max_attempts, policy.max_attempts),
        )
