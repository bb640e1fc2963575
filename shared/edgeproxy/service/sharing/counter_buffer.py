"""Coalesced usage counters: one ADD per deployment and minute bucket per flush window.

Usage counters are commutative (``ADD``), so many requests' increments of one
bucket can be summed in process and written as one. ``add`` only sums; a
flush runs ``window_s`` after the first increment of a window (or at once
when ``max_keys`` buckets are pending), and at shutdown (``aclose``).

What is and is not promised:

- nothing is lost while the store answers: a bucket whose write fails goes
  back into the buffer, merged with newer increments, and is retried at the
  next flush (at least ``RETRY_S`` later); after ``GIVE_UP_S`` of failures,
  or when a shutdown's last flush fails, it is dropped and logged with
  every counter it held;
- a process that crashes (or is killed) loses at most what was pending: one
  window of increments, plus any still being retried;
- an in-flight count's -1 is never applied before its +1. An attempt's +1 is
  buffered before its -1 (``add`` is synchronous and the -1 comes later in
  the same task), so it lands in the same flush or an earlier one; flushes
  run one at a time, a failed bucket's increments are retried before any
  later flush's, and within a flush each deployment's buckets are written
  newest minute first, one after the other: the only -1 whose +1 is in
  another bucket is ``InFlight``'s move, which adds +1 to the new minute and
  -1 to the old one. A failed newer bucket holds back the older ones.

Exact admission (rpm/tpm limits) never goes through here: it is a
conditional write per attempt (``CoalescingStore.admit``). A client key's
tokens and spend (``KeySpend``) are summed the same way: its tpm limit and
budget are checked on the pool read, never by a conditional write, so a
window's delay only moves the moment a key is stopped by that window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from edgeproxy.errors import StoreError
from edgeproxy.routing.snapshot import added_seconds
from edgeproxy.state.items import usage_counters
from edgeproxy.state.store import CounterStore, UsageDelta

logger = logging.getLogger(__name__)

MAX_KEYS = 256  # pending buckets that force a flush before the window ends
RETRY_S = 1.0  # a failed flush is retried no sooner than this
GIVE_UP_S = 120.0  # increments still unwritten after this long are logged and dropped


@dataclass(frozen=True, slots=True)
class KeySpend:
    """Increments of one client key: tokens in bucket ``minute`` (None: none) and spend."""

    key_id: str
    minute: int | None
    tokens: int = 0
    spend_usd: float = 0.0


Delta = UsageDelta | KeySpend
Bucket = tuple[str, str, int | None]  # (kind, deployment or key id, minute)


@dataclass(slots=True)
class _Pending:
    delta: Delta
    expires_at: float
    since: float  # when its oldest increment was buffered (monotonic)


def _bucket(delta: Delta) -> Bucket:
    if isinstance(delta, KeySpend):
        return ("key", delta.key_id, delta.minute)
    return ("deployment", delta.deployment_id, delta.minute)


def _counters(delta: Delta) -> dict[str, float]:
    if isinstance(delta, KeySpend):
        return {n: v for n, v in (("tokens", delta.tokens), ("spend_usd", delta.spend_usd)) if v}
    return usage_counters(delta)


# Every counter of a delta: the fields after ``deployment_id`` and ``minute``
# (``seconds``, the per-second sums, merge second by second).
_COUNTERS = tuple(f.name for f in dataclasses.fields(UsageDelta)[2:] if f.name != "seconds")


def merged(a: Delta, b: Delta) -> Delta:
    """The sum of two deltas of one bucket."""
    if isinstance(a, KeySpend):
        assert isinstance(b, KeySpend)  # one bucket holds one kind
        return dataclasses.replace(
            a, tokens=a.tokens + b.tokens, spend_usd=a.spend_usd + b.spend_usd
        )
    assert isinstance(b, UsageDelta)
    summed = {n: getattr(a, n) + getattr(b, n) for n in _COUNTERS}
    return dataclasses.replace(a, **summed, seconds=added_seconds(a.seconds, b.seconds))


class CounterBuffer:
    """Sums ``record`` deltas per bucket and writes each bucket once per window."""

    def __init__(
        self,
        store: CounterStore,
        window_s: float,
        *,
        max_keys: int = MAX_KEYS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._window = window_s
        self._max_keys = max_keys
        self._monotonic = monotonic
        self._pending: dict[Bucket, _Pending] = {}
        self._lock = asyncio.Lock()  # one flush at a time
        self._timer: asyncio.Task[None] | None = None
        self._now = False  # the timer flushes without waiting for the window
        self._closed = False
        self.writes = 0  # ADDs sent (for tests and the benchmark's figures)

    @property
    def pending(self) -> int:
        """Buckets waiting for a flush."""
        return len(self._pending)

    def add(self, delta: Delta, expires_at: float) -> None:
        """Buffer ``delta``; it is written within one window."""
        if not _counters(delta):
            return
        self._merge(_bucket(delta), delta, expires_at, self._monotonic())
        if self._closed:
            logger.error("usage counters recorded after shutdown were not written: %s", delta)
            self._pending.clear()
            return
        if len(self._pending) >= self._max_keys:
            self._arm(0.0)
        else:
            self._arm(self._window)

    def _merge(self, bucket: Bucket, delta: Delta, expires_at: float, since: float) -> None:
        held = self._pending.get(bucket)
        if held is None:
            self._pending[bucket] = _Pending(delta, expires_at, since)
        else:
            held.delta = merged(held.delta, delta)
            held.expires_at = max(held.expires_at, expires_at)
            held.since = min(held.since, since)

    def _arm(self, delay: float) -> None:
        if self._timer is not None and not self._timer.done():
            if delay > 0 or self._now:
                return  # a flush is already due within a window (or now)
            self._timer.cancel()  # only its wait: a flush under way is shielded
        self._now = delay <= 0
        self._timer = asyncio.ensure_future(self._after(delay))

    async def _after(self, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        self._now = False
        # Shielded: cancelling the timer (shutdown, a full buffer) never cuts a flush short.
        failed = await asyncio.shield(self.flush())
        if self._timer is asyncio.current_task():
            self._timer = None
        if self._pending and not self._closed:  # increments that came during the flush
            self._arm(max(self._window, RETRY_S) if failed else self._window)

    async def flush(self) -> bool:
        """Write every pending bucket now; True if some write failed (kept for a retry)."""
        async with self._lock:
            if not self._pending:
                return False
            taken, self._pending = self._pending, {}
            by_owner: dict[tuple[str, str], list[_Pending]] = {}
            for bucket, pending in taken.items():
                by_owner.setdefault((bucket[0], bucket[1]), []).append(pending)
            results = await asyncio.gather(
                *(self._write_newest_first(p) for p in by_owner.values())
            )
            return any(results)

    async def _write_newest_first(self, buckets: list[_Pending]) -> bool:
        buckets.sort(key=lambda p: -1 if p.delta.minute is None else p.delta.minute, reverse=True)
        for i, pending in enumerate(buckets):
            try:
                self.writes += 1
                await self._write(pending.delta, pending.expires_at)
            except StoreError as exc:
                self._keep(buckets[i:], type(exc).__name__)
                return True
        return False

    async def _write(self, delta: Delta, expires_at: float) -> None:
        if isinstance(delta, KeySpend):
            await self._store.record_key_usage(
                delta.key_id, delta.minute, delta.tokens, delta.spend_usd, expires_at
            )
        else:
            await self._store.record(delta, expires_at)

    def _keep(self, unwritten: list[_Pending], error: str) -> None:
        now = self._monotonic()
        for pending in unwritten:
            if self._closed or now - pending.since >= GIVE_UP_S:
                _log_lost(pending.delta, error)
                continue
            self._merge(_bucket(pending.delta), pending.delta, pending.expires_at, pending.since)
        logger.warning("could not write usage counters (%s); kept for a retry", error)

    async def aclose(self) -> None:
        """Flush what is pending (shutdown); a failed write is logged as lost."""
        if self._timer is not None:
            self._timer.cancel()
        await self.flush()
        self._closed = True
        if self._pending:
            await self.flush()  # a failed bucket's retry; what still fails is logged as lost
            for pending in self._pending.values():
                _log_lost(pending.delta, "shutdown")
            self._pending.clear()


def _log_lost(delta: Delta, error: str) -> None:
    kind, owner, minute = _bucket(delta)
    logger.error(
        "usage counters lost (%s): %s=%s minute=%s %s", error, kind, owner, minute, _counters(delta)
    )
