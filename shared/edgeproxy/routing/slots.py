"""Capacity slots (``max_parallel_requests``): which slot to try, and how long to wait for one.

A deployment with a cap holds at most that many attempts at once, fleet-wide
(the store's conditional slot writes make it exact). One at its cap is
skipped like one at its rpm limit; when a pool stops because every
candidate was at its cap, the request polls for a slot with a growing delay
for at most ``capacity_wait_seconds`` before answering 429.

>>> slot_order([2, 0], 3, random.Random(1))[-1]
1
>>> [poll_delay(n, 0.0, 5.0) for n in range(4)]
[0.05, 0.1, 0.2, 0.4]
"""

from __future__ import annotations

import random

from edgeproxy.routing.eligibility import Limit
from edgeproxy.routing.selection import BlockReason
from edgeproxy.routing.step import PoolFailure

FIRST_POLL_S = 0.05
MAX_POLL_S = 0.5


def slot_order(free: list[int], cap: int, rng: random.Random) -> list[int]:
    """The slots to try in turn: those the read saw free, shuffled (so concurrent
    attempts spread over them), then the rest (the read may be stale)."""
    first = list(free)
    rng.shuffle(first)
    return first + [i for i in range(cap) if i not in first]


def at_capacity(failure: PoolFailure) -> bool:
    """Whether the pool stopped only because capacity slots were held (no upstream answer)."""
    if failure.fault is not None:
        return False
    if failure.at_capacity:
        return True
    blocked = failure.blocked
    return (
        blocked is not None
        and blocked.reason is BlockReason.RATE_LIMITED
        and any(s.limit is Limit.PARALLEL for s in blocked.statuses)
    )


def poll_delay(polls: int, waited: float, max_wait: float) -> float | None:
    """The wait before poll number ``polls`` (0-based), None once ``max_wait`` is spent.

    Doubles from ``FIRST_POLL_S`` up to ``MAX_POLL_S``; never past ``max_wait`` in all.
    """
    left = max_wait - waited
    if left <= 0:
        return None
    return min(FIRST_POLL_S * 2.0**polls, MAX_POLL_S, left)
