"""A client key's requests in flight across every gateway process (``max_parallel_requests``).

The capacity slots of deployments (``service.slots``, the same ``SlotTaker``),
in the key's own partition: a request whose key's verdict names the slot write
(``routing.judge``: a routed request of a capped key) takes one of its N slot
items with a conditional write, the plan's first, before its rpm count and any
upstream call, and deletes it when its answer is over (a
JSON answer built, a stream ended, an error). So at most N of its requests
are in flight at once, fleet-wide, exactly. A slot's ``until`` is the
request's deadline: the slot of a process that died lapses by itself.

A request beyond the cap is answered 429 at once, with nothing else counted.
Keys without the field make no store call here.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from edgeproxy.config.models import GatewayConfig
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.judge.reasons import Write, refused
from edgeproxy.routing.judge.ruling import KeyPlan
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.slots import Slot, SlotTaker
from edgeproxy.state.store import KeySlotStore

# A slot a request of a capped key holds, fleet-wide (one partition per key).
KeySlot = Slot

# The slot outlives the request's own deadline by this much: the request's run starts
# after the slot is taken, and its last bytes are sent after its deadline is checked.
GRACE_S = 5.0


class KeyParallel:
    """Takes the slots of capped keys for this process's requests."""

    def __init__(
        self,
        store: KeySlotStore,
        clock: Callable[[], float],
        rng: random.Random,
        max_total_ms: int | None = None,
    ) -> None:
        self._slots = SlotTaker(
            store.take_key_slot, store.release_key_slot, "a request slot of key"
        )
        self._clock = clock
        self._rng = rng
        self._max_total_ms = max_total_ms  # the platform's ceiling on a request's deadline

    async def hold(
        self, plan: KeyPlan | None, req: ProxyRequest, config: GatewayConfig
    ) -> KeySlot | None:
        """The slot ``plan`` names for ``req``, held until ``req`` is over (None: it names
        none); it lapses at the request's deadline (its operation's execution policy, as
        its run gets it)."""
        if plan is None or plan.parallel is None:
            return None
        policies = config.router.execution_policies[req.operation]
        deadline = policies.stream if req.stream else policies.json_
        total_ms = Budget.from_deadline(deadline, 0.0, self._max_total_ms).total_ms
        return await self.take(plan, req.request_id, total_ms / 1000.0)

    async def take(self, plan: KeyPlan | None, request_id: str, total_s: float) -> KeySlot | None:
        """The slot ``plan`` names, for a request that may run ``total_s`` seconds (None: it
        names none); the judge's 429 ``rate_limit_exceeded`` when every slot is held."""
        cap = None if plan is None else plan.parallel
        if plan is None or cap is None:
            return None
        now = self._clock()
        # Every slot in a random order: concurrent requests spread over them instead of
        # all racing for slot 0 first.
        until = now + total_s + GRACE_S
        slot = await self._slots.take(
            plan.key_id, range(cap), cap, request_id, until, now, self._rng
        )
        if slot is None:
            raise refused(Write.PARALLEL, now, cap=cap).error()
        return slot
