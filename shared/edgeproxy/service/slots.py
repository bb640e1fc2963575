"""Capacity slots (``max_parallel_requests``) on the request path: take one, free it, wait for one.

The rules are ``routing.slots``'; the store's conditional slot writes make
the cap exact. An attempt takes its slot before its start count and frees
it when its outcome is written (``Attempt.ended``); a wait for a slot polls
the pool again with a growing delay, at most ``capacity_wait_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
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


class Slot:
    """One capacity slot an attempt holds; ``release`` frees it once (then does nothing).

    A release that fails is logged: the slot lapses at its ``until`` anyway.
    """

    def __init__(self, store: Slots, deployment_id: str, index: int, holder: str) -> None:
        self.index = index
        self._store = store
        self._deployment_id = deployment_id
        self._holder = holder
        self._held = True

    async def release(self) -> None:
        """Free the slot (the first call only)."""
        if not self._held:
            return
        self._held = False
        try:
            await self._store.release_slot(self._deployment_id, self.index, self._holder)
        except StoreError:
            logger.warning("could not release a capacity slot of %s", self._deployment_id)


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
    order = slot_order(snapshot.free_slots(dep.id, cap, now), cap, rng)
    holder = f"{run.owner}:{rng.getrandbits(64):016x}"
    index = await store.take_slot(dep.id, order, holder, run.budget.deadline_at, now)
    return False if index is None else Slot(store, dep.id, index, holder)


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
