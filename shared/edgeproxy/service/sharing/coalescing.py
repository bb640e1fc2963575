"""``CoalescingStore``: the request path's store with fewer calls in a long-lived process.

It stands in for the store in exactly four calls, the ones it shares, and
implements nothing else (``SharedCalls``): the router's pool read, its
admission and in-flight counts (``RouterStore``), and the outcome writer's
counters and key spend (``Outcomes(counters=...)``). Every other write goes
to the store itself; the router's capacity slots pass straight through (each
is a conditional write that must land before the call), and so does its
usage read after a failure (``read_usage``: who else a deployment served).

- ``read_pool``: single-flight (``PoolReads``): concurrent requests of one
  pool share a read that started after they arrived;
- ``record``: summed per bucket and written once per window
  (``CounterBuffer``);
- ``record_key_usage`` (a client key's tokens and spend): summed the same way;
- ``admit`` without an rpm or tpm limit (it cannot be refused): buffered
  like ``record`` and answered True at once. With a limit it stays one
  conditional write per attempt, so limits stay exact.

A delta that adds reserved tokens (an answer that used more than its tpm
estimate) is written at once: a late one would let the bucket admit past
its limit for a window. One that gives tokens back may wait (a late one only
admits less for a moment).

``window_s`` = 0 (the Mangum Lambda handler, and any Lambda by default)
changes nothing: every request makes its own read and writes. Lambda
freezes the process as soon as the invocation returns, so a buffered
increment would wait there for the next invocation, or be lost with the
environment; and one request at a time has no read to share (a shared read
would cost it nothing, but nothing is won either).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from edgeproxy.routing.snapshot import PoolSnapshot, Usage
from edgeproxy.service.sharing.counter_buffer import CounterBuffer, KeySpend
from edgeproxy.service.sharing.pool_reads import PoolReads
from edgeproxy.state.store import (
    Admitter,
    CounterSink,
    PoolBatches,
    Slots,
    SnapshotRequest,
    SpendSink,
    UsageDelta,
    UsageSource,
)


class SharedCalls(PoolBatches, Admitter, Slots, CounterSink, SpendSink, UsageSource, Protocol):
    """The store calls a ``CoalescingStore`` shares: what it wraps, and all it offers."""


class CoalescingStore:
    """The shared calls of a store: reads single-flight, counters coalesced (see the module doc)."""

    def __init__(self, store: SharedCalls, window_s: float) -> None:
        self._store = store
        self.reads = PoolReads(store.read_pools)
        self.counters = CounterBuffer(store, window_s) if window_s > 0 else None

    async def aclose(self) -> None:
        """Write every pending counter (shutdown); call before the store's client closes."""
        if self.counters is not None:
            await self.counters.aclose()

    async def read_pool(self, request: SnapshotRequest) -> PoolSnapshot:
        if self.counters is None:
            return await self._store.read_pool(request)
        return await self.reads.read(request)

    async def admit(
        self,
        deployment_id: str,
        minute: int,
        rpm_limit: int | None,
        expires_at: float,
        *,
        tpm_limit: int | None = None,
        reserve: int = 0,
        shards: int = 1,
        prefill: tuple[int, int] = (0, 0),
    ) -> bool:
        if self.counters is None or rpm_limit is not None or tpm_limit is not None or reserve:
            return await self._store.admit(
                deployment_id,
                minute,
                rpm_limit,
                expires_at,
                tpm_limit=tpm_limit,
                reserve=reserve,
                shards=shards,
                prefill=prefill,
            )
        tokens, large = prefill
        start = UsageDelta(
            deployment_id,
            minute,
            requests=1,
            inflight=1,
            prefill_tokens=tokens,
            prefill_elephants=large,
        )
        self.counters.add(start, expires_at)
        return True

    async def take_slot(
        self, deployment_id: str, order: Sequence[int], holder: str, until: float, now: float
    ) -> int | None:
        return await self._store.take_slot(deployment_id, order, holder, until, now)

    async def release_slot(self, deployment_id: str, slot: int, holder: str) -> None:
        await self._store.release_slot(deployment_id, slot, holder)

    async def read_usage(
        self, deployment_id: str, first_minute: int, last_minute: int, shards: int = 1
    ) -> list[Usage]:
        return await self._store.read_usage(deployment_id, first_minute, last_minute, shards)

    async def record(self, delta: UsageDelta, expires_at: float) -> None:
        if self.counters is None or delta.reserved_tokens > 0:
            await self._store.record(delta, expires_at)
        else:
            self.counters.add(delta, expires_at)

    async def record_key_usage(
        self, key_id: str, minute: int | None, tokens: int, spend_usd: float, expires_at: float
    ) -> None:
        if self.counters is None:
            await self._store.record_key_usage(key_id, minute, tokens, spend_usd, expires_at)
        else:
            self.counters.add(KeySpend(key_id, minute, tokens, spend_usd), expires_at)
