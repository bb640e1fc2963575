"""Idempotency keys across the fleet: take the lease, or wait for the call that holds it.

``Leases.acquire`` carries ``routing.idempotency.decide`` out against the
store: a conditional take first (the usual first call: one write, no read),
then, while another call holds the key, a consistent re-read after each
``poll_delay`` (50 ms doubling to 1 s) until that call's answer is stored
(``Replay``), its lease is released or lapses (this call takes it: ``Owned``),
or this call's own deadline passes (409 with Retry-After). The owner stores
its answer with ``finish`` or gives the key back with ``release``.

The first call's answer is kept inside the lease item itself (an encoded
``state.answers.StoredAnswer``, ``api.reply``), so a replay is the one read
that found the key done.

    >>> leases = Leases(store, clock)  # doctest: +SKIP
    >>> got = await leases.acquire(scope, key, request_hash, deadline_s=600)
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from edgeproxy.errors import IdempotencyInProgress, IdempotencyKeyReused, StoreError
from edgeproxy.routing.idempotency import (
    HEADER,
    KEY_TTL_S,
    Decision,
    Lease,
    LeaseState,
    decide,
    lease_until,
    wait_step,
)
from edgeproxy.state.leases import LeaseStore

logger = logging.getLogger(__name__)
Sleep = Callable[[float], Awaitable[None]]
IN_PROGRESS_RETRY_AFTER_S = 1.0


@dataclass(frozen=True, slots=True)
class Owned:
    """This call holds the key's lease: it executes, then ``finish``es or ``release``s."""

    scope: str
    key: str
    owner: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class Replay:
    """The first call's stored answer (encoded), for this retry."""

    answer: bytes


class Leases:
    """The fleet-wide lease of each (client key, idempotency key)."""

    def __init__(
        self,
        leases: LeaseStore,
        clock: Callable[[], float],
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._leases = leases
        self._clock = clock
        self._sleep = sleep

    async def acquire(
        self,
        scope: str,
        key: str,
        request_hash: str,
        deadline_s: float,
        *,
        wait_s: float | None = None,
    ) -> Owned | Replay:
        """Own the key, or the first call's answer; raises 422 (another body) or 409 (still
        running at this call's deadline, ``deadline_s`` from now, or after ``wait_s`` when
        given: the response cache's bounded wait for an identical request in flight)."""
        give_up_at = self._clock() + (deadline_s if wait_s is None else min(wait_s, deadline_s))
        owner = uuid.uuid4().hex
        polls = 0
        lease: Lease | None = None
        decision = Decision.TAKE
        while True:
            now = self._clock()
            if decision is Decision.TAKE:
                mine = Lease(
                    request_hash,
                    owner,
                    LeaseState.RUNNING,
                    lease_until(now, deadline_s),
                    now + KEY_TTL_S,
                )
                won, lease = await self._leases.take_lease(scope, key, mine, now)
                if won:
                    return Owned(scope, key, owner, mine.expires_at)
            decision = decide(lease, request_hash, now)
            if decision is Decision.CONFLICT:
                raise IdempotencyKeyReused(
                    f"This {HEADER} was already used with a different request body.",
                    param=HEADER,
                )
            if decision is Decision.REPLAY:
                assert lease is not None  # decide() replays only a stored, finished lease
                if lease.answer is not None:
                    return Replay(lease.answer)
                # A DONE lease without its answer (a bug or a hand-edited item): execute again.
                logger.warning("idempotency: a finished key has no answer; executing again")
                decision, lease = Decision.TAKE, None
                continue
            if decision is Decision.WAIT:
                step = wait_step(polls, now, give_up_at)
                if step is None:
                    raise IdempotencyInProgress(
                        f"A request with this {HEADER} is still in progress; retry later.",
                        param=HEADER,
                        retry_after=IN_PROGRESS_RETRY_AFTER_S,
                    )
                await self._sleep(step)
                polls += 1
                lease = await self._leases.read_lease(scope, key)
                decision = decide(lease, request_hash, self._clock())

    async def finish(self, owned: Owned, answer: bytes) -> bool:
        """Mark the key done with its ``answer``; False (the key released) if that fails."""
        try:
            done = await self._leases.finish_lease(owned.scope, owned.key, owned.owner, answer)
        except StoreError as exc:
            logger.warning("idempotency: the answer was not stored (%s)", type(exc).__name__)
            await self.release(owned)
            return False
        if not done:
            logger.warning("idempotency: the lease lapsed before the answer was stored")
        return done

    async def release(self, owned: Owned) -> None:
        """Give the key back: the next call with it executes again."""
        try:
            await self._leases.release_lease(owned.scope, owned.key, owned.owner)
        except StoreError as exc:  # the lease then lapses at its lease_until
            logger.warning("idempotency: the lease was not released (%s)", type(exc).__name__)
