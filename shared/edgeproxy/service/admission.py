"""One admitted attempt, as its outcome write needs it, and its live in-flight count.

An attempt's start is counted in its start minute's bucket (requests +1,
in-flight +1, and the tokens it reserved against a tpm limit). Readers see
the last two buckets only, so an attempt that runs for minutes (a long
stream) would drop out of ``least-busy`` and the two-choices tiebreak.
``InFlight`` keeps it counted: each minute it moves the count into the
current bucket (+1 there first, then -1 in the old one), and the outcome
releases it from whichever bucket holds it. A crashed instance moves
nothing, so its counts stop being read within two minutes of its last move;
the buckets themselves expire after an hour.

001's prefill lease (``prefill_tokens``, ``prefill_elephants``: the attempt's
uncached prompt estimate, when the prefill rule is on) rides the same start
count, moves with the in-flight count and is released at the first token: a
stream's when it commits (its own write, off the critical path), otherwise
with the outcome's release.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.errors import StoreError
from edgeproxy.routing.snapshot import Second
from edgeproxy.service.slots import Slot
from edgeproxy.state.request_store import Admitter
from edgeproxy.state.store import CounterSink, UsageDelta

logger = logging.getLogger(__name__)

USAGE_RETENTION_SECONDS = 3600  # buckets outlive the health job's 10-minute window
# How often a running attempt looks at the clock for a new minute (a jumped test clock too).
FOLLOW_TICK_S = 2.0


def bucket_expiry(minute: int) -> float:
    """When a usage bucket's TTL lets DynamoDB delete it."""
    return minute * 60.0 + USAGE_RETENTION_SECONDS


