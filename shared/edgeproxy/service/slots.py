"""Capacity slots (``max_parallel_requests``) on the request path: take one, free it, wait for one.

The rules are ``routing.slots``'; the store's conditional slot writes make
the cap exact. An attempt takes its slot before its start count and frees
it when its outcome is written (``Attempt.ended``); a wait for a slot polls
the pool again with a growing delay, at most ``capacity_wait_seconds``.

``SlotTaker`` takes a slot in any partition of slot items: a deployment's
here, a client key's in ``service.limits.parallel``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from edgeproxy.config.deployment import Deployment
from edgeproxy.errors import StoreError
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.slots import at_capacity, poll_delay, slot_order
from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.routing.step import PoolFailure, Try
from edgeproxy.service.pool import PoolContext, Standing
from edgeproxy.state.store import Slots

logger = logging.getLogger(__name__)


# Named by shape, not imported: ``service.run`` and ``service.outcomes`` import
# ``service.admission``, which imports ``Slot`` from here.
class Holder(Protocol):
    """The run an attempt belongs to (``service.run.Run``)."""

    @property
    def owner(self) -> str: ...

    @property
    def budget(self) -> Budget: ...


class ProbeLeases(Protocol):
    """Who gives back an unused probe lease (``service.outcomes.Outcomes``)."""

    async def release_probe(
        self, ctx: PoolContext, attempt_owner: str, dep: Deployment
    ) -> Standing: ...


# The store's conditional slot writes of one partition (a deployment's, a key's).
TakeSlot = Callable[[str, Sequence[int], str, float, float], Awaitable[int | None]]
ReleaseSlot = Callable[[str, int, str], Awaitable[None]]


class Slot:
    """One slot a holder holds in a partition; ``release`` frees it once (then does nothing).

    A release that fails is logged: the slot lapses at its ``until`` anyway.
    """

    def __init__(
        self, release: ReleaseSlot, partition: str, index: int, holder: str, what: str
    ) -> None:
        self.index = index
        self._release = release
        self._partition = partition
        self._holder = holder
        self._what = what
        self._held = True

    async def release(self) -> None:
        """Free the slot (the first call only)."""
        if not self._held:
            return
        self._held = False
        try:
            await self._release(self._partition, self.index, self._holder)
        except StoreError:
            logger.warning("could not release %s %s", self._what, self._partition)


class SlotTaker:
    """Takes slots in the partitions of one kind of slot item (``what`` names it in logs)."""

    def __init__(self, take: TakeSlot, release: ReleaseSlot, what: str) -> None:
        self._take = take
        self._release = release
        self._what = what

    async def take(
        self,
        partition: str,
        free: Sequence[int],
        cap: int,
        owner: str,
        until: float,
        now: float,
        rng: random.Random,
    ) -> Slot | None:
        """One of ``partition``'s ``cap`` slots, tried free ones first (``slot_order``), held
        for ``owner`` until ``until``; None when every one is held."""
        order = slot_order(list(free), cap, rng)
        holder = f"{owner}:{rng.getrandbits(64):016x}"
        index = await self._take(partition, order, holder, until, now)
        return None if index is None else Slot(self._release, partition, index, holder, self._what)


async def take_slot(
    store: Slots,
    dep: Deployment,
    snapshot: PoolSnapshot,
    run: Holder,
    now: float,
    rng: random.Random,
) -> Slot | Literal[False] | None:
    """A capacity slot for an attempt of ``run`` on ``dep`` (None: it has no cap; False:
    every slot is held). It lapses at the request's deadline if never released.
    """
    cap = dep.max_parallel_requests
    if cap is None:
        return None
    taker = SlotTaker(store.take_slot, store.release_slot, "a capacity slot of")
    free = snapshot.free_slots(dep.id, cap, now)
    slot = await taker.take(dep.id, free, cap, run.owner, run.budget.deadline_at, now, rng)
    return False if slot is None else slot


async def given_back(
    outcomes: ProbeLeases, ctx: PoolContext, run: Holder, step: Try, slot: Slot | None = None
) -> PoolContext:
    """Give back what a refused attempt took: its capacity slot and its probe lease
    (an unused lease would hold off every other prober until it expires)."""
    if slot is not None:
        await slot.release()
    if not step.pick.probe:
        return ctx
    return ctx.applied(await outcomes.release_probe(ctx, run.owner, step.pick.deployment))


class SlotWait:
    """One request's wait for a capacity slot in one pool (bounded by ``max_wait`` seconds)."""

    def __init__(self, clock: Callable[[], float], budget: Budget, max_wait: float) -> None:
        self._clock = clock
        self._budget = budget
        self._max_wait = max_wait
        self._polls = 0
        self._waited = 0.0

    async def waited(self, failure: PoolFailure, attempts: int) -> bool:
        """Sleep before the next poll if ``failure`` is only full slots and time is left
        (then the caller reads the pool again and tries the full deployments again)."""
        if not at_capacity(failure):
            return False
        hold = poll_delay(self._polls, self._waited, self._max_wait)
        if hold is None or not self._budget.allows_attempt(self._clock(), attempts, hold):
            return False
        await asyncio.sleep(hold)
        self._polls += 1
        self._waited += hold
        return True
