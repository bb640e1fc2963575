"""The writes a key's verdict names (``routing.judge``), made in its order.

``planned`` raises the verdict's refusal or gives its plan; its first write,
a slot of the key's ``max_parallel_requests``, is ``service.limits.parallel``'s
(``reserve.counted`` makes it); ``count_request`` makes the next, one request
counted under the key's rpm limit,
and ``reserve_usage`` the rest (a routed request of a key with a tpm limit
or a budget): its token estimate under the tpm limit, then its cost estimate
on the key's spend, under its budget. A write whose condition fails stops
the rest; its refusal is the judge's (``routing.judge.reasons.refused``). What the counts already made stay counted, as
each did when it was made at its own moment: an rpm count stands (the
request was made), a token reservation is taken back at once when the spend
is refused (nothing else was counted for it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from edgeproxy.errors import StoreError
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.judge.reasons import Write, refused
from edgeproxy.routing.judge.ruling import KeyPlan, Refuse, Verdict
from edgeproxy.state.store import KeyReserveStore

logger = logging.getLogger(__name__)

# Counts a key's usage the way answers are counted (``Outcomes.key_usage``; negative: a release).
Counter = Callable[[str, int | None, int, float, float], Awaitable[None]]
UNCAPPED = 2**62  # the undo of a reservation is never refused


class RequestCounter(Protocol):
    """The rpm count of a key's requests (``KeyStore.admit_key``)."""

    async def admit_key(self, key_id: str, minute: int, rpm_limit: int, expires_at: float) -> bool:
        """Count one request in bucket ``minute`` only while it is under ``rpm_limit``."""
        ...


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one request reserved; ``release`` takes it back (once)."""

    key_id: str  # the key's spend account (``spend_account``: its id, or id@period)
    minute: int | None  # the bucket reserved in (None: no tpm limit)
    tokens: int
    spend_usd: float
    expires_at: float

    async def release(self, count: Counter) -> None:
        """Take the estimate back (after the actual usage was counted)."""
        try:
            await asyncio.shield(
                count(self.key_id, self.minute, -self.tokens, -self.spend_usd, self.expires_at)
            )
        except StoreError as exc:  # an overcount until the minute ends; never an overshoot
            logger.warning("could not release a key reservation: %s", type(exc).__name__)


def planned(verdict: Verdict) -> KeyPlan | None:
    """The plan of an admitting ``verdict``; a refusing one raises its error."""
    if isinstance(verdict, Refuse):
        raise verdict.refusal.error()
    return verdict.plan


async def count_request(
    store: RequestCounter, plan: KeyPlan | None, key: ClientKey | None, now: float
) -> None:
    """The plan's rpm count (when it names one); the judge's refusal when the key is over."""
    if plan is None or plan.rpm is None:
        return
    if not await store.admit_key(plan.key_id, plan.minute, plan.rpm, plan.expires):
        raise refused(Write.RPM, now, key).error()


async def reserve_usage(
    store: KeyReserveStore, plan: KeyPlan | None, key: ClientKey | None, now: float
) -> Reservation | None:
    """The plan's token and spend reservations (None: it names none); the judge's refusal
    when either does not fit."""
    if plan is None or not plan.spend:
        return None
    bucket = plan.minute if plan.tpm is not None else None
    if plan.tpm is not None and not await store.reserve_key_tokens(
        plan.key_id, plan.minute, plan.tokens, plan.tpm, plan.expires
    ):
        raise refused(Write.TOKENS, now, key).error()
    if not await store.reserve_key_spend(plan.account, plan.tokens, plan.spend_usd, plan.budget):
        if bucket is not None:  # undo the tokens part, at once (nothing else was counted)
            await store.reserve_key_tokens(
                plan.key_id, plan.minute, -plan.tokens, UNCAPPED, plan.expires
            )
        raise refused(Write.SPEND, now, key).error()
    return Reservation(plan.account, bucket, plan.tokens, plan.spend_usd, plan.expires)
