"""Coalesced usage counters (``service.counter_buffer``) on an in-memory recorder.

The real table is in tests/integration/service/test_coalescing.py; here the
order of writes and the retry of failed ones are checked exactly.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from edgeproxy.errors import StoreUnavailable
from edgeproxy.routing.snapshot import Second
from edgeproxy.service.sharing.counter_buffer import CounterBuffer, KeySpend, merged
from edgeproxy.state.store import UsageDelta


class Recorder:
    """``record`` that keeps every ADD in order (and fails while ``down``)."""

    def __init__(self) -> None:
        self.adds: list[UsageDelta] = []
        self.down = False
        self.added = asyncio.Event()
        self.spends: list[KeySpend] = []

    async def record(self, delta: UsageDelta, expires_at: float) -> None:
        await asyncio.sleep(0)
        if self.down:
            raise StoreUnavailable("down", retry_after=1.0)
        self.adds.append(delta)
        self.added.set()

    async def record_key_usage(
        self, key_id: str, minute: int | None, tokens: int, spend_usd: float, expires_at: float
    ) -> None:
        await asyncio.sleep(0)
        self.spends.append(KeySpend(key_id, minute, tokens, spend_usd))


def buffer(store: Recorder, window_s: float = 60.0) -> CounterBuffer:
    return CounterBuffer(store, window_s)  # type: ignore[arg-type]


async def test_increments_of_one_bucket_become_one_add() -> None:
    store = Recorder()
    counters = buffer(store)
    for _ in range(200):
        counters.add(UsageDelta("a", 10, requests=1, inflight=1), 1.0)
        counters.add(UsageDelta("a", 10, inflight=-1, successes=1, latency_ms_sum=5), 2.0)
    await counters.flush()
    assert store.adds == [UsageDelta("a", 10, requests=200, successes=200, latency_ms_sum=1000)]


async def test_the_window_flushes_by_itself() -> None:
    store = Recorder()
    counters = buffer(store, window_s=0.01)
    counters.add(UsageDelta("a", 10, requests=1), 1.0)
    async with asyncio.timeout(5):
        await store.added.wait()
    assert store.adds == [UsageDelta("a", 10, requests=1)]


async def test_a_moved_count_lands_in_the_new_minute_before_it_leaves_the_old() -> None:
    store = Recorder()
    counters = buffer(store)
    counters.add(UsageDelta("a", 10, requests=1, inflight=1), 1.0)
    await counters.flush()
    counters.add(UsageDelta("a", 11, inflight=1), 1.0)  # InFlight's move: +1 new, -1 old
    counters.add(UsageDelta("a", 10, inflight=-1), 1.0)
    counters.add(UsageDelta("b", 10, successes=1), 1.0)
    await counters.flush()
    a_writes = [d for d in store.adds[1:] if d.deployment_id == "a"]
    assert [d.minute for d in a_writes] == [11, 10]


async def test_a_failed_flush_is_retried_merged_with_newer_increments() -> None:
    store = Recorder()
    counters = buffer(store)
    counters.add(UsageDelta("a", 10, requests=1, inflight=1), 1.0)
    store.down = True
    assert await counters.flush()  # failed, kept
    counters.add(UsageDelta("a", 10, inflight=-1, successes=1), 1.0)
    store.down = False
    assert not await counters.flush()
    assert store.adds == [UsageDelta("a", 10, requests=1, successes=1)]


async def test_a_failed_newer_bucket_holds_back_the_older_ones() -> None:
    store = Recorder()
    counters = buffer(store)
    counters.add(UsageDelta("a", 11, inflight=1), 1.0)
    counters.add(UsageDelta("a", 10, inflight=-1), 1.0)
    store.down = True
    await counters.flush()
    assert counters.pending == 2
    assert store.adds == []


async def test_shutdown_flushes_and_logs_what_it_could_not_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Recorder()
    counters = buffer(store)
    counters.add(UsageDelta("a", 10, requests=3), 1.0)
    await counters.aclose()
    assert store.adds == [UsageDelta("a", 10, requests=3)]

    broken = Recorder()
    broken.down = True
    counters = buffer(broken)
    counters.add(UsageDelta("a", 10, requests=2), 1.0)
    with caplog.at_level(logging.ERROR):
        await counters.aclose()
    assert "usage counters lost" in caplog.text
    assert "'requests': 2" in caplog.text


async def test_a_keys_tokens_and_spend_are_summed_per_minute() -> None:
    store = Recorder()
    counters = buffer(store)
    for _ in range(4):
        counters.add(KeySpend("k1", 10, tokens=5, spend_usd=0.25), 1.0)
    counters.add(KeySpend("k1", None, tokens=0, spend_usd=0.5), 1.0)  # no tpm limit: no bucket
    counters.add(UsageDelta("a", 10, successes=4), 1.0)
    await counters.flush()
    assert sorted(store.spends, key=lambda s: s.minute or 0) == [
        KeySpend("k1", None, 0, 0.5),
        KeySpend("k1", 10, 20, 1.0),
    ]
    assert store.adds == [UsageDelta("a", 10, successes=4)]


def test_per_second_sums_merge_second_by_second() -> None:
    a = UsageDelta("d", 1, successes=1, seconds={4: Second(1, 100, 1, 10.0)})
    b = UsageDelta("d", 1, successes=2, seconds={4: Second(1, 300), 9: Second(1, 50)})
    both = merged(a, b)
    assert isinstance(both, UsageDelta)
    assert both.successes == 3
    assert both.seconds == {4: Second(2, 400, 1, 10.0), 9: Second(1, 50)}
