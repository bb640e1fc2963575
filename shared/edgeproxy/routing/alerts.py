"""Budget alerts (pure): which thresholds a settlement crossed, and when to retry a delivery.

A level (a client key, a team or an organization, each through the same
``Alert``) carries a budget and a soft threshold, ``soft_budget_ratio`` (the
share of the budget at which the first alert is due; ``routing.hierarchy``'s
groups already carry it). Every budget also alerts at 100%. A settlement
knows the spend before and after its ADD (the store returns the settled
value), so a crossing is computed without another read:

    >>> crossed(7.0, 9.0, 10.0, 0.8)
    (0.8,)
    >>> crossed(9.0, 10.5, 10.0, 0.8)
    (1.0,)
    >>> crossed(9.0, 9.5, 10.0, 0.8)
    ()
"""

from __future__ import annotations

from dataclasses import dataclass

FULL = 1.0  # every budget alerts when it is spent
RETRY_BASE_S = 30.0  # the first retry of a failed delivery
RETRY_CAP_S = 3600.0  # retries never wait longer than this
MAX_ATTEMPTS = 12  # past this, an alert stays undelivered (listed, not retried)


def thresholds(soft_ratio: float | None) -> tuple[float, ...]:
    """The shares of a budget that alert, ascending (the soft one, if below 100%, then 100%)."""
    if soft_ratio is None or not 0.0 < soft_ratio < FULL:
        return (FULL,)
    return (soft_ratio, FULL)


def crossed(
    before: float, after: float, budget: float | None, soft_ratio: float | None
) -> tuple[float, ...]:
    """The thresholds a spend going from ``before`` to ``after`` reached for the first time."""
    if budget is None or budget <= 0 or after <= before:
        return ()
    return tuple(t for t in thresholds(soft_ratio) if before < t * budget <= after)


def reached(
    spend: float, budget: float | None, soft_ratio: float | None, refused: bool = False
) -> tuple[float, ...]:
    """The thresholds a level's spend has reached (a team's or an organization's, read after
    a settlement); ``refused``: its budget refused a reservation, so 100% is due too.

    >>> reached(8.5, 10.0, 0.8)
    (0.8,)
    >>> reached(8.5, 10.0, 0.8, refused=True)
    (0.8, 1.0)
    >>> reached(1.0, 10.0, 0.8)
    ()
    """
    if budget is None or budget <= 0:
        return ()
    return tuple(
        t for t in thresholds(soft_ratio) if spend >= t * budget or (refused and t == FULL)
    )


def retry_at(attempts: int, now: float) -> float | None:
    """When a delivery that failed ``attempts`` times is tried again (None: it is given up)."""
    if attempts >= MAX_ATTEMPTS:
        return None
    return now + min(RETRY_CAP_S, RETRY_BASE_S * 2.0 ** max(0, attempts - 1))


@dataclass(frozen=True, slots=True)
class Alert:
    """One threshold of one level's budget in one period: what a notification says.

    ``level``: ``key``, ``team`` or ``organization``; ``period``: the budget
    period's start (``YYYY-MM-DD``) or ``total``.
    """

    level: str
    level_id: str
    period: str
    threshold: float
    budget_usd: float
    spend_usd: float
    at: float

    @property
    def name(self) -> str:
        """Its id within the level: one per threshold per period."""
        return f"alert#{self.period}#{self.threshold:g}"

    def body(self) -> dict[str, object]:
        """The notification's JSON body."""
        return {
            "type": "budget.threshold_crossed",
            "level": self.level,
            "id": self.level_id,
            "period": self.period,
            "threshold": self.threshold,
            "budget_usd": self.budget_usd,
            "spend_usd": round(self.spend_usd, 6),
            "at": self.at,
        }


@dataclass(frozen=True, slots=True)
class PendingAlert:
    """An alert won but not delivered: its body, failed attempts, and when it is due.

    ``sent``: the destinations (``webhook``, ``sns``) that already took it, so a
    retry goes only to the others; it is delivered when every destination
    configured has. ``next_at`` is ``NEVER`` once given up (or delivered).
    """

    level: str
    level_id: str
    name: str
    body: str
    attempts: int
    next_at: float
    sent: frozenset[str] = frozenset()
    delivered: bool = False


NEVER = 1e18  # the next attempt of an alert given up, or delivered