class InFlight:
    """Moves one running attempt's in-flight count into the current minute bucket."""

    def __init__(
        self,
        store: CounterSink,
        deployment_id: str,
        minute: int,
        clock: Callable[[], float],
        until: float,
    ) -> None:
        self.minute = minute  # the bucket that holds the count now
        self.prefill = (0, 0)  # the prefill lease still held: (tokens, large)
        self._lock = asyncio.Lock()  # a move and a release never interleave
        self._store = store
        self._deployment_id = deployment_id
        self._clock = clock
        self._until = until  # never past the request's deadline, however the attempt ends
        self._stopped = asyncio.Event()
        self._task: asyncio.Future[None] | None = None

    def follow(self, admission: asyncio.Future[bool] | None) -> None:
        """Start moving the count, once the start count has landed."""
        self._task = asyncio.ensure_future(self._follow(admission))

    async def stop(self) -> int:
        """Stop moving; the bucket that holds the count (its release goes there)."""
        self._stopped.set()
        if self._task is not None:
            await asyncio.shield(self._task)
        return self.minute

    async def _follow(self, admission: asyncio.Future[bool] | None) -> None:
        if admission is not None:
            try:
                if not await admission:
                    return
            except StoreError:
                return
        while not self._stopped.is_set():
            now = self._clock()
            if now >= self._until:
                return
            wait = min(FOLLOW_TICK_S, max(0.05, (self.minute + 1) * 60.0 - now))
            try:
                await asyncio.wait_for(self._stopped.wait(), timeout=wait)
                return
            except TimeoutError:
                pass
            current = int(self._clock() // 60)
            if current > self.minute:
                await self._move(current)

    def released(self) -> tuple[int, int]:
        """Give the prefill lease up here (the caller writes it); what was held."""
        held, self.prefill = self.prefill, (0, 0)
        return held

    async def release_prefill(self, admission: asyncio.Future[bool] | None) -> None:
        """Write the prefill lease's release now (a stream's first token), after its start."""
        if self.prefill == (0, 0):
            return
        if admission is not None:
            try:
                if not await admission:
                    return
            except StoreError:
                return
        async with self._lock:
            tokens, large = self.released()
            if tokens or large:
                delta = UsageDelta(
                    self._deployment_id,
                    self.minute,
                    prefill_tokens=-tokens,
                    prefill_elephants=-large,
                )
                try:
                    await self._store.record(delta, bucket_expiry(self.minute))
                except StoreError:
                    logger.warning("could not release the prefill lease on %s", delta.deployment_id)

    async def _move(self, current: int) -> None:
        dep = self._deployment_id
        async with self._lock:
            tokens, large = self.prefill
            try:
                more = UsageDelta(
                    dep, current, inflight=1, prefill_tokens=tokens, prefill_elephants=large
                )
                await self._store.record(more, bucket_expiry(current))
                moved_from, self.minute = self.minute, current
                less = UsageDelta(
                    dep, moved_from, inflight=-1, prefill_tokens=-tokens, prefill_elephants=-large
                )
                await self._store.record(less, bucket_expiry(moved_from))
            except StoreError:
                logger.warning("could not move the in-flight count of an attempt on %s", dep)


@dataclass(frozen=True, slots=True)
class Attempt:
    """What an outcome write needs to know about the attempt."""

    deployment: Deployment
    minute: int  # the bucket its start was counted in
    started_at: float
    probe: bool
    sticky: bool
    owner: str
    admission: asyncio.Future[bool] | None = field(default=None, compare=False)
    reserved: int = 0  # tokens reserved against the deployment's tpm limit at start
    inflight: InFlight | None = field(default=None, compare=False)
    output_limit: int | None = (
        None  # set by the gateway from the tpm budget (routing.estimates.tokens)
    )
    slot: Slot | None = field(default=None, compare=False)  # held under max_parallel_requests

    async def admitted(self) -> None:
        """Wait for the start count to land (it may run alongside the upstream call).

        A failed count is logged, not raised: the attempt already happened,
        and its outcome must still be recorded.
        """
        if self.admission is None:
            return
        try:
            await self.admission
        except StoreError:
            logger.warning("could not count the start of an attempt on %s", self.deployment.id)

    async def ended(
        self, reconcile: int, finished: tuple[float, Second] | None = None, /, **counters: Any
    ) -> list[UsageDelta]:
        """Free its capacity slot, then the usage writes that close the attempt:
        ``counters`` in its start bucket, the in-flight release where the count is held, ``reconcile`` added to the
        reservation (actual usage minus the estimate, or minus the estimate), and
        ``finished`` (when it finished, and its sample) in the second it finished.
        """
        if self.slot is not None:
            await self.slot.release()
        held = await self.inflight.stop() if self.inflight is not None else self.minute
        tokens, large = self.inflight.released() if self.inflight is not None else (0, 0)
        dep = self.deployment.id
        here = held == self.minute
        deltas = {
            self.minute: UsageDelta(
                dep,
                self.minute,
                inflight=-1 if here else 0,
                reserved_tokens=reconcile if self.reserved else 0,
                prefill_tokens=-tokens if here else 0,
                prefill_elephants=-large if here else 0,
                **counters,
            )
        }
        if not here:
            deltas[held] = UsageDelta(
                dep, held, inflight=-1, prefill_tokens=-tokens, prefill_elephants=-large
            )
        if finished is not None:
            at, sample = finished
            minute, second = int(at // 60), int(at % 60)
            delta = deltas.get(minute) or UsageDelta(dep, minute)
            deltas[minute] = replace(delta, seconds={second: sample})
        return list(deltas.values())


def start_count(
    store: Admitter, dep: Deployment, minute: int, reserve: int, prefill: tuple[int, int]
) -> asyncio.Future[bool]:
    """The start count's write, under way: requests +1, in-flight +1, the ``reserve``d
    tokens and 001's prefill lease (``prefill``: uncached tokens, large requests), in
    ``minute``'s bucket; conditional on the deployment's rpm and tpm limits."""
    return asyncio.ensure_future(
        store.admit(
            dep.id,
            minute,
            dep.rpm_limit,
            bucket_expiry(minute),
            tpm_limit=dep.tpm_limit,
            reserve=reserve,
            shards=dep.counter_shards,
            prefill=prefill,
        )
    )
